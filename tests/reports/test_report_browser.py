"""The case studies' run reports in a real browser (headless Chromium driven by Playwright, one
browser for the session): each page loads with no console error and no request, its timeline
draws one band per match of the run's output, the step-through's next/back move the
highlighted state and update the bindings, the page's time formatter agrees with
cepflow.timefmt; a screenshot of each page goes to test-artifacts/ (gitignored)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from cepflow.timefmt import instant_text
from report_cases import ARTIFACTS, CASES


class Opened:
    """A report open in a page, with every request it tried and every console error."""

    def __init__(self, browser: Any, path: Any) -> None:
        self.page = browser.new_page(viewport={"width": 1300, "height": 900})
        self.requests: list[str] = []
        self.errors: list[str] = []
        own = path.as_uri()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error"
                     else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def route(r: Any) -> None:
            if r.request.url == own:  # (the page itself)
                r.continue_()
            else:
                self.requests.append(r.request.url)
                r.abort()

        self.page.route("**/*", route)
        self.page.goto(own)

    def current(self) -> list[str]:
        """The highlighted states of the automaton on show."""
        return self.page.eval_on_selector_all(
            "#automata .automaton:not([hidden]) g.node.current > title",
            "ts => ts.map(t => t.textContent)")

    def bindings(self) -> list[list[str]]:
        return self.page.eval_on_selector_all(
            "#step .step-bindings table tbody tr",
            "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))")


@pytest.fixture
def opened(browser: Any, case_reports: dict) -> Iterator[Any]:
    pages: list[Opened] = []

    def open_(name: str) -> Opened:
        pages.append(Opened(browser, case_reports[name].html))
        return pages[-1]

    yield open_
    for p in pages:
        p.page.close()


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_report_loads_alone_and_draws_a_band_per_match(opened, case_reports, name: str
                                                           ) -> None:
    page = opened(name)
    assert page.errors == [] and page.requests == []
    assert page.page.locator("#run-timeline .span").count() == len(case_reports[name].matches)
    assert page.page.locator("#run-timeline circle.ev").count() > 0
    assert page.current()  # the first story's first state is highlighted
    ARTIFACTS.mkdir(exist_ok=True)
    page.page.screenshot(path=str(ARTIFACTS / f"report-{name}.png"), full_page=True)


def test_next_and_back_walk_the_token_through_the_automaton(opened, case_reports) -> None:
    page = opened("motorbike")
    stories = case_reports["motorbike"].data()["stories"]
    story = next(i for i, s in enumerate(stories)
                 if s["pattern"] == "BlowOutTire" and s["outcome"] == "match")
    page.page.select_option("#story", str(story))
    assert page.current() == ["q1"]
    first = page.bindings()
    assert ["a1.motorbikeId", "3"] in first and not any(r[0].startswith("a2.") for r in first)
    assert page.page.locator("#back").is_disabled()
    page.page.click("#next")
    assert page.current() == ["f"]
    second = page.bindings()
    assert any(r[0] == "a2.speed" for r in second)
    assert page.page.locator("#step-no").text_content() == "step 2 of 3"
    page.page.click("#back")
    assert page.current() == ["q1"] and page.bindings() == first
    # the window's deadline is shown as people read it
    assert "2017-03-01T01:00:05.000Z" in page.page.locator("#step").text_content()
    assert page.errors == []


def test_a_click_on_a_band_steps_through_its_match_and_zoom_keeps_the_bands(opened) -> None:
    page = opened("gesture")
    total = page.page.locator("#run-timeline .span").count()
    page.page.locator("#run-timeline .span").nth(5).click()
    assert page.page.locator("#run-timeline .span.sel").count() == 1
    assert page.page.locator("#story").input_value() == "5"
    before = page.page.locator("#tl-range").text_content()
    page.page.click("#zoom-in")
    page.page.click("#zoom-in")
    assert page.page.locator("#tl-range").text_content() != before
    assert 0 < page.page.locator("#run-timeline .span").count() < total
    page.page.click("#zoom-reset")
    assert page.page.locator("#run-timeline .span").count() == total
    # the page writes times by cepflow.timefmt's rule
    for ts in (0, 1500, 1488330000000, 1714559712345.5):
        assert page.page.evaluate("ts => window.cepflowInstantText(ts)", ts) == instant_text(ts)
    assert page.errors == []
