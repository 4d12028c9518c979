"""The bulk path of the query engine: a commit's attribute blocks maintained column-wise.

A sensor frame of many bodies sets thousands of attribute values in one commit
(:meth:`Model.set_block <cepflow.models.Model.set_block>`); change by change, each value
runs the seeded joins of every body that reads it (:mod:`cepflow.queries.plans`). When a
body reads the changed values through filters only — the in-place case of
:meth:`BodyPlanner.modifier <cepflow.queries.plans.BodyPlanner.modifier>` — its other atoms
do not depend on them, so its assignments can be kept as a table (the join of those atoms,
:meth:`BodyPlanner.table <cepflow.queries.plans.BodyPlanner.table>`, rebuilt when one of
their memories changes) and a block taken in one pass: per assignment touched by the block,
the value of each in-place item before and after, the filters over them evaluated for all
rows at once (numpy, :func:`cepflow.runtime.vector_expr.filter_mask`; row by row through the
plan's own compiled tests where that cannot be exact), and ``holds(after) - holds(before)``
added to the pattern's counts. That is the net effect the change-by-change path reaches one
value at a time (each body's count of assignments is a function of the values alone), so the
pattern deltas, and the query events, are the same (tests/queries/test_query_bulk.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import repeat
from typing import Any

import numpy as np

from cepflow.queries.ir import Check, Filter
from cepflow.queries.plans import BodyPlanner
from cepflow.queries.relations import EMPTY, Projection, Relation
from cepflow.runtime.vector_expr import filter_mask

#: (object -> old value, object -> new value): how a block changes one value relation
ValueChanges = tuple[dict[Any, Any], dict[Any, Any]]

_MISSING: Any = object()


class BulkBody:
    """One body taken column-wise: its table of assignments and its value filters."""

    def __init__(self, planner: BodyPlanner, functions: Mapping[str, Callable[..., Any]]
                 ) -> None:
        self.planner = planner
        self.counter = planner.counter
        self.functions = functions
        ks = planner.value_items()
        slots = planner.slots
        values = {planner.items[k].args[1] for k in ks}
        self.filters: list[Filter] = [f for f in planner.filters
                                      if values.intersection(f.variables)]
        table_filters = [f for f in planner.filters if f not in self.filters]
        # an in-place item whose object no other atom binds enumerates its objects itself
        others = set().union(*(i.variables for i in planner.items
                               if i.position not in ks and not i.negative))
        skip = tuple(k for k in ks if planner.items[k].args[0] in others)
        self.rows_of = planner.table(skip, table_filters)
        # per in-place item: its memory, the slot of its object and of its value
        self.values: list[tuple[Relation, int, int]] = []
        for k in ks:
            item = planner.items[k]
            obj, var = item.args
            assert isinstance(item.memory, Relation) and isinstance(obj, str) \
                and isinstance(var, str)
            self.values.append((item.memory, slots[obj], slots[var]))
        self.relations = {rel for rel, _, _ in self.values}
        self.key_slots = [slots[p] for p in planner.body.params]
        self.tests = [planner._test(f) for f in self.filters]
        self.exprs = [f.expr if isinstance(f, Check) else None for f in self.filters]
        self.fields = [{v: slots[v] for v in f.variables} for f in self.filters]
        self.sources: list[Relation | Projection] = [
            i.memory for i in planner.items if i.position not in skip]
        # the slots the value filters and the keys read besides the values
        value_slots = {v for _, _, v in self.values}
        self.read_slots = sorted(({slots[v] for f in self.filters for v in f.variables}
                                  | set(self.key_slots)) - value_slots)
        self.planner_width = len(slots)
        self._rows = _Table([], self)
        self._versions: tuple[int, ...] | None = None
        # the last block over the whole table: (table, values by slot, rows kept, filters)
        self._last: tuple[_Table, dict[int, list[Any]], np.ndarray, np.ndarray] | None = None

    @property
    def usable(self) -> bool:
        """Whether the body has a table (its other atoms bind everything its filters and the
        in-place items' objects need)."""
        return self.rows_of is not None

    def _table(self) -> _Table:
        """The assignments of the other atoms, as columns — rebuilt when one of those
        atoms' memories changed since."""
        versions = tuple(m.shape for m in self.sources)
        if versions != self._versions:
            assert self.rows_of is not None
            self._rows = _Table(self.rows_of(), self)
            self._versions = versions
        return self._rows

    def apply(self, changed: Mapping[Relation, ValueChanges]) -> None:
        """Count the effect of the value changes ``changed`` (before any of them is applied
        to the memories) on the body's matches."""
        if not self.filters:
            return  # no filter reads the values: no assignment changes
        table = self._table()
        n = table.size
        if not n:
            return
        hit = np.zeros(n, dtype=bool)
        news: list[list[Any] | None] = []
        for (rel, _, _), objs in zip(self.values, table.objects, strict=True):
            changes = changed.get(rel)
            if changes is None:
                news.append(None)
                continue
            news.append(list(map(changes[1].get, objs, repeat(_MISSING, n))))
            hit |= np.fromiter(map(changes[1].__contains__, objs), bool, n)
        if not hit.any():
            return
        rows = None if hit.all() else np.flatnonzero(hit)
        olds_by_slot: dict[int, list[Any]] = {}
        news_by_slot: dict[int, list[Any]] = {}
        keep = np.ones(n if rows is None else len(rows), dtype=bool)
        for (rel, _, value_slot), objs, new in zip(self.values, table.objects, news,
                                                   strict=True):
            if rows is not None:
                objs = [objs[r] for r in rows.tolist()]
                if new is not None:
                    new = [new[r] for r in rows.tolist()]
            if new is None:
                old = new = self._unchanged(rel, objs, keep, table, rows is None)
            else:
                old = list(map(changed[rel][0].get, objs, repeat(_MISSING, len(objs))))
                if _MISSING in old:  # rows of this object whose value the block leaves
                    unchanged = self._memory(rel, objs, keep)
                    old = [u if o is _MISSING else o for o, u in zip(old, unchanged,
                                                                     strict=True)]
                    new = [u if v is _MISSING else v for v, u in zip(new, unchanged,
                                                                     strict=True)]
            olds_by_slot[value_slot] = old
            news_by_slot[value_slot] = new
        columns = table.columns if rows is None else {
            slot: [col[r] for r in rows.tolist()] for slot, col in table.columns.items()}
        # the filters over the values before the block are a function of the table, those
        # values and which rows have them: what the last block found after it, if all three
        # are the same (the frame before left the values this frame starts from)
        last = self._last
        if rows is None and last is not None and last[0] is table and np.array_equal(
                last[2], keep) and all(last[1][s] == v for s, v in olds_by_slot.items()):
            before = last[3]
        else:
            before = self._holds(columns, olds_by_slot, keep)
        after = self._holds(columns, news_by_slot, keep)
        self._last = (table, news_by_slot, keep, after) if rows is None else None
        changed_rows = np.flatnonzero(before != after).tolist()
        if not changed_rows:
            return
        add = self.counter.add
        keys = [columns[s] for s in self.key_slots]
        for r in changed_rows:
            add(tuple([k[r] for k in keys]), 1 if after[r] else -1)

    def _unchanged(self, rel: Relation, objs: list[Any], keep: np.ndarray, table: _Table,
                   whole: bool) -> list[Any]:
        """:meth:`_memory` of a relation the block does not change; for the whole table,
        kept with the relation's version (a shoulder that stays put is not looked up again
        each frame)."""
        if not whole:
            return self._memory(rel, objs, keep)
        cached = table.memory.get(rel)
        if cached is not None and cached[0] == rel.version:
            keep &= cached[2]
            return cached[1]
        mask = np.ones(len(objs), dtype=bool)
        values = self._memory(rel, objs, mask)
        table.memory[rel] = (rel.version, values, mask)
        keep &= mask
        return values

    @staticmethod
    def _memory(rel: Relation, objs: list[Any], keep: np.ndarray) -> list[Any]:
        """The objects' current values in ``rel``; a row whose object has none is dropped
        from ``keep`` (no assignment)."""
        memory = rel.index((0,))
        out = []
        for r, obj in enumerate(objs):
            value = _value(memory, obj)
            if value is _MISSING:
                keep[r] = False
                value = None
            out.append(value)
        return out

    def _holds(self, columns: dict[int, list[Any]], values: dict[int, list[Any]],
               keep: np.ndarray) -> np.ndarray:
        """Whether every value filter holds, per row, with the values ``values`` (slot ->
        column) and the table's ``columns``."""
        out = keep.copy()
        everything = {**columns, **values}
        for test, expr, fields in zip(self.tests, self.exprs, self.fields, strict=True):
            mask = None
            if expr is not None and keep.all():
                mask = filter_mask(expr, fields, everything.__getitem__, self.functions)
            if mask is None:  # row by row, as the change-by-change path evaluates it
                mask = np.zeros(len(out), dtype=bool)
                slots = list(everything.items())
                width = self.planner_width
                for r in np.flatnonzero(out).tolist():
                    env: list[Any] = [None] * width
                    for slot, col in slots:
                        env[slot] = col[r]
                    mask[r] = test(env)
            out &= mask
        return out


class _Table:
    """A body's assignments column-wise: per in-place item the objects, and the columns of
    the slots the keys and value filters read."""

    __slots__ = ("columns", "memory", "objects", "size")

    def __init__(self, rows: list[tuple[Any, ...]], body: BulkBody) -> None:
        self.size = len(rows)
        # relation -> (its version, the values of the objects of its item, which exist)
        self.memory: dict[Relation, tuple[int, list[Any], np.ndarray]] = {}
        self.objects = [[row[s] for row in rows] for _, s, _ in body.values]
        self.columns = {s: [row[s] for row in rows] for s in body.read_slots}


def _value(memory: dict[Any, set[tuple[Any, ...]]], obj: Any) -> Any:
    """Object ``obj``'s value in a functional relation (its index on the object), or
    _MISSING."""
    bucket = memory.get(obj, EMPTY)
    for t in bucket:
        return t[1]
    return _MISSING
