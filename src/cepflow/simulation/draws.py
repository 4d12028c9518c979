"""Vectorised random draws: arrival times of a source's instances and attribute values.

Every function takes a :class:`numpy.random.Generator` and returns numpy arrays; none loops
over events in Python. Arrival times are milliseconds after the run's start, as float64, each
instance's in increasing order; the caller makes them whole milliseconds.
"""

from __future__ import annotations

import math

import numpy as np

from cepflow.simulation.model import Arrival, Distribution, ValueSpec


class GenerationError(ValueError):
    """A model that validates but cannot be generated as asked (too many events, a value
    beyond what its type holds); the message names the model key."""


def arrivals(arrival: Arrival, rng: np.random.Generator, instances: int, duration_ms: float
             ) -> tuple[np.ndarray, np.ndarray]:
    """The arrival times in ``[0, duration_ms)`` of every instance: ``(times, instance)``,
    instance by instance, each instance's times increasing.

    Exponential inter-arrival times make a Poisson process from the run's start: the first
    event comes one inter-arrival time after it, not at it. Periodic arrivals come at
    ``phase + k · period``; a random phase is uniform in ``[0, period)``, one per instance.
    A Poisson rate draws each instance's number of events, then their times uniformly."""
    if arrival.process == "exponential":
        return _exponential(rng, instances, arrival.mean_ms, duration_ms)
    if arrival.process == "periodic":
        if arrival.phase_ms is None:
            phase = rng.uniform(0.0, arrival.period_ms, instances)
        else:
            phase = np.full(instances, arrival.phase_ms)
        per = max(0, math.ceil(duration_ms / arrival.period_ms)) + 1
        t = phase[:, None] + np.arange(per, dtype=np.float64)[None, :] * arrival.period_ms
        inst, k = np.nonzero(t < duration_ms)
        return t[inst, k], inst
    counts = rng.poisson(arrival.rate * duration_ms, instances)
    inst = np.repeat(np.arange(instances), counts)
    t = rng.uniform(0.0, duration_ms, int(counts.sum()))
    order = np.lexsort((t, inst))
    return t[order], inst


def _exponential(rng: np.random.Generator, instances: int, mean: float, duration: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    expected = duration / mean
    width = int(expected + 6 * math.sqrt(expected) + 16)
    blocks = [np.cumsum(rng.exponential(mean, (instances, width)), axis=1)]
    last = blocks[0][:, -1].copy()
    while True:  # an instance whose times have not reached the end draws another block
        short = np.flatnonzero(last < duration)
        if short.size == 0:
            break
        more = np.cumsum(rng.exponential(mean, (short.size, width)), axis=1)
        more += last[short, None]
        block = np.full((instances, width), np.inf)
        block[short] = more
        last[short] = more[:, -1]
        blocks.append(block)
    t = blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=1)
    inst, k = np.nonzero(t < duration)
    return t[inst, k], inst


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
