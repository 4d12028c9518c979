"""Patterns over the kernel patterns' output in the program split (kernels/cascade.py,
``plan_higher``): an Esper pair or keyed chain reading a kernel pattern's matches at some stage
but the last is planned over the derived stream merged with the input rows it reads, so neither
the rows where the kernel pattern completes nor its own input rows are stepped. Over random
programs and streams, batches cut anywhere, single events between them, a save/restore in the
middle and Arrow columns, it equals the per-event engine: the same complex events (parameters,
parts, match ids), token ids, rule firings, statistics, open instances and saved state."""

from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import SCHEMA, events, state
from tests.esper.test_split import (
    check_split,
    check_split_columns,
    in_two_batches,
    rows,
    stepping,
)

from cepflow.language import ast as A
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels import cascade, split

#: filters of a kernel pattern's stages (on its own event)
OWN = ["", "{a}.v >= 2", "{a}.x > 0.5", "not ({a}.v = 1)", "{a}.s = 'x'"]
#: filters on a derived row's fields (k, v, x of the kernel pattern's select list)
DERIVED = ["", "{p}.v >= 1", "{p}.x < 1.5", "{p}.v != 2", "{p}.v < 2"]
WITHIN = ["", " where timer:within(3 msec)", " where timer:within(0 msec)",
          " where timer:within(6 msec)"]


@st.composite
def kernel_patterns(draw: st.DrawFn, name: str) -> str:
    """A kernel pattern ``name`` (a single stage, a keyed pair or chain of three, a pair with
    a guard on a's fields) whose select list gives ``k``, ``v`` and ``x`` (``v`` the first
    event's, so that the matches completing at one row can differ in it)."""
    n = draw(st.sampled_from([1, 2, 2, 3]))
    tags = "abc"[:n]
    steps = []
    for j, tag in enumerate(tags):
        f = draw(st.sampled_from(OWN + (["b.v > a.v"] if n == 2 and j else []))).format(a=tag)
        if j:
            f = f"({f}) and {tag}.k = a.k" if f else f"{tag}.k = a.k"
        steps.append(f"{tag} = {draw(st.sampled_from(['A', 'B']))}({f})")
    body = " -> ".join(steps[1:])
    if n > 2:
        body = f"({body})"
    within = draw(st.sampled_from(WITHIN)) if n > 1 else ""
    pattern = f"every {steps[0]}" + (f" -> {body}{within}" if n > 1 else "")
    last = tags[-1]
    return (f"@Name('{name}')\ninsert into {name}\nselect a.k as k, a.v as v, "
            f"{last}.x as x\nfrom pattern [{pattern}];\n")


#: the shapes of :func:`higher_patterns` (a name twice: drawn twice as often)
SHAPES = ("pair", "pair", "twice", "middle", "two", "alts", "guard", "ends_derived", "mixed",
          "mixed", "mixed_after")
#: a last stage of alternatives mixing a derived and an input type
MIXED = ("mixed", "mixed_after")


