"""The pair kernel's last stage of alternatives (runtime/kernels/pair.py, ``EsperPair.alts``):
``every a = A(f) [-> b = B(g, key)] -> (x = X(h, key) or y = Y(k, key) …) [where
timer:within(Δ)]`` — each instance completes at the first later event of any alternative
(of its key, passing that alternative's filter), binding that alternative's tag and leaving
the others null. Over random statements of that shape (alternatives of one type or of the
first stage's, filters, keyed or not, with and without ``within``, select lists reading the
alternatives' tags) and random streams, the kernel equals the per-event general token path:
complex events (parameters with their nulls, parts, bindings, match ids) in order, rule
firings, statistics, open instances and saved state — through ``Engine.process_batch`` and
``Engine.run`` with batches cut anywhere, ``Engine.process_columns`` (event lists and Arrow
batches), the program split, and a save/restore in the middle."""

import itertools
from collections.abc import Callable
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import (
    FILTERS,
    SCHEMA,
    assert_alike,
    check,
    events,
    fed_columns,
    rows,
    state,
)
from tests.esper.test_split import (
    check_split,
    check_time_passing,
    keyed_others,
    program,
    restored,
)
from tests.esper.test_split_higher import DERIVED, OWN, STREAMS, WITHIN, program_of, programs

from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine

#: an alternative's conditions on a's fields after a alone (guards: checked per candidate,
#: kernels.pair._first_guarded, column-wise where runtime.vector_expr decides them)
GUARDS = ["{a}.v > a.v", "{a}.x < a.x + 1 and {a}.v >= 1", "{a}.v >= a.v + 2",
          "{a}.v + a.v = 3"]

#: a third type, so that alternatives may be of three types or share one
C_SCHEMA = "create schema C(k integer, v integer, x double, s string);\n"
TYPES = ["A", "B", "C"]


@st.composite
def stated(draw: st.DrawFn, pattern: str, x: str, y: str) -> str:
    """The statement ``P`` or ``Q`` of ``pattern`` after ``a``, with a select list reading
    tags ``x`` and ``y`` (fields, a literal, ``current_timestamp()``, arithmetic). Not their
    keys (nor ``select *``, which reads them): an alternative's key equated to ``a``'s stays
    its own variable then — null when another alternative matched, as Esper's tag — and the
    pattern runs per event (compiler.esper ``_reads``)."""
    select = draw(st.sampled_from([
        f"select a.v as av, {x}.v as xv, {y}.x as yx, current_timestamp() as t ",
        f"select {y}.x as yx, {x}.s as xs, a.k as k, 'lit' as c ",
        f"select a.v + {x}.v as total, {y}.v as yv "]))
    name = draw(st.sampled_from(["P", "Q"]))
    return f"@Name('{name}')\ninsert into {name}\n{select}from pattern [{pattern}];\n"


@st.composite
def alternatives(draw: st.DrawFn) -> str:
    """``every a = T(f) [-> b = T(g, key)] -> (x = T(h[, key]) or y = T(…) [or z = …])
    [where within]`` with a select list reading the alternatives' tags, or none."""
    n_alts = draw(st.sampled_from([2, 2, 3]))
    chained = draw(st.sampled_from([False, False, True]))
    keyed = chained or draw(st.sampled_from([True, True, False]))
    # (any names in any order: the written order decides ties, whatever the names sort as)
    tags = draw(st.permutations(["p", "q", "r", "Z", "ab"]))[:n_alts]

    def stage(tag: str, t: str, key: bool) -> str:
        f = draw(st.sampled_from(["", "", *FILTERS] + ([] if chained or tag == "b" else GUARDS))
                 ).format(a=tag)
        if key:
            k = draw(st.sampled_from([f"a.k = {tag}.k", f"{tag}.k = a.k", "k = a.k"]))
            f = f"({f}) and {k}" if f else k
        if tag not in ("b", tags[0], tags[-1]) and draw(st.booleans()):  # (untagged)
            return f"{t}({f.replace(tag + '.', '')})"
        return f"{tag} = {t}({f})"

    f = draw(st.sampled_from(["", *FILTERS])).format(a="a")
    first = f"a = {draw(st.sampled_from(TYPES))}({f})"
    # (after a alone, some alternatives may be on the key and others not: per type, or per
    # alternative — then one type may have both, which the compiler indexes by no key)
    per_alt = draw(st.booleans())
    on_key: dict[str, bool] = {}
    written = []
    for tag in tags:
        t = draw(st.sampled_from(TYPES))
        k = keyed and (chained or draw(st.sampled_from([True, True, False])))
        if not per_alt:
            k = on_key.setdefault(t, k)
        written.append(stage(tag, t, k))
    body = f"({' or '.join(written)})"
    if chained:
        body = f"{stage('b', draw(st.sampled_from(TYPES)), True)} -> {body}"
    within = draw(st.sampled_from(["", "", " where timer:within(3 msec)",
                                   " where timer:within(0 msec)",
                                   " where timer:within(10 milliseconds)"]))
    if chained and within and draw(st.booleans()):
        body = f"({body})"  # (the guard around everything after a; else on the
        # alternatives alone: its window opens at b's event, EsperPair.zone_at)
    x, y = tags[0], tags[-1]
    return draw(stated(f"every {first} -> {body}{within}", x, y))


@st.composite
def leading(draw: st.DrawFn) -> str:
    """``every (x = T(f) or y = U(g) [or z = …])`` (or ``every x = T(f) or every y = …``,
    the same pattern when no two operands share a type — else an event fitting two reports
    twice, per event only: test_esper_random_patterns.py): each event passing an
    alternative's filter is a match."""
    tags = draw(st.permutations(["p", "q", "r", "Z", "ab"]))[:draw(st.sampled_from([2, 3]))]
    each = draw(st.booleans())
    types = draw(st.permutations(TYPES)) if each else None
    alts = []
    for i, tag in enumerate(tags):
        f = draw(st.sampled_from(["", *FILTERS])).format(a=tag)
        t = types[i] if types else draw(st.sampled_from(TYPES))
        untagged = tag not in (tags[0], tags[-1]) and draw(st.booleans())
        alts.append(f"{t}({f.replace(tag + '.', '')})" if untagged else f"{tag} = {t}({f})")
    body = (" or ".join(f"every {x}" for x in alts) if each
            else f"every ({' or '.join(alts)})")
    x, y = tags[0], tags[-1]
    select = draw(st.sampled_from([
        "", f"select {x}.v as xv, {y}.x as yx, current_timestamp() as t ",
        f"select {y}.k as yk, {x}.s as xs, 'lit' as c "]))
    name = draw(st.sampled_from(["P", "Q"]))
    return f"@Name('{name}')\ninsert into {name}\n{select}from pattern [{body}];\n"


def stream(keys, min_size: int = 0) -> st.SearchStrategy:
    return st.lists(st.tuples(st.sampled_from(TYPES), st.sampled_from(keys),
                              st.sampled_from([0, 1, 2, 3, 4, -1, 0.5, None, True]),
                              st.sampled_from([0.0, 0.7, 1.2, 2.0]), st.integers(0, 3)),
                    min_size=min_size, max_size=70)


def takes_the_kernel(stmt: str, shape: str = "alts") -> None:
    """``stmt`` runs in the pair kernel, its last stage alternatives (``shape``: or an or of
    sequences, ``"track"``)."""
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + stmt))
    engine = Engine(prog)
    assert engine._pairs is not None, stmt
    assert all(getattr(m.pattern.pair, shape) for m in engine.matchers)


# (an event of two alternatives' type that fits both: the per-event engine keeps the one
# whose bindings sort first, ``q`` before ``r`` whatever the order they are written in)
TIE = ("@Name('P')\ninsert into P\nselect a.v as av, r.v as rv, q.x as qx\nfrom pattern "
       "[every a = A() -> (r = B(r.v >= 0 and k = a.k) or q = B(q.v <= 3 and k = a.k))];\n")
TIE_STREAM = [("A", 0, 1, 0.0, 0), ("B", 0, 2, 0.7, 1), ("A", 1, 1, 0.0, 1),
              ("B", 1, 5, 0.7, 1), ("B", 0, 1, 1.2, 1)]
