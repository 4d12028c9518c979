"""Incremental graph queries over live models (IQPL / VIATRA Query style; docs/models.md).

    from cepflow.queries import compile_queries, QueryEngine, QueryEventSource
    queries = compile_queries(text, metamodel)
    engine = QueryEngine(model, queries)          # follows the model's commits
    engine.subscribe(lambda update: print(update.deltas))
    source = QueryEventSource(engine, [("ForwardStartFound", "ForwardStart", "found", ["B"])])

:func:`evaluate` evaluates the same queries from scratch (the engine's oracle).
"""

from cepflow.queries.compiler import compile_queries, load_queries
from cepflow.queries.events import QueryEventSource, QueryEventSpec
from cepflow.queries.functions import FunctionRegistry, MovingAverage
from cepflow.queries.history import History
from cepflow.queries.incremental import MatchUpdate, QueryDelta, QueryEngine
from cepflow.queries.ir import Query, QuerySet
from cepflow.queries.naive import evaluate
from cepflow.queries.query_parser import QueryError, parse_queries

__all__ = [
    "FunctionRegistry",
    "History",
    "MatchUpdate",
    "MovingAverage",
    "Query",
    "QueryDelta",
    "QueryEngine",
    "QueryError",
    "QueryEventSource",
    "QueryEventSpec",
    "QuerySet",
    "compile_queries",
    "evaluate",
    "load_queries",
    "parse_queries",
]
