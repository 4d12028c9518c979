"""No finding on the repository's examples that docs/analysis.md does not explain."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cepflow.analysis import analyze

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*/*")
                  if p.suffix in (".vepl", ".epl"))


def _set(path: Path) -> list[Path]:
    """The pattern set a file belongs to: a folder's ``properties`` file is read with the
    application it states properties of (``motorbike/properties.epl`` with
    ``motorbike/motorbike.epl``, 003 §V.C), every other file alone."""
    if path.stem == "properties":
        return [path.parent / f"{path.parent.name}{path.suffix}", path]
    return [path]

#: (example folder, code, the node the finding is about), as docs/analysis.md's table lists
EXPLAINED = {
    ("motorbike", "unbounded-partial-matches", "Accident"),
    ("contractions", "unbounded-partial-matches", "Duration"),
    ("every", "unbounded-partial-matches", "every2"),
    ("gesture", "unbounded-partial-matches", "ForwardGesture"),
    ("gesture", "unused-type", "RightHandAboveHeadFound"),
    ("gesture", "unused-type", "RightHandAboveHeadLost"),
    ("cps", "unbounded-partial-matches", "tolerationRange"),
    ("cps", "unused-type", "validModel"),
}


def _about(message: str, names: set[str]) -> str:
    found = [n for n in names if re.search(rf"\b{re.escape(n)}\b", message)]
    return min(found, key=message.index)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_findings_on_examples_are_the_explained_ones(path: Path) -> None:
    a = analyze(_set(path))
    names = set(a.graph.nodes)
    got = {(path.parent.name, f.code, _about(f.message, names)) for f in a.findings}
    assert got <= EXPLAINED


def test_every_explained_finding_occurs_and_is_in_the_docs() -> None:
    seen = set()
    for path in EXAMPLES:
        a = analyze(_set(path))
        names = set(a.graph.nodes)
        seen |= {(path.parent.name, f.code, _about(f.message, names)) for f in a.findings}
    assert seen == EXPLAINED
    docs = (ROOT / "docs" / "analysis.md").read_text(encoding="utf-8")
    table = docs[docs.index("### Findings on the repository's examples"):]
    for folder, code, name in EXPLAINED:
        row = next((ln for ln in table.splitlines()
                    if ln.startswith(f"| {folder} | `{code}`") and name in ln), None)
        assert row is not None, (folder, code, name)
