"""Keyed chains whose filters read variables bound at earlier stages (``A(s, u) -> B(s, w)
where w < u``: runtime.shapes.Chain.cross, stepped per event by Matcher._cross_step) and whose
complex event carries a stage's own variable (``P(s, u) { as A(s, u) -> B(s, _) }``: the
row step and the chain kernel) — against the general token path (``fast_path=False``) through
test_chain_alternatives.check: matches with ids, order, parameters and bindings, error records
(filters that fail: a division by zero, arithmetic on an unbound variable), statistics,
partial matches and saved state, batches cut anywhere, Arrow, save/restore, time passing."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_chain_alternatives import DECLS, FILTERS, check, columns, found, specs

from cepflow.compiler.program import compile_module
from cepflow.events.event import Event
from cepflow.language.parser import parse
from cepflow.runtime.arrow_rows import encode_match_table
from cepflow.runtime.engine import Engine
from cepflow.runtime.tokens import KeyedRows

#: filters reading variables (``u``, ``w``: bound by some stage, or at a later one — then
#: None); the square root fails where ``u < v`` (an error record; null where ``u`` is null)
CROSS = ("v < u", "v > w", "w < u", "u == null", "sqrt(u - v) > 1", "v + w > 2",
         "w == null or v > 1", "u > 1", "w < 2")
NAN = float("nan")


@st.composite
def crossing(draw: st.DrawFn, cross: tuple[str, ...] = CROSS) -> str:
    """A chain of 1-4 stages of 1-3 alternatives (test_chain_alternatives.alternatives'
    shape) where one stage may bind ``u`` and one ``w`` for itself (each alternative there
    binding it or not), filters of the event's own fields or reading ``u``/``w``, the complex
    event carrying some of those variables and the key at any place (or not), an optional
    window; now and then unkeyed. What follows ``complexEvent P<i>``: its parameters and body."""
    n = draw(st.integers(1, 4))
    key = draw(st.sampled_from(["s", "s", "_"]))
    at = {v: draw(st.sampled_from([None, *range(n)])) for v in ("u", "w")}
    if at["w"] == at["u"]:
        at["w"] = None
    # (a filter may name only variables the pattern binds — at that stage or later: None)
    known = FILTERS + tuple(f for f in cross if all(at[v] is not None for v in "uw" if v in f))
    bound: list[str] = []
    stages = []
    for m in range(n):
        types = draw(st.lists(st.sampled_from("ABCD"), min_size=1, max_size=3, unique=True))
        alts = []
        for j, t in enumerate(types):
            own = next((v for v in ("u", "w")
                        if at[v] == m and (j == 0 or draw(st.booleans()))), "_")
            if own != "_" and own not in bound:
                bound.append(own)
            f = draw(st.sampled_from(known + known[len(FILTERS):]))
            if t == "D":  # (keyed on its second field: its own variable is the first)
                atom, f = f"D({own}, {key})", f.replace("v", "k")
            else:
                atom = f"{t}({key}, {own})"
            alts.append(atom + (f" where {f}" if f else ""))
        stages.append(alts[0] if len(alts) == 1 else "(" + " OR ".join(alts) + ")")
    body = " -> ".join(stages)
    window = draw(st.sampled_from([None, None, 0, 2, 5, 0.2]))
    if window is not None:
        body = f"({body})[{window} ms]"
    # (the key anywhere among the parameters, or none of them — vkey, session 34: the key is
    # the variable every stage binds, not the first parameter —; an unkeyed chain's own ones)
    params = [v for v in bound if draw(st.booleans())]
    if key != "_" and draw(st.sampled_from([True, True, False])):
        params.insert(draw(st.integers(0, len(params))), "s")
    head = f"({', '.join(f'{p}: Int' for p in params)})" if params else ""
    return f"{head} {{ as {body} }}"


def compile_cross(decls: list[str]) -> Any:
    return compile_module(parse(DECLS + "".join(f"complexEvent P{i}{d}\n"
                                                for i, d in enumerate(decls))))


def cross_route(decls: list[str], fast: Engine, batch: Engine, cols: Engine) -> None:
    """Every pattern is a chain; of two stages or more the row step's, the cross step's when
    a filter reads variables — and the chain kernel takes the batch unless a chain of such
    filters has a stage of alternatives or a type at two stages (Chain.columnar)."""
    declined = False
    for m in fast.matchers:
        c = m.pattern.chain
        assert c is not None, decls
        assert (m.pattern.row_plan is not None) == (len(c.stages) > 1)
        assert (m.pattern.row_cross is not None) == (c.cross and len(c.stages) > 1)
        assert c.columnar == (not c.cross or (all(len(a) == 1 for a in c.stages)
                                             and len(c.types) == len(c.stages)))
        declined |= not c.columnar
    assert (batch._chains is None) == declined, decls
    assert declined or cols.columnar


#: the younger row takes the event its filter lets through, then the older one the next: at
#: the state they reach the older must come first again (the token path's sorted insert) —
#: the C goes to a0's partial match, not to a1's
OVERTAKE = (["(s: Int) { as A(s, u) -> B(s, w) where w < u -> C(s, _) }"],
            [("A", 1, 2, 0), ("A", 1, 5, 0), ("B", 1, 3, 0), ("B", 1, 1, 0), ("C", 1, 0, 0)],
            [5], 0, 0)
#: a filter failing on some rows (u < v), tried only on the rows the token path tries: the
#: oldest row passes, so the younger's failure is not evaluated — later it is
FAILING = (["(s: Int, u: Int) { as A(s, u) -> B(s, _) where sqrt(u - v) > 1 }"],
           [("A", 1, 5, 0), ("A", 1, 2, 0), ("B", 1, 1, 1), ("B", 1, 3, 1), ("A", 1, 2, 1),
            ("B", 1, 3, 1)], [2, 4], 1, 0)


#: a NaN key (the very same object: the dict finds its queue) unifies with nothing, and
#: ``bind`` refuses it before a filter reading variables is tried: no match, no evaluation
NAN_KEY = (["(s: Int) { as A(s, u) -> B(s, _) where v < u }"],
           [("A", NAN, 5, 0), ("B", NAN, 1, 0)], [2], 0, 0)
#: a first stage's filter reading its own variable (not by its field's name) is tried with
#: the event's bindings: u = 0 starts no partial match, u = 5 does (b2 completes a1's)
OWN_START = (["(s: Int) { as A(s, u) where u > 1 -> B(s, _) }"],
             [("A", 1, 0, 0), ("A", 1, 5, 0), ("B", 1, 0, 0)], [3], 0, 0)
#: B at two stages, both filters reading u: b2 moves a1 (u=0) to the last stage; b3 passes
#: a0's row at the middle stage first, so a1's (younger) at the last is not tried — a0 moves
YOUNGER = (["(s: Int) { as A(s, u) -> B(s, _) where v > u -> B(s, _) where v > u }"],
           [("A", 1, 5, 0), ("A", 1, 0, 0), ("B", 1, 3, 0), ("B", 1, 6, 0), ("B", 1, 9, 0)],
           [5], 0, 0)
#: float time: a0 at 0.1, b1 at 0.1 + 0.2, its span past 0.2 ms while its deadline is not
#: before it — b1 passes the filter and traps a0's partial match (no match, none started)
TRAP = (["(s: Int) { as (A(s, u) -> B(s, _) where v < u)[0.2 ms] }"],
        [("A", 1, 5, 0.1), ("B", 1, 1, 0.2), ("B", 1, 1, 0)], [3], 0, 0)

#: the complex event carries the first stage's own variable (the row step: no filter reads
#: a variable; u = 7, not the key)
OWN_PARAM = (["(s: Int, u: Int) { as A(s, u) -> B(s, _) }"],
             [("A", 1, 7, 0), ("B", 1, 0, 0)], [2], 0, 0)
#: ... and a match of the next batch continuing a partial match from the one before (its
#: first event no row of the batch: written from the events, not the columns)
OWN_OCCUPANT = (OWN_PARAM[0], OWN_PARAM[1], [1], 4, 0)
#: a variable bound at a stage without a filter of its own (b1's u = 5) read by a later one
#: (c2: 1 < 5): the partial match's bindings grow at every stage it takes
GROWN = (["(s: Int) { as A(s, _) -> B(s, u) -> C(s, _) where v < u }"],
         [("A", 1, 0, 0), ("B", 1, 5, 0), ("C", 1, 1, 0)], [3], 0, 0)
#: a partial match from an earlier batch (a0, u = 5) tried by the next batch's b1: its
#: bindings made from its events
OCCUPANT = (["(s: Int) { as A(s, u) -> B(s, _) where v < u }"],
            [("A", 1, 5, 0), ("B", 1, 1, 0)], [1], 4, 0)

#: the key second (vkey, session 34): D is keyed on its second field, its first is u, the
#: complex event's parameters are its bindings in order (the lazy matches, the Arrow columns)
KEY_SECOND = (["(u: Int, s: Int) { as D(u, s) -> A(s, _) }"],
              [("D", 7, 1, 0), ("D", 8, 2, 0), ("A", 2, 0, 0), ("A", 1, 0, 0)], [4], 0, 0)
#: ... and its matches continuing the partial matches of an earlier batch
KEY_SECOND_OCCUPANT = (KEY_SECOND[0], KEY_SECOND[1], [2], 4, 0)
#: the key before u but bound after it (D's): the parameters are not the bindings' order
KEY_FIRST_BOUND_SECOND = (["(s: Int, u: Int) { as D(u, s) -> A(s, _) }"], KEY_SECOND[1],
                          [3], 0, 0)
#: the key no parameter: P(u) carries A's own u, the partial matches wait on s
KEY_HIDDEN = (["(u: Int) { as A(s, u) -> B(s, _) where v < u }"],
              [("A", 1, 5, 0), ("A", 2, 6, 0), ("B", 2, 1, 0), ("B", 1, 9, 0), ("B", 1, 2, 0)],
              [2], 1, 0)
#: an unkeyed chain carrying a stage's own variable
UNKEYED_PARAM = (["(u: Int) { as A(_, u) -> B(_, _) }"],
                 [("A", 1, 5, 0), ("A", 2, 6, 0), ("B", 2, 1, 0), ("B", 1, 9, 0)], [1], 4, 0)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(crossing(), min_size=1, max_size=2), specs,
       st.lists(st.integers(0, 30), min_size=1, max_size=5), st.integers(0, 4),
       st.integers(0, 6))
@example(*OVERTAKE)
@example(*FAILING)
@example(*NAN_KEY)
@example(*OWN_START)
@example(*YOUNGER)
@example(*TRAP)
@example(*OWN_PARAM)
@example(*GROWN)
@example(*OCCUPANT)
@example(*OWN_OCCUPANT)
@example(*KEY_SECOND)
@example(*KEY_SECOND_OCCUPANT)
@example(*KEY_FIRST_BOUND_SECOND)
@example(*KEY_HIDDEN)
@example(*UNKEYED_PARAM)
def test_cross_chains_equal_the_token_path(decls: list[str], spec: list, cuts: list[int],
                                           restore_at: int, gap: int) -> None:
    check(decls, spec, cuts, restore_at, gap, cross_route, compile_cross)


def test_overtaken_row_keeps_its_age() -> None:
    """OVERTAKE by hand: a1 (u=5) takes b2 (3 < 5; a0's u=2 refuses it), a0 takes b3
    (1 < 2); both wait for C, a0 first, as rows (KeyedRows), and c4 completes a0's."""
    (decl,), stream, *_ = OVERTAKE
    prog = compile_cross([decl])
    eng, ref = Engine(prog), Engine(prog, fast_path=False)
    out, expected = [], []
    for i, (t, k, v, _) in enumerate(stream):
        e1, e2 = (Event(t, (k, v), i, id=f"{t.lower()}{i}") for _ in range(2))
        out.extend(found(eng.process(e1)))
        expected.extend(found(ref.process(e2)))
        if t == "B":
            assert type(eng.matchers[0].pending) is KeyedRows
    assert out == expected
    assert [m[3] for m in out] == [("a0", "b3", "c4")]
    assert [(m[4], m[5]) for m in out] == [("(1,)", "{'s': 1, 'u': 2, 'w': 1}")]


def test_failing_filter_reports_as_the_token_path() -> None:
    """FAILING by hand: b2 passes a0's row (sqrt(5 - 1) > 1) before a1's is tried; b3 is
    tried on a1's (u=2): the square root of -1 fails, an error record, no match; then a4
    (u=2) and b5: a1's row fails, then a4's — one record per event and expression."""
    (decl,), stream, *_ = FAILING
    prog = compile_cross([decl])
    got = []
    for eng in (Engine(prog), Engine(prog, fast_path=False)):
        out = [m for i, (t, k, v, _) in enumerate(stream)
               for m in eng.process(Event(t, (k, v), i, id=f"{t.lower()}{i}"))]
        got.append(([(m.event_refs, m.params) for m in out],
                    [(r.location, r.reason) for r in eng.errors]))
    assert got[0] == got[1]
    assert got[0][0] == [(["a0", "b2"], (1, 5))]
    assert [loc for loc, _ in got[0][1]] == ["event b3 at 3", "event b5 at 5"]


def test_own_parameter_in_the_kernel() -> None:
    """``P(s, u) { as A(s, u) -> B(s, _) }``: the chain kernel takes it (no filter reads a
    variable) and its matches carry ``u`` from their first event, per event and in a batch."""
    prog = compile_cross(["(s: Int, u: Int) { as A(s, u) -> B(s, _) }"])
    stream = [("A", 1, 7), ("A", 2, 8), ("B", 2, 0), ("B", 1, 0)]
    batch = Engine(prog)
    assert batch._chains is not None
    evs = [Event(t, (k, v), i, id=i) for i, (t, k, v) in enumerate(stream)]
    assert [(m.params, m.bindings) for m in batch.process_batch(evs)] == [
        ((2, 8), {"s": 2, "u": 8}), ((1, 7), {"s": 1, "u": 7})]


def test_key_not_first_takes_the_kernel() -> None:
    """The key is the variable every stage binds, wherever the parameters put it (vkey,
    session 34): ``P(u, s) { as D(u, s) -> A(s, _) }`` (the key second, the parameters the
    bindings: lazy matches, the Arrow columns) and ``P(u) { as A(s, u) -> B(s, _) }`` (the key
    no parameter) are chains the row step and the chain kernel take (a spy on the kernel's
    planner), and their matches carry the parameters by name, in order."""
    from cepflow.runtime.kernels import chain

    cases = (("(u: Int, s: Int) { as D(u, s) -> A(s, _) }",
              [("D", 7, 1), ("D", 8, 2), ("A", 2, 0), ("A", 1, 0)],
              [((8, 2), {"u": 8, "s": 2}), ((7, 1), {"u": 7, "s": 1})],
              ['{"u":8,"s":2}', '{"u":7,"s":1}']),
             ("(u: Int) { as A(s, u) -> B(s, _) }",
              [("A", 1, 5), ("A", 2, 6), ("B", 2, 0), ("B", 1, 0)],
              [((6,), {"s": 2, "u": 6}), ((5,), {"s": 1, "u": 5})],
              ['{"s":2,"u":6}', '{"s":1,"u":5}']))
    planned, calls = chain._plan_one, []

    def spy(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return planned(*args, **kw)

    for decl, stream, expected, texts in cases:
        prog = compile_cross([decl])
        fast = Engine(prog)
        assert fast.matchers[0].pattern.row_plan is not None, decl
        evs = [Event(t, (k, v), i, id=i) for i, (t, k, v) in enumerate(stream)]
        calls.clear()
        chain._plan_one = spy
        try:
            batch = Engine(prog)
            assert batch._chains is not None, decl
            got = batch.process_batch(evs)
            cols = Engine(prog)
            src = columns([Event(t, (k, v), i, id=i) for i, (t, k, v) in enumerate(stream)])
            table = cols.process_columns(src)
        finally:
            chain._plan_one = planned
        assert calls, decl
        assert [(m.params, m.bindings) for m in got] == expected
        assert [(m.params, m.bindings) for m in table.complex_events()] == expected
        assert [r["params"] for r in encode_match_table(table, src).to_pylist()] == texts


@st.composite
def split_programs(draw: st.DrawFn) -> list[str]:
    """A chain with filters reading variables (or a parameter of its own, before the key, or
    instead of it), now and then in a window, and a chain over its output (keyed, a NOT now
    and then, a window now and then): the program split plans both (kernels.chain.split_chain,
    plan_chain's timers)."""
    body = draw(st.sampled_from([
        "A(s, u) -> B(s, _) where v < u", "A(s, u) where u > 1 -> B(s, w) where w < u -> C(s, _)",
        "A(s, u) -> B(s, _) where sqrt(u - v) > 1", "A(s, _) -> B(s, u) -> C(s, _) where v < u",
        "A(s, u) -> B(s, _)"]))
    window = draw(st.sampled_from([None, None, 0, 0.2, 2, 5]))
    if window is not None:
        body = f"({body})[{window} ms]"
    # the lower's parameters: the key; the key and u; u before the key; u alone (the key no
    # parameter: the higher pattern keys on P0's u)
    own = draw(st.sampled_from(["s", "su", "us", "u"] if "u" in body.split("->")[0] else ["s"]))
    lower = "(" + ", ".join(f"{p}: Int" for p in own) + ") { as " + body + " }"
    higher = draw(st.sampled_from(["P0(s) -> C(s, _)", "A(s, _) -> P0(s)",
                                   "P0(s) -> NOT B(s, _) -> C(s, _)"]))
    higher = higher.replace("P0(s)", {"s": "P0(s)", "su": "P0(s, _)", "us": "P0(_, s)",
                                      "u": "P0(s)"}[own])
    window = draw(st.sampled_from([None, 0.2, 2, 5]))
    higher = higher if window is None else f"({higher})[{window} ms]"
    return [lower, f"(s: Int) {{ as {higher} }}"]


def split_cross_route(decls: list[str], fast: Engine, batch: Engine, cols: Engine) -> None:
    """The program splits with the crossing chain among its kernel patterns."""
    assert batch._split is not None and "P0" in {m.name for m in batch._split}, decls


@settings(max_examples=100, deadline=None)
@given(split_programs().filter(lambda d: Engine(compile_cross(d))._split is not None), specs,
       st.lists(st.integers(0, 30), min_size=1, max_size=5), st.integers(0, 4),
       st.integers(0, 6))
def test_cross_chains_in_the_split_equal_the_token_path(decls: list[str], spec: list,
                                                        cuts: list[int], restore_at: int,
                                                        gap: int) -> None:
    """Where the two branches meet: a crossing chain (vxf) in a window (vwin) as a kernel
    pattern of the program split, read by a chain over its output."""
    check(decls, spec, cuts, restore_at, gap, route=split_cross_route, compiler=compile_cross)


# -- the crossing filters column-wise (kernels.crossing, session 34) -----------------------

def _passes(seed: int, density: float, ident: int, row: int, m: int) -> bool:
    """A random but fixed truth of a stage's filter on a (partial match, row) pair."""
    h = (ident * 7919 + row * 104729 + m * 15485863 + seed) * 2654435761 % 2 ** 32
    return h < density * 2 ** 32


@st.composite
def assignments(draw: st.DrawFn) -> tuple:
    """A chain of 1-4 stages (each type at one: a row at one stage), its rows (stage, key,
    time: ties, float time), partial matches from before (oldest first: their starts in
    order, now and then not — kernels.crossing then declines in a window), a window or
    none, the batch's end (a derived stream's may be later), per stage a filter on pairs or
    none, and which rows may start."""
    k = draw(st.integers(1, 4))
    n = draw(st.integers(0, 40))
    stage = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    key = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    steps = draw(st.lists(st.sampled_from([0, 0, 1, 2, 0.1]), min_size=n, max_size=n))
    t0 = draw(st.sampled_from([0, 3, 10]))
    ts = [t0 + sum(steps[:i + 1]) for i in range(n)]
    occ = sorted(draw(st.lists(st.tuples(st.sampled_from(range(-3, t0 + 1)),
                                         st.integers(1, max(k - 1, 1)), st.integers(0, 2)),
                               max_size=6 if k > 1 else 0)))
    occupants = [(s, kc, start) for start, s, kc in occ]
    if len(occupants) > 1 and draw(st.integers(0, 9)) == 0:  # (a hand-written state)
        occupants = occupants[::-1]
    window = draw(st.sampled_from([None, None, 0, 0.2, 2, 5]))
    end = (ts[-1] if ts else float("-inf")) + draw(st.sampled_from([0, 0, 1]))
    tested = [draw(st.booleans()) for _ in range(k)]
    seed, density = draw(st.integers(0, 2 ** 16)), draw(st.sampled_from([0.2, 0.5, 0.9, 1.0]))
    return k, stage, key, ts, occupants, window, end, tested, seed, density


#: a start at 0.1 in a window of 0.2: its row at 0.1 + 0.2 is past the span (trapped) while
#: its deadline is not before it; the other key's partial match expires before its row
TRAPPED = (2, [0, 1, 0, 1], [0, 0, 1, 1], [0.1, 0.30000000000000004, 1, 4], [], 0.2, 4,
           [False, True], 0, 1.0)
#: two partial matches of one key, the row passing only the younger's filter: it overtakes
#: (seed 10: the pair (0, 2) fails, (1, 2) passes); then the older takes the next row
OVERTAKEN = (2, [0, 0, 1, 1], [0, 0, 0, 0], [0, 1, 2, 3], [], None, 3, [False, True], 10,
             0.5)

#: timers set in the order the loop sets them (their order at one deadline): a start (row
#: 0), then an occupant's first step in the batch (row 1), a start (row 2) — the occupant's
#: second step (row 3) does not set it again
TIMERS = (4, [0, 1, 0, 2], [1, 0, 2, 0], [1, 2, 3, 4], [(1, 0, 0)], 10, 4,
          [False, False, False, False], 0, 1.0)

#: a restored state whose partial matches' starts are out of age order (8, 0, 9): the loop
#: tries the second (expired, not at the head) and traps it with the row, which the third
#: would have taken (seed 2: the first fails, the others pass) — declined
UNORDERED = (2, [1], [0], [10], [(1, 0, 8), (1, 0, 0), (1, 0, 9)], 5, 10, [False, True], 2,
             0.5)


@settings(max_examples=250, deadline=None)
@given(assignments())
@example(TRAPPED)
@example(OVERTAKEN)
@example(TIMERS)
@example(UNORDERED)
def test_crossing_assignment_equals_the_loop(case: tuple) -> None:
    """kernels.crossing.cross_chain against kernels.queues.step_chain (the loop the kernel
    took before): the same partial match takes each row — random filters on (partial
    match, row) pairs, windows expiring and trapping, occupants — and the same result
    (predecessors, completions, partial matches left by age, starts, timers in the order
    they were set)."""
    import numpy as np

    from cepflow.runtime.kernels.crossing import cross_chain
    from cepflow.runtime.kernels.queues import step_chain

    k, stage, key, ts, occupants, window, end, tested, seed, density = case
    n_occ = len(occupants)

    def loop_test(m: int) -> Any:
        return lambda i, b: _passes(seed, density, b, i, m)

    # (a partial match's bindings: its identity — an occupant -(j + 1), else its start row)
    loop = step_chain(k, [[s] for s in stage], key, ts, occupants, window, end,
                      cross=([loop_test(m) if tested[m] else None for m in range(k)],
                             lambda i, m, b: i if b is None else b,
                             [-(j + 1) for j in range(n_occ)]))

    def pair_test(m: int) -> Any:
        def test(paths: np.ndarray, rows: np.ndarray, took: np.ndarray) -> np.ndarray:
            ident = [-(p + 1) if p < n_occ else int(took[0, p]) for p in paths.tolist()]
            return np.array([_passes(seed, density, d, r, m)
                             for d, r in zip(ident, rows.tolist(), strict=True)], dtype=bool)
        return test

    start_ok = np.array([s == 0 and (not tested[0] or _passes(seed, density, i, i, 0))
                         for i, s in enumerate(stage)], dtype=bool)
    mine = cross_chain(k, np.array(stage, dtype=np.int64), np.array(key, dtype=np.int64),
                       np.array(ts), occupants, window, end,
                       [pair_test(m) if tested[m] and m else None for m in range(k)],
                       start_ok if tested[0] else None)
    starts = [o[2] for o in occupants]
    if mine is None:  # (declined only where the loop's queue is not in start order)
        assert window is not None and starts != sorted(starts)
        return
    same_result(mine, loop)


def same_result(mine: tuple, loop: tuple) -> None:
    """kernels.crossing.cross_chain's result ``mine`` is kernels.queues.step_chain's
    ``loop``: predecessors, completions, partial matches left by age (the loop's empty
    stages left out), starts, timers in the order set."""
    pred, done, waiting, started, timed = loop
    assert mine[0].tolist() == pred.tolist()
    assert mine[1] == done
    assert mine[2] == {s: v for s, v in waiting.items() if v}
    assert mine[3] == started
    assert mine[4] == timed


#: filters reading variables that runtime.vector_expr decides on pairs (kernels.crossing)
VECTOR = ("v < u", "v > w", "w < u", "v + w > 2", "u > 1", "w < 2", "u * 2 > v + 1",
          "not (w == u) and v >= 1")
#: test_chain_alternatives.specs with numbers for values (NaN and floats among them): the
#: filters' pairs are decided column-wise throughout
numeric_specs = st.lists(st.tuples(st.sampled_from("ABCD"),
                                   st.sampled_from([0, 1, 2, float("nan")]),
                                   st.sampled_from([0, 1, 2, 3, 1.5, float("nan")]),
                                   st.sampled_from([0, 0, 1, 2, 3, 0.1])),
                         max_size=80)


class Counted:
    """Counts the results of function ``name`` of ``module`` while in use (replaced there):
    how many calls it decided and how many it gave back (None)."""

    def __init__(self, module: Any, name: str) -> None:
        self.module, self.name = module, name
        self.decided = self.declined = 0

    def __enter__(self) -> Counted:
        self._orig = getattr(self.module, self.name)

        def counted(*args: Any) -> Any:
            out = self._orig(*args)
            if out is None:
                self.declined += 1
            else:
                self.decided += 1
            return out

        setattr(self.module, self.name, counted)
        return self

    def __exit__(self, *exc: object) -> None:
        setattr(self.module, self.name, self._orig)


class Crossed(Counted):
    """Counts kernels.crossing.cross_chain's results in the chain kernel while in use: how
    many batches it decided and how many it gave back to the loop (None)."""

    def __init__(self) -> None:
        from cepflow.runtime.kernels import chain

        super().__init__(chain, "cross_chain")


#: two partial matches from the batch before (u = 0, u = 7), one of this batch (u = 5):
#: b3 (6) passes only a1's, b4 (1) a2's — the values of the older ones from their bindings,
#: beside the batch's from its rows
OCCUPANTS = (["(s: Int) { as A(s, u) -> B(s, _) where v < u }"],
             [("A", 1, 0, 0), ("A", 1, 7, 0), ("A", 1, 5, 0), ("B", 1, 6, 0), ("B", 1, 1, 0)],
             [2], 0, 0)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(crossing(VECTOR), min_size=1, max_size=2), numeric_specs,
       st.lists(st.integers(0, 30), min_size=1, max_size=5), st.integers(0, 4),
       st.integers(0, 6))
@example(OVERTAKE[0], [(t, k, v, dt) for t, k, v, dt in OVERTAKE[1]], *OVERTAKE[2:])
@example(GROWN[0], GROWN[1], [1], 0, 0)
@example(OCCUPANT[0], OCCUPANT[1], *OCCUPANT[2:])
@example(*OCCUPANTS)
@example(OCCUPANTS[0], OCCUPANTS[1][:2] + OCCUPANTS[1][3:], *OCCUPANTS[2:])
@example(["(s: Int) { as (A(s, u) -> B(s, _) where v < u)[0.2 ms] }"],
         [("A", 1, 5, 0.1), ("B", 1, 1, 0.2), ("B", 1, 1, 0), ("A", 1, 2, 0),
          ("B", 1, 1, 0.1)], [5], 0, 0)
def test_column_wise_crossing_equals_the_token_path(decls: list[str], spec: list,
                                                     cuts: list[int], restore_at: int,
                                                     gap: int) -> None:
    """Chains whose filters read variables in forms runtime.vector_expr decides, over numbers
    (NaN keys and values, floats beside ints): the chain kernel decides them column-wise
    (kernels.crossing) in every batch, and gives what the token path gives (matches, errors,
    statistics, state; batches cut anywhere, Arrow, save/restore, time passing)."""
    with Crossed() as crossed:
        check(decls, spec, cuts, restore_at, gap, cross_route, compile_cross)
    assert crossed.declined == 0 or not decidable(decls)


def decidable(decls: list[str]) -> bool:
    """Whether every filter reading variables reads only the event's fields and variables
    bound at its stage or before (one reading a later stage's reads it as null: the loop)."""
    from cepflow.compiler.evaluator import names_in

    prog = compile_cross(decls)
    for m in Engine(prog).matchers:
        c, bound = m.pattern.chain, set()
        for alts in c.stages:
            for e in alts.values():
                pos = e.position
                bound |= {v for _, v in pos.binds}
                fields = set(prog.schemas[pos.type].param_names)
                if pos.where is not None and not names_in(pos.where) <= fields | bound:
                    return False
    return True


def test_crossing_is_column_wise() -> None:
    """cross_filter of benchmarks/pattern_shapes.py in one batch: decided by
    kernels.crossing (not the loop), the oldest partial match passing takes each B."""
    prog = compile_cross(["(s: Int) { as A(s, u) where u > 5 -> B(s, w) where w < u }"])
    stream = [("A", 1, 6), ("A", 1, 9), ("B", 1, 7), ("B", 1, 5), ("A", 2, 8), ("B", 2, 8),
              ("B", 2, 7)]
    with Crossed() as crossed:
        out = Engine(prog).process_batch([Event(t, (k, v), i, id=f"{t.lower()}{i}")
                                          for i, (t, k, v) in enumerate(stream)])
    assert (crossed.decided, crossed.declined) == (1, 0)
    # b2 (7) is refused by a0 (6) and taken by a1 (9); b3 (5) by a0; b6 (7 < 8) by a4
    assert [m.event_refs for m in out] == [["a1", "b2"], ["a0", "b3"], ["a4", "b6"]]


def test_crossing_declines_what_numpy_cannot_decide() -> None:
    """A filter with a function (``sqrt``) or ``null``, or a text among the values: the
    loop (kernels.queues.step_chain) steps the rows, with the same matches."""
    for decl, v in (("(s: Int) { as A(s, u) -> B(s, _) where sqrt(u - v) > 1 }", 1),
                    ("(s: Int) { as A(s, u) -> B(s, _) where u == null or v < u }", 1),
                    ("(s: Int) { as A(s, u) -> B(s, _) where v < u }", "x")):
        prog = compile_cross([decl])
        stream = [("A", 1, 5), ("B", 1, v)]
        with Crossed() as crossed:
            out = Engine(prog).process_batch([Event(t, (k, x), i) for i, (t, k, x)
                                              in enumerate(stream)])
        ref = Engine(prog, fast_path=False)
        assert found(out) == found(m for i, (t, k, x) in enumerate(stream)
                                   for m in ref.process(Event(t, (k, x), i)))
        assert (crossed.decided, crossed.declined) == (0, 1), decl


@settings(max_examples=60, deadline=None)
@given(split_programs().filter(lambda d: "sqrt" not in d[0]
                               and Engine(compile_cross(d))._split is not None),
       numeric_specs, st.lists(st.integers(0, 30), min_size=1, max_size=5),
       st.integers(0, 4), st.integers(0, 6))
def test_column_wise_crossing_in_the_split_equals_the_token_path(
        decls: list[str], spec: list, cuts: list[int], restore_at: int, gap: int) -> None:
    """The crossing chain as a kernel pattern of the program split (kernels.chain.plan_chain),
    its filters decided column-wise in every batch, under a chain over its output."""
    with Crossed() as crossed:
        check(decls, spec, cuts, restore_at, gap, route=split_cross_route,
              compiler=compile_cross)
    # (a partial match from an earlier batch whose variable is an int read beside a row's
    # float — 1.5, NaN — is an object column: declined, kernels.crossing.pair_tests; found
    # in session 34 — it fails on main too, e.g. A(0, 0) | A(0, 1.5), B(0, 0))
    assert crossed.declined == 0 or len({type(v) for _, _, v, _ in spec}) > 1