@st.composite
def higher_patterns(draw: st.DrawFn, name: str, kinds: list[str],
                    shapes: tuple[str, ...] = SHAPES) -> str:
    """A pattern over the kernel patterns ``kinds`` (P, Q): a pair ``every p = P(f) -> c =
    T(g, key?)``, a keyed chain with the derived type twice or at a middle stage after an
    input one, two derived types, alternatives at the end (input types, or one derived type
    beside an input type — after an input or a derived first stage —), a guard on p's fields,
    a last stage of a derived type (its matches come in the cascade of the match it reads;
    with the alternatives, those an input row completes at that row's input step)."""
    p = draw(st.sampled_from(kinds))
    f = draw(st.sampled_from(DERIVED)).format(p="p")
    t, u = draw(st.sampled_from(["A", "B"])), draw(st.sampled_from(["A", "B"]))
    g = draw(st.sampled_from(OWN)).format(a="c")
    keyed = draw(st.booleans())

    def key(tag: str, cond: str, on: str = "p") -> str:
        k = f"{tag}.k = {on}.k" if keyed else ""
        return f"({cond}) and {k}" if cond and k else cond or k

    shape = draw(st.sampled_from(shapes))
    if shape in ("twice", "middle", "two", "ends_derived", "mixed"):
        keyed = True  # (a chain of three unifies every later stage with the first's key)
    within = draw(st.sampled_from(WITHIN))
    q = draw(st.sampled_from(kinds))
    if shape == "pair":
        body = f"every p = {p}({f}) -> c = {t}({key('c', g)}){within}"
    elif shape == "guard":
        body = f"every p = {p}({f}) -> c = {t}(c.v > p.v and c.k = p.k){within}"
    elif shape in ("twice", "two"):  # (P then P again, or P then Q)
        second = p if shape == "twice" else q
        # (a filter on q's own fields — within(0): an instance is trapped at a later row of
        # its cascade that it would take —, or a guard reading p's: not a chain, per event)
        h = draw(st.sampled_from(["", "q.v >= 1", "q.v > p.v"]))
        body = (f"every p = {p}({f}) -> (q = {second}({key('q', h)}) -> "
                f"c = {t}({key('c', g)})){within}")
    elif shape == "middle":
        body = (f"every c = {t}({g}) -> (p = {p}({key('p', f, 'c')}) -> "
                f"d = {u}({key('d', '', 'c')})){within}")
    elif shape == "alts":
        body = (f"every p = {p}({f}) -> (c = {t}({key('c', g)}) or "
                f"d = {u}({key('d', 'd.v >= 1')})){within}")
    elif shape == "mixed":  # (either alternative first)
        alts = draw(st.permutations([f"p = {p}({key('p', f, 'c')})",
                                     f"d = {u}({key('d', 'd.v >= 1', 'c')})"]))
        body = f"every c = {t}({g}) -> ({alts[0]} or {alts[1]}){within}"
    elif shape == "mixed_after":
        alts = draw(st.permutations([f"c = {t}({key('c', g)})", f"q = {q}({key('q', '')})"]))
        body = f"every p = {p}({f}) -> ({alts[0]} or {alts[1]}){within}"
    else:  # (its matches come in the cascade)
        body = f"every c = {t}({g}) -> p = {p}({key('p', f, 'c')}){within}"
    select = draw(st.sampled_from(["", "select p.k as k, p.v as pv "]))
    if shape == "middle" or shape == "ends_derived":
        select = draw(st.sampled_from(["", "select c.k as k, p.v as pv "]))
    elif shape == "mixed":  # (p is absent from a match of the other alternative)
        select = draw(st.sampled_from(["", "select c.k as k "]))
    return f"@Name('{name}')\ninsert into {name}\n{select}from pattern [{body}];\n"


#: statements per event beside them: a pattern over the higher pattern's output, a window over
#: a kernel pattern's output, a pattern opening instances at a kernel pattern's matches (token
#: ids taken between the planned ones), a pattern over the input (its rows stepped)
BESIDE = [
    "@Name('Z')\ninsert into Z\nfrom pattern [every h = H1 -> y = B];\n",
    "@Name('WP')\ninsert into WP\nselect count(*) as c\nfrom P.win:length(2);\n",
    "@Name('R')\ninsert into R\nfrom pattern [every (p = P(p.v >= 2) -> x = B(x.k = p.k))];\n",
    "@Name('D')\ninsert into D\nfrom pattern [every (x = A(x.v > 1) -> y = B(y.k = x.k))];\n",
]


