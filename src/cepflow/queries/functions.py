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
from typing import Any, Protocol


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
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"movingAverage window must be a positive integer, got {window!r}")
        self._values: deque[float] = deque(maxlen=window)
        self._mean: Any = None

    def add(self, value: Any) -> None:
        values = self._values
        values.append(value)
        # recomputed exactly (not the running sum) so equal histories give equal floats;
        # once per observation, not per read (a frame reads each average twice)
        self._mean = sum(values) / len(values)

    @staticmethod
    def observe_all(accumulators: list[MovingAverage], values: list[Any]
                    ) -> tuple[list[Any], list[Any]]:
        """``add`` one value to each accumulator: (the values before, after) — one loop for
        a frame's block (History.observe), the same arithmetic."""
        olds = [acc._mean for acc in accumulators]
        news = []
        for acc, value in zip(accumulators, values, strict=True):
            window = acc._values
            window.append(value)
            acc._mean = mean = sum(window) / len(window)
            news.append(mean)
        return olds, news

    def value(self) -> Any:
        if self._mean is None:
            raise ZeroDivisionError("movingAverage of no value")  # as sum/len of nothing
        return self._mean


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
