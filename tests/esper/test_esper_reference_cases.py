"""Esper's own pattern conformance cases, run on cepflow.

Esper's regression suite (espertechinc/esper, ``regression-lib/.../suite/pattern``: the
``PatternOperator*``, ``PatternGuardTimerWithin``, ``PatternGuardTimerWithinOrMax``,
``PatternGuardWhile`` and ``PatternObserverTimerInterval`` classes)
runs each pattern over one stream, *event set one* — A1 B1 C1 B2 A2 D1 E1 F1 D2 B3 G1 D3, one
event a second from 1 s, the statement started at 0 — and names the matches each event causes
with the event each tag took. ``data/esper_reference_cases.json`` restates those expectations
(one entry per pattern, the types renamed ``A``…``G`` with one field ``id``) and says what
cepflow does with each:

* ``agree``: the same matches at the same events with the same tags — per event, on the token
  path (``fast_path=False``) and through ``Engine.run``;
* ``differs``: a documented decision gives another answer (``reason`` names it, ``ours`` pins
  cepflow's answer, so that a change of behaviour is seen here);
* ``refused``: the reader reports the form, with its line and column, instead of running it.

Tags bound to null (the branch of an ``or`` that did not match, the unused places of a
repetition) are left out on both sides. Esper's harness (PatternTestHarness.compareEvents)
checks only the tags a case names; where a case names none of a tag its pattern binds, the
entry's ``unnamed`` gives, per expected row, the event that tag takes by Esper's definition
(``(d=D) until a=A(id='A1')``: the match at A1 has ``a`` = A1), and the comparison stays
exact.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import cepflow
from cepflow.events.event import Event
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "esper_reference_cases.json").read_text())
SET_ONE = ["A1", "B1", "C1", "B2", "A2", "D1", "E1", "F1", "D2", "B3", "G1", "D3"]
SCHEMAS = "".join(f"create schema {t}(id string);\n" for t in "ABCDEFG")


def _program(pattern: str) -> Any:
    return cepflow.load_module(parse_epl(
        SCHEMAS + "@Name('P') select * from pattern [" + pattern + "];", "case.epl"))


def _tags(ce: Any) -> dict[str, str]:
    return {k[:-3]: v for k, v in ce.bindings.items() if k.endswith(".id") and v is not None}


def _events() -> list[Event]:
    return [Event(e[0], (e,), 1000 * (i + 1)) for i, e in enumerate(SET_ONE)]


def _per_event(pattern: str, fast_path: bool = True) -> list[list[Any]]:
    """The matches each event of set one causes (time passes to the event first, as
    Esper's harness advances its clock before sending), in detection order."""
    engine = cepflow.Engine(_program(pattern), start=0, fast_path=fast_path)
    return [[e.params[0], _tags(ce)] for e in _events() for ce in engine.process(e)]


def _batch(pattern: str) -> list[list[Any]]:
    """The same through ``Engine.run`` (kernels and the program split where they apply):
    each match at the first event at or after its time (a timer's match at its deadline)."""
    engine = cepflow.Engine(_program(pattern), start=0)
    times = [e.ts for e in _events()]
    out = []
    for ce in engine.run(_events()):
        at = next(i for i, t in enumerate(times) if t >= ce.ts)
        out.append([SET_ONE[at], _tags(ce)])
    return out


def _canon(rows: list[list[Any]]) -> list[str]:
    """The rows as a sorted list, tags bound to null left out on both sides (Esper's cases
    name ``b[1]`` null where a repetition took one event)."""
    return sorted(json.dumps([at, {k: v for k, v in tags.items() if v is not None}],
                             sort_keys=True) for at, tags in rows)


def _ids(status: str) -> list[Any]:
    return [pytest.param(c, id=c["pattern"]) for c in CASES if c["status"] == status]


def _expected(case: dict[str, Any]) -> list[str]:
    """Esper's rows of ``case`` with the tags its case leaves unnamed (module docstring)."""
    rows = case["expected"]
    more = case.get("unnamed", [{}] * len(rows))
    return _canon([[at, {**tags, **extra}] for (at, tags), extra in zip(rows, more, strict=True)])


@pytest.mark.parametrize("case", _ids("agree"))
def test_cepflow_agrees_with_esper(case: dict[str, Any]) -> None:
    expected = _expected(case)
    assert _canon(_per_event(case["pattern"])) == expected
    assert _canon(_per_event(case["pattern"], fast_path=False)) == expected
    assert _canon(_batch(case["pattern"])) == expected


@pytest.mark.parametrize("case", _ids("differs"))
def test_documented_differences_stay_as_documented(case: dict[str, Any]) -> None:
    assert case["reason"]
    assert _canon(case["expected"]) != _canon(case["ours"])
    assert _canon(_per_event(case["pattern"])) == _canon(case["ours"])
    assert _canon(_per_event(case["pattern"], fast_path=False)) == _canon(case["ours"])


@pytest.mark.parametrize("case", _ids("refused"))
def test_refused_forms_are_reported_with_their_place(case: dict[str, Any]) -> None:
    with pytest.raises(PatternSyntaxError) as info:
        _program(case["pattern"])
    d = info.value.diagnostics[0]
    assert d.file == "case.epl" and d.line is not None and d.col is not None
    assert case["reason"] in d.message


def test_the_cases_cover_the_suites() -> None:
    """Every suite's cases are here, each with one status (a case lost in an edit fails)."""
    by_suite: dict[str, int] = {}
    for c in CASES:
        assert c["status"] in ("agree", "differs", "refused")
        by_suite[c["suite"]] = by_suite.get(c["suite"], 0) + 1
    assert by_suite == {"PatternGuardTimerWithin": 33, "PatternObserverTimerInterval": 30,
                        "PatternOperatorAnd": 15, "PatternOperatorEvery": 5,
                        "PatternOperatorFollowedBy": 16, "PatternOperatorMatchUntil": 52,
                        "PatternOperatorNot": 13, "PatternOperatorOperatorMix": 6,
                        "PatternOperatorOr": 9, "PatternGuardTimerWithinOrMax": 17,
                        "PatternGuardWhile": 4}