@st.composite
def programs(draw: st.DrawFn, over: Any = None, beside: list[str] = BESIDE, name: str = "H",
             most: int = 2) -> tuple[str, int]:
    """One or two kernel patterns (P, Q), one or two statements over their output (``over``:
    :func:`higher_patterns` unless given, named ``name`` 1, 2), up to ``most`` of ``beside``
    and how many patterns a rule reads (-1: all)."""
    kinds = ["P"] + (["Q"] if draw(st.booleans()) else [])
    text = "".join(draw(kernel_patterns(k)) for k in kinds)
    n = draw(st.integers(1, 2))
    text += "".join(draw((over or higher_patterns)(f"{name}{i}", kinds))
                    for i in range(1, n + 1))
    text += "".join(draw(st.lists(st.sampled_from(beside), max_size=most, unique=True)))
    return text, draw(st.integers(-1, 3))


def program_of(text: str, ruled: int):
    prog = load_module(parse_epl(SCHEMA + text))
    on = prog.automata if ruled < 0 else prog.automata[:ruled]
    if on:  # (rules without an action count firings; a rule reads what it triggers on)
        prog.rules.append(A.RuleDecl("r", tuple(A.PatternRef(a.name) for a in on), None))
    return prog


#: one event of the random streams: type A/B, key, value, small time steps (instants shared
#: often)
EVENT = st.tuples(st.sampled_from(["A", "B"]), st.sampled_from([0, 1, 2]),
                  st.sampled_from([0, 1, 2, 3, None]), st.sampled_from([0.0, 0.7, 1.2, 2.0]),
                  st.sampled_from([0, 0, 1, 2]))
STREAMS = st.lists(EVENT, max_size=80)


# within(0) over two single stages' output: the instance P opens in a row's cascade is trapped
# by that cascade's Q (no time passes there, so its timer has not fired; the token path's
# window check ends it) — it outlived the batch in the split until the end of stop 31
ZERO = ("@Name('P')\ninsert into P\nselect a.k as k, a.v as v, a.x as x\nfrom pattern [every "
        "a = B()];\n@Name('Q')\ninsert into Q\nselect a.k as k, a.v as v, a.x as x\nfrom "
        "pattern [every a = B()];\n@Name('H1')\ninsert into H1\nfrom pattern [every p = P() "
        "-> (q = Q(q.k = p.k) -> c = A(c.k = p.k)) where timer:within(0 msec)];\n", 0)


#: within(0), the instance opened at the input step and the derived row it would take in that
#: row's cascade (trapped there, as per event)
ZERO_MIDDLE = ("@Name('P')\ninsert into P\nselect a.k as k, a.v as v, a.x as x\nfrom pattern "
               "[every a = A()];\n@Name('H1')\ninsert into H1\nfrom pattern [every c = A() -> "
               "(p = P(p.k = c.k) -> d = B(d.k = c.k)) where timer:within(0 msec)];\n", 0)


#: within(0), a last stage of a derived type (with a guard reading the first stage): the
#: instance the last row opens meets P's match in that row's cascade — at a last stage the
#: per-event pair step skips an instance past its window (its timer ends it), so it stays open
ZERO_GUARD = ("@Name('P')\ninsert into P\nselect a.k as k, a.v as v, a.x as x\nfrom pattern "
              "[every a = A()];\n@Name('H1')\ninsert into H1\nfrom pattern [every c = A() -> "
              "p = P(p.v > c.v and p.k = c.k) where timer:within(0 msec)];\n", 0)


def zero_examples(test: Any) -> Any:
    """The within(0) examples above, pinned in both routes' property tests."""
    for prog_spec, spec in ((ZERO, [("B", 0, 0, 0.0, 0)]), (ZERO_MIDDLE, [("A", 1, 0, 0.0, 0)]),
                            (ZERO_GUARD, [("A", 0, 1, 0.0, 0)])):
        test = example(prog_spec, spec, [], 0)(test)
    return test