# (the earlier stages' names count: ``ab.v`` sorts between ``a.*`` and ``b.v``, so the
# tagged alternative wins over the untagged one, whose bindings lack it)
TIE_CHAIN = ("@Name('P')\ninsert into P\nselect b.v as bv, ab.v as abv\nfrom pattern [every "
             "a = A() -> (b = B(k = a.k) -> (ab = C(ab.v >= 0 and k = a.k) or "
             "C(v <= 3 and k = a.k)))];\n")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(alternatives(), leading()), min_size=1, max_size=2),
       stream([0, 1, 2]), st.lists(st.integers(0, 70), max_size=4), st.integers(0, 8))
@example([TIE], TIE_STREAM, [3], 0)
@example([TIE_CHAIN], [("A", 0, 1, 0.0, 0), ("B", 0, 2, 0.7, 1), ("C", 0, 2, 0.7, 1)], [], 0)
# (one type on the key and on none: B(2) completes the instance of key 1 by q, B(1) the next
# one by p)
@example(["@Name('P')\ninsert into P\nselect a.k as ak, q.k as qk\nfrom pattern [every a = "
          "A() -> (p = B(k = a.k) or q = B(q.v > 1))];\n"],
         [("A", 1, 1, 0.0, 0), ("B", 2, 2, 0.7, 1), ("A", 1, 1, 0.0, 1), ("B", 2, 0, 0.7, 1),
          ("B", 1, 2, 0.7, 1)], [2], 0)
# (an alternative on no key beside one on the key: any C completes the instance of key 1)
@example(["@Name('P')\ninsert into P\nselect a.k as ak, q.k as qk\nfrom pattern [every a = "
          "A() -> (p = B(k = a.k) or q = C())];\n"],
         [("A", 1, 1, 0.0, 0), ("C", 2, 2, 0.7, 1), ("B", 1, 2, 0.7, 1)], [], 0)
def test_alternatives_equal_event_by_event(stmts, spec, cuts, tail) -> None:
    """Batches cut anywhere (single events between them, per-event steps after), the column
    route over event lists, rules firing: as the general token path."""
    check_statements(stmts, spec, cuts, tail, takes_the_kernel)


def check_statements(stmts: list[str], spec, cuts, tail: int, taken: Callable[[str], Any]
                     ) -> None:
    """:func:`check` of the statements ``stmts`` (the first of two of one name alone), each
    asserted by ``taken`` to take its kernel."""
    names = [s.split("'")[1] for s in stmts]
    if len(set(names)) != len(names):
        stmts = stmts[:1]
    for s in stmts:
        taken(s)
    check(C_SCHEMA + "".join(stmts), spec, cuts, tail)


@settings(max_examples=80, deadline=None)
@given(alternatives(), stream([0, 1, 2, 1.0, True, "1", None, float("nan")]),
       st.lists(st.integers(0, 70), max_size=2), st.integers(0, 5))
def test_alternatives_with_mixed_keys(stmt, spec, cuts, tail) -> None:
    """Keys that unify across types (1, 1.0, True), text, None and NaN (which unifies with
    nothing: that batch goes event by event)."""
    check(C_SCHEMA + stmt, spec, cuts, tail)


@settings(max_examples=120, deadline=None)
@given(st.one_of(alternatives(), leading()), stream([0, 1, 2]), st.integers(1, 30),
       st.integers(0, 70), st.lists(st.integers(0, 70), max_size=3))
@example(TIE, TIE_STREAM, 2, 3, [4])
def test_alternatives_saved_and_restored(stmt, spec, batch, restore_at, cuts) -> None:
    """``Engine.run`` in batches of ``batch`` events with a save/restore at ``restore_at``,
    and ``Engine.process_columns`` over Arrow batches cut at ``cuts`` (the rows written
    column-wise too): as event by event."""
    check_pair_run(stmt, spec, batch, restore_at, cuts)


def check_pair_run(stmt: str, spec, batch: int, restore_at: int, cuts) -> None:
    """``stmt`` (asserted to take the pair kernel) through :func:`check_run` and
    :func:`check_arrow`."""
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + stmt))
    assert Engine(prog)._pairs is not None
    check_run(prog, spec, batch, restore_at)
    check_arrow(prog, spec, cuts)


def check_run(prog, spec, batch: int, restore_at: int) -> None:
    """``Engine.run`` in batches of ``batch`` events with a save/restore at ``restore_at``
    against event by event (the fast per-event steps and the general token path)."""
    one = Engine(prog)
    ref = [m for e in events(spec) for m in one.process(e)]
    one_ref = Engine(prog, fast_path=False)
    assert rows([m for e in events(spec) for m in one_ref.process(e)]) == rows(ref)
    many = Engine(prog)
    evs = events(spec)
    at = min(restore_at, len(evs))
    got = list(many.run(evs[:at], batch_size=batch))
    many = restored(many, prog)
    got += many.run(evs[at:], batch_size=batch)
    assert rows(got) == rows(ref)
    assert many.stats == one.stats
    assert state(many) == state(one) == state(one_ref)
    assert many.partial_matches() == one.partial_matches()
    assert rows(many.finish(close_windows=True)) == rows(one.finish(close_windows=True))


def check_arrow(prog, spec, cuts) -> None:
    """Arrow batches cut at ``cuts`` through the column route (Engine.process_columns; rules
    only count: no action), the rows written column-wise too, against event by event."""
    cols, ref_cols = Engine(prog, strict_actions=False), Engine(prog, strict_actions=False)
    assert cols.columnar

    def numbered() -> list:
        evs = events(spec)
        for i, e in enumerate(evs):
            e.seq = i
        return evs

    ref = [m for e in numbered() for m in ref_cols.process(e)]
    evs, got, written = numbered(), [], []
    n = len(evs)
    for lo, hi in itertools.pairwise(sorted({0, n, *(min(c, n) for c in cuts)})):
        found, out = fed_columns(cols, evs[lo:hi], {"A": 4, "B": 4, "C": 4})
        got += found
        written += out
    assert_alike(ref_cols, ref, cols, got, written)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(alternatives(), leading()), min_size=1, max_size=2),
       keyed_others(1),
       stream([0, 1, 2]), st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70))
def test_alternatives_in_the_split(stmts, others, spec, cuts, restore_at) -> None:
    """Beside statements no kernel takes (over the input and over these statements'
    output): the program split plans the alternatives column-wise, with a save/restore in
    the middle, as event by event."""
    prog = program([C_SCHEMA + stmts[0], *stmts[1:]], others)
    check_split(prog, spec, cuts, restore_at)


