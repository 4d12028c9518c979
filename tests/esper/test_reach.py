"""A pair guard's reach (runtime/reach.py): the conjunct ``x - a.y <= k`` by which the
matcher's per-event step tests only the waiting instances an event can reach, and the pair
kernel stops an instance's search. The conjunct found must mean exactly ``x - y <= limit`` on
whole numbers; the engine with it must equal the general token path (no index, no cut) on
streams whose values are whole numbers, decimals, None and booleans, ordered or not, batches
cut anywhere and a save/restore in the middle; and the contractions' Duration (004 §IV), whose
guard never holds for some instances, no longer tests them again and again."""

import itertools
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import SCHEMA, check, events, rows, state, stream

from cepflow.compiler.evaluator import compile_expr
from cepflow.language import ast as A
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime import esper_steps
from cepflow.runtime.engine import Engine
from cepflow.runtime.reach import Reach, reach_of
from cepflow.runtime.state import restore_state, save_state

FIELDS = {"k": 0, "v": 1, "x": 2}
BOUND = frozenset({"a.v", "a.x", "a.k"})


def _where(text: str) -> A.Expr:
    """The compiled guard of ``b`` in ``every a = A -> b = B(<text>)`` (as the Esper compiler
    rewrites it: b's fields plain, a's dotted)."""
    prog = load_module(parse_epl(SCHEMA + "@Name('P')\ninsert into P\nfrom pattern [every "
                                 f"a = A -> b = B(({text}) and b.k = a.k)];\n"))
    return prog.automata[0].positions[1].where


@pytest.mark.parametrize(("text", "reach"), [
    ("b.v - a.v <= 5", Reach(1, "a.v", 5)),
    ("b.v - a.v < 5", Reach(1, "a.v", 4)),
    ("b.v <= a.v + 5", Reach(1, "a.v", 5)),
    ("b.v - 5 <= a.v", Reach(1, "a.v", 5)),
    ("a.v >= b.v - 5", Reach(1, "a.v", 5)),
    ("a.v + 5 > b.v", Reach(1, "a.v", 4)),
    ("5 >= b.v - a.v", Reach(1, "a.v", 5)),
    ("a.v - b.v >= -2", Reach(1, "a.v", 2)),
    ("-b.v >= -a.v - 3", Reach(1, "a.v", 3)),
    ("b.x > 0.5 and b.v - a.v <= 1", Reach(1, "a.v", 1)),  # (a comparison first: cannot fail)
    ("b.v - a.v <= 1 and sqrt(b.x) > 0", Reach(1, "a.v", 1)),  # (after it: not evaluated)
    ("sqrt(b.x) > 0 and b.v - a.v <= 1", None),  # (before it, a failure would be reported)
    ("b.v - a.v >= 5", None),  # (bounds a.v from above: no help against old instances)
    ("b.v - a.v <= 5.5", None),  # (a decimal bound: not taken)
    ("b.v + b.v - a.v <= 5", None),  # (a field twice)
    ("b.v - a.v - a.x <= 5", None),
    ("b.v * 1 - a.v <= 5", None),
    ("b.v - b.x <= 5", None),  # (no variable of a)
    ("b.v = a.v", None),
])
def test_the_conjunct_found(text: str, reach: Reach | None) -> None:
    assert reach_of(_where(text), FIELDS, BOUND) == reach


SIDES = st.sampled_from(["b.v", "a.v"])


@st.composite
def linear(draw: st.DrawFn) -> tuple[str, str]:
    """A comparison of ``b.v`` and ``a.v`` plus constants, each name once, arranged at
    random over both sides."""
    terms = [("b.v", draw(st.sampled_from([1, -1]))), ("a.v", draw(st.sampled_from([1, -1])))]
    terms += [(str(draw(st.integers(-9, 9))), draw(st.sampled_from([1, -1])))
              for _ in range(draw(st.integers(0, 2)))]
    sides: tuple[list, list] = ([], [])
    for t, s in terms:
        sides[draw(st.integers(0, 1))].append((t, s))

    def side(items: list) -> str:
        if not items:
            return "0"
        out = f"(0 - {items[0][0]})" if items[0][1] < 0 else items[0][0]
        for t, s in items[1:]:
            out += f" {'+' if s > 0 else '-'} {t}"
        return out

    return side(sides[0]), side(sides[1])