@settings(max_examples=300, deadline=None)
@given(programs(), STREAMS, st.lists(st.integers(0, 80), max_size=4), st.integers(0, 80))
@zero_examples
def test_patterns_over_kernel_output_equal_event_by_event(prog_spec, spec, cuts,
                                                          restore_at) -> None:
    check_split(program_of(*prog_spec), spec, cuts, restore_at)


@settings(max_examples=150, deadline=None)
@given(programs(), STREAMS, st.lists(st.integers(0, 80), max_size=4), st.integers(0, 80))
@zero_examples
def test_patterns_over_kernel_output_over_arrow_columns(prog_spec, spec, cuts,
                                                        restore_at) -> None:
    """The same over Arrow batches (Engine.process_columns: the input rows a higher pattern
    reads are made events, the others not), a save/restore in the middle after which the
    reader numbers from 0 again."""
    check_split_columns(program_of(*prog_spec), spec, cuts, restore_at)


#: longer streams (a pattern over a pair's output completes in most batches)
DENSE = st.lists(EVENT, min_size=20, max_size=80)


def mixed_patterns(name: str, kinds: list[str]) -> Any:
    """:func:`higher_patterns` of the mixed shapes only."""
    return higher_patterns(name, kinds, MIXED)


@settings(max_examples=120, deadline=None)
@given(programs(mixed_patterns), DENSE, st.lists(st.integers(0, 80), max_size=4),
       st.integers(0, 80))
def test_mixed_last_stages_equal_event_by_event(prog_spec, spec, cuts, restore_at) -> None:
    """Patterns ending in alternatives of a kernel pattern's output and an input type
    (``every c = A -> (p = P(p.k = c.k) or d = B(d.k = c.k))``): a match the input row
    completes comes at its input step, one P's match completes in that match's cascade
    (kernels.cascade.Higher.sub) — also looking the rows up in lists."""
    check_split(program_of(*prog_spec), spec, cuts, restore_at)
    with patch.object(split, "_MANY_STEPS", 0), patch.object(split, "_STRETCH", 1 << 40):
        check_split(program_of(*prog_spec), spec, cuts, restore_at)


@settings(max_examples=60, deadline=None)
@given(programs(mixed_patterns), DENSE, st.lists(st.integers(0, 80), max_size=4),
       st.integers(0, 80))
def test_mixed_last_stages_over_arrow_columns(prog_spec, spec, cuts, restore_at) -> None:
    """The same over Arrow batches."""
    check_split_columns(program_of(*prog_spec), spec, cuts, restore_at)


HO_ESPER = ("@Name('P')\ninsert into P\nselect a.k as k, b.v as v, b.x as x\nfrom pattern "
            "[every a = A -> b = B(b.k = a.k) where timer:within(6 msec)];\n"
            "@Name('H1')\ninsert into H1\nselect p.k as k\nfrom pattern [every p = P -> "
            "c = A(c.k = p.k) where timer:within(6 msec)];\n")


def test_a_pattern_over_a_pair_steps_no_row() -> None:
    """benchmarks/pattern_shapes.py's ho_esper: the pair over the pair's output is planned,
    so no row of the batch is stepped (its rows were the pair's completions and its own
    input, 60 % of them) but those before which a pattern's first timer is due (one per
    pattern and batch, Engine.next_due), and everything equals the per-event engine's."""
    prog = load_module(parse_epl(SCHEMA + HO_ESPER))
    spec = [("AB"[(i * 7) % 3 % 2], i % 4, i % 5, 0.5, i % 3) for i in range(600)]
    engine = Engine(prog)
    assert [m.name for m in engine._split] == ["P"]
    assert [m.name for m in cascade.higher_candidates(engine, engine._split)] == ["H1"]
    got, ref, stepped, one, many = in_two_batches(prog, spec, 250)
    assert len(stepped) <= 2 * 2
    assert got == ref and {r[0] for r in ref} == {"P", "H1"}
    assert many.stats == one.stats and state(many) == state(one)
    assert rows(many.finish(close_windows=True)) == rows(one.finish(close_windows=True))


