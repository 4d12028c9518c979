"""Vectorised random draws: arrival times of a source's instances and attribute values.

Every function takes a :class:`numpy.random.Generator` and returns numpy arrays; none loops
over events in Python. Arrival times are milliseconds after the run's start, as float64, each
instance's in increasing order; the caller makes them whole milliseconds.
"""

from __future__ import annotations

import math

import numpy as np

from cepflow.simulation.simulation_model import Arrival, Distribution, ValueSpec


class GenerationError(ValueError):
    """A model that validates but cannot be generated as asked (too many events, a value
    beyond what its type holds); the message names the model key."""


def arrivals(arrival: Arrival, rng: np.random.Generator, instances: int, duration_ms: float
             ) -> tuple[np.ndarray, np.ndarray]:
    """The arrival times in ``[0, duration_ms)`` of all instances, in time order:
    ``(times, instance)``. Drawn in time order, so that no sort is needed:

    * exponential inter-arrival times of mean ``m`` per instance: the instances together are
      one Poisson process of mean ``m / instances``, each event's instance uniformly one of
      them (the superposition of independent Poisson processes; each instance's own times are
      exactly a Poisson process of mean ``m``). It starts at the run's start: the first event
      comes one inter-arrival time after it, not at it;
    * periodic: at ``phase + k · period``, the instances of one instant in order of their
      phase (then of their number); a random phase is uniform in ``[0, period)``, one per
      instance;
    * a Poisson rate ``λ``: a Poisson number of events (mean ``λ · duration · instances``) at
      uniformly distributed times (sorted uniform spacings), each of a uniformly drawn
      instance."""
    if arrival.process == "exponential":
        t = _poisson_times(rng, arrival.mean_ms / instances, duration_ms)
        return t, _owners(rng, instances, t.size)
    if arrival.process == "periodic":
        if arrival.phase_ms is None:
            phase = rng.uniform(0.0, arrival.period_ms, instances)
        else:
            phase = np.full(instances, arrival.phase_ms)
        by_phase = np.argsort(phase, kind="stable")
        ticks = np.arange(max(0, math.ceil(duration_ms / arrival.period_ms)) + 1,
                          dtype=np.float64) * arrival.period_ms
        t = ticks[:, None] + phase[by_phase][None, :]
        tick, k = np.nonzero(t < duration_ms)
        return t[tick, k], by_phase[k]
    n = int(rng.poisson(arrival.rate * duration_ms * instances))
    spacings = np.cumsum(rng.exponential(1.0, n + 1))
    t = spacings[:-1] * (duration_ms / spacings[-1])
    return t, _owners(rng, instances, n)


def _owners(rng: np.random.Generator, instances: int, n: int) -> np.ndarray:
    if instances == 1:
        return np.zeros(n, dtype=np.int64)
    return rng.integers(0, instances, n)


def _poisson_times(rng: np.random.Generator, mean: float, duration: float) -> np.ndarray:
    """The times of a Poisson process of mean inter-arrival ``mean`` in ``[0, duration)``."""
    expected = duration / mean
    width = int(expected + 6 * math.sqrt(expected) + 16)
    t = np.cumsum(rng.exponential(mean, width))
    blocks = [t]
    while t[-1] < duration:  # rarely: more than six standard deviations above the mean
        t = np.cumsum(rng.exponential(mean, width)) + t[-1]
        blocks.append(t)
    t = blocks[0] if len(blocks) == 1 else np.concatenate(blocks)
    return t[: np.searchsorted(t, duration, side="left")]


def draw(dist: Distribution, rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` independent draws from ``dist``."""
    p = dist.params
    if dist.kind == "uniform":
        return rng.uniform(p["low"], p["high"], n)
    if dist.kind == "normal":
        return rng.normal(p["mean"], p["sd"], n)
    if dist.kind == "exponential":
        return rng.exponential(p["mean"], n)
    if dist.kind == "lognormal":
        return rng.lognormal(p["mu"], p["sigma"], n)
    values = _array(dist.values)
    if dist.kind == "constant":
        return np.repeat(values, n)
    index = rng.choice(len(values), size=n, p=None if dist.p is None else np.array(dist.p))
    return values[index]


def _array(values: tuple[object, ...]) -> np.ndarray:
    if all(isinstance(v, bool) for v in values):
        return np.array(values, dtype=bool)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return np.array(values, dtype=np.int64)
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return np.array(values, dtype=np.float64)
    return np.array(values, dtype=object)


def finish(spec: ValueSpec, x: np.ndarray, rng: np.random.Generator,
           base: np.ndarray | float = 0.0, scale: np.ndarray | float = 1.0) -> np.ndarray:
    """Apply ``spec``'s modifiers to raw values: ``base + scale · x`` for numeric draws, then
    clip, the value type (ints rounded to the nearest, ties to even), digits and flips."""
    if spec.type in ("int", "float") and x.dtype != object:
        if spec.origin == "dist" and (not _is_zero(base) or not _is_one(scale)):
            with np.errstate(over="ignore", invalid="ignore"):  # (non-finite: checked below)
                x = base + scale * x
        if spec.clip is not None:
            x = np.clip(x, spec.clip[0], spec.clip[1])
        if spec.type == "int":
            if x.dtype.kind == "f":
                x = np.rint(x)
                if not np.isfinite(x).all() or np.abs(x).max(initial=0) > 2.0**62:
                    raise GenerationError(f"{spec.key}: a drawn value is beyond the range of "
                                          "64-bit integers (clip it)")
            x = x.astype(np.int64)
        else:
            x = x.astype(np.float64)
            if not np.isfinite(x).all():
                raise GenerationError(f"{spec.key}: a drawn value is not a finite number "
                                      "(clip it)")
            if spec.digits is not None:
                x = np.round(x, spec.digits)
    if spec.flip and x.dtype == bool:
        x = x ^ (rng.random(x.size) < spec.flip)
    return x


def _is_zero(v: np.ndarray | float) -> bool:
    return isinstance(v, float) and v == 0.0


def _is_one(v: np.ndarray | float) -> bool:
    return isinstance(v, float) and v == 1.0
