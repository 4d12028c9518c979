"""One run's simple events, generated column-wise from a model and a seed.

**Seeds.** A run is named by the user's seed ``S`` and its number ``r``; its random numbers come
from ``numpy.random.SeedSequence(S, spawn_key=(r, i, j))`` through the PCG64 bit generator —
one independent stream per source ``i`` and purpose ``j`` (0: arrival times, 1: the
instances' initial values, 2 + k: the k-th attribute). Run ``r`` therefore gets the same events
whichever process, machine or Spark executor generates it and however many runs there are, and
adding an attribute to a source changes neither its arrival times nor its other attributes.

**Order.** Times are whole milliseconds from the model's start (floored). Events are ordered
by time; at one millisecond, by source (model order), then in the order they were drawn.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np

from cepflow.events.event import Event, EventType
from cepflow.simulation.draws import GenerationError, arrivals, draw, finish
from cepflow.simulation.simulation_model import SimulationModel, Source, ValueSpec

#: a run may generate at most this many events (expected count, checked before drawing)
MAX_EVENTS = 50_000_000

#: the largest seed (SeedSequence takes any non-negative integer; 128 bits is its entropy)
MAX_SEED = 2**128 - 1


def stream(seed: int, run: int, *key: int) -> np.random.Generator:
    """The random stream of run ``run`` of seed ``seed`` for the purpose ``key``."""
    if not 0 <= seed <= MAX_SEED or run < 0:
        raise ValueError(f"seeds and run numbers are non-negative integers (got {seed}, {run})")
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed,
                                                                      spawn_key=(run, *key))))


@dataclass
class SourceEvents:
    """The events of one source in a run: their places in the run's order and their columns."""

    source: Source
    positions: np.ndarray
    columns: dict[str, np.ndarray]


@dataclass
class RunEvents:
    """A run's generated events, column-wise: ``ts`` (int64 ms, non-decreasing) and, per
    source, the positions of its events in that order and one column per attribute."""

    ts: np.ndarray
    sources: list[SourceEvents]
    #: the end of the simulated period (ms): the start plus the duration, or the time of the
    #: last event when a number of events ended the run
    end_ms: float = 0.0

    def __len__(self) -> int:
        return int(self.ts.size)

    def counts(self) -> dict[str, int]:
        """The number of events of each type."""
        out: dict[str, int] = {}
        for s in self.sources:
            out[s.source.event] = out.get(s.source.event, 0) + int(s.positions.size)
        return out

    def events(self, schemas: Mapping[str, EventType] | None = None) -> list[Event]:
        """The events as :class:`Event` objects, in time order, their parameters in the order
        of the type's schema (whole numbers as floats for float parameters), else in model
        order."""
        parts: list[list[Event]] = []
        for s in self.sources:
            name = s.source.event
            schema = schemas.get(name) if schemas else None
            if schema is None:
                cols = [c.tolist() for c in s.columns.values()]
            else:
                cols = [(s.columns[p.name].astype(np.float64) if p.type == "float"
                         else s.columns[p.name]).tolist() for p in schema.params]
            parts.append(list(map(Event, repeat(name), zip(*cols, strict=True),
                                  self.ts[s.positions].tolist())))
        if len(parts) == 1:
            return parts[0]
        # the sources' events in time order: event i of the concatenation goes to its position
        merged = [e for part in parts for e in part]
        order = np.empty(len(merged), dtype=np.int64)
        order[np.concatenate([s.positions for s in self.sources])] = np.arange(len(merged))
        return [merged[i] for i in order.tolist()]

    def records(self) -> Iterator[dict[str, Any]]:
        """One ``{"type", "ts", attribute: value, ...}`` dict per event, in time order."""
        ts = self.ts.tolist()
        rows: list[Any] = [None] * len(self)
        for s in self.sources:
            names = list(s.columns)
            cols = [s.columns[a].tolist() for a in names]
            for pos, values in zip(s.positions.tolist(), zip(*cols, strict=True),
                                   strict=True):
                rows[pos] = (s.source.event, names, values)
        for t, (name, names, values) in zip(ts, rows, strict=True):
            rec: dict[str, Any] = {"type": name, "ts": t}
            rec.update(zip(names, values, strict=True))
            yield rec

    def digest(self) -> str:
        """A fingerprint of the events (BLAKE2b of times, types and values, little-endian):
        equal digests, equal streams."""
        h = hashlib.blake2b(digest_size=16)
        h.update(self.ts.astype("<i8").tobytes())
        for s in self.sources:
            h.update(s.source.event.encode())
            h.update(s.positions.astype("<i8").tobytes())
            for name, col in s.columns.items():
                h.update(name.encode())
                if col.dtype == object:
                    h.update("\x1f".join(map(str, col.tolist())).encode())
                else:
                    h.update(col.astype(col.dtype.newbyteorder("<")).tobytes())
        return h.hexdigest()


def expected_events(model: SimulationModel, duration_ms: float) -> float:
    """The expected number of events of a run of ``duration_ms``."""
    return sum(s.instances * s.arrival.expected(duration_ms) for s in model.sources)


def check_size(model: SimulationModel, duration_ms: float, max_events: int = MAX_EVENTS
               ) -> None:
    """Raise :class:`GenerationError` when a run of ``duration_ms`` would generate more than
    ``max_events`` events (expected); the runners ask it before they start."""
    expected = expected_events(model, duration_ms)
    if expected > max_events:
        raise GenerationError(f"the model would generate about {expected:,.0f} events per "
                              f"run over {duration_ms / 1000:g} s (at most {max_events:,}): "
                              "fewer instances, a shorter duration or slower arrivals")


