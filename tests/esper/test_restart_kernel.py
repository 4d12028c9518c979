"""The restart kernel (runtime/kernels/restart.py: Esper's ``every (a = A(f) -> b = B(g[,
key]))``, its walk in numpy, its matches lazy complex events) in the program split, against
the per-event engine: random statements (a key or none, ``g`` reading only its event or also
``a``'s fields, the same type at both stages or not, a select list of fields or none) beside
statements the split does not take, random streams (keys that unify across types, NaN),
batches cut anywhere, single events between them and a save/restore in the middle: the same
complex events (parameters, bindings, parts, match ids, order), rule firings, statistics, open
instances and saved state."""

from itertools import pairwise

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import KEYS, events, state, stream
from tests.esper.test_split import (
    check_split,
    keyed_others,
    program,
    restarts,
    restored,
    rows,
)

from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.rows import LazyBindings

EVERY = (
    "create schema ME(id string, k integer);\n"
    "@Name('every1')\ninsert into every1\nfrom pattern [ every (a1 = ME(a1.id=\"A\") ->\n"
    "  a2 = ME(a2.id = \"B\"))];\n"
    "@Name('every2')\ninsert into every2\nselect a1.id as alid, a1.k as k1, a2.id as a2id, "
    "a2.k as k2\nfrom pattern [every a1 = ME(a1.id=\"A\") -> a2 = ME(a2.id = \"B\")];\n")


@settings(max_examples=250, deadline=None)
@given(st.lists(restarts(), min_size=1, max_size=3),
       keyed_others(),
       stream(KEYS[:7] + KEYS[8:9]), st.lists(st.integers(0, 70), max_size=4),
       st.integers(0, 70), st.integers(-1, 2))
@example(["@Name('R')\ninsert into R\nfrom pattern [every (a = A -> b = A)];\n"], [],
         [("A", 0, 0, 0.0, 1)] * 9, [4], 6, -1)
def test_restart_kernel_equals_event_by_event(kernel_stmts, others, spec, cuts, restore_at,
                                              ruled) -> None:
    prog = program(kernel_stmts, others, ruled)
    mine = {s.split("'")[1] for s in kernel_stmts}
    assert all(m.pattern.restart is not None for m in Engine(prog).matchers if m.name in mine)
    check_split(prog, spec, cuts, restore_at)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ABC"), st.integers(0, 3)), max_size=400),
       st.lists(st.integers(0, 400), max_size=3), st.integers(0, 400))
def test_every_example_equals_event_by_event(spec, cuts, restore_at) -> None:
    """examples/every (every1: the restart kernel, every2: the pair kernel), long streams so
    that many matches are recorded in one go: as the per-event engine, and its matches lazy."""
    prog = load_module(parse_epl(EVERY))
    evs = [Event("ME", (x, k), 1000 * i + 1000, id=f"e{i}") for i, (x, k) in enumerate(spec)]
    one, many = Engine(prog), Engine(prog)
    assert [m.name for m in many._split] == ["every1", "every2"]
    ref = rows([m for e in evs for m in one.process(e)])
    bounds = sorted({0, len(evs), *(min(c, len(evs)) for c in cuts)})
    got, lazy = [], 0
    for lo, hi in pairwise(bounds):
        if lo <= restore_at < hi:
            found = many.process_batch(evs[lo:restore_at])
            got += rows(found)
            lazy += sum(isinstance(m, LazyBindings) for m in found)
            many, lo = restored(many, prog), restore_at
        found = many.process_batch(evs[lo:hi])
        got += rows(found)
        lazy += sum(isinstance(m, LazyBindings) for m in found)
    assert got == ref
    assert many.stats == one.stats
    assert many.partial_matches() == one.partial_matches()
    assert state(many) == state(one)
    assert lazy >= len(ref) - 2 * (len(bounds) + 1)  # (all but those of an open instance)


def test_walk_in_numpy_takes_no_b_before_or_at_its_a() -> None:
    """``every (a = A -> b = A)`` over one type: each instance takes the next row after its
    ``A``, the next one begins after that (rows 0-1, 2-3, …), in one batch and across two."""
    prog = load_module(parse_epl("create schema A(k integer, v integer, x double, s string);\n"
                                 "@Name('R')\ninsert into R\n"
                                 "from pattern [every (a = A -> b = A)];\n"))
    spec = [("A", 0, 0, 0.0, 1)] * 7
    whole, halves = Engine(prog), Engine(prog)
    one = [m.event_refs for m in whole.process_batch(events(spec))]
    evs = events(spec)
    two = [m.event_refs for m in halves.process_batch(evs[:3])
           + halves.process_batch(evs[3:])]
    assert one == two == [["e0", "e1"], ["e2", "e3"], ["e4", "e5"]]
    assert whole.partial_matches() == halves.partial_matches() == {"R": 1}