def test_the_shape_and_what_it_declines() -> None:
    """What takes the alternatives' kernel, and what stays per event."""
    for s in [
        "every a = A -> (b = B(b.k = a.k) or c = C(c.k = a.k)) where timer:within(10 sec)",
        "every a = A(v > 1) -> (b = B or c = C or d = A)",
        "every a = A -> (b = B(v > a.v and k = a.k) or c = C(k = a.k))",  # (a guard on a)
        "every a = A -> (b = B(k = a.k) or c = C)",  # (one keyed, one not)
        # (one type keyed and not: its events are indexed by no key)
        "every a = A -> (b = B(b.k = a.k) or c = B(c.v > 2)) where timer:within(10 sec)",
        "every (a = A(v > 1) or b = B or c = A(v < 3))",  # (alternatives from the start)
        "every a = A or every b = B",
        "every a = A -> b = B(k = a.k) -> (c = C(k = a.k) or d = B(v > 2 and k = a.k))",
    ]:
        takes_the_kernel(f"@Name('P')\ninsert into P\nselect a.v as av\nfrom pattern [{s}];\n")
    # (alternatives not the last stage, ``(b or c) -> d``: kernels.branch's,
    # test_what_the_branch_takes_and_declines)
    takes_the_branch("@Name('P')\ninsert into P\nselect a.v as av\nfrom pattern [every a = A "
                     "-> (b = B(k = a.k) or c = C(k = a.k) -> d = A(k = a.k))];\n")
    # per event, after a alone on a key: the direct step with the instances as rows
    # (EsperSteps._pair_start, _alts_end): for a C closing, for an A opening
    m = Engine(load_module(parse_epl(
        SCHEMA + C_SCHEMA + "@Name('P')\ninsert into P\nselect a.v as av\nfrom pattern [every a "
        "= A -> (b = B(k = a.k) or c = C(k = a.k) or d = B(v > 1 and k = a.k))];\n"))).matchers[0]
    assert m.pattern.pair.is_pair
    assert (m.step_for("A"), m.step_for("B"), m.step_for("C")) == (
        m._pair_start, m._alts_end, m._alts_end)
    for s in [
        # (a guard on a after a chain)
        "every a = A -> b = B(k = a.k) -> (c = B(v > a.v and k = a.k) or d = C(k = a.k))",
        "every a = A -> b = B -> (c = C or d = A)",  # (a chain without a key)
        "every a = A -> b = B(k = a.k) -> (c = C(k = a.k) or d = A)",  # (one on no key)
        "every a = A -> (b = B(k = a.k) or c = C(k = a.v))",  # (two keys)
        "every (a = A -> (b = B(k = a.k) or c = C(k = a.k)))",  # (restart)
        "every (a = A or b = B) where timer:within(1 sec)",  # (restart, a window)
        "every (a = A or b = B -> c = C)",  # (a sequence among them)
    ]:
        prog = load_module(parse_epl(SCHEMA + C_SCHEMA + f"@Name('P')\ninsert into P\n"
                                     f"select a.v as av\nfrom pattern [{s}];\n"))
        assert Engine(prog)._pairs is None, s


#: per operator, the operands' lengths drawn (an or of single events is the plain
#: alternatives'; an and's may all be single events)
LENS = {"or": [[2, 1], [1, 2], [2, 2], [3, 1], [1, 1, 2], [2, 1, 3], [1, 3]],
        "and": [[1, 1], [1, 1], [1, 2], [2, 1], [2, 2], [1, 1, 1], [1, 2, 1]]}


@st.composite
def sequences(draw: st.DrawFn, word: str = "or") -> str:
    """``every a = T(f) [-> b = T(g, key)] -> ((x = T(h, key) -> y = …) or z = T(…) [or …])
    [where within]``: an Esper ``or`` some of whose operands are sequences of one to three
    atoms (compiler.conjunction's product: kernels.orseq), every atom on a's key (after a
    alone also on none: all, or some), filters on the atom's own event, select lists
    reading the operands' tags (null for the operands that did not complete) — some atoms
    untagged. ``word`` "and": the same with ``and``, operands of one or two atoms."""
    lens = draw(st.sampled_from(LENS[word]))
    names = iter(draw(st.permutations(["p", "q", "r", "s", "t", "u", "w", "Z", "ab"])))
    chained = draw(st.sampled_from([False, False, True]))
    keys = chained or draw(st.sampled_from([True, True, False]))  # (False: on no key)
    tags: list[list[str]] = []
    operands = []

    def atom(tag: str) -> str:
        f = draw(st.sampled_from(["", "", *FILTERS])).format(a=tag)
        if keys or draw(st.booleans()):
            k = draw(st.sampled_from([f"a.k = {tag}.k", f"{tag}.k = a.k", "k = a.k"]))
            f = f"({f}) and {k}" if f else k
        return f"{tag} = {draw(st.sampled_from(TYPES))}({f})"

    for n in lens:
        op = [next(names) for _ in range(n)]
        written = [atom(t) for t in op]
        if n == 2 and draw(st.integers(0, 4)) == 0:  # ([2] T(f): two untagged atoms alike)
            written = [f"[2] {written[1].split(' = ', 1)[1].replace(op[1] + '.', '')}"]
            op = []
        elif len(written) > 1 and draw(st.booleans()):  # (an untagged middle atom)
            written[0] = written[0].split(" = ", 1)[1].replace(op[0] + ".", "")
            op = op[1:]
        tags.append(op)
        operands.append(written[0] if len(written) == 1 else f"({' -> '.join(written)})")
    body = f"({f' {word} '.join(operands)})"
    if chained:
        body = f"{atom('b')} -> {body}"
    within = draw(st.sampled_from(["", " where timer:within(3 msec)",
                                   " where timer:within(0 msec)",
                                   " where timer:within(10 milliseconds)"]))
    if chained and within and draw(st.booleans()):
        body = f"({body})"  # (the guard around everything after a; else on the or alone)
    f = draw(st.sampled_from(["", *FILTERS])).format(a="a")
    first = f"a = {draw(st.sampled_from(TYPES))}({f})"
    x, y = (tags[0] or ["a"])[-1], (tags[-1] or ["a"])[0]
    return draw(stated(f"every {first} -> {body}{within}", x, y))


def takes_the_product(stmt: str) -> None:
    takes_the_kernel(stmt, "track")


# (the esper_or_seq shape of benchmarks/pattern_shapes.py)
OR_SEQ = ("@Name('P')\ninsert into P\nselect a.k as k, c.v as cv, d.v as dv\nfrom pattern "
          "[every a = A -> ((b = B(b.k = a.k) -> c = C(c.k = a.k)) or d = C(d.k = a.k and "
          "d.v > 2)) where timer:within(10 milliseconds)];\n")


def test_what_the_or_of_sequences_takes_and_declines() -> None:
    """What takes the pair kernel as an or of sequences (kernels.orseq), and what stays per
    event (the general token path)."""
    for s in [
        "every a = A -> ((b = B(b.k = a.k) -> c = C(c.k = a.k)) or d = C(d.k = a.k and d.v > 5))"
        " where timer:within(10 sec)",
        "every a = A -> ((b = B -> c = C) or d = C(v > 5))",  # (on no key)
        "every a = A -> ((b = B(k = a.k) -> c = C) or (d = C -> e = A(k = a.k)))",  # (some)
        "every a = A -> b = B(k = a.k) -> ((c = C(k = a.k) -> d = A(k = a.k)) or "
        "e = B(k = a.k)) where timer:within(5 sec)",  # (after a chain: the guard opens at b)
        "every a = A -> (B(k = a.k) -> C(k = a.k) -> A(k = a.k) or d = C(k = a.k) or "
        "(e = B(k = a.k and v > 1) -> f = B(k = a.k)))",  # (untagged, three operands)
        "every a = A -> ((b = B(k = a.k) -> c = B(k = a.k)) or d = B(k = a.k))",  # (one type)
        "every a = A -> ([2] B(k = a.k) or d = C(k = a.k))",  # (a repetition: B -> B)
    ]:
        takes_the_product(f"@Name('P')\ninsert into P\nselect a.v as av\nfrom pattern [{s}];\n")
    declined([
        "every a = A -> ((b = B(b.v > a.v and k = a.k) -> c = C(k = a.k)) or d = C(k = a.k))",
        "every a = A -> ((b = B(k = a.k) -> c = C(c.v > b.v and k = a.k)) or d = C(k = a.k))",
        "every a = A -> ((b = B(k = a.k) -> c = C(k = a.v)) or d = C(k = a.k))",  # (two keys)
        "every a = A -> b = B -> ((c = C -> d = A) or e = B)",  # (a chain on no key before)
        "every a = A -> b = B(k = a.k) -> ((c = C -> d = A(k = a.k)) or e = B(k = a.k))",
        "every a = A -> ((b = B(k = a.k) -> (c = C(k = a.k) or e = A(k = a.k))) or "
        "d = C(k = a.k))",  # (alternatives inside an operand)
        "every a = A -> ((b = B(k = a.k) -> c = C(k = a.k)) or d = C(k = a.k)) -> "
        "e = A(k = a.k)",  # (not the last stage)
        "every (a = A -> ((b = B(k = a.k) -> c = C(k = a.k)) or d = C(k = a.k)))",  # (restart)
    ], "track")


def declined(patterns: list[str], shape: str) -> None:
    """Each of ``patterns`` compiles to no pair kernel of ``shape`` (an or of sequences,
    ``"track"``; an and, ``"conj"``): it stays per event (the general token path)."""
    for s in patterns:
        prog = load_module(parse_epl(SCHEMA + C_SCHEMA + f"@Name('P')\ninsert into P\n"
                                     f"from pattern [{s}];\n"))
        assert all(m.pattern.pair is None or not getattr(m.pattern.pair, shape)
                   for m in Engine(prog).matchers), s


