"""The project's HTML pages (``argus view``'s page and index, the frontier report): one Jinja2
environment with autoescape on, one base layout, and the style sheets and scripts they inline.

Templates live in ``argus/resources/templates`` (every page extends ``base.html.j2``), style sheets
and scripts in ``argus/resources/web``; a page inlines them, so it stays one self-contained file. Every
value a template writes is escaped by markupsafe (:func:`escape`, also what the few fragments built
in Python use), except markup (``Markup``, a fragment such as ``argus.view.render_text``'s).

Every page carries a Content-Security-Policy (:func:`content_security_policy`) as the first element of its
``<head>``, computed by :func:`render_page` over the rendered page: it runs the page's own inline scripts
(each allowed by the SHA-256 of its exact text) and nothing else, applies its own ``<style>`` elements (by
hash, likewise) and no style attribute (the frontier report: those plotly.js writes, by hash), loads images
only from ``data:`` URLs and nothing from any URL, so markup that got past the escaping would still run
nothing and fetch nothing.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from collections.abc import Sequence
from importlib import resources

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

__all__ = ["Markup", "content_security_policy", "escape", "hash_source", "json_script", "money", "render_page",
           "resource", "with_csp"]


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


_SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
_STYLE = re.compile(r"<style\b[^>]*>(.*?)</style\s*>", re.IGNORECASE | re.DOTALL)
_TYPE = re.compile(r"""\btype\s*=\s*["']?([^"'\s>]*)""", re.IGNORECASE)
_JS_TYPES = {"", "text/javascript", "application/javascript", "module"}


def hash_source(text: str) -> str:
    """The CSP source ``'sha256-…'`` that allows an inline script or style element holding exactly ``text``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy(html: str, *, style_src: Sequence[str] = (), style_attributes: Sequence[str] = ()) -> str:
    """The Content-Security-Policy of the page ``html``: ``default-src 'none'`` (no fetch, frame, font,
    worker or connection of any kind), its inline scripts by hash, its ``<style>`` elements by hash (plus
    ``style_src``, what a page's library needs), no style attribute but those whose exact text is one of
    ``style_attributes`` (by hash, ``'unsafe-hashes'``), images from ``data:`` only, no ``<base>``, no
    plugin, no form submission.

    Each hash is computed over the exact text of an element of the rendered page. A ``<script
    type="application/json">`` block is data a browser never executes, so it needs none; a script or
    style element added or altered later (by markup that got past the escaping, or by an edit of the
    file) matches no hash and is blocked. ``form-action`` and ``base-uri`` do not fall back to
    ``default-src``, hence named.
    """
    scripts: list[str] = []
    for attrs, body in _SCRIPT.findall(html):
        kind = _TYPE.search(attrs)
        if (kind.group(1).lower() if kind else "") in _JS_TYPES:
            scripts.append(hash_source(body))
    styles = [hash_source(body) for body in _STYLE.findall(html)]
    script_src = " ".join(dict.fromkeys(scripts)) or "'none'"
    style_elem = " ".join(dict.fromkeys([*styles, *style_src])) or "'none'"
    style_attr = " ".join(["'unsafe-hashes'", *dict.fromkeys(map(hash_source, style_attributes))]) if style_attributes \
        else "'none'"
    return "; ".join([
        "default-src 'none'",
        f"script-src {script_src}",
        f"style-src {style_elem}",
        f"style-src-attr {style_attr}",
        "img-src data:",
        "base-uri 'none'",
        "object-src 'none'",
        "form-action 'none'",
    ])


def with_csp(html: str, *, style_src: Sequence[str] = (), style_attributes: Sequence[str] = ()) -> str:
    """``html`` with its :func:`content_security_policy` as a ``<meta http-equiv>``, the first element of its
    ``<head>`` (the first ``<head>`` of a page made from ``base.html.j2``, which comes before any text a
    page shows)."""
    policy = content_security_policy(html, style_src=style_src, style_attributes=style_attributes)
    assert not set(policy) & set('"<>&'), policy  # hashes and keywords only: nothing to escape in the attribute
    meta = f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
    head = html.find("<head>")
    if head < 0:
        raise ValueError("the page has no <head> to hold its Content-Security-Policy")
    cut = head + len("<head>")
    return html[:cut] + meta + html[cut:]


def render_page(template: str, *, style_src: Sequence[str] = (), style_attributes: Sequence[str] = (),
                **context: object) -> str:
    """The page ``template`` (a file of ``argus/resources/templates``) rendered with ``context``, with its
    Content-Security-Policy (:func:`with_csp`; ``style_src`` and ``style_attributes``: the style elements and
    attributes the page's library adds).

    Autoescape is on: every value a template writes is escaped, so it is shown as text, except markup
    (``Markup``), which is written as it is. A name the template uses but ``context`` lacks is an
    error, not an empty string.
    """
    return with_csp(_PAGES.get_template(template).render(**context), style_src=style_src,
                    style_attributes=style_attributes)
