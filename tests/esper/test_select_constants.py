"""Select lists holding literals (air quality's ``'CO' as pollutant, 1 as grade``): the pair and
single-event kernels carry them as constants (kernels.pair ``select_consts``: a lazy complex
event, a :class:`~cepflow.runtime.rows.StageMatches` column, the program split's cascade)
instead of evaluating the select list per match on the token path. Over random statements,
constants of every kind (text, null, booleans, integers, floats), streams, batches cut anywhere
and a save/restore in the middle, the results equal the per-event engine's: complex events
(parameters by type, bindings, parts, match ids), rows written column-wise, rule firings,
statistics, open instances and saved state."""

import itertools
import pickle
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import (
    SCHEMA,
    check,
    check_columns,
    events,
    statements,
    stream,
)
from tests.esper.test_split import check_split, program

from cepflow.events.event import ComplexEvent
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine

#: literals of every kind (a negative number is an expression, not a literal: the token path)
CONSTANTS = ["'CO'", "''", "'a\\'b'", "'q\"t'", "'é'", "null", "true", "false", "1", "0", "6",
             "2.5", "0.0", "1000.0", "-1"]
#: items reading the first event (every generated shape binds ``a``) and the match's time
FIELDS = ["a.v", "a.x", "a.s", "a.k", "current_timestamp()"]


@st.composite
def select_lists(draw: st.DrawFn) -> str:
    """A select list of one to five items, at least one of them a literal."""
    items = draw(st.lists(st.sampled_from(CONSTANTS), min_size=1, max_size=3))
    items += draw(st.lists(st.sampled_from(FIELDS), max_size=2))
    items = draw(st.permutations(items))
    # (names in any order; an internal ``_`` name is left out of the rows written)
    names = draw(st.permutations(["c0", "c1", "c2", "_c3", "c4"]))
    return "select " + ", ".join(f"{e} as {n}" for e, n in zip(items, names, strict=False)) + " "


def with_select(stmt: str, select: str) -> str:
    """``stmt`` (tests.esper.test_esper_kernel.statements) with ``select`` as its select list."""
    stmt = re.sub(r"select .*?from pattern", "from pattern", stmt, flags=re.S)
    return stmt.replace("from pattern", select + "\nfrom pattern", 1)


@settings(max_examples=120, deadline=None)
@given(st.lists(st.tuples(statements(), select_lists()), min_size=1, max_size=2),
       stream([0, 1, 2]), st.lists(st.integers(0, 70), max_size=4), st.integers(0, 8))
def test_constant_selects_in_the_pair_kernel_equal_event_by_event(stmts, spec, cuts,
                                                                  tail) -> None:
    """The whole-batch pair kernel (Engine.process_batch), its column route
    (Engine.process_columns) and the matcher's per-event steps, with rules firing: the
    matches, ids, firings, statistics and state of the token path."""
    texts = [with_select(s, sel) for s, sel in stmts]
    if len({t.split("'")[1] for t in texts}) != len(texts):
        texts = texts[:1]
    check("".join(texts), spec, cuts, tail)


@settings(max_examples=60, deadline=None)
@given(statements(), select_lists(), stream([0, 1, 2]), st.lists(st.integers(0, 70), max_size=3))
def test_constant_selects_written_column_wise(stmt, select, spec, cuts) -> None:
    """Over Arrow batches (Engine.process_columns, encode_match_table): each literal's JSON
    text is the one the per-event engine's complex events are written with."""
    check_columns(load_module(parse_epl(SCHEMA + with_select(stmt, select))),
                  lambda: events(spec), cuts)


@st.composite
def grades(draw: st.DrawFn) -> str:
    """Air quality's shape with random literals: a sliding average per key, one to three grade
    patterns over it whose select lists hold literals, and perhaps the worst grade per time
    batch over their union (a batch holding a null grade is declined: per event)."""
    text = ("@Name('WL')\ninsert into WL\nselect a.k as k, a.x as x, avg(a.x) as ax\n"
            "from A.win:time(5 msec) as a\ngroup by a.k;\n")
    bounds = draw(st.sampled_from(["g.ax < 1", "g.ax >= 1", "g.ax >= 0.5 and g.ax < 1.5", ""]))
    # (the union's patterns select the same names in the same order: the time batch's rule)
    rest = draw(st.lists(st.sampled_from(["'CO' as p", "null as z", "false as f",
                                          "g.ax as average", "g.x as x",
                                          "current_timestamp() as t", "0.5 as h"]),
                         max_size=3, unique=True))
    level = draw(st.booleans())  # (max over text or booleans is an error of its own)
    pool = ["1", "2", "6", "2.5", "null"] + ([] if level else ["true", "'CO'"])
    for n in range(draw(st.integers(1, 3))):
        grade = draw(st.sampled_from(pool))
        flt = f"({bounds})" if bounds else "()"
        text += (f"@Name('G{n}')\ninsert into Grade\nselect g.k as k, {grade} as grade"
                 f"{''.join(', ' + r for r in rest)}\nfrom pattern [every g = WL{flt}];\n")
        bounds = draw(st.sampled_from(["g.ax < 1", "g.ax >= 1", "g.x > 0.5", ""]))
    if level:
        text += ("@Name('Level')\ninsert into Level\nselect l.k as k, max(l.grade) as grade, "
                 "count(*) as c\nfrom Grade.win:time_batch(3 msec) as l\ngroup by l.k;\n")
    return text


