"""Length windows in the program split (runtime/kernels/window_block.py; docs/windows.md, "In
the program split"): ``#length(n)``, ``#groupwin(k)#length(n)``, ``#length_batch(n)`` and
``having`` planned column-wise over a batch. Over random statements — grouped or not, a row
per group or per event, count/sum/avg/min/max of ints and floats, filters, ``having`` —
alone, beside kernel patterns and read by a pattern, a window or a rule, and random streams,
batches cut anywhere, single events between them and a save/restore in the middle, the split
equals the per-event engine: the same rows (values to the last bit, parts, ids, order),
statistics, saved state and end of input; also over Arrow columns (Engine.process_columns)."""

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import SCHEMA, events
from tests.esper.test_split import check_split, consecs, rows
from tests.esper.test_time_batch_bulk import check_columns

from cepflow.language import ast as A
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels import window_block

#: select lists ({a}: the alias): a row per group (fully aggregated, grouped or not) and a row
#: per event (a field outside group by)
GROUPED = ["{a}.k as k, count(*) as c, sum({a}.v) as sv",
           "{a}.k as k, avg({a}.x) as ax, max({a}.v) as hv, min({a}.x) as lx",
           "count(*) as c, sum({a}.x) as sx, current_timestamp() as t, {a}.k as k",
           "{a}.k as k"]
UNGROUPED = ["count(*) as c, sum({a}.x) as sx, avg({a}.v) as av",
             "max({a}.x) as hx, min({a}.v) as lv, count({a}.v) as n",
             "avg({a}.x) as ax, max({a}.v) as h"]
PER_EVENT = ["{a}.v as v, sum({a}.x) as sx, count(*) as c",
             "{a}.x as x, {a}.k as k, max({a}.v) as h, avg({a}.v) as av",
             "{a}.s as s, current_timestamp() as t, min({a}.x) as lx"]
HAVING = ["", "", "count(*) > 1", "sum({a}.v) >= 3", "avg({a}.x) < 1.0 or count(*) = 1",
          "max({a}.v) > {a}.k", "not (count(*) = 2)"]
FILTERS = ["", "", "{a}.v >= 1", "{a}.x > 0.5"]


@st.composite
def length_statement(draw: st.DrawFn, name: str, batch: bool | None = None) -> str:
    """A length window statement over A or B: ``#length(n)`` or ``#length_batch(n)``
    (grouped or not, or per group: ``#groupwin(k)``), a row per group or per event, perhaps a
    filter and ``having``."""
    t = draw(st.sampled_from(["A", "A", "B"]))
    a = draw(st.sampled_from(["a", "b"]))
    n = draw(st.sampled_from([1, 2, 3, 5, 8]))
    lanes = draw(st.booleans())
    grouped = lanes or draw(st.booleans())
    select = draw(st.sampled_from(GROUPED if grouped else UNGROUPED) if draw(st.booleans())
                  else st.sampled_from(PER_EVENT))
    having = draw(st.sampled_from(HAVING))
    f = draw(st.sampled_from(FILTERS))
    kind = (draw(st.sampled_from(["length", "length", "length_batch"])) if batch is None
            else "length_batch" if batch else "length")
    views = (f".std:groupwin({a}.k).win:{kind}({n})" if lanes else f".win:{kind}({n})")
    text = (f"@Name('{name}')\ninsert into {name}\nselect {select.format(a=a)}\n"
            f"from {t}{'(' + f.format(a=a) + ')' if f else ''}{views} as {a}")
    if grouped:
        text += f"\ngroup by {a}.k"
    if having:
        text += f"\nhaving {having.format(a=a)}"
    return text + ";\n"


@st.composite
def timed_statement(draw: st.DrawFn, name: str) -> str:
    """A ``#time(Δ)`` or ``#time_batch(Δ)`` statement with ``having`` (the mask applies to
    their arrival, expiry and boundary rows alike), min/max among the aggregates."""
    t = draw(st.sampled_from(["A", "B"]))
    kind = draw(st.sampled_from(["time", "time_batch"]))
    n = draw(st.sampled_from([1, 2, 3, 5]))
    grouped = draw(st.booleans())
    select = draw(st.sampled_from(PER_EVENT + (GROUPED if grouped else UNGROUPED)))
    having = draw(st.sampled_from([h for h in HAVING if h]))
    text = (f"@Name('{name}')\ninsert into {name}\nselect {select.format(a='a')}\n"
            f"from {t}.win:{kind}({n} msec) as a")
    if grouped:
        text += "\ngroup by a.k"
    return text + f"\nhaving {having.format(a='a')};\n"


