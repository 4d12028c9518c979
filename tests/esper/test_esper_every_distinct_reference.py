"""Esper's own every-distinct regression cases, run on cepflow.

Esper's regression suite (espertechinc/esper, ``regression-lib/.../suite/pattern/
PatternOperatorEveryDistinct``) sends ``SupportBean(theString, intPrimitive)`` events one by one,
moves the clock, takes a *milestone* (the runtime's state saved and restored) and asserts after
each step the matches the listener got since the last assertion. The scenarios are restated here
step by step: ``theString like 'A%'`` as ``kind = 'A'`` (``kind`` is the string's first letter,
the one thing the filter reads), Esper's milestones as a save and restore of the engine through
JSON. Left out: the month-scoped
expiry (calendar months) and an array-valued key (cepflow's fields are scalars).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import cepflow
from cepflow.events.event import Event
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.runtime.state import restore_state, save_state

SCHEMA = "create schema SupportBean(theString string, intPrimitive int, kind string);\n"

#: a step: ("t", ms) moves the clock; ("e", theString, intPrimitive) sends an event; "m" a
#: milestone (save and restore); ("x", rows) the rows since the last check ([] = none)
Step = Any

SIMPLE = [("e", "E1", 0), ("x", [("E1",)]), ("e", "E1", 0), ("x", []), "m",
          ("e", "E1", 0), ("x", []), ("e", "E2", 0), ("x", [("E2",)]), "m",
          ("e", "E1", 0), ("e", "E2", 0), ("x", []), "m",
          ("e", "E1", 0), ("e", "E2", 0), ("x", []), ("e", "E3", 0), ("x", [("E3",)])]

WITH_TIME = [("t", 0), ("t", 15000), "m", ("e", "E1", 0), ("x", [("E1",)]),
             ("e", "E1", 0), ("x", []), "m", ("t", 18000), ("e", "E1", 0), ("x", []),
             ("e", "E2", 0), ("x", [("E2",)]), "m", ("t", 19999), ("e", "E1", 0), ("x", []),
             "m", ("t", 20000), ("e", "E1", 0), ("x", [("E1",)]), ("e", "E2", 0), ("x", []),
             "m", ("e", "E1", 0), ("x", []), ("e", "E2", 0), ("x", []), ("e", "E3", 0),
             ("x", [("E3",)])]

EXPIRE_SEEN = [("t", 0), "m", ("e", "A1", 1), ("x", [("A1",)]), "m", ("e", "A2", 1),
               ("x", []), "m", ("e", "A3", 2), ("x", [("A3",)]), "m", ("e", "A4", 1),
               ("e", "A5", 2), ("x", []), "m", ("t", 1000), ("e", "A4", 1), ("x", [("A4",)]),
               ("e", "A5", 2), ("x", [("A5",)]), "m", ("e", "A6", 1), ("t", 1999),
               ("e", "A7", 2), ("x", []), "m", ("t", 2000), ("e", "A7", 2), ("x", [("A7",)])]

OVER_FILTER = [("e", "E1", 1), ("x", [("E1",)]), "m", ("e", "E2", 1), ("x", []), "m",
               ("e", "E3", 2), ("x", [("E3",)]), "m", ("e", "E4", 3), ("x", [("E4",)]), "m",
               ("e", "E5", 2), ("e", "E6", 3), ("e", "E7", 1), ("x", []), "m",
               ("e", "E8", 0), ("x", [("E8",)])]

REPEAT_OVER_DISTINCT = [("e", "E1", 1), ("e", "E2", 1), ("x", []), "m", ("e", "E3", 2),
                        ("x", [("E1", "E3")]), "m", ("e", "E4", 3), ("e", "E5", 2), ("x", [])]

OVER_REPEAT = ["m", ("e", "E1", 1), "m", ("e", "E2", 1), ("x", [("E1", "E2")]), "m",
               ("e", "E3", 1), ("e", "E4", 2), ("x", []), ("e", "E5", 2), "m", ("e", "E6", 1),
               ("x", [("E5", "E6")])]

WITHIN_OVER_DISTINCT = [("t", 0), ("e", "E1", 1), ("x", [("E1",)]), "m", ("e", "E2", 1),
                        ("x", []), "m", ("e", "E3", 2), ("x", [("E3",)]), "m", ("t", 11000),
                        ("e", "E4", 3), ("x", []), "m", ("e", "E5", 1), ("x", [])]

OVER_WITHIN = [("t", 0), "m", ("e", "E1", 1), ("x", [("E1",)]), ("e", "E2", 1), ("x", []),
               "m", ("t", 5000), ("e", "E3", 2), ("x", [("E3",)]), "m", ("t", 10000),
               ("e", "E4", 1), ("x", []), ("e", "E5", 1), ("x", []), "m", ("e", "E6", 2),
               ("x", []), ("t", 15000), ("e", "E7", 2), ("x", []), "m", ("t", 20000),
               ("e", "E8", 2), ("x", []), "m", ("t", 25000), ("e", "E9", 1), ("x", []), "m",
               ("t", 50000), ("e", "E10", 1), ("x", [("E10",)]), ("e", "E11", 1), ("x", []),
               "m", ("e", "E12", 2), ("x", [("E12",)]), ("e", "E13", 2), ("x", [])]

OVER_AND = ["m", ("e", "A1", 1), ("x", []), "m", ("e", "B1", 10), ("x", [("A1", "B1")]), "m",
            ("e", "A2", 1), ("e", "B2", 10), ("x", []), ("e", "A3", 2), "m", ("e", "B3", 10),
            ("x", [("A3", "B3")]), ("e", "A4", 1), ("e", "B4", 20), ("x", [("A4", "B4")]), "m",
            ("e", "A5", 2), ("e", "B5", 10), ("x", []), "m", ("e", "A6", 2), ("e", "B6", 20),
            ("x", [("A6", "B6")]), "m", ("e", "A7", 2), ("e", "B7", 20), ("x", [])]

OVER_OR = ["m", ("e", "A1", 1), ("x", [("A1", None)]), "m", ("e", "B1", 2),
           ("x", [(None, "B1")]), "m", ("e", "B2", 1), ("e", "A2", 2), ("e", "A3", 2),
           ("e", "B3", 1), ("x", []), "m", ("e", "B4", 3), ("x", [(None, "B4")]), "m",
           ("e", "B5", 4), ("x", [(None, "B5")]), "m", ("e", "B6", 3), ("e", "A4", 3),
           ("e", "A5", 4), ("x", [])]

OVER_NOT = ["m", ("e", "A1", 1), ("x", [("A1",)]), "m", ("e", "A2", 1), ("x", []), "m",
            ("e", "A3", 2), ("x", [("A3",)]), "m", ("e", "B1", 1), ("x", []), "m",
            ("e", "A4", 1), ("x", [("A4",)]), "m", ("e", "A5", 1), ("x", [])]

OVER_FOLLOWED_BY = ["m", ("e", "A1", 1), ("x", []), ("e", "B1", 1), ("x", [("A1", "B1")]),
                    "m", ("e", "A2", 1), ("e", "B2", 1), ("x", []), "m", ("e", "A3", 10),
                    ("e", "B3", -8), ("x", []), "m", ("e", "A4", 2), "m", ("e", "B4", 1),
                    ("x", [("A4", "B4")]), ("e", "A5", 3), ("e", "B5", 0), ("x", [])]

WITHIN_FOLLOWED_BY = ["m", ("e", "A1", 1), ("e", "B1", 0), ("x", []), ("e", "B2", 1),
                      ("x", [("A1", "B2")]), "m", ("e", "A2", 2), ("e", "A3", 3),
                      ("e", "A4", 1), ("x", []), "m", ("e", "B3", 3), ("x", [("A3", "B3")]),
                      "m", ("e", "B4", 1), ("x", []), "m", ("e", "B5", 2),
                      ("x", [("A2", "B5")]), ("e", "A5", 2), ("e", "B6", 2), ("x", []), "m",
                      ("e", "A6", 4), ("e", "B7", 4), ("x", [("A6", "B7")])]

FOLLOWED_BY_WITH_DISTINCT = ["m", ("e", "A1", 1), "m", ("e", "B1", 0), ("x", [("A1", "B1")]),
                             ("e", "B2", 1), ("x", [("A1", "B2")]), "m", ("e", "B3", 0),
                             ("x", []), ("e", "A2", 1), "m", ("e", "B4", 2),
                             ("x", [("A1", "B4")]), "m", ("e", "A3", 2), ("e", "B5", 1),
                             ("x", [("A3", "B5")]), "m", ("e", "B6", 1), ("x", []), "m",
                             ("e", "B7", 3), ("x", [("A1", "B7"), ("A3", "B7")])]

A_KIND = "(kind = 'A')"
B_KIND = "(kind = 'B')"
ONE = "a.theString"
TWO = "a.theString, b.theString"
CASES = [
    ("every-distinct(a.theString) a=SupportBean", ONE, SIMPLE),
    ("every-distinct(a.theString, 5 sec) a=SupportBean", ONE, WITH_TIME),
    (f"every-distinct(a.intPrimitive, 1 sec) a=SupportBean{A_KIND}", ONE, EXPIRE_SEEN),
    ("every-distinct(intPrimitive) a=SupportBean", ONE, OVER_FILTER),
    ("every-distinct(intPrimitive, 2 minutes) a=SupportBean", ONE, OVER_FILTER),
    ("[2] every-distinct(a.intPrimitive) a=SupportBean", "a[0].theString, a[1].theString",
     REPEAT_OVER_DISTINCT,
     "every in front of a group"),
    ("[2] every-distinct(a.intPrimitive, 1 hour) a=SupportBean",
     "a[0].theString, a[1].theString", REPEAT_OVER_DISTINCT,
     "every in front of a group"),
    ("every-distinct(a[0].intPrimitive) [2] a=SupportBean", "a[0].theString, a[1].theString",
     OVER_REPEAT),
    ("every-distinct(a[0].intPrimitive, a[0].intPrimitive, 1 hour) [2] a=SupportBean",
     "a[0].theString, a[1].theString", OVER_REPEAT),
    ("(every-distinct(a.intPrimitive) a=SupportBean) where timer:within(10 sec)", ONE,
     WITHIN_OVER_DISTINCT,
     "a guard around every-distinct"),
    ("(every-distinct(a.intPrimitive, 2 days 2 minutes) a=SupportBean) "
     "where timer:within(10 sec)", ONE, WITHIN_OVER_DISTINCT,
     "a guard around every-distinct"),
    ("every-distinct(a.intPrimitive) (a=SupportBean where timer:within(10 sec))", ONE,
     OVER_WITHIN,
     "can end without matching"),
    ("every-distinct(a.intPrimitive, 1 hour) (a=SupportBean where timer:within(10 sec))", ONE,
     OVER_WITHIN,
     "can end without matching"),
    (f"every-distinct(a.intPrimitive, b.intPrimitive) (a=SupportBean{A_KIND} and "
     f"b=SupportBean{B_KIND})", TWO, OVER_AND),
    (f"every-distinct(a.intPrimitive, b.intPrimitive, 1 hour) (a=SupportBean{A_KIND} and "
     f"b=SupportBean{B_KIND})", TWO, OVER_AND),
    (f"every-distinct(coalesce(a.intPrimitive, 0) + coalesce(b.intPrimitive, 0)) "
     f"(a=SupportBean{A_KIND} or b=SupportBean{B_KIND})", TWO, OVER_OR),
    (f"every-distinct(coalesce(a.intPrimitive, 0) + coalesce(b.intPrimitive, 0), 1 hour) "
     f"(a=SupportBean{A_KIND} or b=SupportBean{B_KIND})", TWO, OVER_OR),
    (f"every-distinct(a.intPrimitive) (a=SupportBean{A_KIND} and not SupportBean{B_KIND})",
     ONE, OVER_NOT,
     "can end without matching"),
    (f"every-distinct(a.intPrimitive, 1 hour) (a=SupportBean{A_KIND} and not "
     f"SupportBean{B_KIND})", ONE, OVER_NOT,
     "can end without matching"),
    (f"every-distinct(a.intPrimitive + b.intPrimitive) (a=SupportBean{A_KIND} -> "
     f"b=SupportBean{B_KIND})", TWO, OVER_FOLLOWED_BY),
    (f"every-distinct(a.intPrimitive + b.intPrimitive, 1 hour) (a=SupportBean{A_KIND} -> "
     f"b=SupportBean{B_KIND})", TWO, OVER_FOLLOWED_BY),
    (f"(every-distinct(a.intPrimitive) a=SupportBean{A_KIND}) -> "
     "b=SupportBean(intPrimitive=a.intPrimitive)", TWO, WITHIN_FOLLOWED_BY),
    (f"(every-distinct(a.intPrimitive, 2 hours 1 minute) a=SupportBean{A_KIND}) -> "
     "b=SupportBean(intPrimitive=a.intPrimitive)", TWO, WITHIN_FOLLOWED_BY),
    (f"every-distinct(a.intPrimitive) a=SupportBean{A_KIND} -> every-distinct(b.intPrimitive) "
     f"b=SupportBean{B_KIND}", TWO, FOLLOWED_BY_WITH_DISTINCT,
     "every-distinct inside a pattern"),
    (f"every-distinct(a.intPrimitive, 1 day) a=SupportBean{A_KIND} -> "
     f"every-distinct(b.intPrimitive) b=SupportBean{B_KIND}", TWO, FOLLOWED_BY_WITH_DISTINCT,
     "every-distinct inside a pattern"),
]


def _program(pattern: str, select: str) -> Any:
    items = ", ".join(f"{s.strip()} as c{i}" for i, s in enumerate(select.split(",")))
    return cepflow.load_module(parse_epl(
        SCHEMA + f"@Name('s0') select {items} from pattern [{pattern}];"))


def _play(pattern: str, select: str, steps: list[Step]) -> None:
    prog = _program(pattern, select)
    engine = cepflow.Engine(prog, start=0)
    now, seen, n = 0, [], 0
    for k, step in enumerate(steps):
        if step == "m":  # Esper's milestone: the state saved and restored
            state = json.loads(json.dumps(save_state(engine)))
            engine = restore_state(cepflow.Engine(prog, start=0), state)
        elif step[0] == "t":
            now = step[1]
            seen += engine.advance_to(now)
        elif step[0] == "e":
            n += 1
            seen += engine.process(Event("SupportBean", (step[1], step[2], step[1][0]), now,
                                         id=f"{step[1]}#{n}"))
        else:
            assert sorted(ce.params for ce in seen) == sorted(step[1]), (pattern, k)
            seen = []


AGREE = [c for c in CASES if len(c) == 3]
REFUSED = [c for c in CASES if len(c) == 4]


@pytest.mark.parametrize(("pattern", "select", "steps"), AGREE, ids=[c[0] for c in AGREE])
def test_every_distinct_as_esper(pattern: str, select: str, steps: list[Step]) -> None:
    _play(pattern, select, steps)


@pytest.mark.parametrize(("pattern", "select", "steps", "why"), REFUSED,
                         ids=[c[0] for c in REFUSED])
def test_forms_cepflow_refuses_are_reported(pattern: str, select: str, steps: list[Step],
                                            why: str) -> None:
    """Forms whose Esper answer cepflow does not give: reported with their place instead of
    answered otherwise (docs/esper.md; Esper's steps are kept above for when they run) —
    every-distinct inside a repetition or after the first event, a guard around it (Esper runs
    it from the statement's start), and one around a sub-pattern that can end without a match
    (Esper then restarts it with no seen keys)."""
    with pytest.raises(PatternSyntaxError) as info:
        _program(pattern, select)
    assert why in str(info.value) and ":2:" in str(info.value)


@pytest.mark.parametrize("pattern", [
    "a=SupportBean -> every-distinct(a.intPrimitive) SupportBean",
    "every-distinct(dummy) SupportBean",
    "every-distinct(2 sec) SupportBean",
])
def test_what_esper_refuses_is_refused(pattern: str) -> None:
    """PatternInvalid: Esper refuses these (the key names no tag seen there, no such property,
    no key at all); so does cepflow, with the place."""
    with pytest.raises(PatternSyntaxError) as info:
        _program(pattern, "1")
    assert ":2:" in str(info.value)
