"""One self-contained HTML page: the building block of every cepflow report (docs/reports.md).

A :class:`Page` is a title, a summary line and sections; a section holds blocks — paragraphs,
tables, inline SVG (Graphviz drawings, matplotlib charts), preformatted text, and data for the
page's scripts as JSON. :meth:`Page.html` writes one file with its stylesheet and scripts
inlined: no network access, no CDN, it opens from a ``file://`` URL. Every text is escaped;
the only markup that goes in as it is comes from cepflow itself (SVG drawn by Graphviz or
matplotlib, the scripts shipped in ``cepflow/reports/``), never from an input file.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any


def static_text(name: str) -> str:
    """A stylesheet or script shipped with this package (``cepflow/reports/<name>``)."""
    if not re.fullmatch(r"[\w-]+\.(css|js)", name):
        raise ValueError(f"{name!r} is not a stylesheet or script of cepflow.reports")
    return (resources.files("cepflow.reports") / name).read_text(encoding="utf-8")


def _id(text: str) -> str:
    """A stable HTML id from a heading."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def json_for_script(value: Any) -> str:
    """``value`` as JSON safe inside ``<script type="application/json">``: ``</`` and the line
    separators JavaScript rejects are escaped, non-finite numbers are written as null."""
    text = json.dumps(_nulls(value), separators=(",", ":"), default=str, allow_nan=False,
                      ensure_ascii=False)
    return (text.replace("</", "<\\/").replace("\u2028", "\\u2028")
            .replace("\u2029", "\\u2029"))


def _nulls(value: Any) -> Any:
    """``value`` with NaN and infinities replaced by None (JSON has no such numbers)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _nulls(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_nulls(v) for v in value]
    return value


@dataclass
class Section:
    """A titled part of a page; blocks are HTML fragments made by its methods."""

    title: str
    anchor: str
    blocks: list[str] = field(default_factory=list)

    def text(self, text: str, css: str | None = None) -> Section:
        """A paragraph of plain text (escaped)."""
        cls = f' class="{html.escape(css)}"' if css else ""
        self.blocks.append(f"<p{cls}>{html.escape(text)}</p>")
        return self

    def pre(self, text: str) -> Section:
        """Preformatted text (escaped): diagnostics, pattern source, traces."""
        self.blocks.append(f"<pre>{html.escape(text)}</pre>")
        return self

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[Any]],
              numeric: Sequence[int] = (), css: str | None = None,
              caption: str | None = None) -> Section:
        """A table of plain values (escaped); columns listed in ``numeric`` align right."""
        right = set(numeric)
        out = [f'<table class="{html.escape(css or "data")}">']
        if caption:
            out.append(f"<caption>{html.escape(caption)}</caption>")
        out.append("<thead><tr>" + "".join(
            f'<th{" class=num" if i in right else ""}>{html.escape(str(h))}</th>'
            for i, h in enumerate(headers)) + "</tr></thead><tbody>")
        for row in rows:
            out.append("<tr>" + "".join(
                f'<td{" class=num" if i in right else ""}>{html.escape(_cell(v))}</td>'
                for i, v in enumerate(row)) + "</tr>")
        out.append("</tbody></table>")
        self.blocks.append("".join(out))
        return self

    def svg(self, svg: str, caption: str | None = None, css: str = "figure",
            attrs: Mapping[str, str] | None = None) -> Section:
        """An SVG drawing made by cepflow (Graphviz, matplotlib), inlined without its XML
        prolog; ``caption`` is escaped, and so are ``attrs``, more attributes of its figure
        (e.g. ``data-pattern`` for a script, ``hidden``; a ``class`` there replaces ``css``)."""
        start = svg.find("<svg")
        if start < 0:
            raise ValueError("not an SVG document")
        # (matplotlib's RDF metadata names its maker: nothing a reader of the page needs)
        body = re.sub(r"<metadata>.*?</metadata>", "", svg[start:], flags=re.S)
        cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
        more = {"class": css, **(attrs or {})}
        attr = "".join(f' {html.escape(k)}="{html.escape(v)}"' if v else f" {html.escape(k)}"
                       for k, v in more.items())
        self.blocks.append(f"<figure{attr}>{body}{cap}</figure>")
        return self

    def html(self, fragment: str) -> Section:
        """Markup built by cepflow's own report code (never text read from an input file:
        escape that with :func:`html.escape` first)."""
        self.blocks.append(fragment)
        return self


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


@dataclass
class Page:
    """A self-contained report page (see the module docstring)."""

    title: str
    subtitle: str = ""
    sections: list[Section] = field(default_factory=list)
    #: name -> JSON data for the page's scripts (``<script type="application/json">``)
    data: dict[str, Any] = field(default_factory=dict)
    #: shipped scripts (cepflow/reports/<name>.js) included after the data, in order
    scripts: list[str] = field(default_factory=list)
    #: extra stylesheet text (the shipped report.css always comes first)
    style: str = ""

    def section(self, title: str) -> Section:
        anchor = _id(title)
        taken = {s.anchor for s in self.sections}
        k = 2
        while anchor in taken:
            anchor = f"{_id(title)}-{k}"
            k += 1
        s = Section(title, anchor)
        self.sections.append(s)
        return s

    def add_data(self, name: str, value: Any) -> None:
        """Data the page's scripts read: ``JSON.parse(document.getElementById(name)...)``."""
        if not re.fullmatch(r"[A-Za-z][\w-]*", name):
            raise ValueError(f"data name {name!r}: letters, digits, - and _ only")
        self.data[name] = value

    def use_script(self, name: str) -> None:
        if name not in self.scripts:
            static_text(name)  # (fails now if it is not shipped)
            self.scripts.append(name)

    def html(self) -> str:
        """The whole page as one HTML document."""
        nav = "".join(f'<a href="#{s.anchor}">{html.escape(s.title)}</a>'
                      for s in self.sections)
        body = "".join(
            f'<section id="{s.anchor}"><h2>{html.escape(s.title)}</h2>{"".join(s.blocks)}'
            "</section>" for s in self.sections)
        data = "".join(f'<script type="application/json" id="{name}">'
                       f"{json_for_script(value)}</script>"
                       for name, value in self.data.items())
        scripts = "".join(f"<script>{static_text(n)}</script>" for n in self.scripts)
        sub = f'<p class="subtitle">{html.escape(self.subtitle)}</p>' if self.subtitle else ""
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                # no request may leave the page: images and scripts are inline only
                "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                "img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
                f"<title>{html.escape(self.title)}</title>"
                f"<style>{static_text('report.css')}{self.style}</style></head><body>"
                f"<header><h1>{html.escape(self.title)}</h1>{sub}<nav>{nav}</nav></header>"
                f"<main>{body}</main>{data}{scripts}</body></html>\n")

    def write(self, path: str | Path) -> Path:
        """Write the page (UTF-8); the file appears only when complete."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.part")
        tmp.write_text(self.html(), encoding="utf-8")
        tmp.replace(path)
        return path
