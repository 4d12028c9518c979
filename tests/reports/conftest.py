"""The run reports of the case studies, written once per test session by ``cepflow run
--report`` (the page tests and the browser tests read them), and a headless Chromium shared by
the browser tests (started once, like the Spark session)."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from cepflow.cli.main import app
from cepflow.reports import browser as reports_browser
from report_cases import CASES, EXAMPLES, CaseReport


@pytest.fixture(scope="session")
def case_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CaseReport]:
    folder = tmp_path_factory.mktemp("reports")
    runner = CliRunner()
    out = {}
    for name, (patterns, events, extra) in CASES.items():
        html, matches = folder / f"{name}.html", folder / f"{name}.jsonl"
        res = runner.invoke(app, ["run", str(EXAMPLES / patterns), "-i", str(EXAMPLES / events),
                                  "-o", str(matches), "--report", str(html), "--no-progress",
                                  *extra])
        assert res.exit_code == 0, res.output
        lines = matches.read_text(encoding="utf-8").splitlines()
        out[name] = CaseReport(name, html, [json.loads(x) for x in lines])
    return out


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium (the system's, never a downloaded one) for the session's browser
    tests; skipped where it or Playwright is missing, failed in CI (scripts/setup.sh installs
    both there)."""
    absent = reports_browser.missing()
    if absent is not None:
        if os.environ.get("CI"):
            pytest.fail(f"{absent} is not installed")
        pytest.skip(f"{absent} is not installed")
    with reports_browser.launch() as b:
        yield b
