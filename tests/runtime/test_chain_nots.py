"""Keyed chains with NOTs between their stages (``A(s) -> NOT C(s) -> B(s)``, runtime.shapes.
Chain.forbids) and keyed trees (``A(s) AND B(s)``, alternatives that are sequences of one
length: runtime.shapes._tree, a stage per waiting state) — the chain kernel
(``process_batch`` cut anywhere, parts event by event, ``process_columns`` over Arrow) and
the per-event row step with its forbid step (Matcher._forbid_step) against the general token
path (``fast_path=False``): the same matches, ids, order, bindings, statistics, partial
matches and saved state, across a save/restore, time passing and ``finish``
(test_chain_alternatives.check). The NOTs: one or several types, with filters on the event's
own fields (column-wise and per row), of a type that is also a stage's (before, at or after
the gap), after stages of alternatives, in a window, in unkeyed chains, of any key in keyed
chains (``NOT C(_, _)``: it traps every key's partial matches); chains of one type per stage
without a window, which take the numpy queues (kernels.queues.run_chain's clears); the trees:
ANDs of atoms or of a sequence and an atom, sequences as alternatives, after stages and NOTs,
in windows, unkeyed."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_chain_alternatives import FILTERS, check, compile_, specs

from cepflow.events.event import Event
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import restore_state, save_state
from cepflow.runtime.tokens import KeyedRows


def _atom(t: str, key: str) -> str:
    return f"D(_, {key})" if t == "D" else f"{t}({key}, _)"  # (D is keyed on its v)


def _where(t: str, f: str) -> str:
    if not f:
        return ""
    return " where " + (f.replace("v", "k") if t == "D" else f)


@st.composite
def not_chains(draw: st.DrawFn) -> str:
    """A chain of 2-4 stages of 1-2 alternatives over A-D (types recurring across stages and
    in the NOTs), filters or none, a NOT of one or two types (each with a filter or none) in
    some gaps — at least one — and now and then a window over it all or no key."""
    n = draw(st.integers(2, 4))
    key = draw(st.sampled_from(["s", "s", "s", "_"]))
    gaps = draw(st.lists(st.booleans(), min_size=n - 1, max_size=n - 1))
    gaps[draw(st.integers(0, n - 2))] = True
    parts = []
    for m in range(n):
        types = draw(st.lists(st.sampled_from("ABCD"), min_size=1, max_size=2, unique=True))
        alts = [_atom(t, key) + _where(t, draw(st.sampled_from(FILTERS))) for t in types]
        parts.append(alts[0] if len(alts) == 1 else "(" + " OR ".join(alts) + ")")
        if m < n - 1 and gaps[m]:
            parts.append(_not(draw, key))
    return _windowed(draw, " -> ".join(parts))


def _not(draw: st.DrawFn, key: str) -> str:
    """A NOT of one or two types, each with a filter or none, each of the key or (now and
    then) of any key."""
    nots = draw(st.lists(st.sampled_from("ABCD"), min_size=1, max_size=2, unique=True))
    fs = [_atom(t, draw(st.sampled_from([key, key, "_"]))) + _where(t, draw(st.sampled_from(
        FILTERS))) for t in nots]
    return "NOT " + (fs[0] if len(fs) == 1 else "(" + " OR ".join(fs) + ")")


@st.composite
def queued_nots(draw: st.DrawFn) -> str:
    """A chain of 2-4 stages of 1-2 alternatives, each type at one stage (the numpy queues),
    filters or none, a NOT (of the key or of any key, of a type of a stage or not) in some
    gaps — at least one — no window, now and then no key."""
    n = draw(st.integers(2, 4))
    key = draw(st.sampled_from(["s", "s", "s", "_"]))
    types = draw(st.permutations("ABCD"))
    cut = sorted(draw(st.lists(st.integers(1, 3), min_size=n - 1, max_size=n - 1, unique=True))
                 ) if n < 4 else [1, 2, 3]
    gaps = draw(st.lists(st.booleans(), min_size=n - 1, max_size=n - 1))
    gaps[draw(st.integers(0, n - 2))] = True
    parts = []
    for m, (lo, hi) in enumerate(zip([0, *cut], [*cut, 4], strict=True)):
        alts = [_atom(t, key) + _where(t, draw(st.sampled_from(FILTERS)))
                for t in types[lo:min(hi, lo + 2)]]
        parts.append(alts[0] if len(alts) == 1 else "(" + " OR ".join(alts) + ")")
        if m < n - 1 and gaps[m]:
            parts.append(_not(draw, key))
    return " -> ".join(parts)


def _windowed(draw: st.DrawFn, body: str) -> str:
    """Now and then a window over the whole pattern."""
    window = draw(st.sampled_from([None, None, None, 0, 2, 5, 0.2]))
    return body if window is None else f"({body})[{window} ms]"


@st.composite
def trees(draw: st.DrawFn) -> str:
    """0-2 single stages, then a tree: an AND of 2-3 atoms of distinct types or of a sequence
    of two and an atom, or two sequences of two atoms as alternatives (distinct first types);
    filters or none; a NOT in a gap now and then; now and then a window over it all or no key.
    (A tree's states are entered by one edge each, so it ends the pattern: a stage after it,
    or alternatives before it, join two of its states — not taken.)"""
    key = draw(st.sampled_from(["s", "s", "s", "_"]))

    def atom(t: str) -> str:
        return _atom(t, key) + _where(t, draw(st.sampled_from(FILTERS)))

    types = st.sampled_from("ABCD")
    parts = []
    for _ in range(draw(st.integers(0, 2))):
        parts.append(atom(draw(types)))
        if draw(st.integers(0, 2)) == 0:
            parts.append(f"NOT {atom(draw(types))}")
    kind = draw(st.integers(0, 2))
    if kind == 0:
        ts = draw(st.lists(types, min_size=2, max_size=3, unique=True))
        parts.append("(" + " AND ".join(atom(t) for t in ts) + ")")
    elif kind == 1:
        a, c = draw(st.lists(types, min_size=2, max_size=2, unique=True))
        parts.append(f"(({atom(a)} -> {atom(draw(types))}) AND {atom(c)})")
    else:
        a, c = draw(st.lists(types, min_size=2, max_size=2, unique=True))
        parts.append(f"(({atom(a)} -> {atom(draw(types))}) OR "
                     f"({atom(c)} -> {atom(draw(types))}))")
    return _windowed(draw, " -> ".join(parts))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(not_chains(), trees()), min_size=1, max_size=2), specs,
       st.lists(st.integers(0, 30), min_size=1, max_size=5), st.integers(0, 4),
       st.integers(0, 6))
def test_nots_and_trees_equal_the_token_path(bodies: list[str], spec: list, cuts: list[int],
                                             restore_at: int, gap: int) -> None:
    prog = compile_(bodies)
    for m in Engine(prog).matchers:  # (the shape is taken: kernel and row step)
        c = m.pattern.chain
        assert c is not None and (c.forbids or c.depths), m.name
        assert (m.pattern.row_forbids is not None) == bool(c.forbids)
    check(bodies, spec, cuts, restore_at, gap)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(queued_nots(), min_size=1, max_size=2), specs,
       st.lists(st.integers(0, 30), min_size=1, max_size=5), st.integers(0, 4),
       st.integers(0, 6))
def test_nots_in_the_numpy_queues_equal_the_token_path(bodies: list[str], spec: list,
                                                       cuts: list[int], restore_at: int,
                                                       gap: int) -> None:
    prog = compile_(bodies)
    for m in Engine(prog).matchers:  # (the numpy queues, their clears at the NOTs' rows)
        c = m.pattern.chain
        assert c is not None and c.forbids and c.queued, m.name
    check(bodies, spec, cuts, restore_at, gap)


def _run(prog: object, stream: list[tuple[str, int, int]], rowed: bool = True) -> list[list]:
    """Event by event on the token path, the row step and in one batch: each's matches."""
    out = []
    for mode in ("ref", "rows", "batch"):
        evs = [Event(t, (k, v), i, id=f"{t.lower()}{i}") for i, (t, k, v) in enumerate(stream)]
        eng = Engine(prog, fast_path=mode != "ref")
        got = (eng.process_batch(evs) if mode == "batch"
               else [m for e in evs for m in eng.process(e)])
        out.append([tuple(m.event_refs) for m in got])
        if mode == "rows":
            assert (type(eng.matchers[0].pending) is KeyedRows) == rowed
    return out


