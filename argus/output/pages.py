"""The project's HTML pages (``argus view``'s page and index, the frontier report): one Jinja2
environment with autoescape on, one base layout, and the style sheets and scripts they inline.

Templates live in ``argus/resources/templates`` (every page extends ``base.html.j2``), style sheets
and scripts in ``argus/resources/web``; a page inlines them, so it stays one self-contained file. Every
value a template writes is escaped by markupsafe (:func:`escape`, also what the few fragments built
in Python use), except markup (``Markup``, a fragment such as ``argus.output.view.render_text``'s).

Every page carries a Content-Security-Policy (:func:`content_security_policy`) as the first element of its
``<head>``, added by :func:`render_page`: it runs the scripts the templates inline with the filter
``inline_script`` (each allowed by the SHA-256 of its exact text) and nothing else, applies the style
elements they inline with ``inline_style`` (by hash, likewise) and no style attribute (the frontier report:
the one plotly.js writes, by hash), loads images only from ``data:`` URLs and nothing from any URL, so
markup that got past the escaping would still run nothing and fetch nothing.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources

from jinja2 import Environment, PackageLoader, StrictUndefined, pass_context, select_autoescape
from jinja2.runtime import Context
from markupsafe import Markup, escape

__all__ = ["CspSources", "Markup", "content_security_policy", "escape", "hash_source", "json_script", "money",
           "render_page", "resource", "with_csp"]


@functools.cache
def resource(name: str) -> Markup:
    """The file ``argus/resources/web/<name>`` (a style sheet or script a page inlines), as markup."""
    return Markup((resources.files("argus") / "resources" / "web" / name).read_text(encoding="utf-8"))


def json_script(data: object, element_id: str) -> Markup:
    """``data`` as a ``<script type="application/json">`` block a page's script reads with ``JSON.parse``.

    Every ``<``, ``>`` and ``&`` is written as its JSON escape (``\\u003c`` …), and so are U+2028 and
    U+2029: text from a complaint or an evolved prompt (``</script>``, ``<!--``, ``<img onerror=…>``)
    can neither end the block nor be read as markup; ``JSON.parse`` gives the text back unchanged.
    """
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for char in "<>&\u2028\u2029":
        raw = raw.replace(char, f"\\u{ord(char):04x}")
    return Markup(f'<script type="application/json" id="{escape(element_id)}">{raw}</script>')


def _short(s: object, n: int) -> str:
    s = " ".join(str(s).split())
    return s if len(s) <= n else s[: n - 1] + "…"


def money(v: float) -> str:
    """A cost as the pages write it: "$0.0123" under a dollar, "$4.56" from one."""
    return f"${v:.4f}" if v < 1 else f"${v:.2f}"


_PAGES = Environment(
    loader=PackageLoader("argus", "resources/templates"),
    autoescape=select_autoescape(enabled_extensions=("html.j2",), default=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
_PAGES.globals["resource"] = resource
_PAGES.filters.update(
    short=_short,                   # whitespace collapsed, cut to n characters with "…"
    money=money,                   # "$0.0123", "$4.56"
    thousands="{:,}".format,        # 12,345
    coord="{:.1f}".format,          # an SVG coordinate
    json_text=functools.partial(json.dumps, ensure_ascii=False),
)


_CSP_KEY = "_csp_sources"
"""The name under which :func:`render_page` hands a page's :class:`CspSources` to the filters that fill it."""