#: hand-derived: e0's instance completes by b -> c at e2 (d's filter fails on C(v=1)); e3's
#: by d at e4; e5's at e7 by both operands at once — d's filter started with the or (at
#: e5), c's at e6: d reports first and wins (EvalOrStateNode; until session 41 the lowest,
#: b -> c, won); e8's takes b at e9 and is left open as a product token (track "1") by a
#: batch cut after e9, which the next batch reads back: e11 completes both operands again,
#: d's filter (from e8) before c's (from e9): d wins; e10 waits
OR_SEQ_STREAM = [("A", 0, 1, 0.0, 0), ("B", 0, 2, 0.0, 1), ("C", 0, 1, 0.0, 1),
                 ("A", 0, 1, 0.0, 1), ("C", 0, 5, 0.0, 1), ("A", 1, 1, 0.0, 1),
                 ("B", 1, 2, 0.0, 1), ("C", 1, 5, 0.0, 1), ("A", 2, 1, 0.0, 1),
                 ("B", 2, 2, 0.0, 1), ("A", 1, 1, 0.0, 1), ("C", 2, 9, 0.0, 1)]
OR_SEQ_MATCHES = [(("e0", "e1", "e2"), (0, 1, None)), (("e3", "e4"), (0, None, 5)),
                  (("e5", "e7"), (1, None, 5)), (("e8", "e11"), (2, None, 9))]


def test_or_seq_pinned() -> None:
    """The esper_or_seq shape over a hand-derived stream, in two batches cut after e9 (the
    product token left open and read back), then in one: the matches above, and the token
    the first batch leaves as the general token path holds it."""
    takes_the_product(OR_SEQ)

    def left(eng: Engine) -> None:
        (tok,) = [t for t in eng.matchers[0].all_tokens() if t.threads[0].events[0].ref == "e8"]
        th = tok.threads[0]
        assert ([e.ref for e in th.events], th.bindings["_or1"]) == (["e8", "e9"], "1")

    check_pinned(OR_SEQ, OR_SEQ_STREAM, 10, OR_SEQ_MATCHES, left)


def check_pinned(stmt: str, spec, cut: int, matches, left: Callable[[Engine], None]) -> None:
    """``stmt`` over the hand-derived stream ``spec`` in two batches cut at ``cut`` — ``left``
    checks the tokens the first one leaves —, then in one batch: the ``matches`` (events,
    parameters), and everything else as the general token path."""
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + stmt))
    for at in (cut, len(spec)):
        eng, ref = Engine(prog), Engine(prog, fast_path=False)
        evs = events(spec)
        got = eng.process_batch(evs[:at])
        want = [m for e in events(spec)[:at] for m in ref.process(e)]
        assert state(eng) == state(ref)
        if at == cut:
            left(eng)
        got += eng.process_batch(evs[at:])
        want += [m for e in events(spec)[at:] for m in ref.process(e)]
        assert [(tuple(m.event_refs), m.params) for m in got] == matches
        assert rows(got) == rows(want)
        assert state(eng) == state(ref) and eng.stats == ref.stats


@settings(max_examples=120, deadline=None)
@given(st.lists(sequences(), min_size=1, max_size=2), stream([0, 1], 20),
       st.lists(st.integers(0, 70), max_size=4), st.integers(0, 8))
def test_sequences_equal_event_by_event(stmts, spec, cuts, tail) -> None:
    """An or of sequences (kernels.orseq): batches cut anywhere (single events between them,
    per-event steps after), the column route over event lists, rules firing: as the general
    token path."""
    check_statements(stmts, spec, cuts, tail, takes_the_product)


@settings(max_examples=60, deadline=None)
@given(sequences(), stream([0, 1, 2, 1.0, True, "1", None, float("nan")], 10),
       st.lists(st.integers(0, 70), max_size=2), st.integers(0, 5))
def test_sequences_with_mixed_keys(stmt, spec, cuts, tail) -> None:
    """Keys that unify across types (1, 1.0, True), text, None and NaN (which unifies with
    nothing: that batch goes event by event)."""
    check(C_SCHEMA + stmt, spec, cuts, tail)


@settings(max_examples=80, deadline=None)
@given(sequences(), stream([0, 1], 20), st.integers(1, 30), st.integers(0, 70),
       st.lists(st.integers(0, 70), max_size=3))
def test_sequences_saved_and_restored(stmt, spec, batch, restore_at, cuts) -> None:
    """``Engine.run`` in batches with a save/restore in the middle (the product's tokens
    saved and read back), ``Engine.process_columns`` over Arrow batches: as event by
    event."""
    takes_the_product(stmt)
    check_pair_run(stmt, spec, batch, restore_at, cuts)


@settings(max_examples=60, deadline=None)
@given(st.lists(sequences(), min_size=1, max_size=2),
       keyed_others(1),
       stream([0, 1], 20), st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70))
def test_sequences_in_the_split(stmts, others, spec, cuts, restore_at) -> None:
    """Beside statements no kernel takes (over the input and over these statements'
    output): the program split plans the or of sequences column-wise, with a save/restore
    in the middle, as event by event."""
    prog = program([C_SCHEMA + stmts[0], *stmts[1:]], others)
    check_split(prog, spec, cuts, restore_at)


@settings(max_examples=60, deadline=None)
@given(sequences(), stream([0, 1], 5), st.sampled_from([0, 1, 3, 9, 10, 100]))
def test_sequences_time_passing_after_a_batch(stmt, spec, later) -> None:
    """One batch, then ``advance_to`` past its last event: the product's tokens left open
    expire, and the idle timers of the instances that completed move the clock, as per
    event."""
    check_time_passing(load_module(parse_epl(SCHEMA + C_SCHEMA + stmt)), spec, later)


@st.composite
def sequences_over(draw: st.DrawFn, name: str, kinds: list[str], word: str = "or") -> str:
    """An or of sequences over kernel patterns' output (``kinds``: P, Q) and input types
    after ``p`` — ``every p = P(f) -> ((q = T(key) -> c = U(key)) or d = V(key) …)
    [within]`` (``word`` "and": an and, its operands of one or two atoms), derived types at
    any atom (tests.esper.test_split_higher.programs): planned
    over the derived stream (kernels.cascade.plan_higher) where its operands end at input
    types or one kernel pattern's output, else per event."""
    types = ["A", "B", *kinds]
    f = draw(st.sampled_from(DERIVED)).format(p="p")

    def atom(tag: str) -> str:
        t = draw(st.sampled_from(types))
        g = draw(st.sampled_from(DERIVED if t in kinds else OWN)).format(p=tag, a=tag)
        return f"{tag} = {t}({f'({g}) and {tag}.k = p.k' if g else f'{tag}.k = p.k'})"

    ops = [f"({atom('q')} -> {atom('c')})", atom("d")]
    if word == "and" and draw(st.booleans()):  # (an and of single events completes oftener)
        ops[0] = atom("c")
    if draw(st.booleans()):
        ops.append(f"({atom('e')} -> {atom('g')})" if word == "or" else atom("e"))
    ops = draw(st.permutations(ops))
    within = draw(st.sampled_from(WITHIN))
    select = draw(st.sampled_from(["", "select p.k as k, p.v as pv, c.v as cv, d.x as dx "]))
    return (f"@Name('{name}')\ninsert into {name}\n{select}from pattern [every p = "
            f"{draw(st.sampled_from(kinds))}({f}) -> ({f' {word} '.join(ops)}){within}];\n")