def test_a_forbidden_event_traps_its_key_only() -> None:
    """``A(s) -> NOT C(s) -> B(s)``: C of key 1 traps both partial matches of key 1 waiting in
    the gap, not key 2's; a later A of key 1 starts anew."""
    prog = compile_(["A(s, _) -> NOT C(s, _) -> B(s, _)"])
    stream = [("A", 1, 0), ("A", 1, 0), ("A", 2, 0), ("C", 1, 0), ("B", 1, 0), ("B", 2, 0),
              ("A", 1, 0), ("B", 1, 0)]
    got = _run(prog, stream)
    assert got[0] == [("a2", "b5"), ("a6", "b7")]
    assert got[1] == got[0] and got[2] == got[0]


def test_the_event_that_moves_a_row_does_not_trap_it() -> None:
    """``A(s) -> NOT A(s) -> B(s)``: each A traps the older partial match of its key waiting
    in the gap but starts one itself (Matcher._forbid: ``th.last is not e``), and a B that
    both completes the oldest and is forbidden (``NOT B where v > 1``) traps the others."""
    prog = compile_(["A(s, _) -> NOT A(s, _) -> B(s, _)"])
    got = _run(prog, [("A", 1, 0), ("A", 1, 0), ("B", 1, 0), ("B", 1, 0)])
    assert got[0] == [("a1", "b2")] and got[1] == got[0] and got[2] == got[0]
    prog = compile_(["A(s, _) -> NOT B(s, _) where v > 1 -> B(s, _)"])
    got = _run(prog, [("A", 1, 0), ("A", 1, 0), ("A", 1, 0), ("B", 1, 5), ("B", 1, 0),
                      ("A", 1, 0), ("A", 1, 0), ("B", 1, 0), ("B", 1, 0)])
    assert got[0] == [("a0", "b3"), ("a5", "b7"), ("a6", "b8")]
    assert got[1] == got[0] and got[2] == got[0]


