"""Esper's ``[m:n] P until Q`` whose tags collect any number of events, under ``select *``
(docs/esper.md, "Tags of any length"): the match carries ``r[0].<field>`` … for as many events
as the tag took.

The oracle is written from Esper's EvalMatchUntilStateNode, for single events ``P`` (an atom
or an ``or`` of atoms of different types) and ``Q``: the instance starts at the statement's
start with both operands active, ``Q`` first (an event that fits both ends the instance and is
not collected); each ``P`` is collected while fewer than ``n`` were; with ``m == n`` the m-th
``P`` completes the instance; ``Q`` completes it with what was collected when at least ``m``
were, else ends it without a match. ``every (…)`` starts the next instance after each end
(EvalEveryStateNode restarts on true and on false), from the next event.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepflow
from cepflow.events.event import Event
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.runtime.state import restore_state, save_state

SCHEMAS = "".join(f"create schema {t}(k int, v int);\n" for t in "ABD")


def program(body: str) -> Any:
    return cepflow.load_module(parse_epl(SCHEMAS + f"@Name('P') select * from pattern [{body}];"))


def stream(items: list[tuple[str, int]]) -> list[Event]:
    """One event a second from 1 s; ``v`` its place in the stream."""
    return [Event(t, (k, i), 1000 * (i + 1)) for i, (t, k) in enumerate(items)]


events_st = st.lists(st.tuples(st.sampled_from("ABD"), st.integers(0, 2)),
                     max_size=16).map(stream)

#: (type, k or None): an atom ``T`` or ``T(k=…)``
atom_st = st.tuples(st.sampled_from("ABD"), st.sampled_from([None, 0, 1]))
BOUNDS = [(None, None), (1, None), (2, None), (0, None), (None, 2), (1, 3), (2, 2), (0, 1)]


def text(atom: tuple[str, int | None], tag: str | None) -> str:
    t, k = atom
    head = f"{tag}={t}" if tag else t
    return head + ("" if k is None else f"(k={k})")


def fits(atom: tuple[str, int | None]) -> Callable[[Event], bool]:
    t, k = atom
    return lambda e: e.type == t and (k is None or e.params[0] == k)


def bounds_text(low: int | None, high: int | None) -> str:
    if low is None and high is None:
        return ""
    if low == high:
        return f"[{low}] "
    return f"[{'' if low is None else low}:{'' if high is None else high}] "


class Operand:
    """The until's repeated operand for the oracle: ``single`` (an atom, or an or of atoms of
    different types: ``reps``), ``group`` (``[2] r=T``: two events complete one match of it)
    or ``nested`` (``r=T until s=T'``: it matches at its own end, with the events it took);
    ``every`` on a single one is the same operand (EvalEveryStateNode restarts it on true, as
    the until does)."""

    def __init__(self, kind: str, reps: list[tuple[str, tuple[str, int | None]]]) -> None:
        self.kind, self.reps = kind, reps
        self.pending: list[tuple[str, Event]] = []

    def feed(self, e: Event) -> list[tuple[str, Event]] | None:
        """The events of a match of the operand that ``e`` completes, else None."""
        if self.kind == "nested":
            (r, rep), (q, end) = self.reps
            if fits(end)(e):  # (its own until first: that event is not collected)
                done, self.pending = [*self.pending, (q, e)], []
                return done
            if fits(rep)(e):
                self.pending.append((r, e))
            return None
        tag = next((tag for tag, a in self.reps if fits(a)(e)), None)
        if tag is None:
            return None
        self.pending.append((tag, e))
        if self.kind == "group" and len(self.pending) < 2:
            return None
        done, self.pending = self.pending, []
        return done


def oracle(events: list[Event], operand: Operand, until: tuple[str, int | None],
           until_tag: str | None, low: int | None, high: int | None,
           every: bool) -> list[tuple[float, dict[str, Any]]]:
    """The matches by Esper's definition (module docstring): (time, tags with their fields)."""
    out: list[tuple[float, dict[str, Any]]] = []
    ends, m = fits(until), low or 0
    taken: list[tuple[str, Event]] = []
    count = 0

    def emit(e: Event, last: Event | None) -> None:
        b: dict[str, Any] = {}
        seen: dict[str, int] = {}
        for tag, x in taken:
            j = seen[tag] = seen.get(tag, 0) + 1
            b[f"{tag}[{j - 1}].k"], b[f"{tag}[{j - 1}].v"] = x.params
        if last is not None and until_tag:
            b[f"{until_tag}.k"], b[f"{until_tag}.v"] = last.params
        out.append((e.ts, b))

    for e in events:
        if ends(e):  # (the until first: an event that fits both ends it, uncollected)
            if count >= m:
                emit(e, e)
        elif high is None or count < high:  # (the operand stops at the n-th match)
            got = operand.feed(e)
            if got is None:
                continue
            taken += got
            count += 1
            if low is None or low != high or count < low:
                continue
            emit(e, None)  # ([n] … until: the n-th match completes it)
        else:
            continue
        taken, count, operand.pending = [], 0, []  # (ended: true or false)
        if not every:
            break
    return out


def rows(prog: Any, events: list[Event], how: str, cut: int, end: float | None = None,
         each: Callable[[Any], None] | None = None) -> list[tuple[float, dict]]:
    """The matches (time, bindings without nulls) per event (``event``; ``token``: without the
    fast steps; ``each`` called with the engine after each event), through ``Engine.run`` in
    two batches cut at ``cut`` (``run``), or so with a save and restore (through JSON) at the
    cut and the rest per event (``restore``); then the end of input, or time advanced to
    ``end``."""
    engine = cepflow.Engine(prog, start=0, fast_path=how != "token")
    if how in ("event", "token"):
        got = []
        for e in events:
            got += engine.process(e)
            if each is not None:
                each(engine)
    elif how == "run":
        got = [*engine.run(events[:cut]), *engine.run(events[cut:])]
    else:
        got = list(engine.run(events[:cut]))
        state = json.loads(json.dumps(save_state(engine)))
        engine = restore_state(cepflow.Engine(prog, start=0), state)
        got += [ce for e in events[cut:] for ce in engine.process(e)]
    got += engine.finish() if end is None else engine.advance_to(end)
    return [(ce.ts, {k: v for k, v in ce.bindings.items() if v is not None}) for ce in got]


@settings(max_examples=150, deadline=None)
@given(events_st, st.sampled_from(["single", "every", "group", "nested"]), atom_st,
       st.one_of(st.none(), atom_st), atom_st, st.booleans(), st.sampled_from(BOUNDS),
       st.booleans(), st.sampled_from(["event", "token", "run", "restore"]),
       st.integers(0, 16))
def test_until_collects_as_esper_defines(
        events: list[Event], kind: str, rep: tuple, alt: tuple | None, until: tuple,
        tagged: bool, bounds: tuple, every: bool, how: str, cut: int) -> None:
    reps = [("r", rep)]
    low, high = bounds
    if kind == "nested":
        reps.append(("s", alt or ("D", None)))
        operand = f"({text(rep, 'r')} until {text(reps[1][1], 's')})"
        low = None  # (a nested until takes no lower bound: reported)
        if reps[1][1][0] == rep[0]:  # (its own operand and end on one type: reported)
            with pytest.raises(PatternSyntaxError, match="nested until whose operand and end"):
                program(f"{operand} until {text(until, None)}")
            return
    elif kind == "group":
        operand = f"([2] {text(rep, 'r')})"
    else:
        if alt is not None and alt[0] != rep[0]:  # (the branches of an or: different types)
            reps.append(("s", alt))
        operand = " or ".join(text(a, tag) for tag, a in reps)
        operand = f"every ({operand})" if kind == "every" else f"({operand})"
    body = f"{bounds_text(low, high)}{operand} until {text(until, 'u' if tagged else None)}"
    if every:
        body = f"every ({body})"
    got = rows(program(body), events, how, cut)
    want = oracle(events, Operand("nested" if kind == "nested" else "group" if kind == "group"
                                  else "single", reps),
                  until, "u" if tagged else None, low, high, every)
    assert got == want, body


def test_hand_derived() -> None:
    """A1(k0) B2(k1) A3(k1) A4(k0) D5(k1) A6(k0) B7(k0) D8(k0): one event a second."""
    evs = stream([("A", 0), ("B", 1), ("A", 1), ("A", 0), ("D", 1), ("A", 0), ("B", 0),
                  ("D", 0)])

    def ids(body: str) -> list[tuple[int, dict[str, int]]]:
        return [(int(t) // 1000, {k: v for k, v in b.items() if k.endswith(".v")})
                for t, b in rows(program(body), evs, "event", 0)]

    # every A before the first D, as many as came (Esper's a[0] … a[2])
    assert ids("a=A until d=D") == [(5, {"a[0].v": 0, "a[1].v": 2, "a[2].v": 3, "d.v": 4})]
    # the until's filter: D(k=0) is D8, so A6 joins; B's are no A's
    assert ids("a=A until D(k=0)") == [
        (8, {"a[0].v": 0, "a[1].v": 2, "a[2].v": 3, "a[3].v": 5})]
    # restarted after each end, from the next event: D5 ends the first, D8 the second
    assert ids("every (a=A(k=0) until d=D)") == [
        (5, {"a[0].v": 0, "a[1].v": 3, "d.v": 4}), (8, {"a[0].v": 5, "d.v": 7})]
    # alternatives fill their own arrays, in arrival order each
    assert ids("[2:] (a=A or b=B) until d=D") == [
        (5, {"a[0].v": 0, "b[0].v": 1, "a[1].v": 2, "a[2].v": 3, "d.v": 4})]
    # fewer than m before the until: no match (and without every, nothing more)
    assert ids("[4:] a=A until d=D") == []
    # an event that fits both operands ends the instance first and is not collected
    assert ids("[1:] a=A until e=A(k=1)") == [(3, {"a[0].v": 0, "e.v": 2})]
    # the operand's completed matches only: ([2] a=A) drops A4, the nested until A3 and A4
    assert ids("([2] a=A) until d=D") == [(5, {"a[0].v": 0, "a[1].v": 2, "d.v": 4})]
    assert ids("every [2] a=A until d=D") == [(5, {"a[0].v": 0, "a[1].v": 2, "d.v": 4})]
    assert ids("(a=A until b=B) until d=D") == [(5, {"a[0].v": 0, "b[0].v": 1, "d.v": 4})]
    assert ids("(every a=A(k=0)) until d=D") == [(5, {"a[0].v": 0, "a[1].v": 3, "d.v": 4})]


def test_hand_derived_ends_before_the_operand_completed() -> None:
    """A(k1) A(k0) D A(k0) A(k0) A(k1) D, one a second: an end inside the first m matches of
    the operand, or one that fits both operands right at a restart, ends the instance false."""
    evs = stream([("A", 1), ("A", 0), ("D", 0), ("A", 0), ("A", 0), ("A", 1), ("D", 0)])

    def ids(body: str) -> list[tuple[int, dict[str, int]]]:
        return [(int(t) // 1000, {k: v for k, v in b.items() if k.endswith(".v")})
                for t, b in rows(program(body), evs, "event", 0)]

    # D at 3 s cuts the first pair of A(k=0) (A at 2 s): false, and the pattern is over
    assert ids("[1:] ([2] a=A(k=0)) until d=D") == []
    # the same D after one whole pair of A (1 s, 2 s): false below 2 pairs, true from 1
    assert ids("[2:] ([2] a=A) until d=D") == []
    assert ids("[1:] ([2] a=A) until d=D") == [(3, {"a[0].v": 0, "a[1].v": 1, "d.v": 2})]
    # A(k1) at 1 s ends the first instance false; the next takes A(k0) A(k0) A(k0) to A(k1)
    assert ids("every ([1:] a=A until e=A(k=1))") == [
        (6, {"a[0].v": 1, "a[1].v": 3, "a[2].v": 4, "e.v": 5})]


KEYED = "every a=A -> ({}b=B(k=a.k) until d=D(k=a.k))"


@settings(max_examples=60, deadline=None)
@given(events_st, st.sampled_from(["", "[1:] ", "[2:] ", "[:2] "]),
       st.sampled_from(["run", "restore"]), st.integers(0, 16))
def test_after_a_stage_it_runs_per_event(events: list[Event], bounds: str, how: str,
                                         cut: int) -> None:
    """``every a -> ([m:] b until d)`` on a key is the pair kernel's shape when its tags are
    bounded (runtime.shapes.esper_until_of); under select * with ``b`` of any length the match
    carries every b, which the kernel does not make: Engine.run takes it per event, with the
    per-event engine's matches, batches cut anywhere and a save and restore between."""
    prog = program(KEYED.format(bounds))
    engine = cepflow.Engine(prog, start=0)
    list(engine.run(events[:1]))
    unbounded = bounds != "[:2] "  # (b collects at most 2: the kernel's own shape)
    assert (engine._pairs is None and engine._split is None) == unbounded
    assert rows(prog, events, how, cut) == rows(prog, events, "token", 0)


def test_after_a_stage_hand_derived() -> None:
    """A1(k0) B2(k0) A3(k0) B4(k1) B5(k0) D6(k0): both A's instances end at D6, oldest first;
    A1's took B2 and B5, A3's B5."""
    evs = stream([("A", 0), ("B", 0), ("A", 0), ("B", 1), ("B", 0), ("D", 0)])
    for how in ("event", "token", "run", "restore"):
        got = [{k: v for k, v in b.items() if k.endswith(".v")}
               for _, b in rows(program(KEYED.format("")), evs, how, 3)]
        assert got == [{"a.v": 0, "d.v": 5, "b[0].v": 1, "b[1].v": 4},
                       {"a.v": 2, "d.v": 5, "b[0].v": 4}], how


def test_the_writers_write_every_collected_event(tmp_path: Any) -> None:
    """The file job writes a match's bindings: JSON Lines, CSV and Parquet carry ``r[0]`` …
    for as many events as were taken, beside a statement the program split runs column-wise."""
    import csv

    import pyarrow as pa
    import pyarrow.parquet as pq

    from cepflow.replay import replay

    prog = cepflow.load_module(parse_epl(
        SCHEMAS + "@Name('P') select * from pattern [every (r=A until u=D)];\n"
        "@Name('Q') select a.v as av, b.v as bv from pattern [every a=A -> b=B(k = a.k)];\n"))
    evs = stream([("A", 0), ("A", 1), ("B", 0), ("D", 1), ("A", 2), ("D", 0)])
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"type": [e.type for e in evs], "ts": [int(e.ts) for e in evs],
                             "k": [e.params[0] for e in evs], "v": [e.params[1] for e in evs]}),
                   src)
    want = [{"u.k": 1, "u.v": 3, "r[0].k": 0, "r[0].v": 0, "r[1].k": 1, "r[1].v": 1},
            {"u.k": 0, "u.v": 5, "r[0].k": 2, "r[0].v": 4}]
    for ext in ("jsonl", "csv", "parquet"):
        out = tmp_path / f"out.{ext}"
        replay([src], prog, out, start=0)
        if ext == "jsonl":
            recs = [json.loads(x) for x in out.read_text().splitlines()]
        elif ext == "csv":
            recs = [{**r, "params": json.loads(r["params"])}
                    for r in csv.DictReader(out.open())]
        else:
            recs = [{**r, "params": json.loads(r["params"])}
                    for r in pq.read_table(out).to_pylist()]
        assert [r["params"] for r in recs if r["pattern"] == "P"] == want, ext
        assert [r["params"] for r in recs if r["pattern"] == "Q"] == [{"av": 0, "bv": 2}], ext
