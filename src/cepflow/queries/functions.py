"""Functions that ``check`` conditions may call: Python callables registered by name.

Nothing in a query file is ever executed as Python; a call names a registered function.

* **Plain functions** are pure: ``abs``, ``min``, ``sqrt`` … (cepflow's expression built-ins)
  and whatever the application registers.
* **History functions** are stateful, like the moving average of 002 Listing 2. Decision: a
  history function summarises the *history of one attribute of one object*: its first
  argument must be a variable bound by an attribute constraint (``RightHand.y(RH, RHy)``), the
  others constants (``movingAverage(RHy, 5)``). The accumulator of ``(function, constants,
  attribute, object)`` receives the attribute's committed value once per transaction that set
  it (also to an unchanged value: a frame is an observation) and once when the object is
  created; ``movingAverage(RHy)`` is then the accumulator's current value. The result depends
  only on the model's commit history — not on the order or number of times a query evaluates
  it — so incremental and from-scratch evaluation agree, and two queries using the same
  average share it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from functools import reduce
from operator import add as _plus
from typing import Any, Protocol

import numpy as np


class Accumulator(Protocol):
    """The state of a history function for one object's attribute."""

    def add(self, value: Any) -> None:
        """Observe the attribute's committed value of one more transaction."""

    def value(self) -> Any:
        """The function's current result."""


#: Makes a fresh accumulator from the call's constant arguments (``movingAverage(x, 5)`` -> 5).
AccumulatorFactory = Callable[..., Accumulator]


class MovingAverage:
    """Mean of the last ``window`` observed values (all of them until there are ``window``)."""

    def __init__(self, window: int = 5) -> None:
        _check_window(window)
        self._values: deque[float] = deque(maxlen=window)
        self._mean: Any = None

    def add(self, value: Any) -> None:
        values = self._values
        values.append(value)
        # recomputed exactly (not the running sum) so equal histories give equal floats;
        # once per observation, not per read (a frame reads each average twice). Floats are
        # summed oldest first from 0.0 — the arithmetic MovingAverages does column-wise, so
        # both give the same floats on every Python (``sum`` of floats compensates from 3.12
        # on) — other numbers exactly, as ``sum``
        self._mean = reduce(_plus, values, 0.0 if value.__class__ is float else 0) / len(values)

    def value(self) -> Any:
        if self._mean is None:
            raise ZeroDivisionError("movingAverage of no value")  # as sum/len of nothing
        return self._mean

    @staticmethod
    def columns(window: int = 5) -> MovingAverages:
        """The averages of many objects' float attribute at once (a frame's block)."""
        return MovingAverages(window)


def _check_window(window: Any) -> None:
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"movingAverage window must be a positive integer, got {window!r}")


