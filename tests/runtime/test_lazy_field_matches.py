"""The kernels' lazy matches whose bindings are fields of their rows (runtime.rows.field_matches:
the chain kernel's matches of chains binding variables beyond their parameters — ``P(y) { as
A(x, y) -> B(x, _) }``, cross filters —, the timer-end kernel's of a select list copying
``a``'s and ``b``'s fields) read in every way against the general token path
(``fast_path=False``) event by event: the record writer on objects nobody read yet
(``output_columns``) and after, every attribute (type, time, ids, parameters, bindings in the
token path's order, parts — the very input events —, ``to_dict``, ``repr``, a copy), a rule's
action reading each match as it fires (the listener), ``Engine.run``, ``process_batch``, the
column route (``complex_events()`` and the rows ``encode_match_table`` writes without objects),
a pattern over the output; batches cut anywhere, a save/restore between, time passing."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_chain_alternatives import DECLS, FILTERS, columns, specs
from tests.esper.test_esper_absence import batched, program, stream
from tests.esper.test_esper_interval import interval
from tests.esper.test_esper_kernel import events

from cepflow.compiler.program import compile_module
from cepflow.events.event import ComplexEvent, Event
from cepflow.language import ast as A
from cepflow.language.parser import parse
from cepflow.outputs.records import match_batch
from cepflow.runtime.arrow_rows import ArrowRows, encode_match_table
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels import Declined
from cepflow.runtime.rows import LazyBindings, StageMatches
from cepflow.runtime.state import StateError, restore_state, save_state
from cepflow.spark.columns import encode

#: filters reading the stages' own variables (test_chain_cross.CROSS's, those that cannot fail)
CROSS = ("v < u", "w < u", "u == null", "v + w > 2", "w == null or v > 1", "u > 1")
#: test_chain_alternatives.specs' events, at least 20 (matches in most examples)
DENSE = specs.filter(lambda spec: len(spec) >= 20)


@st.composite
def field_chain(draw: st.DrawFn) -> str:
    """``complexEvent P…`` of a chain of 1-3 stages, one distinct type each (its bindings the
    same fields whatever the path: Chain.binding_fields), keyed on ``s`` or unkeyed, where one
    stage may bind ``u`` and another ``w`` for itself, filters of the event's own fields or
    reading ``u``/``w``, a window now and then, and parameters some of the bindings (the key
    or not, at any place, or none): the bindings go beyond the parameters."""
    n = draw(st.integers(1, 3))
    key = draw(st.sampled_from(["s", "s", "_"]))
    at = {v: draw(st.sampled_from([None, *range(n)])) for v in ("u", "w")}
    if at["w"] == at["u"]:
        at["w"] = None
    known = FILTERS + tuple(f for f in CROSS if all(at[v] is not None for v in "uw" if v in f))
    bound: list[str] = []
    stages = []
    types = draw(st.permutations("ABCD"))  # (a type at two stages beside a cross filter:
    for m, t in enumerate(types[:n]):      # the token path, Chain.columnar)
        own = next((v for v in ("u", "w") if at[v] == m), "_")
        if own != "_":
            bound.append(own)
        f = draw(st.sampled_from(known))
        if t == "D":  # (keyed on its second field: its own variable the first)
            atom, f = f"D({own}, {key})", f.replace("v", "k")
        else:
            atom = f"{t}({key}, {own})"
        stages.append(atom + (f" where {f}" if f else ""))
    body = " -> ".join(stages)
    window = draw(st.sampled_from([None, None, 0, 2, 0.2]))
    if window is not None:
        body = f"({body})[{window} ms]"
    params = [v for v in bound if draw(st.booleans())]
    if key != "_" and draw(st.sampled_from([False, False, True])):
        params.insert(draw(st.integers(0, len(params))), "s")
    head = f"({', '.join(f'{p}: Int' for p in params)})" if params else ""
    return f"{head} {{ as {body} }}"


def chain_program(decls: list[str], over: str = "", rule: bool = True) -> Any:
    """The chains ``decls`` (P0, P1, …) and ``over`` (more declarations), a rule on every
    pattern calling the action ``rec`` (``rule``; a rule with an action keeps a program with
    patterns over others out of the program split)."""
    prog = compile_module(parse(DECLS + "".join(f"complexEvent P{i}{d}\n"
                                                for i, d in enumerate(decls)) + over))
    if rule:
        prog.rules.append(A.RuleDecl("r", tuple(A.PatternRef(a.name) for a in prog.automata),
                                     "rec"))
    return prog


def view(m: ComplexEvent, inputs: dict[Any, Event]) -> tuple:
    """Everything a reader may read of a match (NaN by its repr: a column source's NaN is
    another float object); ``inputs`` the events the engine was fed, by id (its parts are
    those very objects)."""
    twin = copy.deepcopy(m)
    return (m.type, m.ts, m.match_id, m.id, m.seq, repr(m.params), tuple(m.event_refs),
            repr(list(m.bindings.items())), repr(m.bindings_for_output()), repr(m.to_dict()),
            repr(m), twin == m, type(twin) is ComplexEvent, repr(twin.bindings),
            [isinstance(p, ComplexEvent) for p in m.parts],
            [inputs.get(p.id) is p for p in m.parts if not isinstance(p, ComplexEvent)])


def read(ms: list[ComplexEvent], inputs: dict[Any, Event]) -> tuple[list, list]:
    """The rows the record writer makes of ``ms`` before anything read their bindings (the
    lazy ones then column by column, ComplexEvent.output_columns), then every view, then the
    rows again."""
    first = match_batch(ms).to_pylist() if ms else []
    seen = [view(m, inputs) for m in ms]
    assert (match_batch(ms).to_pylist() if ms else []) == first
    return first, seen


def check_readers(prog: Any, make: Callable[[int, int], list[Event]], n: int, cuts: list[int],
                  restore_at: int, gap: int, arrow: Callable[[list[Event]], ArrowRows],
                  lazy: Callable[[ComplexEvent], bool], kernel: bool = True) -> int:
    """``make(lo, hi)`` (fresh events lo..hi of one stream) fed in parts cut at ``cuts`` to
    the token path event by event (``ref``), ``process_batch`` (``batch``), ``Engine.run``
    (``run``) — each with the rule's action reading every match as it fires — and the column
    route (``cols``, the action not registered: counted); time passing ``gap`` after each part,
    a save/restore of every engine after part ``restore_at``. Every reading of the matches
    equal (the column route's parts are events it made of its rows: not the objects fed);
    the matches of a batch whose events all came in it, of a pattern the shared lazy form
    makes (``lazy``), are LazyBindings — made when read — when the kernel takes every batch
    (``kernel``). Returns how many such matches there were."""
    fired: dict[str, list] = {"ref": [], "batch": [], "run": []}
    inputs: dict[str, dict[Any, Event]] = {"ref": {}, "batch": {}, "run": {}, "cols": {}}

    def engine(tag: str) -> Engine:
        if tag == "cols":
            return Engine(prog, strict_actions=False)
        return Engine(prog, fast_path=tag != "ref", actions={"rec": lambda act: fired[tag].append(
            view(act.event, inputs[tag]))})

    def trimmed(seen: tuple[list, list]) -> tuple[list, list]:
        return seen[0], [v[:-1] for v in seen[1]]

    engines = {tag: engine(tag) for tag in ("ref", "batch", "run", "cols")}
    if kernel:
        assert engines["cols"].columnar
    bounds = sorted({0, n, *(min(c, n) for c in cuts)})
    got: dict[str, list] = {tag: [] for tag in engines}
    made_lazily = 0
    for part, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        evs = {tag: make(lo, hi) for tag in engines}
        for tag, es in evs.items():
            inputs[tag].update((e.id, e) for e in es)
        ref = [x for e in evs["ref"] for x in engines["ref"].process(e)]
        got["ref"].append(read(ref, inputs["ref"]))
        batch = engines["batch"].process_batch(evs["batch"])
        ids = {e.id for e in evs["batch"]}
        fresh = [m for m in batch if lazy(m) and all(p.id in ids for p in m.parts)]
        if kernel:
            assert all(isinstance(m, LazyBindings) for m in fresh), fresh
        made_lazily += len(fresh)
        got["batch"].append(read(batch, inputs["batch"]))
        got["run"].append(read(list(engines["run"].run(evs["run"])), inputs["run"]))
        src = arrow(evs["cols"])
        try:
            if not engines["cols"].columnar:  # (no column route: the batch path, events)
                raise Declined("not columnar")
            table = engines["cols"].process_columns(src)
        except Declined:  # (a filter failed on a row, a key it cannot code: as events)
            cols = engines["cols"].process_batch(evs["cols"])
        else:  # (the rows written without the objects, then the objects)
            written = encode_match_table(table, src).to_pylist() if table.count else []
            assert written == (match_batch(ref).to_pylist() if ref else [])
            cols = table.complex_events()
        got["cols"].append(trimmed(read(cols, inputs["cols"])))
        if gap:
            until = max((e.ts for e in evs["ref"]), default=0) + gap
            if hi < n:  # (not past the next event: the input stays in time order)
                until = min(until, make(hi, hi + 1)[0].ts)
            for tag, eng in engines.items():
                later = read(eng.advance_to(until), inputs[tag])
                got[tag].append(trimmed(later) if tag == "cols" else later)
        if part == restore_at:
            try:
                states = {tag: save_state(eng) for tag, eng in engines.items()}
            except StateError:  # (a NaN key: JSON holds none)
                states = {}
            for tag, state in states.items():
                stats = engines[tag].stats
                engines[tag] = restore_state(engine(tag), state)
                engines[tag].host.stats = stats
    end = {tag: read(eng.finish(True), inputs[tag])[0] for tag, eng in engines.items()}
    assert got["batch"] == got["ref"]
    assert got["run"] == got["ref"]
    assert got["cols"] == [trimmed(x) for x in got["ref"]]
    assert fired["batch"] == fired["ref"] and fired["run"] == fired["ref"]
    assert all(e.stats == engines["ref"].stats for e in engines.values())
    assert all(x == end["ref"] for x in end.values())
    return made_lazily


def chain_events(spec: list) -> Callable[[int, int], list[Event]]:
    """test_chain_alternatives.specs' stream: fresh events ``lo..hi`` (ids and numbers by place)."""
    ts, times = 0, []
    for _, _, _, dt in spec:
        ts += dt
        times.append(ts)
    return lambda lo, hi: [Event(t, (k, v), times[i], id=i, seq=i)
                           for i, (t, k, v, _) in enumerate(spec[lo:hi], start=lo)]


def esper_events(spec: list) -> Callable[[int, int], list[Event]]:
    """test_esper_absence.stream's: fresh events ``lo..hi`` numbered by place (as read)."""
    def make(lo: int, hi: int) -> list[Event]:
        evs = events(spec)[lo:hi]
        for i, e in enumerate(evs, start=lo):
            e.seq = i
        return evs
    return make


def esper_columns(evs: list[Event]) -> ArrowRows:
    return ArrowRows(encode(evs, 4, [None] * len(evs), [None] * len(evs)),
                     {"A": 4, "B": 4, "C": 4}, 4)


@settings(max_examples=60, deadline=None)
@given(st.lists(field_chain(), min_size=1, max_size=2), DENSE,
       st.lists(st.integers(0, 80), max_size=4), st.integers(0, 4), st.sampled_from([0, 0, 3]))
def test_chain_matches_read_every_way(decls, spec, cuts, restore_at, gap) -> None:
    """Chains binding beyond their parameters (the chain kernel's lazy form)."""
    check_readers(chain_program(decls), chain_events(spec), len(spec), cuts, restore_at, gap,
                  columns, lambda m: True)


#: select lists copying ``a``'s and ``b``'s fields (the lazy form), one computing (not)
COPIES = ["select a.k as k, b.v as v ", "select b.s as s, a.v as v, b.k as bk ",
          "select b.v as v ", "select a.x as x, a.k as k ", "select b.v + 1 as w "]
#: test_esper_absence.stream's events, at least 15 (matches in most examples), keys equal
#: across types (``b.k = a.k`` holds for 1 and 1.0: ``a.k`` is copied from ``a``, not ``b``)
DENSE_ESPER = stream([0, 1, 2, 1.0, True]).filter(lambda spec: len(spec) >= 15)


@st.composite
def copying(draw: st.DrawFn, name: str) -> str:
    """test_esper_interval.interval (or, now and then, the missing event beside it) with a
    select list of :data:`COPIES`."""
    text = draw(st.one_of(interval(name), interval(name), interval(name), batched(name)))
    head, rest = text.split("from pattern", 1)
    select = draw(st.sampled_from(COPIES if "timer:interval" in rest and " b = " in rest
                                  else ["select a.k as k, a.v as v "]))
    return "\n".join(head.split("\n")[:2]) + "\n" + select + "from pattern" + rest


@settings(max_examples=50, deadline=None)
@given(st.data(), DENSE_ESPER, st.lists(st.integers(0, 60), max_size=4), st.integers(0, 4),
       st.sampled_from([0, 0, 1, 4]))
def test_timer_end_matches_read_every_way(data, spec, cuts, restore_at, gap) -> None:
    """The interval after ``b`` (and the missing event beside it), select lists copying
    ``a``'s and ``b``'s fields (the timer-end kernel's lazy form) or computing."""
    names = data.draw(st.sampled_from([["P"], ["P", "Q"]]))
    prog = program("".join(data.draw(copying(n)) for n in names))
    eng = Engine(prog, strict_actions=False)
    assert eng._timer_ends is not None
    copies = {m.name: m.pattern.select_copy is not None for m in eng.matchers}
    check_readers(prog, esper_events(spec), len(spec), cuts, restore_at, gap, esper_columns,
                  lambda m: copies[m.type])


@settings(max_examples=40, deadline=None)
@given(field_chain(), DENSE, st.lists(st.integers(0, 80), max_size=3), st.integers(0, 3),
       st.sampled_from([0, 3]))
def test_pattern_over_lazy_matches(decl, spec, cuts, restore_at, gap) -> None:
    """A chain over a field chain's output, ``Q { as P0(y0, …) -> C(y0, _) }``: the program
    split (P0 its kernel pattern, made in the lazy form; Q per event or planned over the
    derived stream reads their parameters to unify and holds them as parts)."""
    params = decl.split("{")[0].strip().strip("()")
    ys = [f"y{i}" for i, _ in enumerate(filter(None, params.split(",")))]
    args = f"({', '.join(ys)})" if ys else ""
    head = "(y0: Int)" if ys else ""
    over = f"complexEvent Q{head} {{ as P0{args} -> C({ys[0] if ys else '_'}, _) }}\n"
    prog = chain_program([decl], over, rule=False)
    assert Engine(prog)._split is not None
    check_readers(prog, chain_events(spec), len(spec), cuts, restore_at, gap, columns,
                  lambda m: m.type == "P0")


def test_pinned_hidden_key() -> None:
    """Hand-derived, ``P(y) { as A(x, y) -> B(x, _) }`` (key x, not a parameter): A(1, 5)@0,
    A(2, 6)@1, B(2, 0)@2, B(1, 0)@3 give P(6) of (a1, b2) at 2 and P(5) of (a0, b3) at 3,
    bindings {x, y} in that order — lazy: their values kept as fields until read (the writer
    reads them as columns), then the dict."""
    prog = chain_program(["(y: Int) { as A(x, y) -> B(x, _) }"])
    spec = [("A", 1, 5, 0), ("A", 2, 6, 1), ("B", 2, 0, 1), ("B", 1, 0, 1)]
    eng = Engine(prog, actions={"rec": lambda act: None})
    out = eng.process_batch(chain_events(spec)(0, 4))
    assert all(isinstance(m, LazyBindings) for m in out)
    assert [m.output_columns() for m in out] == [(("x", "y"), (2, 6)), (("x", "y"), (1, 5))]
    assert match_batch(out).to_pylist() == [
        {"pattern": "P0", "ts": 2, "params": '{"x":2,"y":6}', "events": ["1", "2"]},
        {"pattern": "P0", "ts": 3, "params": '{"x":1,"y":5}', "events": ["0", "3"]}]
    assert [(m.params, list(m.bindings.items()), m.match_id) for m in out] == [
        ((6,), [("x", 2), ("y", 6)], 1), ((5,), [("x", 1), ("y", 5)], 2)]
    assert [m.output_columns() for m in out] == [None, None]  # (read: the dict from now on)


def test_pinned_interval_fields() -> None:
    """Hand-derived, ``select b.v as v, a.k as k`` of the interval after b (Δ 3): A(k 0)@0,
    B(k 0, v 5)@1, C@4 — the match (e0, e1) at 4 (the timer due 1 + 3, before C), params
    (5, 0) named v, k; lazy, written from its fields, the same over Arrow."""
    text = ("@Name('P')\ninsert into P\nselect b.v as v, a.k as k from pattern [every a = A "
            "-> b = B(b.k = a.k) -> timer:interval(3 msec)];\n")
    prog = program(text)
    spec = [("A", 0, 1, 0.0, 0), ("B", 0, 5, 0.0, 1), ("C", 0, 0, 0.0, 3)]
    eng = Engine(prog, actions={"rec": lambda act: None})
    out = eng.process_batch(esper_events(spec)(0, 3))
    assert all(isinstance(m, LazyBindings) for m in out)
    assert [m.output_columns() for m in out] == [(("v", "k"), (5, 0))]
    assert [(m.ts, m.params, tuple(m.event_refs), m.match_id) for m in out] == [
        (4, (5, 0), ("e0", "e1"), 1)]
    cols = Engine(prog, strict_actions=False)
    src = esper_columns(esper_events(spec)(0, 3))
    table = cols.process_columns(src)
    assert encode_match_table(table, src).to_pylist() == [
        {"pattern": "P", "ts": 4, "params": '{"v":5,"k":0}', "events": ["e0", "e1"]}]


def test_pinned_column_route_across_batches() -> None:
    """Hand-derived, ``P0(u) { as A(s, u) -> B(s, _) }`` over two Arrow batches: A(1, 5)@0,
    A(2, 6)@1, then B(1, 0)@2, B(2, 0)@3 — both matches continue partial matches of the first
    batch, so their bindings are made from their events (not written from the rows' fields,
    whose first stage is not in the batch): {s, u} in that order, at 2 and 3."""
    prog = chain_program(["(u: Int) { as A(s, u) -> B(s, _) }"], rule=False)
    make = chain_events([("A", 1, 5, 0), ("A", 2, 6, 1), ("B", 1, 0, 1), ("B", 2, 0, 1)])
    eng = Engine(prog)
    assert eng.process_columns(columns(make(0, 2))).count == 0
    src = columns(make(2, 4))
    table = eng.process_columns(src)
    assert encode_match_table(table, src).to_pylist() == [
        {"pattern": "P0", "ts": 2, "params": '{"s":1,"u":5}', "events": ["0", "2"]},
        {"pattern": "P0", "ts": 3, "params": '{"s":2,"u":6}', "events": ["1", "3"]}]


def test_pinned_deadlines_written() -> None:
    """Hand-derived, the interval after b (Δ 3) at fractional times: A@0.5, B@1.25 — the
    match at 4.25 (before C@4.5), written at 5 (ceil); and beyond 2**53 (float64 no longer
    holds every int: the times written value by value; 2**53 + 2 + 3.0 is the float 2**53 +
    4), the same rows as the token path."""
    text = ("@Name('P')\ninsert into P\nselect b.v as v, a.k as k from pattern [every a = A "
            "-> b = B(b.k = a.k) -> timer:interval(3 msec)];\n")
    prog = program(text)
    for t0, t1, t2, due in ((0.5, 1.25, 4.5, 4.25),
                            (2**53 + 1, 2**53 + 2, 2**53 + 10, float(2**53 + 4))):
        def make(t0: Any = t0, t1: Any = t1, t2: Any = t2) -> list[Event]:
            return [Event("A", (0, 1, 0.0, "x"), t0, id="e0", seq=0),
                    Event("B", (0, 5, 0.0, "y"), t1, id="e1", seq=1),
                    Event("C", (0, 0, 0.0, "x"), t2, id="e2", seq=2)]
        ref = Engine(prog, strict_actions=False, fast_path=False)
        want = [m for e in make() for m in ref.process(e)]
        assert [m.ts for m in want] == [due]  # (Δ a float: the int time made a float)
        eng = Engine(prog, strict_actions=False)
        src = esper_columns(make())
        table = eng.process_columns(src)
        assert isinstance(table.blocks[0], StageMatches)
        assert encode_match_table(table, src).to_pylist() == match_batch(want).to_pylist()
        if t0 == 0.5:
            assert match_batch(want).to_pylist()[0]["ts"] == 5