def generate(model: SimulationModel, duration_ms: float | None, seed: int, run: int = 0,
             max_events: int = MAX_EVENTS, limit: int | None = None) -> RunEvents:
    """Generate run ``run`` of seed ``seed``: every source's events over ``duration_ms``, or
    the first ``limit`` events (Listing 30's ``num``: a bound on the number of events), or
    both — whichever ends the run first. Without a duration the events are drawn over
    doubling horizons until there are ``limit`` of them (the same seed always takes the same
    steps)."""
    if duration_ms is None and limit is None:
        raise GenerationError("give a duration or a number of events")
    if duration_ms is not None and not duration_ms > 0:
        raise GenerationError(f"the duration must be longer than 0 (got {duration_ms} ms)")
    if limit is not None and not 0 < limit <= max_events:
        raise GenerationError(f"the number of events must be from 1 to {max_events:,} "
                              f"(got {limit:,})")
    horizon = duration_ms if limit is None else _horizon(model, limit, duration_ms)
    while True:
        if limit is None:
            check_size(model, horizon, max_events)
        ts, placed, instances = _arrivals(model, horizon, seed, run)
        if limit is None or ts.size >= limit or horizon == duration_ms:
            break
        horizon = 2 * horizon if duration_ms is None else min(2 * horizon, duration_ms)
    end = model.start_ms + horizon
    if limit is not None and ts.size >= limit:  # the run ends with its limit-th event
        ts = ts[:limit]
        for i in range(len(placed)):
            kept = placed[i] < limit
            placed[i], instances[i] = placed[i][kept], instances[i][kept]
        end = int(ts[-1])
    out = [SourceEvents(src, positions, _columns(src, seed, run, i, instances[i],
                                                 ts[positions]))
           for i, (src, positions) in enumerate(zip(model.sources, placed, strict=True))]
    return RunEvents(ts, out, end)


def _horizon(model: SimulationModel, limit: int, duration_ms: float | None) -> float:
    """A first horizon long enough for about ``limit`` events, within the duration."""
    per_ms = max(expected_events(model, 3_600_000) / 3_600_000, 1e-12)
    guess = limit / per_ms * 1.1 + 1
    return guess if duration_ms is None else min(guess, duration_ms)


def _arrivals(model: SimulationModel, horizon: float, seed: int, run: int
              ) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """Every source's arrivals over ``horizon``, merged: the times (int64 ms, from the
    model's start), each source's positions in them and its events' instances."""
    times, instances = [], []
    for i, src in enumerate(model.sources):
        t, inst = arrivals(src.arrival, stream(seed, run, i, 0), src.instances, horizon)
        times.append(np.floor(t).astype(np.int64))
        instances.append(inst)
    if len(times) == 1:
        return times[0] + model.start_ms, [np.arange(times[0].size)], instances
    # each source's times are sorted: the stable sort merges runs (timsort)
    rel = np.concatenate(times)
    order = np.argsort(rel, kind="stable")
    owner = np.repeat(np.arange(len(times)), [t.size for t in times])[order]
    return (rel[order] + model.start_ms,
            [np.flatnonzero(owner == i) for i in range(len(times))], instances)


def _columns(src: Source, seed: int, run: int, i: int, inst: np.ndarray, ts: np.ndarray
             ) -> dict[str, np.ndarray]:
    """The attribute columns of a source's events (instances ``inst``, times ``ts``)."""
    init_rng = stream(seed, run, i, 1)
    initial = {name: _initial(spec, init_rng, src.instances)
               for name, spec in src.initial.items()}
    cols: dict[str, np.ndarray] = {}
    n = inst.size
    for k, (name, spec) in enumerate(src.attributes.items()):
        rng = stream(seed, run, i, 2 + k)
        cols[name] = _attribute(spec, rng, n, inst, ts, initial.get(name))
    return cols


def _initial(spec: ValueSpec, rng: np.random.Generator, instances: int) -> np.ndarray:
    if spec.origin == "list":
        return finish(spec, _values(spec.values, spec.type), rng)
    assert spec.dist is not None
    return finish(spec, draw(spec.dist, rng, instances), rng)


def _values(values: tuple[Any, ...], type_: str) -> np.ndarray:
    dtype = {"int": np.int64, "float": np.float64, "bool": bool}.get(type_, object)
    return np.array(values, dtype=dtype)


def _attribute(spec: ValueSpec, rng: np.random.Generator, n: int, inst: np.ndarray,
               ts: np.ndarray, initial: np.ndarray | None) -> np.ndarray:
    if spec.origin == "time":
        return finish(spec, ts // np.int64(spec.unit_ms), rng)
    if spec.origin == "instance":
        return finish(spec, inst.astype(np.int64) + spec.first, rng)
    if spec.origin == "initial":
        assert initial is not None
        return finish(spec, initial[inst], rng)
    assert spec.dist is not None
    x = draw(spec.dist, rng, n)
    own = initial[inst].astype(np.float64) if spec.relative and initial is not None else None
    base = spec.around if isinstance(spec.around, float) else own
    scale = spec.scale if isinstance(spec.scale, float) else own
    return finish(spec, x, rng, 0.0 if base is None else base, 1.0 if scale is None else scale)