#: within(0) over two single stages' output: the instance P opens in a row's cascade meets
#: that cascade's Q at an operand's middle atom (``ZERO_SEQ``) or last atom (``ZERO_LAST``):
#: the token path's product step checks the window there and fails (no time passes in a
#: cascade, so its timer has not fired) — but keeps the instance, the other operand still
#: waiting (Matcher._others_wait); at both operands' atoms (``ZERO_ALL``: every edge out of
#: its state fires) it traps it. Declined by the kernel (kernels.pair.pair_rows)
ZERO_SEQ = ("@Name('P')\ninsert into P\nselect a.k as k, a.v as v, a.x as x\nfrom pattern "
            "[every a = B()];\n@Name('Q')\ninsert into Q\nselect a.k as k, a.v as v, a.x as x"
            "\nfrom pattern [every a = B()];\n@Name('H1')\ninsert into H1\nfrom pattern [every "
            "p = P() -> ((q = Q(q.k = p.k) -> c = A(c.k = p.k)) or d = A(d.k = p.k)) where "
            "timer:within(0 msec)];\n", -1)
ZERO_LAST = (ZERO_SEQ[0].replace("or d = A(d.k", "or d = Q(d.k").replace(
    "(q = Q(q.k = p.k) -> c", "(q = A(q.k = p.k) -> c"), -1)
ZERO_ALL = (ZERO_SEQ[0].replace("or d = A(d.k", "or d = Q(d.k").replace(
    "-> c = A(c.k", "-> c = Q(c.k"), -1)


@settings(max_examples=80, deadline=None)
@given(programs(over=sequences_over), st.tuples(STREAMS, STREAMS).map(lambda s: s[0] + s[1]),
       st.lists(st.integers(0, 80), max_size=4), st.integers(0, 80))
@example(ZERO_SEQ, [("B", 0, 0, 0.0, 0)], [], 0)
@example(ZERO_LAST, [("B", 0, 0, 0.0, 0)], [], 0)
@example(ZERO_ALL, [("B", 0, 0, 0.0, 0)], [], 0)
def test_sequences_over_kernel_output(prog_spec, spec, cuts, restore_at) -> None:
    """Over the derived stream of kernel patterns' matches (within(0) too: an instance a
    row's cascade opens is trapped by a later row of that cascade any operand's atom would
    take, as the token path's product steps check the window), batches cut anywhere, a
    save/restore in the middle: as event by event."""
    check_split(program_of(*prog_spec), spec, cuts, restore_at)


#: a sliding window's rows read by a pattern of alternatives over that one type: no
#: single-stage pattern of the cascade (kernels.cascade takes those), the pair kernel's
OVER_BLOCK = (
    "@Name('WK')\ninsert into WK\nselect a.k as k, a.x as x, avg(a.x) as ax\n"
    "from A(a.k > 0).win:time(4 msec) as a\ngroup by a.k;\n"
    "@Name('GW')\ninsert into GW\nselect g.k as k, h.x as hx, i.ax as iax\n"
    "from pattern [every g = WK(g.ax > 0.8) -> (h = WK(h.k = g.k and h.x < 1) or "
    "i = WK(i.k = g.k and i.x >= 1)) where timer:within(5 msec)];\n")


@settings(max_examples=60, deadline=None)
@given(stream([0, 1, 2]), st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70))
def test_alternatives_over_a_window_block(spec, cuts, restore_at) -> None:
    prog = program([C_SCHEMA + OVER_BLOCK], [])
    check_split(prog, spec, cuts, restore_at)


# --- Esper's and after a stage (EsperPair.conj: the or's product, every operand completing) ---


def takes_the_and(stmt: str) -> None:
    takes_the_kernel(stmt, "conj")


def conjunctions() -> st.SearchStrategy:
    """:func:`sequences` with ``and``: ``every a = T(f) [-> b = T(g, key)] -> (x = T(h, key)
    and (y = T(…) -> z = T(…)) [and …]) [where within]`` — operands of one or two atoms
    (``[2] T`` too), keyed or (after a alone) not, within none/0/3/10 ms, tags read in the
    select list."""
    return sequences("and")


# (the esper_and_after shape of benchmarks/pattern_shapes.py, its tags read)
AND_AFTER = ("@Name('P')\ninsert into P\nselect a.k as k, b.v as bv, c.v as cv\nfrom pattern "
             "[every a = A -> (b = B(b.k = a.k) and c = C(c.k = a.k)) "
             "where timer:within(10 milliseconds)];\n")


def test_what_the_and_takes_and_declines() -> None:
    """What takes the pair kernel as an and after a stage (EsperPair.conj), and what stays
    per event (the general token path)."""
    for s in [
        "every a = A -> (b = B(b.k = a.k) and c = C(c.k = a.k)) where timer:within(10 sec)",
        "every a = A -> (b = B and c = C(v > 5))",  # (on no key)
        "every a = A -> (b = B(k = a.k) and c = C)",  # (one keyed, one not)
        "every a = A -> (b = B(k = a.k) and c = B(k = a.k and v > 2))",  # (one type: one
        # event may take both)
        "every a = A -> b = B(k = a.k) -> (c = C(k = a.k) and d = A(k = a.k)) "
        "where timer:within(5 sec)",  # (after a chain: the guard opens at b)
        "every a = A -> ((b = B(k = a.k) -> c = C(k = a.k)) and d = C(k = a.k))",  # (a chain)
        "every a = A -> (b = B(k = a.k) and C(k = a.k) and d = A(k = a.k))",  # (three)
        "every a = A -> ([2] B(k = a.k) and d = C(k = a.k))",  # (a repetition: B -> B)
        "every a = A -> ((b = B(k = a.k) -> c = C(k = a.k) -> d = A(k = a.k)) and "
        "(e = B(k = a.k) -> f = C(k = a.k)) and g = A(k = a.k))",  # (six atoms: the most)
    ]:
        takes_the_and(f"@Name('P')\ninsert into P\nfrom pattern [{s}];\n")
    declined([
        "every a = A -> (b = B(b.v > a.v and k = a.k) and c = C(k = a.k))",  # (a guard on a)
        "every a = A -> (b = B(k = a.k) and c = C(k = a.v))",  # (two keys)
        "every a = A -> b = B -> (c = C and d = A)",  # (a chain on no key before)
        "every a = A -> ((b = B(k = a.k) or c = C(k = a.k)) and d = A(k = a.k))",  # (an or
        # inside an operand)
        "every a = A -> (b = B(k = a.k) and c = C(k = a.k)) -> d = A(k = a.k)",  # (not last)
        "every (a = A -> (b = B(k = a.k) and c = C(k = a.k)))",  # (restart)
        "every a = A -> ((b = B(k = a.k) -> c = C(k = a.k) -> d = A(k = a.k)) and "
        "(e = B(k = a.k) -> f = C(k = a.k)) and (g = A(k = a.k) -> h = B(k = a.k)))",  # (more
        # than shapes.MAX_AND_ATOMS atoms)
    ], "conj")


#: hand-derived (within 10 ms; times 0 1 2 2 2 4 13 13 14 14 14): e0's instance takes c at e1
#: and b at e2 and completes there, its events in time order (e0, e1, e2); e3's (t=2) takes b
#: at e4 (same instant, a later row), but no C of key 0 comes before its deadline (12): it
#: expires; e5's (t=4) takes the C at e6 (t=13) and the B at e7 (one instant, before its
#: deadline 14); e8 (key 1) takes b at e9 and c at e10. A batch cut after e6 leaves e5's
#: instance a product token holding (e5, e6) at the state "c taken" (and e3's expired),
#: which the next batch reads back: e7 completes it
AND_STREAM = [("A", 0, 1, 0.0, 0), ("C", 0, 7, 0.0, 1), ("B", 0, 2, 0.0, 1),
              ("A", 0, 3, 0.0, 0), ("B", 0, 4, 0.0, 0), ("A", 0, 5, 0.0, 2),
              ("C", 0, 6, 0.0, 9), ("B", 0, 0, 0.0, 0), ("A", 1, 8, 0.0, 1),
              ("B", 1, 9, 0.0, 0), ("C", 1, 3, 0.0, 0)]
AND_MATCHES = [(("e0", "e1", "e2"), (0, 2, 7)), (("e5", "e6", "e7"), (0, 0, 6)),
               (("e8", "e9", "e10"), (1, 9, 3))]


