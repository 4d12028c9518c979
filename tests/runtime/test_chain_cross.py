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
from test_chain_alternatives import DECLS, FILTERS, check, found, specs

from cepflow.compiler.program import compile_module
from cepflow.events.event import Event
from cepflow.language.parser import parse
from cepflow.runtime.engine import Engine
from cepflow.runtime.tokens import KeyedRows

#: filters reading variables (``u``, ``w``: bound by some stage, or at a later one — then
#: None); the square root fails where ``u < v`` (an error record; null where ``u`` is null)
CROSS = ("v < u", "v > w", "w < u", "u == null", "sqrt(u - v) > 1", "v + w > 2",
         "w == null or v > 1", "u > 1", "w < 2")
NAN = float("nan")


@st.composite
def crossing(draw: st.DrawFn) -> str:
    """A chain of 1-4 stages of 1-3 alternatives (test_chain_alternatives.alternatives'
    shape) where one stage may bind ``u`` and one ``w`` for itself (each alternative there
    binding it or not), filters of the event's own fields or reading ``u``/``w``, the complex
    event carrying the key and some of those variables, an optional window; now and then
    unkeyed (no parameter). What follows ``complexEvent P<i>``: its parameters and body."""
    n = draw(st.integers(1, 4))
    key = draw(st.sampled_from(["s", "s", "_"]))
    at = {v: draw(st.sampled_from([None, *range(n)])) for v in ("u", "w")}
    if at["w"] == at["u"]:
        at["w"] = None
    # (a filter may name only variables the pattern binds — at that stage or later: None)
    known = FILTERS + tuple(f for f in CROSS if all(at[v] is not None for v in "uw" if v in f))
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
    params = ([] if key == "_" else
              ["s", *(v for v in bound if draw(st.booleans()))])
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


@st.composite
def split_programs(draw: st.DrawFn) -> list[str]:
    """A chain with filters reading variables (or a parameter of its own), now and then in a
    window, and a chain over its output (keyed, a NOT now and then, a window now and then):
    the program split plans both (kernels.chain.split_chain, plan_chain's timers)."""
    body = draw(st.sampled_from([
        "A(s, u) -> B(s, _) where v < u", "A(s, u) where u > 1 -> B(s, w) where w < u -> C(s, _)",
        "A(s, u) -> B(s, _) where sqrt(u - v) > 1", "A(s, _) -> B(s, u) -> C(s, _) where v < u",
        "A(s, u) -> B(s, _)"]))
    window = draw(st.sampled_from([None, None, 0, 0.2, 2, 5]))
    if window is not None:
        body = f"({body})[{window} ms]"
    own = "u" in body.split("->")[0] and draw(st.booleans())
    lower = ("(s: Int, u: Int)" if own else "(s: Int)") + " { as " + body + " }"
    higher = draw(st.sampled_from(["P0(s) -> C(s, _)", "A(s, _) -> P0(s)",
                                   "P0(s) -> NOT B(s, _) -> C(s, _)"]))
    if own:
        higher = higher.replace("P0(s)", "P0(s, _)")
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
