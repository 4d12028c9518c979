"""Properties as patterns (seed 003 §V.C-D): how often a complex event occurs over runs.

A property is a complex event type. Over ``n`` runs it *occurred* in ``k`` of them; its
probability is estimated by ``k / n`` with the **Wilson score interval** at the confidence
asked (it keeps within [0, 1] and covers close to the nominal level even for rare events, where
the normal-approximation interval collapses to a point at ``k = 0``). Table 2's figure is the
*ratio* of its occurrences to the simple events of all runs.

The number of runs for a precision ``d`` (the interval's half-width) at confidence ``C`` is
``n = z² · p · q / d²`` (§V.D) with ``z = Φ⁻¹((1 + C) / 2)``:

* ``formula="exact"`` (the default) rounds up, as §V.D's text says, with the exact ``z``;
* ``formula="seed"`` uses ``z`` to two decimals and rounds to the nearest integer, which is
  what the seed's Table 3 did (455, 576, 747, 1067, 1508, 1849 for p = 0.5, d = 0.03): with
  rounding up, 80 % would need 456 runs even with the table's ``z`` of 1.28.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (the runner is not loaded by `cepflow simulate`'s options)
    from cepflow.simulation.monte_carlo import RunResult

FORMULAS = ("exact", "seed")


def z_value(confidence: float) -> float:
    """The two-sided critical value of the standard normal distribution."""
    if not 0 < confidence < 1:
        raise ValueError(f"the confidence must be between 0 and 1 (got {confidence})")
    return NormalDist().inv_cdf((1 + confidence) / 2)


def wilson_interval(hits: int, runs: int, confidence: float) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``hits / runs``; (0, 1) without runs."""
    if runs <= 0:
        return (0.0, 1.0)
    if not 0 <= hits <= runs:
        raise ValueError(f"{hits} hits in {runs} runs")
    z = z_value(confidence)
    p = hits / runs
    z2n = z * z / runs
    centre = (p + z2n / 2) / (1 + z2n)
    half = z / (1 + z2n) * math.sqrt(p * (1 - p) / runs + z2n / (4 * runs))
    # (exactly 0 and 1 at the ends: the rounding error of centre - half is not a probability)
    return (0.0 if hits == 0 else max(0.0, centre - half),
            1.0 if hits == runs else min(1.0, centre + half))


def required_runs(confidence: float, precision: float, p: float = 0.5,
                  formula: str = "exact") -> int:
    """The number of runs ``n = z² · p · (1 - p) / d²`` (see the module docstring)."""
    if not 0 < precision < 1:
        raise ValueError(f"the precision must be between 0 and 1 (got {precision})")
    if not 0 < p < 1:
        raise ValueError(f"p must be between 0 and 1 (got {p})")
    if formula not in FORMULAS:
        raise ValueError(f"unknown formula {formula!r} (use {' or '.join(FORMULAS)})")
    z = z_value(confidence)
    if formula == "seed":
        z = round(z, 2)
        return max(1, math.floor(z * z * p * (1 - p) / precision**2 + 0.5))
    n = z * z * p * (1 - p) / precision**2
    return max(1, math.ceil(n * (1 - 1e-12)))  # (no extra run for a rounding error)


@dataclass(frozen=True)
class Estimate:
    """A property over runs: the runs it occurred in, its probability and interval, and its
    occurrences per simple event (Table 2)."""

    name: str
    runs: int
    hits: int
    occurrences: int
    simple_events: int
    confidence: float
    low: float
    high: float

    @property
    def probability(self) -> float:
        return self.hits / self.runs if self.runs else math.nan

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    @property
    def ratio(self) -> float:
        return self.occurrences / self.simple_events if self.simple_events else math.nan

    def to_dict(self) -> dict[str, Any]:
        """As JSON data (no NaN: an undefined probability or ratio is null)."""
        return {**asdict(self),
                "probability": self.probability if self.runs else None,
                "ratio": self.ratio if self.simple_events else None,
                "half_width": self.half_width}


def estimate(name: str, results: Sequence[RunResult], simple: Sequence[str],
             confidence: float) -> Estimate:
    """Property ``name`` over ``results``."""
    hits = sum(1 for r in results if r.counts.get(name, 0) > 0)
    occurrences = sum(r.counts.get(name, 0) for r in results)
    simple_events = sum(r.counts.get(t, 0) for r in results for t in simple)
    low, high = wilson_interval(hits, len(results), confidence)
    return Estimate(name, len(results), hits, occurrences, simple_events, confidence, low,
                    high)


def ratios(results: Sequence[RunResult], simple: Sequence[str], complex_types: Sequence[str]
           ) -> dict[str, float | None]:
    """Table 2: each complex event type's occurrences per simple event, over all runs (None
    without simple events)."""
    total = sum(r.counts.get(t, 0) for r in results for t in simple)
    return {c: (sum(r.counts.get(c, 0) for r in results) / total if total else None)
            for c in complex_types}


def convergence(name: str, results: Sequence[RunResult], confidence: float
                ) -> tuple[list[int], list[float], list[float], list[float]]:
    """The estimate and its interval after 1, 2, … n runs (in run order): (n, p, low, high)."""
    ns, ps, lows, highs = [], [], [], []
    hits = 0
    for i, r in enumerate(sorted(results, key=lambda r: r.run), start=1):
        hits += r.counts.get(name, 0) > 0
        low, high = wilson_interval(hits, i, confidence)
        ns.append(i)
        ps.append(hits / i)
        lows.append(low)
        highs.append(high)
    return ns, ps, lows, highs


def run_until_precise(run_batch: Callable[[range], list[RunResult]], properties: Sequence[str],
                      precision: float, confidence: float, batch: int, max_runs: int,
                      ) -> tuple[list[RunResult], bool]:
    """Sequential mode: run batches of ``batch`` runs (0, 1, 2, …) until every property's
    Wilson interval has a half-width ≤ ``precision``, or ``max_runs`` runs were made.
    Returns the results and whether the precision was reached.

    (Stopping when an interval is narrow enough makes the run count depend on the results;
    the Wilson interval's width depends on the estimate only through p(1 - p), which moves
    little, so the coverage stays close to nominal — docs/simulation.md.)"""
    if not properties:
        raise ValueError("the sequential mode needs at least one property")
    results: list[RunResult] = []
    while len(results) < max_runs:
        n = len(results)
        results.extend(run_batch(range(n, min(max_runs, n + batch))))
        if all(_half_width(p, results, confidence) <= precision for p in properties):
            return results, True
    return results, False


def _half_width(name: str, results: Sequence[RunResult], confidence: float) -> float:
    hits = sum(1 for r in results if r.counts.get(name, 0) > 0)
    low, high = wilson_interval(hits, len(results), confidence)
    return (high - low) / 2