def hash_source(text: str) -> str:
    """The CSP source ``'sha256-…'`` that allows an inline script or style element holding exactly ``text``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


@dataclass
class CspSources:
    """What a page's policy allows: the hashes of the scripts and style elements its templates inlined (through
    the filters ``inline_script`` and ``inline_style``), and what its library adds (``style_src``: style
    elements, as CSP sources; ``style_attributes``: the exact text of style attributes; ``connect_src``: what its
    script may fetch, as CSP sources, ``'self'`` for the page of a local server such as ``argus annotate serve``;
    nothing by default)."""

    scripts: list[str] = field(default_factory=list)
    styles: list[str] = field(default_factory=list)
    style_src: Sequence[str] = ()
    style_attributes: Sequence[str] = ()
    connect_src: Sequence[str] = ()


def content_security_policy(sources: CspSources) -> str:
    """The Content-Security-Policy of a page: ``default-src 'none'`` (no fetch, frame, font, worker or
    connection of any kind), the scripts and style elements its templates inlined, by hash (plus
    ``sources.style_src``), no style attribute but those whose exact text is one of
    ``sources.style_attributes`` (by hash, ``'unsafe-hashes'``), images from ``data:`` only, no ``<base>``, no
    plugin, no form submission.

    The hashes are of the texts the templates passed to ``inline_script`` and ``inline_style``, not of
    whatever ``<script>`` the rendered page holds: markup that got past the escaping, a script or a style
    element added or altered afterwards, an event-handler attribute or a ``javascript:`` URL matches no hash
    and is blocked (and reported: a CSP violation on the console). A ``<script type="application/json">``
    block is data a browser never executes and needs none. ``form-action`` and ``base-uri`` do not fall back
    to ``default-src``, hence named.
    """
    script_src = " ".join(dict.fromkeys(sources.scripts)) or "'none'"
    style_elem = " ".join(dict.fromkeys([*sources.styles, *sources.style_src])) or "'none'"
    attrs = dict.fromkeys(map(hash_source, sources.style_attributes))
    style_attr = " ".join(["'unsafe-hashes'", *attrs]) if attrs else "'none'"
    return "; ".join([
        "default-src 'none'",
        f"script-src {script_src}",
        f"style-src {style_elem}",
        f"style-src-attr {style_attr}",
        "img-src data:",
        *([f"connect-src {' '.join(dict.fromkeys(sources.connect_src))}"] if sources.connect_src else []),
        "base-uri 'none'",
        "object-src 'none'",
        "form-action 'none'",
    ])


def _sources(ctx: Context) -> CspSources:
    sources = ctx.get(_CSP_KEY)
    if not isinstance(sources, CspSources):
        raise RuntimeError("inline_script and inline_style work only in a page rendered by render_page")
    return sources


def _inline(tag: str, text: str, hashes: list[str]) -> Markup:
    """``text`` as a ``<tag>`` element, its SHA-256 added to ``hashes`` (the page policy's list for it)."""
    text = str(text)
    ends = r"</script|<!--" if tag == "script" else r"</style"
    if re.search(ends, text, flags=re.IGNORECASE):
        raise ValueError(f"a {tag} holding {ends.replace('|', ' or ')!r} cannot be inlined into a page")
    hashes.append(hash_source(text))
    return Markup(f"<{tag}>{text}</{tag}>")


@pass_context
def inline_script(ctx: Context, text: str) -> Markup:
    """The filter ``inline_script``: ``text`` (a script of ``argus/resources/web``, the plotly.js bundle) as a
    ``<script>`` element the page's policy allows by the SHA-256 of exactly ``text``."""
    return _inline("script", text, _sources(ctx).scripts)


@pass_context
def inline_style(ctx: Context, text: str) -> Markup:
    """The filter ``inline_style``: ``text`` (style sheets of ``argus/resources/web``, a page's own rules) as a
    ``<style>`` element the page's policy allows by the SHA-256 of exactly ``text``."""
    return _inline("style", text, _sources(ctx).styles)


_PAGES.filters.update(
    inline_script=inline_script,    # <script>…</script>, allowed by the page's policy by its hash
    inline_style=inline_style,      # <style>…</style>, likewise
)


def with_csp(html: str, sources: CspSources) -> str:
    """``html`` with the :func:`content_security_policy` of ``sources`` as a ``<meta http-equiv>``, the first
    element of its ``<head>`` (the first ``<head>`` of a page made from ``base.html.j2``, which comes before
    any text a page shows)."""
    policy = content_security_policy(sources)
    if set(policy) & set('"<>&'):  # hashes and keywords only: nothing to escape in the attribute
        raise ValueError(f"not a source list a page's policy can hold: {policy}")
    meta = f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
    head = html.find("<head>")
    if head < 0:
        raise ValueError("the page has no <head> to hold its Content-Security-Policy")
    cut = head + len("<head>")
    return html[:cut] + meta + html[cut:]


def render_page(template: str, *, style_src: Sequence[str] = (), style_attributes: Sequence[str] = (),
                connect_src: Sequence[str] = (), **context: object) -> str:
    """The page ``template`` (a file of ``argus/resources/templates``) rendered with ``context``, with its
    Content-Security-Policy (:func:`with_csp`): the scripts and style elements the templates inlined with the
    filters ``inline_script`` and ``inline_style`` by hash, ``style_src`` and ``style_attributes`` (what the
    page's library adds, see :class:`CspSources`) and ``connect_src`` (what its script may fetch: nothing by default).

    Autoescape is on: every value a template writes is escaped, so it is shown as text, except markup
    (``Markup``), which is written as it is. A name the template uses but ``context`` lacks is an
    error, not an empty string.
    """
    sources = CspSources(style_src=tuple(style_src), style_attributes=tuple(style_attributes),
                         connect_src=tuple(connect_src))
    return with_csp(_PAGES.get_template(template).render(**context, **{_CSP_KEY: sources}), sources)
