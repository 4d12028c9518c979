"""The case studies whose run reports the report tests check (tests/reports), and how to read
a report's data."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
#: screenshots of the pages (gitignored): looked at by whoever changes the report
ARTIFACTS = ROOT / "test-artifacts"

#: name -> (pattern file, event file, extra options) of each case study
CASES = {
    "gesture": ("gesture/gesture.vepl", "gesture/events.jsonl", ()),
    "motorbike": ("motorbike/motorbike.epl", "motorbike/accident.jsonl", ()),
    "temperature": ("temperature/alerts.epl", "temperature/alerts.jsonl", ()),
    "contractions": ("contractions/contractions.epl", "contractions/patients.jsonl", ()),
    "every": ("every/every.epl", "every/events.jsonl", ()),
}


@dataclass
class CaseReport:
    """A case study's report and the run's own output."""

    name: str
    html: Path
    matches: list[dict[str, Any]]

    def data(self) -> dict[str, Any]:
        """The page's ``run-data`` JSON."""
        return run_data(self.html.read_text(encoding="utf-8"))


def run_data(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="run-data">(.*?)</script>', page,
                      re.S)
    assert found is not None, "no run-data in the page"
    return json.loads(found.group(1))
