"""Property: a random window statement written in EPL and in cepflow syntax gives the same
AST and, run by the engine on a random stream, the same output rows."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.language.parser import parse
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine

AGGREGATES = ["count(*)", "sum(v)", "avg(w)", "min(v)", "max(w)", "count(w)"]


@st.composite
def statements(draw: st.DrawFn) -> tuple[str, str]:
    kind = draw(st.sampled_from(["time", "time_batch", "length", "length_batch"]))
    size = draw(st.integers(1, 4)) * (1000 if kind.startswith("time") else 1)
    alias = draw(st.sampled_from([None, "a"]))
    p = f"{alias}." if alias else ""
    grouped = draw(st.booleans())
    per_group = grouped and not kind.startswith("time") and draw(st.booleans())
    items = draw(st.lists(st.sampled_from(AGGREGATES), min_size=1, max_size=3, unique=True))
    exprs = [a.replace("(v)", f"({p}v)").replace("(w)", f"({p}w)") for a in items]
    if grouped or draw(st.booleans()):
        exprs.insert(0, f"{p}k")
    if draw(st.booleans()):
        exprs.append(f"{p}v + 1")
    if draw(st.booleans()):
        exprs.append("current_timestamp()")
    named = [(e, f"c{i}" if draw(st.booleans()) or "(" in e or "+" in e else None)
             for i, e in enumerate(exprs)]
    select = ", ".join(e + (f" as {n}" if n else "") for e, n in named)
    cond = draw(st.sampled_from([None, f"{p}v > 0", f"{p}w <= 2.5 or {p}k = 'a'"]))
    having = draw(st.sampled_from([None, "count(*) > 1", f"sum({p}v) >= 0"]))
    group = f" group by {p}k" if grouped else ""
    hav = f" having {having}" if having else ""
    # EPL: from R(cond).win:kind(size) as a
    unit = " msec" if kind.startswith("time") else ""
    groupwin = f".std:groupwin({p}k)" if per_group else ""
    epl = (f"create schema R(k string, v integer, w double);\n"
           f"insert into Out select {select} from R{f'({cond})' if cond else ''}"
           f"{groupwin}.win:{kind}({size}{unit}){f' as {alias}' if alias else ''}{group}{hav}")
    # cepflow: from a = R where cond window kind(size) per group select … group by … having …
    ce_cond = cond.replace(" = ", " == ") if cond else None
    ce_unit = " ms" if kind.startswith("time") else ""
    ce = (f"atomicEvent R(k: String, v: Integer, w: Double)\n"
          f"complexEvent Out {{ from {f'{alias} = ' if alias else ''}R"
          f"{f' where {ce_cond}' if ce_cond else ''} window {kind}({size}{ce_unit})"
          f"{' per group' if per_group else ''} select {select}{group}"
          f"{hav.replace(' = ', ' == ')} }}")
    return epl, ce


def streams() -> st.SearchStrategy[list[Event]]:
    row = st.tuples(st.integers(0, 1500), st.sampled_from("ab"), st.integers(-2, 5),
                    st.sampled_from([0.5, 1.5, 2.5, 4.0]))
    return st.lists(row, max_size=25).map(lambda rows: _events(rows))


def _events(rows: list[tuple[int, str, int, float]]) -> list[Event]:
    out, ts = [], 0
    for gap, k, v, w in rows:
        ts += gap
        out.append(Event("R", (k, v, w), ts))
    return out


def _run(program, events):
    engine = Engine(program)
    out = [m for e in events for m in engine.process(e)]
    out += engine.finish(close_windows=True)
    return [(m.type, m.ts, m.params, [p.ts for p in m.parts]) for m in out]


@settings(max_examples=30, deadline=None)
@given(statements(), streams())
def test_epl_and_cepflow_syntax_give_identical_rows(stmt: tuple[str, str], events) -> None:
    epl_text, ce_text = stmt
    epl, ce = parse_epl(epl_text), parse(ce_text)
    assert epl.decls == ce.decls, (epl_text, ce_text)
    assert _run(load_module(epl), events) == _run(load_module(ce), events)
