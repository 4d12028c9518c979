"""Incremental aggregate state per group: count, sum, avg, min and max.

Every group's state is one flat list ``[n, first, (cnt, total, lo, hi) per argument …]``:
``n`` counts the group's events in the window (``count(*)``), ``first`` is the group's first
record of the current batch (the representative Esper evaluates a batch row with); for every
distinct aggregate argument ``cnt`` counts its non-null values (``count(x)``, and the divisor of
``avg``), ``total`` sums them (``sum``/``avg``), ``lo``/``hi`` hold the minimum/maximum.

Costs per event are O(1) amortised for every aggregate:

* count, sum, avg: add on enter, subtract on leave (sums of ints stay exact Python ints; a
  float sum is reset to exactly 0 when its group holds no non-null value any more, so rounding
  left over from values that have left cannot outlive them);
* min, max over *sliding* windows: a monotonic deque per group of ``(seq, value)`` whose front
  is the extreme. Sliding windows remove events in arrival order (also per group), so a value
  that leaves is either the front or was already dropped because a later value dominates it;
* min, max over *batch* windows: a running value, as a batch is cleared as a whole.

Nulls (None) are ignored by every aggregate except ``count(*)``; an aggregate over no non-null
value is null, ``count`` is 0 (SQL and Esper).
"""

from __future__ import annotations

import numbers
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cepflow.language import ast
from cepflow.language.printer import format_expr
from cepflow.windows.statement import WindowError

#: fixed slots of a group's state list
N, FIRST = 0, 1
#: per argument: offsets from its base index
CNT, TOTAL, LO, HI = 0, 1, 2, 3
_PER_ARG = 4
_HEAD = 2

State = list[Any]
#: how :meth:`Aggregation.values` reads a slot
_COUNT, _SUM, _AVG, _FRONT, _VALUE = 0, 1, 2, 3, 4


@dataclass(frozen=True)
class AggregateSlot:
    """One distinct aggregate of a statement: ``func`` over argument ``arg`` (None for
    ``count(*)``); ``arg_index`` numbers the distinct arguments, which aggregates share."""

    func: str
    arg: ast.Expr | None
    arg_index: int


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


