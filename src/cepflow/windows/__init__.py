"""Esper-style data windows and aggregates (docs/windows.md).

Describe a statement with :class:`WindowStatement` (the fields of ``insert into … select …
from Type(filter)#window group by … having …``, expressions as ``cepflow.language.ast`` nodes)
and run it with :class:`WindowRunner` (event by event, or column-wise with
:meth:`WindowRunner.process_batch`) or :func:`run_statements` (several statements whose rows
feed each other)::

    from cepflow.windows import WindowRunner, WindowSpec, WindowStatement, parse

    report = WindowStatement(
        "AccidentsReport", "Accident", WindowSpec.time_batch(86_400_000),
        select=[(parse("location"), None), (parse("count(*)"), "n")],
        group_by=[parse("location")])
    runner = WindowRunner(report, program.schemas)
    for event in events:
        for row in runner.process(event):      # ComplexEvent("AccidentsReport", (loc, n), ts)
            ...
"""

from cepflow.windows.expressions import parse
from cepflow.windows.plan import StatementPlan, compile_statement
from cepflow.windows.prefix_sums import ColumnarOutput, SlidingAggregate, columnar_plan
from cepflow.windows.runner import WindowRunner, run_statements
from cepflow.windows.statement import SelectItem, WindowError, WindowSpec, WindowStatement

__all__ = [
    "ColumnarOutput",
    "SelectItem",
    "SlidingAggregate",
    "StatementPlan",
    "WindowError",
    "WindowRunner",
    "WindowSpec",
    "WindowStatement",
    "columnar_plan",
    "compile_statement",
    "parse",
    "run_statements",
]