#: six atoms (shapes.MAX_AND_ATOMS), rows taken by several atoms at once
SIX = ("@Name('P')\ninsert into P\nselect b.v as bv, g.x as gx, f.k as fk\nfrom pattern "
       "[every a = A -> ((b = B(k = a.k) -> c = C(k = a.k) -> d = A(k = a.k)) and "
       "(e = B(k = a.k) -> f = C(k = a.k)) and g = A(k = a.k))];\n")


def test_and_after_pinned() -> None:
    """The esper_and_after shape over a hand-derived stream, in two batches cut after e6
    (the product token left open and read back), then in one: the matches above, and the
    token the first batch leaves as the general token path holds it."""
    takes_the_and(AND_AFTER)

    def left(eng: Engine) -> None:
        (tok,) = eng.matchers[0].all_tokens()
        th = tok.threads[0]
        assert [e.ref for e in th.events] == ["e5", "e6"]
        assert th.bindings == {"a.k": 0, "a.v": 5, "a.x": 0.0, "a.s": "x", "c.v": 6,
                               "c.x": 0.0, "c.s": "y"}

    check_pinned(AND_AFTER, AND_STREAM, 7, AND_MATCHES, left)


@settings(max_examples=100, deadline=None)
@given(st.lists(conjunctions(), min_size=1, max_size=2), stream([0, 1], 20),
       st.lists(st.integers(0, 70), max_size=4), st.integers(0, 8))
@example([AND_AFTER], AND_STREAM, [7], 0)
@example([SIX], [(t, 0, 1, 0.7, 1) for t in "ABCABCABCA"], [2, 5], 2)
def test_conjunctions_equal_event_by_event(stmts, spec, cuts, tail) -> None:
    """An and after a stage: batches cut anywhere (single events between them, per-event
    steps after), the column route over event lists, rules firing: as the general token
    path — and the matches' bindings in its order (what the record writer writes, one
    step's atoms in operand order)."""
    check_statements(stmts, spec, cuts, tail, takes_the_and)
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + stmts[0]))
    ref = Engine(prog, fast_path=False)
    want = [list(m.bindings_for_output()) for e in events(spec) for m in ref.process(e)]
    got = Engine(prog).process_batch(events(spec))
    assert [list(m.bindings_for_output()) for m in got] == want


@settings(max_examples=50, deadline=None)
@given(conjunctions(), stream([0, 1, 2, 1.0, True, "1", None, float("nan")], 10),
       st.lists(st.integers(0, 70), max_size=2), st.integers(0, 5))
def test_conjunctions_with_mixed_keys(stmt, spec, cuts, tail) -> None:
    """Keys that unify across types, text, None and NaN (that batch event by event)."""
    check(C_SCHEMA + stmt, spec, cuts, tail)


@settings(max_examples=80, deadline=None)
@given(conjunctions(), stream([0, 1], 20), st.integers(1, 30), st.integers(0, 70),
       st.lists(st.integers(0, 70), max_size=3))
@example(AND_AFTER, AND_STREAM, 3, 7, [7])
def test_conjunctions_saved_and_restored(stmt, spec, batch, restore_at, cuts) -> None:
    """``Engine.run`` in batches with a save/restore in the middle (the and's product tokens
    saved and read back), ``Engine.process_columns`` over Arrow batches (rows written
    column-wise): as event by event."""
    takes_the_and(stmt)
    check_pair_run(stmt, spec, batch, restore_at, cuts)


@settings(max_examples=50, deadline=None)
@given(st.lists(conjunctions(), min_size=1, max_size=2),
       keyed_others(1),
       stream([0, 1], 20), st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70))
def test_conjunctions_in_the_split(stmts, others, spec, cuts, restore_at) -> None:
    """Beside statements no kernel takes: the program split plans the and column-wise, with
    a save/restore in the middle, as event by event."""
    prog = program([C_SCHEMA + stmts[0], *stmts[1:]], others)
    check_split(prog, spec, cuts, restore_at)


@settings(max_examples=50, deadline=None)
@given(conjunctions(), stream([0, 1], 5), st.sampled_from([0, 1, 3, 9, 10, 100]))
def test_conjunctions_time_passing_after_a_batch(stmt, spec, later) -> None:
    """One batch, then ``advance_to`` past its last event: the and's tokens left open expire,
    the idle timers of the instances that completed move the clock, as per event."""
    check_time_passing(load_module(parse_epl(SCHEMA + C_SCHEMA + stmt)), spec, later)


def conjunctions_over(name: str, kinds: list[str]) -> st.SearchStrategy:
    """:func:`sequences_over` with ``and``."""
    return sequences_over(name, kinds, "and")


#: within(0) over kernel output, as the or's ZERO_SEQ and ZERO_ALL: the and's instance P
#: opens in a row's cascade meets that cascade's Q at one operand's atom (``ZERO_AND``: the
#: token path's step fails the window check but keeps the instance, the other operand
#: waiting) or at both operands' (``ZERO_AND_ALL``: every edge out of its state fires, it is
#: trapped) — declined (kernels.pair.pair_rows), as the or's
ZERO_AND = (ZERO_SEQ[0].replace(") or d = A(d.k", ") and d = A(d.k"), -1)
ZERO_AND_ALL = (ZERO_ALL[0].replace(") or d = Q(d.k", ") and d = Q(d.k"), -1)


@settings(max_examples=60, deadline=None)
@given(programs(over=conjunctions_over),
       st.tuples(STREAMS, STREAMS).map(lambda s: s[0] + s[1]),
       st.lists(st.integers(0, 80), max_size=4), st.integers(0, 80))
@example(ZERO_AND, [("B", 0, 0, 0.0, 0), ("A", 0, 0, 0.0, 0)], [], 0)
@example(ZERO_AND_ALL, [("B", 0, 0, 0.0, 0)], [], 0)
def test_conjunctions_over_kernel_output(prog_spec, spec, cuts, restore_at) -> None:
    """An and over the derived stream of kernel patterns' matches (planned by
    kernels.cascade.plan_higher where its operands end at input types or one kernel
    pattern's output), batches cut anywhere, a save/restore in the middle: as event by
    event."""
    check_split(program_of(*prog_spec), spec, cuts, restore_at)


# -- alternatives before more stages (kernels.branch: EsperPair.branch/paths) ---------------

@st.composite
def branches(draw: st.DrawFn) -> str:
    """``every a = T(f) [-> b = T(g, key)] -> (x = T(h, key) or y = T(…, key) [or …]) -> d =
    T(l, key) [-> e = … -> …] [where within around everything after a]``: alternatives of
    one event each (two or three, one type or several, some untagged) before one to three
    more stages, every atom on a's key, filters on the atom's own event, select lists
    reading the alternatives' tags (null for those that did not win)."""
    tags = draw(st.permutations(["p", "q", "r", "Z", "ab"]))[:draw(st.sampled_from([2, 2, 3]))]
    chained = draw(st.sampled_from([False, False, True]))

    def atom(tag: str, untagged: bool = False) -> str:
        f = draw(st.sampled_from(["", "", *FILTERS])).format(a=tag)
        k = draw(st.sampled_from([f"a.k = {tag}.k", f"{tag}.k = a.k", "k = a.k"]))
        f = f"({f}) and {k}" if f else k
        t = draw(st.sampled_from(TYPES))
        return f"{t}({f.replace(tag + '.', '')})" if untagged else f"{tag} = {t}({f})"

    alts = [atom(t, t not in (tags[0], tags[-1]) and draw(st.booleans())) for t in tags]
    then = ["d", "e", "f"][:draw(st.sampled_from([1, 1, 2, 3]))]
    body = f"({' or '.join(alts)}) -> {' -> '.join(atom(t) for t in then)}"
    if chained:
        body = f"{atom('b')} -> {body}"
    within = draw(st.sampled_from(["", "", " where timer:within(3 msec)",
                                   " where timer:within(0 msec)",
                                   " where timer:within(10 milliseconds)"]))
    if within:
        body = f"({body})"  # (around everything after a)
    f = draw(st.sampled_from(["", *FILTERS])).format(a="a")
    first = f"a = {draw(st.sampled_from(TYPES))}({f})"
    return draw(stated(f"every {first} -> {body}{within}", tags[0], tags[-1]))


def takes_the_branch(stmt: str) -> None:
    takes_the_kernel(stmt, "paths")


