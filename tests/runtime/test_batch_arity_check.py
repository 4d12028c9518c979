"""A batch's check of its rows' parameter counts (runtime.rows.EventRows.check: one count of
the rows' lengths when every type of the batch declares the same number, else per row
against its type's) reports the event the per-event engine reports, with the same message,
and lets through what it lets through (an undeclared type's rows are not checked)."""

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.errors import EngineError

#: A and B declare two parameters, W three; U is not declared (no count to check)
PROGRAM = load_module(parse_epl(
    "create schema A(k integer, v integer);\ncreate schema B(k integer, v integer);\n"
    "create schema W(k integer, v integer, w integer);\n"
    "@Name('P')\ninsert into P\nfrom pattern [every a = A -> b = B(b.k = a.k)];\n"
    "@Name('Q')\ninsert into Q\nfrom pattern [every a = A -> w = W(w.k = a.k)];\n"))

ARITY = {"A": 2, "B": 2, "W": 3}


def outcome(engine: Engine, events: list[Event], batch: bool) -> tuple[str, list]:
    """The error message raised (or "") and the matches' event ids before it."""
    found: list = []
    try:
        if batch:
            found += engine.process_batch(events)
        else:
            for e in events:
                found += engine.process(e)
    except EngineError as err:
        return str(err), []
    return "", [m.event_refs for m in found]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ABWU"), st.integers(0, 2), st.integers(-1, 1)),
                max_size=30))
@example([("A", 0, 0), ("B", 0, 0)])
@example([("A", 0, 0), ("B", 0, 1), ("B", 0, -1)])
@example([("W", 0, 0), ("A", 0, -1)])
@example([("U", 0, 1), ("A", 0, 0), ("B", 0, 0)])
def test_batch_reports_the_first_wrong_count_as_per_event(spec) -> None:
    """Rows of A, B, W, U with a key and a parameter count off by ``d`` (-1, 0, +1) from the
    declared one (U: 1 + d parameters, never wrong)."""
    events = [Event(t, tuple(range(k, k + ARITY.get(t, 1) + d)), float(i), id=f"e{i}")
              for i, (t, k, d) in enumerate(spec)]
    one, many = Engine(PROGRAM), Engine(PROGRAM)
    assert many._pairs is not None or many._split is not None  # (the batch is a kernel's)
    want, got = outcome(one, events, False), outcome(many, events, True)
    assert got[0] == want[0]
    if not want[0]:
        assert got == want


@pytest.mark.parametrize(("spec", "message"), [
    ([("A", (1, 2)), ("B", (1, 2, 3))], "has 3 parameter(s), type 'B' declares 2"),
    ([("A", (1, 2)), ("W", (1, 2))], "has 2 parameter(s), type 'W' declares 3"),
    ([("A", (1,)), ("A", (1, 2))], "has 1 parameter(s), type 'A' declares 2"),
])
def test_pinned_wrong_counts(spec, message) -> None:
    events = [Event(t, p, float(i), id=f"e{i}") for i, (t, p) in enumerate(spec)]
    with pytest.raises(EngineError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Engine(PROGRAM).process_batch(events)