def test_nots_not_taken() -> None:
    """A NOT that unifies with a stage's own variable (``NOT C(s, v)``), NOTs of one type of
    the key and of any key at one gap (``NOT (C(s, _) OR C(_, _))``: the token path tries them
    thread by thread), a NOT after an iteration (a restricted copy): the token path, whose
    answer every route still gives."""
    for body in ("A(s, v) -> NOT C(s, v) -> B(s, _)",
                 "A(s, _) -> NOT (C(s, _) OR C(_, _)) -> B(s, _)",
                 "A(s, _){+} -> NOT C(s, _) -> B(s, _)"):
        prog = compile_([body])
        assert Engine(prog).matchers[0].pattern.chain is None, body
        got = _run(prog, [("A", 1, 2), ("C", 1, 2), ("A", 2, 2), ("B", 1, 0), ("B", 2, 0)],
                   rowed=False)
        assert got[0] and got[1] == got[0] and got[2] == got[0], body


def test_and_waits_for_the_other_operand() -> None:
    """``A(s) AND B(s)``: a B takes the oldest partial match of its key that took an A (not
    one that took a B), else starts one waiting for an A."""
    prog = compile_(["A(s, _) AND B(s, _)"])
    stream = [("B", 1, 0), ("A", 2, 0), ("B", 1, 0), ("B", 2, 0), ("A", 1, 0), ("A", 1, 0)]
    got = _run(prog, stream)
    assert got[0] == [("a1", "b3"), ("b0", "a4"), ("b2", "a5")]
    assert got[1] == got[0] and got[2] == got[0]


def test_trees_not_taken() -> None:
    """Alternatives of different lengths, an AND of one type twice (a thread fork), a state
    entered by two edges (``((A -> B) OR C) -> D``, ``(A AND B) -> C -> D``), own variables
    in a tree: the token path."""
    for body in ("A(s, _) -> (B(s, _) OR (C(s, _) -> D(_, s)))",
                 "(A(s, _) AND B(s, _)) -> C(s, _) -> D(_, s)",
                 "A(s, _) where v > 1 AND A(s, _)",
                 "((A(s, _) -> B(s, _)) OR C(s, _)) -> D(_, s)",
                 "A(s, v) where v > 1 AND B(s, _)"):
        prog = compile_([body])
        assert Engine(prog).matchers[0].pattern.chain is None, body


def test_restored_tree_rows_stay_rows() -> None:
    """A restored ``A(s) AND B(s)`` whose partial matches wait after a B (the tree's third
    stage, holding one event) is taken back as rows (Matcher._keyed_rows counts a tree's
    events per stage by its depth), not stepped as tokens from then on."""
    prog = compile_(["A(s, _) AND B(s, _)"])
    eng = Engine(prog)
    for i, (t, k) in enumerate([("B", 1), ("A", 2), ("B", 3)]):
        eng.process(Event(t, (k, 0), i, id=f"e{i}"))
    back = restore_state(Engine(prog), save_state(eng))
    assert [m.event_refs for m in back.process(Event("A", (1, 0), 5, id="e5"))] == [["e0", "e5"]]
    m = back.matchers[0]
    assert not m.rowless and type(m.pending) is KeyedRows and m.pending.n == 2


