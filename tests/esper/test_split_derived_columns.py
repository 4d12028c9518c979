"""The derived stream's parameter columns in the program split (kernels.cascade._seeded,
rows.PlannedMatches, rows.StageMatches.param_columns): a pattern over a kernel pattern's output
planned in the split reads that pattern's matches' parameters column by column from the
batch's columns — where each is a field of the match's rows or a literal — instead of making
each match's tuple and reading its events. Every column so read equals, value for value and
type for type (the very objects over a list of events), what each match's ``params`` gives;
declined (read from the tuples as before): matches of instances from an earlier batch, a
select list reading the time, a computed one, alternatives. The programs equal the per-event
engine read every way (objects, bindings, dicts, Arrow rows and records, a rule, a pattern over
the output), batches cut anywhere, single events and a save/restore between them."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import SCHEMA, events, state
from tests.esper.test_split import check_split, check_split_columns, rows
from tests.esper.test_split_higher import BESIDE, DERIVED, EVENT, OWN, WITHIN, program_of

from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels import cascade
from cepflow.runtime.rows import PlannedMatches

#: select items of a kernel pattern over stages a, b (the fields of either, literals, the
#: time: declined) — several parameters, of ints, floats, texts and None (v)
ITEMS = ["a.k as k", "a.v as v", "{last}.x as x", "{last}.s as s", "a.x as ax", "7 as seven",
         "'t' as t", "{last}.v as lv"]
TIME = "current_timestamp() as ts"


@st.composite
def kernels(draw: st.DrawFn, name: str) -> str:
    """A kernel pattern ``name`` (a single stage, a keyed pair, a pair with a guard; an inner
    every, a collecting stage ``[2] b`` or alternatives at the end, declined) whose select
    list draws from :data:`ITEMS` (``k``, ``v``, ``x`` always: the patterns over it read them),
    sometimes the time or a computed item (declined)."""
    n = draw(st.sampled_from([1, 2, 2, 3, 4, 5]))
    a_t, b_t = draw(st.sampled_from(["A", "B"])), draw(st.sampled_from(["A", "B"]))
    f = draw(st.sampled_from(OWN)).format(a="a")
    within = draw(st.sampled_from(WITHIN[1:]))
    if n == 1:
        pattern = f"every a = {a_t}({f})"
    elif n == 3:  # (an inner every: its matches are its forks', declined)
        pattern = f"every a = {a_t}({f}) -> (every b = {b_t}(b.k = a.k)){within}"
    elif n == 4:  # (a collecting stage: declined)
        pattern = f"every a = {a_t}({f}) -> ([2] b = {b_t}(b.k = a.k)){within}"
        return (f"@Name('{name}')\ninsert into {name}\nselect a.k as k, a.v as v, b[1].x as x, "
                f"b[0].s as s\nfrom pattern [{pattern}];\n")
    elif n == 5:  # (alternatives at the end: declined — a batch of one alternative's too)
        pattern = (f"every a = {a_t}({f}) -> (b = {b_t}(b.k = a.k) or "
                   f"c = {a_t}(c.k = a.k and c.v >= 2)){within}")
        return (f"@Name('{name}')\ninsert into {name}\nselect a.k as k, a.v as v, b.x as x, "
                f"c.s as s\nfrom pattern [{pattern}];\n")
    else:
        g = draw(st.sampled_from(["b.k = a.k", "b.k = a.k and b.v > a.v",
                                  "b.k = a.k and b.x < 1.5"]))
        pattern = (f"every a = {a_t}({f}) -> b = {b_t}({g})"
                   f"{draw(st.sampled_from(WITHIN))}")
    last = "a" if n == 1 else "b"
    # (k, v and x always: the patterns over it read them; in any order among the others)
    items = draw(st.permutations([*ITEMS[:3], *draw(st.lists(st.sampled_from(ITEMS[3:]),
                                                              max_size=3, unique=True))]))
    extra = draw(st.sampled_from(["", "", "", TIME, "a.v + 1 as w"]))
    select = ", ".join([*(i.format(last=last) for i in items), *([extra] if extra else [])])
    return (f"@Name('{name}')\ninsert into {name}\nselect {select}\n"
            f"from pattern [{pattern}];\n")


@st.composite
def over(draw: st.DrawFn, name: str, kinds: list[str]) -> str:
    """A pair over a kernel pattern's output keyed on its ``k``, with a filter on its fields
    (``v``, ``x`` when it selects them), its select list reading them back."""
    p = draw(st.sampled_from(kinds))
    f = draw(st.sampled_from(DERIVED)).format(p="p")
    t = draw(st.sampled_from(["A", "B"]))
    within = draw(st.sampled_from(WITHIN))
    return (f"@Name('{name}')\ninsert into {name}\nselect p.k as k, c.v as cv\n"
            f"from pattern [every p = {p}({f}) -> c = {t}(c.k = p.k){within}];\n")


@st.composite
def programs(draw: st.DrawFn) -> tuple[str, int]:
    """One or two kernel patterns (P, Q), one or two pairs over their output, up to one
    statement per event beside them, and how many patterns a rule reads (-1: all)."""
    kinds = ["P"] + (["Q"] if draw(st.booleans()) else [])
    text = "".join(draw(kernels(k)) for k in kinds)
    text += "".join(draw(over(f"H{i}", kinds)) for i in range(1, draw(st.integers(1, 2)) + 1))
    text += "".join(draw(st.lists(st.sampled_from(BESIDE[1:]), max_size=1)))
    return text, draw(st.integers(-1, 3))


@contextmanager
def seeded() -> Iterator[list[tuple[str, bool]]]:
    """Within the block, every derived stream the split plans a pair over is checked: each
    column given from the batch's columns (TypeColumns.seed) equals, value for value and
    type for type, what the matches' ``params`` give (over a list of events: the very
    objects); yields per kernel pattern's matches read (type, whether seeded)."""
    seen: list[tuple[str, bool]] = []
    real = cascade._seeded

    def spy(merged: Any, schemas: Any, sources: Any, order: Any, params: Any) -> Any:
        cols = real(merged, schemas, sources, order, params)
        for t in order:
            given = [v for (u, _k), v in sorted(cols._vals.items()) if u == t]
            seen.append((t, bool(given)))
            if not given:
                assert not isinstance(sources[t][1], PlannedMatches) or params[t] is None
                continue
            found = [merged.events[i] for i in cols.rows(t).tolist()]
            assert found == list(sources[t][1])  # (in their sources' order)
            assert all(len(given) == len(m.params) for m in found)
            for k, values in enumerate(given):
                want = [m.params[k] for m in found]
                assert [(type(v), repr(v)) for v in values] == [
                    (type(v), repr(v)) for v in want]
                if not _columnar[0]:
                    assert all(v is w for v, w in zip(values, want, strict=True))
        return cols

    with patch.object(cascade, "_seeded", spy):
        yield seen


