"""The run reports of the case studies, written once per test session by ``cepflow run
--report`` (the page tests and the browser tests read them), and a headless Chromium shared by
the browser tests (started once, like the Spark session)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cepflow.cli.main import app
from report_cases import CASES, CHROMIUM, CHROMIUM_ARGS, EXAMPLES, CaseReport


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
    """One headless Chromium (Debian's, never a downloaded one) for the session's browser
    tests; skipped where it or Playwright is missing (scripts/setup.sh installs both)."""
    exe = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
    try:
        from playwright import sync_api
    except ImportError:
        sync_api = None
    if sync_api is None or exe is None:
        missing = "Playwright" if sync_api is None else "Chromium"
        if os.environ.get("CI"):  # (CI runs scripts/setup.sh: there it must be installed)
            pytest.fail(f"{missing} is not installed (scripts/setup.sh installs it)")
        pytest.skip(f"{missing} is not installed (scripts/setup.sh installs it)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()
