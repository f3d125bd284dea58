"""A tiny template: every text is escaped where it enters an element; only ``Markup`` (what these
functions return) passes through as it is. Text from a spec, a checkout or a log is never markup."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence


class Markup(str):
    """HTML built here, already escaped."""


Content = str | Markup | Iterable["Content"] | None


def escape(text: object) -> Markup:
    return text if isinstance(text, Markup) else Markup(html.escape(str(text), quote=True))


def render(content: Content) -> Markup:
    if content is None:
        return Markup("")
    if isinstance(content, str):
        return escape(content)
    return Markup("".join(render(part) for part in content))


def element(tag: str, *content: Content, **attributes: str | None) -> Markup:
    """``<tag a="v">content</tag>``; an attribute ``class_`` is ``class``; a None one is left out."""
    said = "".join(
        f' {name.rstrip("_").replace("_", "-")}="{escape(value)}"'
        for name, value in attributes.items()
        if value is not None
    )
    return Markup(f"<{tag}{said}>{render(content)}</{tag}>")


def table(head: Sequence[str], rows: Iterable[Sequence[Content]], class_: str | None = None) -> Markup:
    header = element("tr", [element("th", name) for name in head])
    body = [element("tr", [element("td", value) for value in row]) for row in rows]
    return element("table", element("thead", header), element("tbody", body), class_=class_)


STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 2em 3em;color:#1b1f24}
nav{padding:.8em 0;border-bottom:1px solid #ccd}nav a{margin-right:1.2em}
table{border-collapse:collapse;margin:.6em 0 1.4em}th,td{border:1px solid #ccd;padding:.25em .5em;
text-align:left;vertical-align:top}th{background:#f1f3f7}
.passed{color:#116329}.failed,.gate,.job,.expired{color:#b3261e;font-weight:600}.infra{color:#8a4b00}
.split{background:#fff4e5}.flaky{background:#fde8e8}.muted{color:#667}
pre{background:#f6f8fa;padding:.8em;overflow:auto;font-size:12px}
.del{color:#b3261e}.add{color:#116329}svg{background:#fff;border:1px solid #e3e6ec}
"""


def page(title: str, body: Content, depth: int = 0) -> str:
    """A whole page: its links relative (``depth``: folders below the site's root), so the site
    reads the same from ``file://``, a CI artifact or GitHub Pages."""
    up = "../" * depth
    links = [("index.html", "parity"), ("flaky.html", "streaks and flaky cells"), ("budget.html", "budget")]
    nav = element("nav", [element("a", name, href=up + target) for target, name in links])
    head = Markup(
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        # nothing is fetched and nothing runs: the page is its own text
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; "
        'img-src data:">'
    )
    parts = [head, element("title", title), element("style", Markup(STYLE)), Markup("</head><body>")]
    return render([*parts, nav, element("h1", title), body, Markup("</body></html>\n")])