@settings(max_examples=120, deadline=None)
@given(grades(), st.lists(st.sampled_from([
    "@Name('P')\ninsert into P\nselect 'P' as p, a.v as v, 7 as n\nfrom pattern "
    "[every a = A(a.v >= 1)];\n",
    "@Name('Q')\ninsert into Q\nselect null as z, b.x as bx\nfrom pattern "
    "[every a = A -> b = B(b.k = a.k) where timer:within(3 msec)];\n"]), max_size=2, unique=True),
       stream([0, 1, 2]), st.lists(st.integers(0, 70), max_size=4), st.integers(0, 70),
       st.integers(-1, 2))
def test_constant_selects_in_the_split_cascade(cascade, kernels, spec, cuts, restore_at,
                                               ruled) -> None:
    """The program split with air quality's cascade (kernels.cascade: grade patterns over a
    window block's rows, a time batch over their union) and kernel patterns with literals,
    batches cut anywhere, single events between them and a save/restore in the middle: the
    complex events, ids, statistics, open instances, saved state and end of input of the
    per-event engine."""
    prog = program(kernels, [cascade], ruled) if kernels else load_module(
        parse_epl(SCHEMA + cascade))
    check_split(prog, spec, cuts, restore_at)


def test_air_quality_grades_are_lazy_matches() -> None:
    """examples/air_quality: every grade pattern's select list is its station, two literals
    and its average, so the kernels carry the literals (no select list per match)."""
    from pathlib import Path

    from cepflow.loader import load
    from cepflow.runtime.kernels.pair import _select_fields

    prog = load(Path(__file__).parents[2] / "examples" / "air_quality" / "air_quality.epl")
    eng = Engine(prog)
    grades = [m for m in eng.matchers if m.pattern.pair is not None]
    assert len(grades) == 36
    for m in grades:
        assert _select_fields(m, m.pattern.pair) is not None, m.name
        station, pollutant, grade, average = m.pattern.auto.select_consts
        assert station is None and average is None
        assert m.name.startswith(pollutant[0]) and grade[0] in range(1, 7)


def read_fully(found: list) -> list:
    """Everything a consumer reads of each complex event: type, time, parameters (by repr:
    1 from 1.0 and True), bindings, parts (by ref), match id, its repr and output record, and
    the same of its pickled copy (a plain complex event)."""
    out = []
    for m in found:
        again = pickle.loads(pickle.dumps(m))
        assert type(again) is ComplexEvent and again == m
        out.append((m.type, m.ts, repr(m.params), repr(sorted(m.bindings.items())),
                    [p.ref for p in m.parts], m.match_id, repr(m), m.to_dict(),
                    repr(again.params), again.match_id))
    return out


@settings(max_examples=60, deadline=None)
@given(grades(), stream([0, 1, 2]), st.lists(st.integers(0, 70), max_size=3))
def test_lazy_rows_read_as_the_per_event_engine_builds(cascade, spec, cuts) -> None:
    """The rows a split batch makes lazily (the window block's arrival rows, the grade
    patterns' matches) read, print, write and pickle as the per-event engine's."""
    prog = load_module(parse_epl(SCHEMA + cascade))
    one, many = Engine(prog), Engine(prog)
    ref = read_fully([m for e in events(spec) for m in one.process(e)])
    evs, got = events(spec), []
    for lo, hi in itertools.pairwise(sorted({0, len(spec), *(min(c, len(spec)) for c in cuts)})):
        got += read_fully(many.process_batch(evs[lo:hi]))
    assert got == ref


def test_a_time_batch_group_carrying_null_arguments_keeps_their_count() -> None:
    """A time batch's group whose events all had a null argument (``max`` over ``null as
    grade``) carried into a batch without new rows of its own: its count of non-null values
    stays 0 (the block counted every event, a state the per-event runner never has)."""
    cascade = ("@Name('WL')\ninsert into WL\nselect a.k as k, a.x as x, avg(a.x) as ax\n"
               "from A.win:time(5 msec) as a\ngroup by a.k;\n"
               "@Name('G0')\ninsert into Grade\nselect g.k as k, null as grade\n"
               "from pattern [every g = WL(g.ax < 1)];\n"
               "@Name('Level')\ninsert into Level\n"
               "select l.k as k, max(l.grade) as grade, count(*) as c\n"
               "from Grade.win:time_batch(3 msec) as l\ngroup by l.k;\n")
    spec = [("A", 0, 0, 0.0, 0), ("A", 0, 0, 0.0, 0), ("A", 0, 0, 0.0, 0), ("B", 0, 0, 0.0, 0)]
    check_split(load_module(parse_epl(SCHEMA + cascade)), spec, [], 3)
