"""The law shared by the incremental query tests: after every commit the engine's deltas turn
the previous match sets into those of a naive re-evaluation from scratch."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

from cepflow.models import Metamodel, Model, ModelError
from cepflow.queries import History, QueryEngine, evaluate


def run_ops(model: Model, apply_op: Callable[[Model, Any], None], ops: Sequence[Any], ts: int,
            abort: bool) -> None:
    """One transaction of random edits (edits the metamodel forbids are skipped); ``abort``
    rolls it back."""
    try:
        with model.transaction(ts=ts):
            for op in ops:
                with contextlib.suppress(ModelError):
                    apply_op(model, op)
            if abort:
                raise RuntimeError("roll back")
    except RuntimeError:
        pass


def check_deltas_equal_reevaluation(mm: Metamodel, queries: Any,
                                    apply_op: Callable[[Model, Any], None],
                                    setup: Sequence[Any],
                                    transactions: Sequence[tuple[Sequence[Any], bool]]) -> None:
    """Build a model with ``setup``, start a QueryEngine on it, apply ``transactions`` and check
    every commit's deltas against :func:`cepflow.queries.evaluate` (with the oracle's own,
    independent history)."""
    model = Model(mm)
    run_ops(model, apply_op, setup, 0, False)
    oracle = History(queries.history_sites(), queries.functions, mm)
    oracle.reset(model)
    model.subscribe(oracle.apply)
    engine = QueryEngine(model, queries)   # starts on a populated model
    engine.bulk_min = 0  # attribute blocks of any size through the bulk path
    updates: list[Any] = []
    engine.subscribe(updates.append)
    previous = evaluate(queries, model, oracle)
    assert {q: engine.matches(q) for q in queries.queries} == previous
    for ts, (ops, abort) in enumerate(transactions, start=1):
        n = len(updates)
        run_ops(model, apply_op, ops, ts * 40, abort)
        expected = evaluate(queries, model, oracle)
        if abort:
            assert len(updates) == n and expected == previous
            continue
        (update,) = updates[n:]
        assert update.ts == ts * 40
        for q in queries.queries:
            delta = update[q]
            appeared, disappeared = set(delta.appeared), set(delta.disappeared)
            assert len(appeared) == len(delta.appeared) and not appeared & disappeared
            assert appeared.isdisjoint(previous[q]) and disappeared <= previous[q]
            assert (previous[q] - disappeared) | appeared == expected[q], q
            assert engine.matches(q) == expected[q], q
        previous = expected