@settings(max_examples=300, deadline=None)
@given(linear(), st.sampled_from(["<", "<=", ">", ">="]),
       st.lists(st.tuples(st.one_of(st.integers(-30, 30), st.booleans()),
                          st.one_of(st.integers(-30, 30), st.booleans())), max_size=20))
def test_a_reach_means_what_the_condition_says(sides, op, values) -> None:
    """Whatever linear spelling: where a reach is found, the compiled conjunct holds on whole
    numbers exactly when ``x - y <= limit``."""
    text = f"{sides[0]} {op} {sides[1]}"
    where = _where(text)
    cond = where.left if isinstance(where, A.Binary) and where.op == "and" else where
    reach = reach_of(where, FIELDS, BOUND)
    if reach is None:
        return
    f = compile_expr(cond, FIELDS, None, frozenset(BOUND))
    for x, y in values:
        assert bool(f(type("E", (), {"params": (0, x, 0.0)})(), {"a.v": y})) == (
            x - y <= reach.limit), (text, x, y, reach)


#: guards of b on a's fields with a reach, alone or beside other conjuncts (and one whose
#: reach is under an ``or``: none)
REACH_GUARDS = ["b.v - a.v <= 1", "b.v <= a.v + 2 and b.x > 0.5", "b.x < 1.5 and a.v >= b.v - 1",
                "b.v - a.v < 1 or b.x = 2.0", "a.v + 1 > b.v",
                # (rarely met: instances wait long, over many candidates and values)
                "b.v + 3 <= a.v", "b.v - a.v < -1 and b.x < 1.5", "b.x = 0.0 and b.v - a.v <= 0"]


@st.composite
def reached(draw: st.DrawFn) -> str:
    g = draw(st.sampled_from(REACH_GUARDS))
    t = draw(st.sampled_from(["A", "B"]))
    within = draw(st.sampled_from(["", "", " where timer:within(6 msec)"]))
    select = draw(st.sampled_from(["", "select a.v as av, b.v - a.v as delay "]))
    return (f"@Name('P')\ninsert into P\n{select}from pattern [every a = A(a.x > 0.5) -> "
            f"b = {t}(({g}) and a.k = b.k){within}];\n")


def whole_stream() -> st.SearchStrategy:
    """Streams whose ``v`` are whole numbers only (the kernel's cut-off applies: an int64
    column) or, in a few events, also None, a decimal or a boolean (instances and events the
    index and the cut-off leave to the guard), on one or two keys, values up and down."""
    odd = st.sampled_from([None, 0.5, True, 2.0])
    return st.booleans().flatmap(lambda mixed: st.lists(st.tuples(
        st.sampled_from(["A", "A", "B"]), st.sampled_from([0, 0, 1]),
        st.one_of(st.integers(-3, 6), odd) if mixed else st.integers(-3, 6),
        st.sampled_from([0.0, 0.7, 1.2, 2.0]), st.integers(0, 3)), min_size=10, max_size=70))


@settings(max_examples=250, deadline=None)
@given(reached(), st.one_of(stream([0, 1]), whole_stream()),
       st.lists(st.integers(0, 70), max_size=3), st.integers(0, 8))
def test_reached_pairs_equal_event_by_event(stmt, spec, cuts, tail) -> None:
    """The index (from the first waiting instance on) and the kernel's cut-off give the
    general path's matches, ids, rule firings, statistics and open instances."""
    with patch.object(esper_steps, "REACH_SCAN", 0):
        check(stmt, spec, cuts, tail)


@settings(max_examples=100, deadline=None)
@given(reached(), whole_stream(), st.integers(0, 70))
def test_reached_pairs_across_a_restore(stmt, spec, restore_at) -> None:
    """Saved and restored in the middle (the index is made again from the restored
    instances), the per-event step still equals the general path."""
    prog = load_module(parse_epl(SCHEMA + stmt))
    with patch.object(esper_steps, "REACH_SCAN", 0):
        one, fast = Engine(prog, fast_path=False), Engine(prog)
        assert (fast.matchers[0].pattern.pair.reach is None) == (" or " in stmt)
        evs = events(spec)
        ref = rows([m for e in events(spec) for m in one.process(e)])
        got = []
        for i, e in enumerate(evs):
            if i == restore_at:
                again = restore_state(Engine(prog), save_state(fast))
                again.host.stats = fast.stats
                fast = again
            got += rows(fast.process(e))
        assert got == ref
        assert state(fast) == state(one)