@pytest.mark.parametrize("many_steps", [64, 0])
def test_instances_opened_in_the_cascade_take_their_ids_in_turn(many_steps: int) -> None:
    """Two matches of P completing at one row, the first opening an instance of a pattern per
    event (R), the second one of the planned pattern (H1): at that stepped row the replay gives
    H1's instance its id when the engine reaches the second match, after R's (an id taken for
    a match that opens none would swap them: kernels.split._Replay.cascade_step) — also
    looking the instances up in lists (``many_steps`` 0: _Replay.as_lists)."""
    text = ("@Name('P')\ninsert into P\nselect a.k as k, a.v as v, b.x as x\nfrom pattern "
            "[every a = A -> b = B(b.k = a.k)];\n"
            "@Name('H1')\ninsert into H1\nselect p.k as k\nfrom pattern [every p = P(p.v < 2) "
            "-> c = A(c.k = p.k) where timer:within(6 msec)];\n" + BESIDE[2])
    prog = load_module(parse_epl(SCHEMA + text))
    spec = [("A", 0, 2, 0.5, 1), ("A", 0, 0, 0.5, 1), ("B", 0, 1, 0.5, 1), ("B", 1, 1, 0.5, 1)]
    one, many = Engine(prog), Engine(prog)
    assert [m.name for m in cascade.higher_candidates(many, many._split)] == ["H1"]
    ref = rows([m for e in events(spec) for m in one.process(e)])
    with patch.object(split, "_MANY_STEPS", many_steps), patch.object(split, "_STRETCH", 1 << 40):
        assert rows(many.process_batch(events(spec))) == ref
    assert state(many) == state(one)
    assert {m.name: m.count() for m in many.matchers} == {"P": 0, "H1": 1, "R": 1}


def test_mixed_alternatives_order_matches_by_where_they_complete() -> None:
    """Hand-derived: ``every c = A -> (p = P(p.k = c.k) or d = B(d.k = c.k and d.v > c.v))``
    over ``P: every a = A(a.v = 0) -> b = B(b.k = a.k)``, and a kernel pattern R after them
    (``every y = B``). A e0 (v 0) and A e1 (v 5) open H1's instances, e0 P's; at B e2 (v 1)
    the input step gives P's match id 1, H1's match of e0's instance (d = e2: 1 > 0) id 2 and
    R's id 3, then P's match cascades: e1's instance takes it (the B failed its guard), id 4,
    out right after P's match and before id 2 — per event and in the split, which steps no
    row."""
    text = ("@Name('P')\ninsert into P\nselect a.k as k, a.v as v\nfrom pattern [every "
            "a = A(a.v = 0) -> b = B(b.k = a.k)];\n@Name('H1')\ninsert into H1\nfrom pattern "
            "[every c = A -> (p = P(p.k = c.k) or d = B(d.k = c.k and d.v > c.v))];\n"
            "@Name('R')\ninsert into R\nfrom pattern [every y = B];\n")
    prog = load_module(parse_epl(SCHEMA + text))
    spec = [("A", 0, 0, 0.0, 0), ("A", 0, 5, 0.0, 1), ("B", 0, 1, 0.0, 1)]
    one, many = Engine(prog), Engine(prog)
    assert [m.name for m in many._split] == ["P", "R"]
    assert [m.name for m in cascade.higher_candidates(many, many._split)] == ["H1"]
    ref = rows([m for e in events(spec) for m in one.process(e)])
    assert [(r[0], r[4], r[2]) for r in ref] == [("P", 1, ("e0", "e2")),
                                                 ("H1", 4, ("e1", "e0", "e2")),
                                                 ("H1", 2, ("e0", "e2")), ("R", 3, ("e2",))]
    with stepping() as stepped:
        assert rows(many.process_batch(events(spec))) == ref
    assert not stepped
    assert many.stats == one.stats and state(many) == state(one)