#: whether the check runs over Arrow batches (whose values are decoded from the columns:
#: equal values of the same type, not the events' objects)
_columnar = [False]


@settings(max_examples=80, deadline=None)
@given(programs(), st.lists(EVENT, max_size=70), st.lists(st.integers(0, 70), max_size=4),
       st.integers(0, 70))
def test_derived_columns_equal_the_matches_params(prog_spec, spec, cuts, restore_at) -> None:
    """Every seeded column equals the matches' parameters, and the program equals the
    per-event engine (tests.esper.test_split.check_split: matches, ids, bindings, statistics,
    open instances, saved state, end of input) — batches cut anywhere, single events and a
    save/restore between them, a rule reading the patterns."""
    _columnar[0] = False
    with seeded():
        check_split(program_of(*prog_spec), spec, cuts, restore_at)


@settings(max_examples=40, deadline=None)
@given(programs(), st.lists(EVENT, max_size=70), st.lists(st.integers(0, 70), max_size=4),
       st.integers(0, 70))
def test_derived_columns_over_arrow_batches(prog_spec, spec, cuts, restore_at) -> None:
    """The same over Arrow batches (Engine.process_columns: the columns decoded from the
    batch, the rows written and the records of every match against the per-event engine's)."""
    _columnar[0] = True
    try:
        with seeded():
            check_split_columns(program_of(*prog_spec), spec, cuts, restore_at)
    finally:
        _columnar[0] = False


