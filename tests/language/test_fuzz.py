"""A small seeded fuzz run in the suite: every input ends in a located diagnostic or is
accepted, within a time limit (issue 16 item 6).

The campaign is scripts/fuzz_patterns.py's: mutations of the shipped pattern, EPL, query and
metamodel files, and grammar-generated deep nesting. That script runs it for minutes with
random seeds; here two fixed seeds keep the suite deterministic and fast.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fuzz_patterns.py"


def _fuzz():  # type: ignore[no-untyped-def]
    """scripts/fuzz_patterns.py as a module."""
    return load_script(SCRIPT, "fuzz_patterns", register=True)


fuzz = _fuzz()

#: seconds one input may take: the inputs take milliseconds (up to ~0.5 s for a 30 KB file
#: nested 3,000 deep on a busy machine); the hangs this catches took minutes
LIMIT = 10.0


def _report(findings: list) -> str:
    return "\n\n".join(f"{f.name} ({len(f.data)} bytes): {f.problem}" for f in findings[:3])


@pytest.mark.parametrize("seed", [16, 61])
def test_mutated_shipped_files_end_in_diagnostics(seed: int) -> None:
    findings = fuzz.campaign(seed, mutations=100, deep=0, limit=LIMIT)
    assert not findings, _report(findings)


@pytest.mark.parametrize("seed", [6, 66])
def test_deep_nesting_ends_in_diagnostics(seed: int) -> None:
    findings = fuzz.campaign(seed, mutations=0, deep=6, limit=LIMIT)
    assert not findings, _report(findings)


def test_the_campaign_covers_every_kind_of_file() -> None:
    names = [name for name, _ in fuzz.shipped_files()]
    for ext in (".vepl", ".epl", ".vql", ".mm"):
        assert any(n.endswith(ext) for n in names), ext
    import random

    deep = [fuzz.deep_input(random.Random(s))[0] for s in range(40)]
    assert any(n.endswith(".epl") for n in deep) and any(n.endswith(".vepl") for n in deep)


def test_a_crash_or_a_hang_is_a_finding() -> None:
    """The harness itself: an exception other than a diagnostic, and an input that runs past
    its limit, are reported — so the tests above can fail."""

    def crash(name: str, data: bytes) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    def hang(name: str, data: bytes) -> None:
        while True:
            pass

    def diagnosed(name: str, data: bytes) -> None:
        from cepflow.language.parser import parse

        parse("complexEvent {", name)

    found = fuzz.run_one("x.vepl", b"", 1.0, crash)
    assert found is not None and "RecursionError" in found.problem
    found = fuzz.run_one("x.vepl", b"", 0.2, hang)
    assert found is not None and found.problem == "timeout after 0.2 s"
    assert fuzz.run_one("x.vepl", b"", 1.0, diagnosed) is None
