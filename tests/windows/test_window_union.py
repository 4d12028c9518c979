"""A window statement over several event types read as one stream: cepflow syntax
``from g = A | B``, EPL's several statements inserting into one stream."""

from __future__ import annotations

import pytest

import cepflow
from cepflow.events.event import Event
from cepflow.language.checker import check
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.language.epl_printer import format_epl
from cepflow.language.parser import parse
from cepflow.language.printer import format_module
from cepflow.runtime.engine import run_patterns
from cepflow.spark.partitioning import plan
from cepflow.windows.runner import run_statements

VEPL = """atomicEvent R(s: String, v: Double)
complexEvent Low(s: any, g: any) { as every r = R where r.v < 5 context esper
  select r.s as s, 1 as g }
complexEvent High(s: any, g: any) { as every r = R where r.v >= 5 context esper
  select r.s as s, 2 as g }
complexEvent Level { from x = Low | High where x.g > 0 window time_batch(10)
  select x.s as s, max(x.g) as g, count(*) as n group by x.s }
"""
EPL = """create schema R(s string, v double);
@Name('Low') insert into G select r.s as s, 1 as g from pattern [every r = R(r.v < 5)];
@Name('High') insert into G select r.s as s, 2 as g from pattern [every r = R(r.v >= 5)];
insert into Level select x.s as s, max(x.g) as g, count(*) as n
from pattern [every x = G(x.g > 0)].win:time_batch(10 msec) group by x.s;
"""
STREAM = [Event("R", ("a", 1.0), 0), Event("R", ("a", 7.0), 0), Event("R", ("b", 2.0), 3),
          Event("R", ("a", 1.0), 10)]


def test_both_syntaxes_read_to_the_same_union() -> None:
    a, b = parse(VEPL), parse_epl(EPL)
    assert a.decls == b.decls
    level = a.decls[-1]
    assert (level.source.name, level.more_inputs) == ("Low", ("High",))
    assert b.decls[-1].stream == "G"
    assert parse(format_module(a)) == a
    text = format_epl(b)
    assert "@Name('Low')\ninsert into G" in text and "from pattern [every x = G(" in text
    assert parse_epl(text).decls == b.decls


def test_the_union_reads_every_type() -> None:
    out = [(c.type, c.params, c.ts) for c in run_patterns(cepflow.load(VEPL), STREAM)]
    levels = [o for o in out if o[0] == "Level"]
    assert levels == [("Level", ("a", 2, 2), 10), ("Level", ("b", 1, 1), 10)]
    program = cepflow.load(VEPL)
    rows = run_statements(program.windows, [Event("Low", ("a", 1), 0),
                                            Event("High", ("a", 2), 1),
                                            Event("Low", ("z", 1), 12)], program.schemas)
    assert [(r.params, r.ts) for r in rows] == [(("a", 2, 2), 10)]


def test_union_members_need_the_same_fields() -> None:
    bad = VEPL.replace("High(s: any, g: any)", "High(s: any, h: any)").replace(
        "select r.s as s, 2 as g }", "select r.s as s, 2 as h }")
    assert any("need the same fields" in d.message for d in check(parse(bad)))


def test_only_window_statements_read_a_stream_of_several_statements() -> None:
    with pytest.raises(PatternSyntaxError, match="only a window statement"):
        parse_epl(EPL + "insert into P select x.s as s from pattern [every x = G];\n")


def test_spark_runs_a_union_as_one_partition() -> None:
    keyed = """atomicEvent R(s: String, v: Double)
complexEvent Low(s: String) { as R(s, _) where v < 5 }
complexEvent High(s: String) { as R(s, _) where v >= 5 }
complexEvent Level { from x = Low | High window time_batch(10) select x.s as s, count(*) as n
                     group by x.s }
"""
    (g,) = plan(cepflow.load(keyed))
    assert not g.partitioned and "several event types as one stream" in g.reason
