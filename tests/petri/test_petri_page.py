"""The step-through page in a real browser: Debian's chromium, headless, driven by Playwright
(no browser download: scripts/setup.sh installs chromium with apt-get)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cepflow.inputs import read_events
from cepflow.loader import load
from cepflow.petri.step_page import step_through_page
from cepflow.petri.translate import translate
from cepflow.reports import browser

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

pytestmark = pytest.mark.skipif(browser.missing() is not None,
                                reason=f"needs {browser.missing()}")


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    prog = load(EXAMPLES / "every" / "every.epl")
    events = list(read_events(EXAMPLES / "every" / "events.jsonl", prog.schemas))
    tr = translate(prog, events)
    sim = tr.simulator(seed=0)
    sim.run()
    path = tmp_path_factory.mktemp("page") / "every.html"
    step_through_page(tr, sim, "every.epl").write(path)
    return path, sim.steps


def test_the_page_steps_through_the_run_in_chromium(page_file: tuple[Path, int]) -> None:
    path, n = page_file
    requests: list[str] = []
    with browser.launch() as chromium:
        page = chromium.new_page()
        page.on("request", lambda r: requests.append(r.url))
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        assert page.text_content("#pn-step") == f"step 0 of {n}"
        assert page.text_content("#pn-fired") == "(initial marking)"
        # the input events are the tokens of the event place ME at step 0
        assert page.locator("g#p\\:ME text.pn-count").text_content() == "12"
        page.click("#pn-next")
        assert page.text_content("#pn-step") == f"step 1 of {n}"
        assert page.text_content("#pn-fired") == "stream.peek.ME"
        assert page.locator("g[id='t:stream.peek.ME']").get_attribute("class") \
            .split().count("pn-fired") == 1
        page.click("#pn-next")
        page.click("#pn-back")
        assert page.text_content("#pn-step") == f"step 1 of {n}"
        # the slider goes to the end: every1's place holds its three published matches
        page.locator("#pn-slider").fill(str(n))
        assert page.text_content("#pn-step") == f"step {n} of {n}"
        assert page.locator("g[id='p:every1'] text.pn-count").text_content() == "3"
        rows = page.locator("#pn-tokens tbody tr").all_text_contents()
        every2 = next(r for r in rows if r.startswith("every2"))
        assert every2.count("`(") == 4 and "[7,8]" in every2
        # and back to the start: the marking is the initial one again
        page.locator("#pn-slider").fill("0")
        assert page.locator("g[id='p:every1'] text.pn-count").text_content() == ""
        assert page.locator("g#p\\:ME text.pn-count").text_content() == "12"
        assert not errors
    # self-contained: nothing but the page itself was requested
    assert requests == [path.as_uri()]


def test_a_long_input_is_counted_not_listed(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from cepflow.petri import step_page

    monkeypatch.setattr(step_page, "MAX_TOKENS", 5)
    prog = load(EXAMPLES / "every" / "every.epl")
    tr = translate(prog, list(read_events(EXAMPLES / "every" / "events.jsonl", prog.schemas)))
    sim = tr.simulator(seed=0)
    sim.run()
    path = tmp_path / "every.html"
    step_through_page(tr, sim, "every.epl").write(path)
    assert "list their first ones and count the rest" in path.read_text()
    with browser.launch() as chromium:
        page = chromium.new_page()
        page.goto(path.as_uri())
        me = page.locator("g#p\\:ME text.pn-count")
        assert me.text_content() == "12"
        assert "… 7 more" in page.locator("#pn-tokens tbody").text_content()
        page.locator("#pn-slider").fill(str(sim.steps))
        assert me.text_content() == ""  # every input event was read, listed or not
        page.locator("#pn-slider").fill("0")
        assert me.text_content() == "12"