def any_statement(name: str) -> Any:
    return st.one_of(length_statement(name), length_statement(name), timed_statement(name))


#: what may read L1's rows: a pattern, a window statement, a rule
READERS = ["pattern", "window", "rule", None, None, None]


@st.composite
def programs(draw: st.DrawFn, kinds: Any = any_statement) -> Any:
    text = SCHEMA
    for i in range(draw(st.integers(1, 2))):
        text += draw(kinds(f"L{i + 1}"))
    reader = draw(st.sampled_from(READERS))
    if reader == "pattern":
        text += "@Name('R')\ninsert into R\nfrom pattern [every m = L1];\n"
    elif reader == "window":
        text += "@Name('R')\ninsert into R\nselect count(*) as c\nfrom L1.win:length(2);\n"
    seen = set()
    for s in draw(st.lists(consecs(), max_size=2)):
        name = s.split("'")[1]
        if name not in seen:
            seen.add(name)
            text += s
    prog = load_module(parse_epl(text))
    if reader == "rule":
        prog.rules.append(A.RuleDecl("r", (A.PatternRef("L1"),), None))
    return prog


#: timestamps: equal ones, small steps and gaps
STEPS = [0, 0, 0, 1, 1, 2, 3, 7]


def stream(floats: bool = True, least: int = 0) -> Any:
    # (v mostly an integer: 1.5 among them mixes the sums' types, which declines the block
    # for that batch; x floats whose running sums round, a NaN or -0.0 under min/max declines
    # it too; k a small key)
    return st.lists(st.tuples(st.sampled_from(["A", "A", "B"]), st.integers(0, 2),
                              st.sampled_from([0, 1, 2, 3, 4, -1, 5, 2, 3]
                                              + ([1.5] if floats else [])),
                              st.sampled_from([0.0, 0.7, 1.2, 2.0, 0.1, 0.3, 1e-3]
                                              + ([-0.0, float("nan")] if floats else [])),
                              st.sampled_from(STEPS)), min_size=least, max_size=90)


@settings(max_examples=300, deadline=None)
@given(programs(), stream(), st.lists(st.integers(0, 90), max_size=4), st.integers(0, 90))
def test_length_windows_equal_event_by_event(prog, spec, cuts, restore_at) -> None:
    check_split(prog, spec, cuts, restore_at)


def batch_statement(name: str) -> Any:
    return length_statement(name, batch=True)


@settings(max_examples=200, deadline=None)
@given(programs(batch_statement), stream(floats=False, least=20),
       st.lists(st.integers(0, 60), min_size=2, max_size=5), st.integers(0, 60))
def test_length_batches_equal_event_by_event(prog, spec, cuts, restore_at) -> None:
    """Length batches (per group or not) over longer streams cut in several batches, values
    a block takes: batches carried across cuts and a restore, closing at a row of another
    cut, groups closed and opened again."""
    check_split(prog, spec, cuts, restore_at)


@settings(max_examples=120, deadline=None)
@given(programs(), stream(), st.lists(st.integers(0, 90), max_size=3), st.integers(0, 90))
def test_length_windows_over_arrow_columns(prog, spec, cuts, restore_at) -> None:
    check_columns(prog, spec, cuts, restore_at)


@settings(max_examples=60, deadline=None)
@given(programs(), stream(floats=False))
def test_length_windows_are_planned(prog, spec) -> None:
    """Over integer values and a filter that cannot fail, every statement of these forms is a
    window block of the batch (the property tests above exercise the plan, not a fallback),
    and its rows are the per-event engine's."""
    many = Engine(prog)
    planned = window_block.window_kernels(many)
    assert [many.windows[i].statement.name for i in planned][:1] == ["L1"]
    made: list[str] = []
    real = window_block.plan_window

    def spy(engine, runner, cols, src, **kw):
        b = real(engine, runner, cols, src, **kw)
        made.append(runner.statement.name if b is not None else "declined")
        return b

    one = Engine(prog, fast_path=False)
    ref = rows([m for e in events(spec) for m in one.process(e)])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("cepflow.runtime.kernels.split.plan_window", spy)
        got = rows(many.process_batch(events(spec)))
    assert got == ref
    if many._split is not None and spec:
        assert "declined" not in made and "L1" in made