class MovingAverages:
    """``movingAverage`` of one float attribute for many objects: numpy columns — per object a
    row of the last ``window`` values (oldest first, zeros before the first), their count and
    mean. A frame's thousand observations are a few array operations instead of a thousand
    deques; the mean is the sum from 0.0 oldest first over the row (the zeros add nothing) over
    the count: the floats of :meth:`MovingAverage.add` exactly
    (tests/queries/test_moving_averages.py)."""

    def __init__(self, window: int = 5) -> None:
        _check_window(window)
        self.window = window
        self.rows: dict[Any, int] = {}
        self._free: list[int] = []
        self._values = np.zeros((16, window))
        self._count = np.zeros(16, dtype=np.int64)
        self._mean = np.zeros(16)
        self._last: tuple[list[Any], int, np.ndarray] | None = None  # observe's rows, kept
        self._epoch = 0  # rows given or freed

    def load(self, accumulators: dict[Any, MovingAverage]) -> None:
        """Take over the windows of ``accumulators`` (object -> its accumulator) as rows."""
        rows = np.fromiter((self._row(obj) for obj in accumulators), dtype=np.intp,
                           count=len(accumulators))
        width = self.window
        windows = [list(acc._values) for acc in accumulators.values()]
        self._values[rows] = [[0.0] * (width - len(w)) + w for w in windows]
        self._count[rows] = list(map(len, windows))
        self._mean[rows] = self._means(self._values[rows], self._count[rows])

    def start(self, obj: Any, value: float) -> float:
        """A row for a new object whose first value is ``value``; its mean."""
        row = self._row(obj)
        self._values[row] = 0.0
        self._values[row, -1] = value
        self._count[row] = 1
        mean = self._means(self._values[row:row + 1], self._count[row:row + 1])[0]
        self._mean[row] = mean
        return mean.item()  # type: ignore[no-any-return]

    def add(self, obj: Any, value: float) -> tuple[float, float] | None:
        """Observe one value of ``obj``: (mean before, mean after); None for no such object."""
        row = self.rows.get(obj)
        if row is None:
            return None
        values = self._values[row:row + 1]
        values[0, :-1] = values[0, 1:].copy()
        values[0, -1] = value
        count = self._count[row:row + 1]
        count[0] = min(count[0] + 1, self.window)
        old = self._mean[row].item()
        self._mean[row] = new = self._means(values, count)[0]
        return old, new.item()

    def observe(self, objects: list[Any], values: list[float]) -> tuple[np.ndarray, np.ndarray]:
        """Observe one value of each of ``objects`` (distinct, known): the means before and
        after, as arrays."""
        rows = self._rows_of(objects)
        window = self._values[rows]
        old = self._mean[rows]
        window[:, :-1] = window[:, 1:].copy()
        window[:, -1] = values
        count = np.minimum(self._count[rows] + 1, self.window)
        new = self._means(window, count)
        self._values[rows] = window
        self._count[rows] = count
        self._mean[rows] = new
        return old, new

    def drop(self, obj: Any) -> float:
        """Forget ``obj`` (deleted); its last mean."""
        row = self.rows.pop(obj)
        self._free.append(row)
        self._epoch += 1
        return self._mean[row].item()  # type: ignore[no-any-return]

    def value(self, obj: Any) -> float:
        return self._mean[self.rows[obj]].item()  # type: ignore[no-any-return]

    def _row(self, obj: Any) -> int:
        self._epoch += 1
        if self._free:
            row = self._free.pop()
        else:
            row = len(self.rows)
            if row == len(self._count):  # grow by doubling
                self._values = np.concatenate([self._values, np.zeros_like(self._values)])
                self._count = np.concatenate([self._count, np.zeros_like(self._count)])
                self._mean = np.concatenate([self._mean, np.zeros_like(self._mean)])
        self.rows[obj] = row
        return row

    def _rows_of(self, objects: list[Any]) -> np.ndarray:
        """The rows of ``objects``, kept while the same list comes again and no row changed
        hands (a frame's objects)."""
        last = self._last
        if last is not None and last[1] == self._epoch and last[0] == objects:
            return last[2]
        rows = np.fromiter(map(self.rows.__getitem__, objects), dtype=np.intp,
                           count=len(objects))
        self._last = (list(objects), self._epoch, rows)
        return rows

    def _means(self, window: np.ndarray, count: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):  # infinities and NaN, as Python floats give them
            total = 0.0 + window[:, 0]
            for k in range(1, self.window):
                total = total + window[:, k]
            return total / count  # type: ignore[no-any-return]


class FunctionRegistry:
    """Plain and history functions by name. The defaults: cepflow's expression built-ins and
    the history function ``movingAverage(x, window=5)``."""

    def __init__(self, functions: Mapping[str, Callable[..., Any]] | None = None,
                 history: Mapping[str, AccumulatorFactory] | None = None) -> None:
        self.plain: dict[str, Callable[..., Any]] = {}
        self.history: dict[str, AccumulatorFactory] = {"movingAverage": MovingAverage}
        for name, fn in (functions or {}).items():
            self.register(name, fn)
        for name, factory in (history or {}).items():
            self.register_history(name, factory)

    def register(self, name: str, fn: Callable[..., Any]) -> None:
        """Register a pure function for ``check`` conditions."""
        self._check_new(name, fn)
        self.plain[name] = fn

    def register_history(self, name: str, factory: AccumulatorFactory) -> None:
        """Register a history function: ``factory(*constant_args)`` makes an accumulator."""
        self._check_new(name, factory)
        self.history[name] = factory

    def _check_new(self, name: str, fn: Any) -> None:
        if not name.isidentifier():
            raise ValueError(f"function name {name!r} is not an identifier")
        if not callable(fn):
            raise TypeError(f"function {name!r} is not callable")
        if name in self.plain or name in self.history:
            raise ValueError(f"function {name!r} is already registered")