#: hand-derived: P's select list mixes a's and b's fields and two literals; H1 keyed on p.k
#: with a filter on p.x (b's field), reading p.s (b's) and p.seven back
PINNED = ("@Name('P')\ninsert into P\nselect a.k as k, b.x as x, b.s as s, 7 as seven, "
          "'t' as t\nfrom pattern [every a = A -> b = B(b.k = a.k)];\n"
          "@Name('H1')\ninsert into H1\nselect p.k as k, p.s as s, p.seven as seven, c.v as cv"
          "\nfrom pattern [every p = P(p.x > 0.5) -> c = A(c.k = p.k)];\n")


def test_pinned_columns_and_matches() -> None:
    """e0 A(k 1), e1 A(k 2), e2 B(k 2, x 0.7, s 'x'), e3 B(k 1, x 0.0, s 'y'), e4 A(k 2,
    v 4), e5 A(k 1): P matches (e1, e2) with id 1 — k 2, x 0.7, s 'x', 7,
    't' — and (e0, e3) with id 2 (x 0.0); H1 takes the first only (x > 0.5), completing at
    e4, the next A of key 2: (2, 'x', 7, 4) with id 3. P's matches' columns are read from
    the batch (five parameters seeded, the very objects), and everything equals the
    per-event engine."""
    prog = load_module(parse_epl(SCHEMA + PINNED))
    spec = [("A", 1, 0, 0.0, 1), ("A", 2, 0, 0.0, 1), ("B", 2, 0, 0.7, 1),
            ("B", 1, 0, 0.0, 1), ("A", 2, 4, 0.0, 1), ("A", 1, 0, 0.0, 1)]
    one, many = Engine(prog), Engine(prog)
    assert [m.name for m in many._split] == ["P"]
    ref = [m for e in events(spec) for m in one.process(e)]
    # (a part that is P's match by its match id)
    assert [(m.type, m.params, m.match_id, [e.match_id if e.type == "P" else e.id
                                             for e in m.parts]) for m in ref] == [
        ("P", (2, 0.7, "x", 7, "t"), 1, ["e1", "e2"]),
        ("P", (1, 0.0, "y", 7, "t"), 2, ["e0", "e3"]),
        ("H1", (2, "x", 7, 4), 3, [1, "e4"])]
    _columnar[0] = False
    with seeded() as seen:
        got = many.process_batch(events(spec))
    assert seen == [("P", True)]
    assert rows(got) == rows(ref)
    assert [m.bindings for m in got] == [m.bindings for m in ref]
    assert many.stats == one.stats and state(many) == state(one)


def test_matches_from_an_earlier_batch_are_read_from_their_tuples() -> None:
    """Declined: P's instance opened in the first batch completes in the second (its first
    event held from before it: a match's rows are not all the batch's), so the second batch's
    P matches are read from their tuples; so is a select list reading the time. Both equal
    the per-event engine."""
    prog = load_module(parse_epl(SCHEMA + PINNED))
    spec = [("A", 1, 0, 0.0, 1), ("A", 2, 0, 0.0, 1), ("B", 2, 0, 0.7, 1),
            ("B", 1, 0, 0.0, 1), ("A", 2, 4, 0.0, 1), ("A", 1, 0, 0.0, 1)]
    one, many = Engine(prog), Engine(prog)
    ref = rows([m for e in events(spec) for m in one.process(e)])
    evs = events(spec)
    _columnar[0] = False
    with seeded() as seen:
        got = rows(many.process_batch(evs[:2])) + rows(many.process_batch(evs[2:]))
    assert got == ref and seen == [("P", False), ("P", False)]
    timed = PINNED.replace("'t' as t", "current_timestamp() as t")
    prog = load_module(parse_epl(SCHEMA + timed))
    one, many = Engine(prog), Engine(prog)
    ref = rows([m for e in events(spec) for m in one.process(e)])
    with seeded() as seen:
        assert rows(many.process_batch(events(spec))) == ref
    assert seen == [("P", False)]