@settings(max_examples=100, deadline=None)
@given(st.lists(branches(), min_size=1, max_size=2), stream([0, 1], 20),
       st.lists(st.integers(0, 70), max_size=4), st.integers(0, 8))
def test_branches_equal_event_by_event(stmts, spec, cuts, tail) -> None:
    """Alternatives before more stages: batches cut anywhere (single events between them,
    per-event steps after), the column route over event lists, rules firing, open
    instances (a thread per alternative event), saved state: as the general token path."""
    check_statements(stmts, spec, cuts, tail, takes_the_branch)


@settings(max_examples=50, deadline=None)
@given(branches(), stream([0, 1, 2, 1.0, True, "1", None, float("nan")]),
       st.lists(st.integers(0, 70), max_size=2), st.integers(0, 5))
def test_branches_with_mixed_keys(stmt, spec, cuts, tail) -> None:
    """Keys that unify across types (1, 1.0, True), text, None and NaN."""
    check(C_SCHEMA + stmt, spec, cuts, tail)


@settings(max_examples=80, deadline=None)
@given(branches(), stream([0, 1], 20), st.integers(1, 30), st.integers(0, 70),
       st.lists(st.integers(0, 70), max_size=3))
def test_branches_saved_and_restored(stmt, spec, batch, restore_at, cuts) -> None:
    """``Engine.run`` in batches with a save/restore in the middle (tokens holding several
    threads saved and read back), ``Engine.process_columns`` over Arrow batches (rows
    written column-wise): as event by event."""
    takes_the_branch(stmt)
    check_pair_run(stmt, spec, batch, restore_at, cuts)


def not_planned_in_the_split(prog) -> bool:
    """No statement with alternatives before more stages is among the split's kernel
    patterns (Engine._split) — they stay per event there."""
    return not any(m.pattern.pair is not None and m.pattern.pair.paths
                   for m in Engine(prog)._split or ())


@settings(max_examples=40, deadline=None)
@given(st.lists(branches(), min_size=1, max_size=2), keyed_others(1), stream([0, 1], 20),
       st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70))
def test_branches_in_the_split(stmts, others, spec, cuts, restore_at) -> None:
    """Beside statements no kernel takes: the split leaves them per event
    (kernels.pair.split_pair declines them), as event by event."""
    prog = program([C_SCHEMA + stmts[0], *stmts[1:]], others)
    assert not_planned_in_the_split(prog)
    check_split(prog, spec, cuts, restore_at)


@settings(max_examples=40, deadline=None)
@given(branches(), stream([0, 1], 5), st.sampled_from([0, 1, 3, 9, 10, 100]))
def test_branches_time_passing_after_a_batch(stmt, spec, later) -> None:
    """One batch, then ``advance_to`` past its last event: the tokens left open expire, the
    idle timers of the instances that completed move the clock, as per event."""
    check_time_passing(load_module(parse_epl(SCHEMA + C_SCHEMA + stmt)), spec, later)


# (the esper_or_mid shape of benchmarks/pattern_shapes.py, d of B for a hand-derived stream)
OR_MID = ("@Name('P')\ninsert into P\nselect a.v as av, b.v as bv, c.v as cv, d.v as dv\n"
          "from pattern [every a = A -> ((b = B(b.k = a.k) or c = C(c.k = a.k)) -> "
          "d = B(d.k = a.k)) where timer:within(10 milliseconds)];\n")
#: hand-derived (one key, v = the event's number, 1 ms apart but e8 at 20): e0's instance
#: takes c at e1 (the or quits: EvalOrStateNode) and completes at e2, a B — e2 also fits b,
#: but the or is over; e3's takes b at e4 (e5, a C, starts nothing: a batch cut after e5
#: leaves that token with its one thread through e4) and completes at e6; e7's expires at 17
#: before e8
OR_MID_STREAM = [("A", 0, 0, 0.0, 0), ("C", 0, 1, 0.0, 1), ("B", 0, 2, 0.0, 1),
                 ("A", 0, 3, 0.0, 1), ("B", 0, 4, 0.0, 1), ("C", 0, 5, 0.0, 1),
                 ("B", 0, 6, 0.0, 1), ("A", 0, 7, 0.0, 1), ("C", 0, 8, 0.0, 13)]
OR_MID_MATCHES = [(("e0", "e1", "e2"), (0, None, 1, 2)), (("e3", "e4", "e6"), (3, 4, None, 6))]


def test_or_mid_pinned() -> None:
    """The esper_or_mid shape over a hand-derived stream, in two batches cut after e5 (the
    token past the alternatives left open and read back), then in one."""
    takes_the_branch(OR_MID)

    def left(eng: Engine) -> None:
        (tok,) = eng.matchers[0].all_tokens()
        assert [[e.ref for e in th.events] for th in tok.threads] == [["e3", "e4"]]
        assert [th.bindings.get("b.v", th.bindings.get("c.v")) for th in tok.threads] == [4]

    check_pinned(OR_MID, OR_MID_STREAM, 6, OR_MID_MATCHES, left)


OR_MID_LONGER = ("@Name('P')\ninsert into P\nselect a.v as av, b.v as bv, c.v as cv, d.v as dv,"
                 " e.v as ev\nfrom pattern [every a = A -> (b = B(k = a.k) or c = C(k = "
                 "a.k)) -> d = B(k = a.k) -> e = C(k = a.k)];\n")
#: hand-derived: e0's instance takes b at e1 (the or quits; e2, a C, starts nothing), d at
#: e3 — a batch cut after e3 leaves its one thread — and completes at e4
OR_MID_LONGER_STREAM = [("A", 0, 0, 0.0, 0), ("B", 0, 1, 0.0, 1), ("C", 0, 2, 0.0, 1),
                        ("B", 0, 3, 0.0, 1), ("C", 0, 4, 0.0, 1)]


def test_or_mid_longer_pinned() -> None:
    """Two stages after the alternatives: the threads past them move on at each row."""
    takes_the_branch(OR_MID_LONGER)

    def left(eng: Engine) -> None:
        (tok,) = eng.matchers[0].all_tokens()
        assert [[e.ref for e in th.events] for th in tok.threads] == [["e0", "e1", "e3"]]

    check_pinned(OR_MID_LONGER, OR_MID_LONGER_STREAM, 4,
                 [(("e0", "e1", "e3", "e4"), (0, 1, None, 3, 4))], left)


def test_what_the_branch_takes_and_declines() -> None:
    """What takes the pair kernel as alternatives before more stages (kernels.branch), and
    what stays per event (the general token path)."""
    for s in [
        "every a = A -> (b = B(b.k = a.k) or c = C(c.k = a.k)) -> d = C(d.k = a.k)",
        "every a = A -> ((b = B(k = a.k) or c = C(k = a.k)) -> d = A(k = a.k)) "
        "where timer:within(10 sec)",
        "every a = A -> b = B(k = a.k) -> (c = C(k = a.k and v > 1) or e = A(k = a.k)) -> "
        "d = C(k = a.k)",  # (after a chain)
        "every a = A(v > 0) -> (B(k = a.k) or C(k = a.k) or r = B(v > 2 and k = a.k)) -> "
        "d = B(k = a.k)",  # (untagged, one type twice)
        "every a = A -> (b = B(k = a.k) or c = C(k = a.k)) -> d = C(k = a.k) -> "
        "e = B(k = a.k)",  # (two stages after the alternatives)
    ]:
        takes_the_branch(f"@Name('P')\ninsert into P\nselect a.v as av\nfrom pattern [{s}];\n")
    declined([
        "every a = A -> (b = B(k = a.k) or c = C) -> d = C(k = a.k)",  # (one on no key)
        "every a = A -> (b = B(k = a.k) or c = C(k = a.k)) -> d = C(v > b.v and k = a.k)",
        "every a = A -> (b = B(k = a.k) or (c = C(k = a.k) -> e = A(k = a.k))) -> "
        "d = C(k = a.k)",  # (a sequence among them: a product)
        "every a = A -> (b = B(k = a.k) or c = C(k = a.k)) -> (d = C(k = a.k) or "
        "e = A(k = a.k))",  # (alternatives again after them)
        "every a = A -> (b = B(k = a.k) or c = C(k = a.k)) -> d = C(k = a.k) -> "
        "e = B(k = a.v)",  # (a later stage on another key)
        "every a = A -> (b = B(k = a.k) or c = C(k = a.k)) -> d = C(k = a.k) "
        "where timer:within(1 sec)",  # (a window on d alone)
        "every a = A -> ((b = B(k = a.k) or c = C(k = a.k)) where timer:within(1 sec)) -> "
        "d = C(k = a.k)",  # (a window on the alternatives alone)
        "every (a = A -> (b = B(k = a.k) or c = C(k = a.k)) -> d = C(k = a.k))",  # (restart)
        "every-distinct(a.k) a = A -> (b = B(k = a.k) or c = C(k = a.k)) -> d = C(k = a.k)",
    ], "paths")