class Aggregation:
    """The aggregate state of every group with events in the window.

    ``retract`` is True for sliding windows (values leave one by one) and False for batch
    windows (the state of a batch is dropped as a whole with :meth:`clear`). A group's state
    exists while the window holds at least one of its events: :meth:`leave` returns the state
    so the caller can :meth:`drop` it once ``n`` is 0.
    """

    def __init__(self, slots: Sequence[AggregateSlot], statement: str, retract: bool) -> None:
        self.slots = tuple(slots)
        self.statement = statement
        self.retract = retract
        self.groups: dict[Any, State] = {}
        n_args = max((s.arg_index + 1 for s in self.slots if s.arg is not None), default=0)
        funcs: list[set[str]] = [set() for _ in range(n_args)]
        for s in self.slots:
            if s.arg is not None:
                funcs[s.arg_index].add(s.func)
        #: per argument: (index, base, needs total, needs min, needs max)
        self._args = tuple(
            (j, _HEAD + _PER_ARG * j, bool(f & {"sum", "avg"}), "min" in f, "max" in f)
            for j, f in enumerate(funcs))
        self._width = _HEAD + _PER_ARG * n_args
        #: per slot: (kind, count index, value index) read by :meth:`values`
        self._reads = tuple(self._read(s) for s in self.slots)
        #: the values of a group with no events: count 0, every other aggregate null
        self.empty_values: tuple[Any, ...] = tuple(
            0 if s.func == "count" else None for s in self.slots)

        #: a new group's state, copied for each group (counts and sums 0, extremes None);
        #: sliding min/max get fresh deques in the positions listed in ``_deques``
        self._template: State = [0] * self._width
        self._deques: tuple[int, ...] = ()
        for _j, b, _tot, mn, mx in self._args:
            self._template[b + LO] = self._template[b + HI] = None
            if retract:
                self._deques += (*((b + LO,) if mn else ()), *((b + HI,) if mx else ()))

    # -- state ------------------------------------------------------------------------------
    def enter(self, key: Any, vals: tuple[Any, ...], seq: int, record: Any) -> State:
        """Add one event's argument values to its group (created with ``record`` as first).

        A value the aggregates cannot take (a non-number for sum/avg, a value that does not
        compare with the group's for min/max) is a :class:`WindowError` raised before any
        state changes, so the statement goes on as if the event had not come.
        """
        st = self.groups.get(key)
        self._check(st, vals)
        if st is None:
            st = self._template.copy()
            st[FIRST] = record
            for i in self._deques:
                st[i] = deque()
            self.groups[key] = st
        st[N] += 1
        for j, b, tot, mn, mx in self._args:
            v = vals[j]
            if v is None:
                continue
            st[b] += 1
            if tot:
                st[b + TOTAL] += v
            if mn:
                if self.retract:
                    dq = st[b + LO]
                    while dq and dq[-1][1] >= v:
                        dq.pop()
                    dq.append((seq, v))
                elif st[b + LO] is None or v < st[b + LO]:
                    st[b + LO] = v
            if mx:
                if self.retract:
                    dq = st[b + HI]
                    while dq and dq[-1][1] <= v:
                        dq.pop()
                    dq.append((seq, v))
                elif st[b + HI] is None or v > st[b + HI]:
                    st[b + HI] = v
        return st

    def _check(self, st: State | None, vals: tuple[Any, ...]) -> None:
        for j, b, tot, mn, mx in self._args:
            v = vals[j]
            if v is None:
                continue
            if tot and v.__class__ is not int and v.__class__ is not float \
                    and not _is_number(v):
                raise self._bad_value(j, v)
            if st is not None and (mn or mx):
                held = st[b + LO] if mn else st[b + HI]
                if self.retract:
                    held = held[-1][1] if held else None
                if held is not None:
                    try:
                        v < held  # noqa: B015 — only whether they compare
                    except TypeError:
                        raise self._bad_value(j, v) from None

    def leave(self, key: Any, vals: tuple[Any, ...], seq: int) -> State:
        """Remove one event (sliding windows: the oldest of its group) from its group."""
        st = self.groups[key]
        st[N] -= 1
        for j, b, tot, mn, mx in self._args:
            v = vals[j]
            if v is None:
                continue
            st[b] -= 1
            if tot:
                st[b + TOTAL] = st[b + TOTAL] - v if st[b] else 0
            if mn:
                dq = st[b + LO]
                if dq and dq[0][0] == seq:
                    dq.popleft()
            if mx:
                dq = st[b + HI]
                if dq and dq[0][0] == seq:
                    dq.popleft()
        return st

    def _bad_value(self, j: int, v: Any) -> WindowError:
        funcs = sorted({s.func for s in self.slots if s.arg_index == j and s.arg is not None})
        arg = next(s.arg for s in self.slots if s.arg_index == j and s.arg is not None)
        return WindowError(f"statement '{self.statement}': {'/'.join(funcs)} cannot aggregate "
                           f"the value {v!r} ({type(v).__name__})", statement=self.statement,
                           field=format_expr(arg), value=v)

    def _read(self, slot: AggregateSlot) -> tuple[int, int, int]:
        if slot.arg is None:
            return _COUNT, N, N
        b = _HEAD + _PER_ARG * slot.arg_index
        if slot.func == "count":
            return _COUNT, b + CNT, b + CNT
        if slot.func in ("sum", "avg"):
            return (_SUM if slot.func == "sum" else _AVG), b + CNT, b + TOTAL
        i = b + (LO if slot.func == "min" else HI)
        return (_FRONT if self.retract else _VALUE), i, i

    def values(self, st: State | None) -> tuple[Any, ...]:
        """The current value of every slot for a group (its state, or None: no events)."""
        if st is None:
            return self.empty_values
        out = []
        for kind, c, v in self._reads:
            if kind == _COUNT:
                out.append(st[c])
            elif kind == _SUM:
                out.append(st[v] if st[c] else None)
            elif kind == _VALUE:  # a batch min/max: None until a value came
                out.append(st[v])
            elif kind == _AVG:
                out.append(st[v] / st[c] if st[c] else None)
            else:  # the front of a sliding min/max deque
                out.append(st[v][0][1] if st[v] else None)
        return tuple(out)

    def drop(self, key: Any) -> None:
        del self.groups[key]

    def clear(self) -> None:
        """Forget every group (a batch window starting its next batch)."""
        self.groups = {}