def test_alternatives_of_one_kind_in_a_batch_are_read_from_their_tuples() -> None:
    """Declined: a kernel pattern ending in alternatives whose batch holds matches of one
    alternative only (one block, kernels.pair.stage_blocks, of that alternative's view —
    two stages where the pair has one before the alternatives). e0 A(k 1, v 1) opens P's
    instance, e1 B(k 1, x 0.5) completes it by ``b``: (1, 1, 0.5, None) with id 1 (``c.s``
    null); H1 takes it (v ≥ 1) and completes at e2 A(k 1, v 0): (1, 0) with id 2 (e2 opens
    P's next instance, which its ``c`` cannot take: v < 2). P's columns are not seeded (the
    view's second stage is no stage of the pair: reading its type would fail), and
    everything equals the per-event engine."""
    text = ("@Name('P')\ninsert into P\nselect a.k as k, a.v as v, b.x as x, c.s as s\nfrom "
            "pattern [every a = A -> (b = B(b.k = a.k) or c = A(c.k = a.k and c.v >= 2)) "
            "where timer:within(3 msec)];\n@Name('H1')\ninsert into H1\nselect p.k as k, "
            "c.v as cv\nfrom pattern [every p = P(p.v >= 1) -> c = A(c.k = p.k)];\n")
    prog = load_module(parse_epl(SCHEMA + text))
    spec = [("A", 1, 1, 0.0, 1), ("B", 1, 0, 0.5, 1), ("A", 1, 0, 0.0, 1)]
    one, many = Engine(prog), Engine(prog)
    assert [m.name for m in many._split] == ["P"]
    ref = [m for e in events(spec) for m in one.process(e)]
    assert [(m.type, m.params, m.match_id) for m in ref] == [("P", (1, 1, 0.5, None), 1),
                                                            ("H1", (1, 0), 2)]
    _columnar[0] = False
    with seeded() as seen:
        got = many.process_batch(events(spec))
    assert seen == [("P", False)]
    assert rows(got) == rows(ref)
    assert many.stats == one.stats and state(many) == state(one)


def test_an_inner_every_is_read_from_its_tuples() -> None:
    """Declined: a kernel pattern with an inner every (its matches are its forks', another
    plan than its instances'). e0 A(k 1, v 1) and e1 A(k 1, v 2) open P's instances; each B
    of key 1 within 5 ms forks a match of each, oldest first: e2 (x 0.5) ids 1, 2, e3 (x 0.7)
    ids 3, 4. H1 opens an instance at each (v ≥ 1) and all four complete at e4 A(k 1, v 0),
    ids 5-8 in that order. P's columns are not seeded (reading the forks' plan as the
    instances' would fail), and everything equals the per-event engine."""
    text = ("@Name('P')\ninsert into P\nselect a.k as k, a.v as v, b.x as x\nfrom pattern "
            "[every a = A -> (every b = B(b.k = a.k)) where timer:within(5 msec)];\n"
            "@Name('H1')\ninsert into H1\nselect p.k as k, p.v as pv, p.x as px, c.v as cv\n"
            "from pattern [every p = P(p.v >= 1) -> c = A(c.k = p.k)];\n")
    prog = load_module(parse_epl(SCHEMA + text))
    spec = [("A", 1, 1, 0.0, 1), ("A", 1, 2, 0.0, 1), ("B", 1, 0, 0.5, 1),
            ("B", 1, 0, 0.7, 1), ("A", 1, 0, 0.0, 1)]
    one, many = Engine(prog), Engine(prog)
    assert [m.name for m in many._split] == ["P"]
    ref = [m for e in events(spec) for m in one.process(e)]
    assert [(m.type, m.params, m.match_id) for m in ref] == [
        ("P", (1, 1, 0.5), 1), ("P", (1, 2, 0.5), 2), ("P", (1, 1, 0.7), 3),
        ("P", (1, 2, 0.7), 4), ("H1", (1, 1, 0.5, 0), 5), ("H1", (1, 2, 0.5, 0), 6),
        ("H1", (1, 1, 0.7, 0), 7), ("H1", (1, 2, 0.7, 0), 8)]
    _columnar[0] = False
    with seeded() as seen:
        got = many.process_batch(events(spec))
    assert seen == [("P", False)]
    assert rows(got) == rows(ref)
    assert many.stats == one.stats and state(many) == state(one)