# -- alternatives from the start before one more stage (kernels.branch, EsperPair.branch 0) -

@st.composite
def heads(draw: st.DrawFn) -> str:
    """``every (x = T(f) or y = U(g) [or z = …]) -> d = V(h)``: alternatives of one event
    each from the start (two or three, one type or several, some untagged), then one stage
    on no key, filters on the atom's own event, select lists reading the alternatives' tags
    (null for those that did not win)."""
    tags = draw(st.permutations(["p", "q", "r", "Z", "ab"]))[:draw(st.sampled_from([2, 2, 3]))]

    def atom(tag: str, untagged: bool = False) -> str:
        f = draw(st.sampled_from(["", "", *FILTERS])).format(a=tag)
        t = draw(st.sampled_from(TYPES))
        return f"{t}({f.replace(tag + '.', '')})" if untagged else f"{tag} = {t}({f})"

    alts = [atom(t, t not in (tags[0], tags[-1]) and draw(st.booleans())) for t in tags]
    x, y = tags[0], tags[-1]
    select = draw(st.sampled_from([
        "", f"select {x}.v as xv, {y}.x as yx, d.v as dv, current_timestamp() as t ",
        f"select {y}.k as yk, {x}.s as xs, 'lit' as c ", f"select d.v + {x}.v as total "]))
    name = draw(st.sampled_from(["P", "Q"]))
    return (f"@Name('{name}')\ninsert into {name}\n{select}from pattern "
            f"[every ({' or '.join(alts)}) -> {atom('d')}];\n")


def takes_the_head(stmt: str) -> None:
    takes_the_kernel(stmt, "paths")
    prog = load_module(parse_epl(SCHEMA + C_SCHEMA + stmt))
    assert all(m.pattern.pair.branch == 0 for m in Engine(prog).matchers)


@settings(max_examples=80, deadline=None)
@given(st.lists(heads(), min_size=1, max_size=2), stream([0, 1], 20),
       st.lists(st.integers(0, 70), max_size=4), st.integers(0, 8))
def test_heads_equal_event_by_event(stmts, spec, cuts, tail) -> None:
    """Alternatives from the start before a stage: batches cut anywhere (single events
    between them, per-event steps after), the column route over event lists, rules firing,
    open instances (a thread per alternative their event fits), saved state: as the general
    token path."""
    check_statements(stmts, spec, cuts, tail, takes_the_head)


@settings(max_examples=60, deadline=None)
@given(heads(), stream([0, 1], 20), st.integers(1, 30), st.integers(0, 70),
       st.lists(st.integers(0, 70), max_size=3))
def test_heads_saved_and_restored(stmt, spec, batch, restore_at, cuts) -> None:
    """``Engine.run`` in batches with a save/restore in the middle, ``Engine.process_columns``
    over Arrow batches (rows written column-wise): as event by event."""
    takes_the_head(stmt)
    check_pair_run(stmt, spec, batch, restore_at, cuts)


@settings(max_examples=30, deadline=None)
@given(st.lists(heads(), min_size=1, max_size=2), keyed_others(1), stream([0, 1], 20),
       st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70))
def test_heads_in_the_split(stmts, others, spec, cuts, restore_at) -> None:
    """Beside statements no kernel takes: per event in the split (split_pair declines
    them), as event by event."""
    prog = program([C_SCHEMA + stmts[0], *stmts[1:]], others)
    assert not_planned_in_the_split(prog)
    check_split(prog, spec, cuts, restore_at)


OR_HEAD = ("@Name('P')\ninsert into P\nselect p.v as pv, q.v as qv, r.v as rv, d.v as dv\nfrom "
           "pattern [every (q = A(v < 5) or p = A(v > 1) or r = B) -> d = C];\n")
#: hand-derived: e0 fits q alone, e1 fits q and p (one instance, by q: the or quits at its
#: first operand that reports, the one written first), e2 r; a batch cut after e2 leaves
#: three tokens, a thread each. The C e3 completes all three, oldest first; e4 fits p and is
#: left open
OR_HEAD_STREAM = [("A", 0, 0, 0.0, 0), ("A", 0, 3, 0.0, 1), ("B", 0, 2, 0.0, 1),
                  ("C", 0, 3, 0.0, 1), ("A", 0, 7, 0.0, 1)]
OR_HEAD_MATCHES = [(("e0", "e3"), (None, 0, None, 3)), (("e1", "e3"), (None, 3, None, 3)),
                   (("e2", "e3"), (None, None, 2, 3))]


def test_or_head_pinned() -> None:
    """The leading alternatives over a hand-derived stream, in two batches cut after e2 (its
    tokens left open and read back), then in one."""
    takes_the_head(OR_HEAD)

    def left(eng: Engine) -> None:
        assert [[(th.events[0].ref, sorted(th.bindings)[0][0]) for th in t.threads]
                for t in eng.matchers[0].all_tokens()] == [
            [("e0", "q")], [("e1", "q")], [("e2", "r")]]

    check_pinned(OR_HEAD, OR_HEAD_STREAM, 3, OR_HEAD_MATCHES, left)


def test_what_the_head_takes_and_declines() -> None:
    """What takes the pair kernel as alternatives from the start before a stage, and what
    stays per event."""
    for s in [
        "every (a = A(v > 7) or b = B(v > 7)) -> c = C(v > 7)",  # (the esper_or_head shape)
        "every (A or b = A(v > 1) or C) -> c = B",  # (untagged, one type twice)
    ]:
        takes_the_head(f"@Name('P')\ninsert into P\nfrom pattern [{s}];\n")
    declined([
        "every (a = A or b = B) -> c = C(c.k = a.k)",  # (c reads a tag: a guard)
        "every (a = A or b = B) -> c = C -> d = A",  # (two stages after)
        "every (a = A or b = B) -> c = C where timer:within(1 sec)",  # (a window)
        "every (a = A or b = B) -> (c = C or d = A)",  # (alternatives after)
    ], "paths")


# (an untagged alternative beside a tagged one of one type, two stages after them: a row
# both fit goes to the one written first, d, and a token from before a batch holds that
# thread alone)
OR_MID_TIE = ("@Name('P')\ninsert into P\nselect d.v as dv, e.v as ev, c.v as cv\nfrom "
              "pattern [every a = A -> (d = B(k = a.k) or B(k = a.k)) -> e = C(k = a.k) -> "
              "c = A(k = a.k)];\n")


def test_or_mid_tie_from_before_a_batch() -> None:
    """A row both alternatives fit, left open by a batch cut: the first written took it,
    and the next batch completes the token by that thread (kernels.branch.held_winner)."""
    takes_the_branch(OR_MID_TIE)
    spec = [("A", 0, 0, 0.0, 0), ("B", 0, 1, 0.0, 1), ("C", 0, 2, 0.0, 1), ("A", 0, 3, 0.0, 1)]

    def left(eng: Engine) -> None:
        (tok,) = [t for t in eng.matchers[0].all_tokens() if len(t.threads[0].events) > 1]
        assert [[e.ref for e in th.events] for th in tok.threads] == [["e0", "e1"]]
        assert "d.v" in tok.threads[0].bindings

    check_pinned(OR_MID_TIE, spec, 2, [(("e0", "e1", "e2", "e3"), (1, 2, 3))], left)