def test_a_nan_key_forbids_nothing() -> None:
    """A NaN unifies with nothing, not even the very same object (Algorithm 1): a C whose key
    is the NaN a partial match started with does not trap it — on every route."""
    prog = compile_(["A(s, _) -> NOT C(s, _) -> B(s, _)"])
    nan = float("nan")
    assert _left(prog, [("A", nan), ("C", nan), ("C", 1)]) == [{"P0": 1}] * 3


def _left(prog: object, stream: list[tuple[str, Any]]) -> list[dict[str, int]]:
    """The partial matches left after ``stream`` (type, key) on the token path, the row step
    and in one batch."""
    out = []
    for mode in ("ref", "rows", "batch"):
        eng = Engine(prog, fast_path=mode != "ref")
        evs = [Event(t, (k, 0), i) for i, (t, k) in enumerate(stream)]
        if mode == "batch":
            eng.process_batch(evs)
        else:
            for e in evs:
                eng.process(e)
        out.append(eng.partial_matches())
    return out


def test_a_not_of_any_key_traps_every_key() -> None:
    """``A(s) -> NOT C(_, _) -> B(s)``: a C of key 9 traps the partial matches of keys 1 and 2
    waiting in the gap; later As start anew. A NaN key's partial match is trapped too, and a
    C with a NaN key traps (the NOT binds nothing: no key to unify)."""
    prog = compile_(["A(s, _) -> NOT C(_, _) -> B(s, _)"])
    stream = [("A", 1, 0), ("A", 2, 0), ("C", 9, 0), ("B", 1, 0), ("B", 2, 0),
              ("A", 1, 0), ("A", 2, 0), ("B", 2, 0), ("B", 1, 0)]
    got = _run(prog, stream)
    assert got[0] == [("a6", "b7"), ("a5", "b8")]
    assert got[1] == got[0] and got[2] == got[0]
    nan = float("nan")
    assert _left(prog, [("A", nan), ("A", 1), ("C", nan), ("A", 2)]) == [{"P0": 1}] * 3
    # (an A with a NaN key, a stage's type, traps key 1's partial match: no key to unify)
    prog = compile_(["A(s, _) -> NOT A(_, _) -> B(s, _)"])
    got = _run(prog, [("A", 1, 0), ("A", nan, 0), ("B", 1, 0), ("A", 2, 0), ("B", 2, 0)])
    assert got[0] == [("a3", "b4")] and got[1] == got[0] and got[2] == got[0]


def test_a_not_of_any_key_spares_the_row_that_took_the_event() -> None:
    """``A(s) -> NOT A(_, _) -> B(s)``: an A of key 2 starts a partial match and traps key 1's
    waiting one, not its own; ``NOT B(_, _) where v > 1``: a B that completes the oldest
    partial match of its key traps the others of every key."""
    prog = compile_(["A(s, _) -> NOT A(_, _) -> B(s, _)"])
    got = _run(prog, [("A", 1, 0), ("A", 2, 0), ("B", 1, 0), ("B", 2, 0)])
    assert got[0] == [("a1", "b3")] and got[1] == got[0] and got[2] == got[0]
    prog = compile_(["A(s, _) -> NOT B(_, _) where v > 1 -> B(s, _)"])
    got = _run(prog, [("A", 1, 0), ("A", 1, 0), ("A", 2, 0), ("B", 1, 5), ("B", 1, 0),
                      ("B", 2, 0), ("A", 2, 0), ("B", 1, 0), ("B", 2, 0)])
    assert got[0] == [("a0", "b3"), ("a6", "b8")]
    assert got[1] == got[0] and got[2] == got[0]


def test_not_chains_take_the_numpy_queues(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chain with NOTs, each type at one stage and no window, is the numpy queues'
    (kernels.queues.run_chain with clears), not the loop of step_chain: a batch of it never
    calls step_chain, and gives the token path's matches."""
    import cepflow.runtime.kernels.chain as chain_kernel

    def loop(*args: object, **kw: object) -> None:
        raise AssertionError("step_chain")

    for body in ("A(s, _) -> NOT C(s, _) -> B(s, _)", "A(s, _) -> NOT C(_, _) -> B(s, _)",
                 "A(s, _) -> NOT (C(s, _) OR B(s, _) where v > 1) -> B(s, _) -> NOT A(_, _)"
                 " -> (C(s, _) OR D(_, s))"):
        prog = compile_([body])
        stream = [(t, k, v) for t, k, v in zip("ABACBDCABBCAD" * 3, [1, 2, 1, 2, 1, 1, 2] * 6,
                                              [0, 2, 1, 0, 3] * 8, strict=False)]
        with monkeypatch.context() as mp:
            mp.setattr(chain_kernel, "step_chain", loop)
            got = _run(prog, stream)
        assert got[0] and got[1] == got[0] and got[2] == got[0], body