def test_contractions_duration_tests_only_the_instances_it_can_reach() -> None:
    """Duration's instances whose guard never holds (no reading over 35 s within 5 minutes)
    wait for ever; each later reading of the patient is tested only against the instances of
    the last 5 minutes — the number of guard evaluations stays proportional to the stream,
    in the per-event step and in the kernel alike, and the matches are the general path's."""
    from pathlib import Path

    from cepflow.events.event import Event
    from cepflow.loader import load

    prog = load(Path(__file__).parents[2] / "examples" / "contractions" / "contractions.epl")
    n, patients = 6000, 4
    # every patient: a contraction over 35 s once a minute for a minute in three, then
    # nothing over 35 s for 6 minutes: an instance left waiting for ever every cycle
    spec = [(m, f"P{p}", 40 if m % 9 < 3 and m % 9 != 2 else 10)
            for m in range(n // patients) for p in range(patients)]

    def readings() -> list[Event]:
        return [Event("Patient", (m, p, d), m * 60_000) for m, p, d in spec]

    def counted(engine: Engine) -> tuple[list, int]:
        """The engine's matches over the readings, one at a time, and how many times the
        guard was evaluated."""
        pos = engine.matchers[0].pattern.pair.second.position
        calls = [0]
        flt = pos.filter

        def counting(e, b):
            calls[0] += 1
            return flt(e, b)
        pos.filter = counting
        try:
            found = [m for e in readings() for m in engine.process(e)]
        finally:
            pos.filter = flt
        return rows(found), calls[0]

    reference = Engine(prog, fast_path=False)
    ref = rows([m for e in readings() for m in reference.process(e)])
    got, tests = counted(Engine(prog))
    assert got == ref
    # a third of the readings open an instance and a ninth stay open for ever; without the
    # index every reading over 35 s tests every open instance of its patient (≈ n² / 100)
    assert tests < 3 * n, tests
    batch = Engine(prog)
    assert [m.name for m in batch._split or ()] == ["Duration"]
    assert rows(list(batch.run(readings())) + batch.finish()) == ref + rows(reference.finish())


def test_the_cut_off_over_values_too_far_apart_to_lift() -> None:
    """Values so far apart that the running minimum cannot lift each key's rows above the next
    key's in int64: it runs key by key (kernels.pair._reach_cut), with the same result."""
    big = 2 ** 60 - 1
    spec = [(t, k, v, 1.0, 1) for t, k, v in [
        ("A", 0, big), ("A", 1, 0), ("B", 1, -5), ("A", 0, 3), ("B", 0, big - 2),
        ("B", 1, 0), ("B", 0, 1), ("A", 2, -big), ("B", 2, -big), ("B", 0, 0)]]
    stmt = ("@Name('P')\ninsert into P\nfrom pattern [every a = A(a.x > 0.5) -> "
            "b = B((b.v - a.v <= -2) and a.k = b.k)];\n")
    with patch.object(esper_steps, "REACH_SCAN", 0):
        for cuts in ([], [3], [5, 7]):
            check(stmt, spec, cuts, 0)


@settings(max_examples=60, deadline=None)
@given(whole_stream(), st.lists(st.integers(0, 70), max_size=3))
def test_a_failing_select_list_declines_the_split_batch(spec, cuts) -> None:
    """A pair whose select list fails on some matches (``sqrt`` of a negative number) runs
    in the program split; a batch where it fails goes event by event, so the failures are
    reported where the per-event engine reports them, among the others'."""
    text = ("@Name('P')\ninsert into P\nselect sqrt(b.v - a.v) as r\nfrom pattern [every "
            "a = A(a.x > 0.5) -> b = B(b.v - a.v <= 2 and a.k = b.k)];\n"
            "@Name('W')\ninsert into W\nselect sum(sqrt(v)) as s\nfrom A.win:length(2);\n")
    prog = load_module(parse_epl(SCHEMA + text))
    one, many = Engine(prog, fast_path=False), Engine(prog)
    assert [m.name for m in many._split or ()] == ["P"]
    ref = rows([m for e in events(spec) for m in one.process(e)])
    evs = events(spec)
    got = []
    for lo, hi in itertools.pairwise(sorted({0, len(spec), *(min(c, len(spec)) for c in cuts)})):
        got += rows(many.process_batch(evs[lo:hi]))
    assert got == ref
    assert [(r.location, r.reason) for r in many.errors] == [
        (r.location, r.reason) for r in one.errors]
    assert many.stats == one.stats
