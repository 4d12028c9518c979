"""The report page core (cepflow.reports): one self-contained, escaped HTML file whose data and
drawings are inline, that makes no request of its own."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from cepflow.automaton.dot import RenderError, to_svg
from cepflow.reports import Page, json_for_script
from cepflow.reports.charts import histogram, steps, svg


class _Collect(HTMLParser):
    """Every tag with its attributes, and the text of each <script> by id."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.scripts: dict[str, str] = {}
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "script":
            self._in = a.get("id") or ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in:
            self.scripts[self._in] = self.scripts.get(self._in, "") + data


def build() -> Page:
    page = Page("Run of <P>", "events & matches")
    s = page.section("Summary")
    s.text("a <b>bold</b> & 'quoted' claim")
    s.table(["what", "count"], [("events", 1234567), ("ratio", 0.25), ("none", None)],
            numeric=[1])
    fig = steps({"P": ([0, 1, 2], [1, 2, 3])}, "matches", "time", "count")
    page.section("Matches over time").svg(svg(fig), caption="cumulative <matches>")
    page.section("Counts").svg(svg(histogram([1, 2, 2, 3], "h", "count")))
    page.add_data("matches", {"text": "</script><script>alert(1)</script>",
                              "nan": float("nan"), "line": "a\u2028b"})
    return page


def test_the_page_is_one_escaped_file_without_requests(tmp_path: Path) -> None:
    path = build().write(tmp_path / "r.html")
    text = path.read_text(encoding="utf-8")
    assert not (tmp_path / ".r.html.part").exists()
    p = _Collect()
    p.feed(text)
    # text from data never becomes markup
    assert "&lt;b&gt;bold&lt;/b&gt;" in text and "Run of &lt;P&gt;" in text
    assert not any(t == "b" for t, _ in p.tags)
    assert [a.get("id") for t, a in p.tags if t == "script"].count("matches") == 1
    # nothing is fetched: no attribute names another document (XML namespaces are names,
    # not requests), and the page's policy forbids requests anyway
    for tag, attrs in p.tags:
        for key, v in attrs.items():
            if v and not key.startswith("xmlns") and re.match(r"\s*(https?:|//|file:)", v):
                raise AssertionError((tag, key, v))
    assert "default-src 'none'" in text
    assert "<metadata>" not in text
    # the data round-trips, the script cannot be closed from inside it
    data = json.loads(p.scripts["matches"])
    assert data == {"text": "</script><script>alert(1)</script>", "nan": None,
                    "line": "a\u2028b"}
    assert text.count("<svg") == 2 and "<?xml" not in text
    assert "1,234,567" in text


def test_json_for_script_escapes_what_would_end_or_break_a_script() -> None:
    out = json_for_script(["</x>", "\u2028", float("inf")])
    assert "</" not in out and "\u2028" not in out and json.loads(out) == ["</x>", "\u2028",
                                                                            None]


def test_sections_get_unique_anchors_and_bad_names_are_refused() -> None:
    page = Page("t")
    assert [page.section("A b").anchor, page.section("A b").anchor] == ["a-b", "a-b-2"]
    with pytest.raises(ValueError):
        page.add_data("x y", 1)
    with pytest.raises(ValueError):
        page.use_script("../secret.js")


def test_graphviz_draws_svg_or_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn = to_svg("digraph { a -> b }")
    assert drawn.lstrip().startswith("<?xml") and "<svg" in drawn
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(RenderError, match="Graphviz"):
        to_svg("digraph { a -> b }")
