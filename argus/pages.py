"""The project's HTML pages (``argus view``'s page and index, the frontier report): one Jinja2
environment with autoescape on, one base layout, and the style sheets and scripts they inline.

Templates live in ``argus/resources/templates`` (every page extends ``base.html.j2``), style sheets
and scripts in ``argus/resources/web``; a page inlines them, so it stays one self-contained file. Every
value a template writes is escaped by markupsafe (:func:`escape`, also what the few fragments built
in Python use), except markup (``Markup``, a fragment such as ``argus.view.render_text``'s).
"""

from __future__ import annotations

import functools
import json
from importlib import resources

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

__all__ = ["Markup", "escape", "json_script", "money", "render_page", "resource"]


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


def render_page(template: str, **context: object) -> str:
    """The page ``template`` (a file of ``argus/resources/templates``) rendered with ``context``.

    Autoescape is on: every value a template writes is escaped, so it is shown as text, except markup
    (``Markup``), which is written as it is. A name the template uses but ``context`` lacks is an
    error, not an empty string.
    """
    return _PAGES.get_template(template).render(**context)
