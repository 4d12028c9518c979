"""Monte Carlo runs (seed 003 §V.B.2): each run generates its own events and runs the patterns.

A :class:`Simulation` binds a compiled program, a model, a run length and a seed; ``run(r)``
generates run ``r``'s events (:mod:`.generator`), feeds them to a fresh
:class:`~cepflow.runtime.engine.Engine` and returns the count of every simple and complex event
type with the time each step took. :func:`run_local` spreads runs over this machine's cores,
one process per core; ``cepflow.spark.simulation`` runs them in Spark executors. Both call
``Simulation.run``, so the same seed and run number give the same counts everywhere.

At the end of a run, time passes to the end of the simulated period (``Engine.advance_to``):
timers and windows due by then fire; what would happen after it is not simulated.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from cepflow.compiler.program import Program
from cepflow.events.event import Event, SideChannel
from cepflow.language.diagnostics import Diagnostic
from cepflow.runtime.engine import Engine
from cepflow.simulation.generator import generate
from cepflow.simulation.simulation_model import SimulationModel, SimulationModelError
from cepflow.timefmt import duration_text

#: schema type → the model value types it accepts (ints become floats for float parameters)
_ACCEPTS = {"int": ("int",), "float": ("int", "float"), "str": ("str",), "bool": ("bool",),
            "any": ("int", "float", "str", "bool")}


@dataclass
class RunResult:
    """One run: its number, the count of every event type, and where its time went."""

    run: int
    counts: dict[str, int]
    seconds: float
    generate_seconds: float
    detect_seconds: float
    digest: str = ""
    #: records the engine put on the side channel: input a window statement refused, an
    #: expression that failed on an event (docs/semantics.md, "Evaluation errors")
    rejected: int = 0
    #: CPU time of the run's process during the run (the wall time less what other
    #: processes took from it on a shared machine)
    cpu_seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Simulation:
    """Runs of ``program`` over events of ``model`` lasting ``duration_ms``, seeded by
    ``seed`` (run ``r``'s streams: :func:`cepflow.simulation.generator.stream`)."""

    program: Program
    model: SimulationModel
    #: the simulated time of a run (None: as long as ``events`` takes)
    duration_ms: float | None
    seed: int
    #: at most this many simple events per run (Listing 30's ``num``; None: no bound)
    events: int | None = None
    #: events of a type also counted per value of some of its parameters:
    #: ``(("AirQualityLevel", ("station", "grade")),)`` counts ``AirQualityLevel[station=…,
    #: grade=…]`` (:func:`group_key`)
    count_by: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: the event types counted, simple ones (model order) then complex (declaration order)
    simple: list[str] = field(init=False)
    complex: list[str] = field(init=False)

    def __post_init__(self) -> None:
        if self.duration_ms is None and self.events is None:
            raise ValueError("a simulation needs a duration, a number of events, or both")
        problems = compatibility(self.model, self.program)
        if problems:
            raise SimulationModelError(problems)
        complex_names = {a.name for a in self.program.automata} | {
            w.name for w in self.program.windows}
        self.simple = list(self.model.event_types())
        self.complex = [t for t in self.program.schemas if t in complex_names]
        self._groups: dict[str, list[tuple[tuple[str, ...], tuple[int, ...]]]] = {}
        for name, attrs in self.count_by:
            schema = self.program.schemas.get(name)
            if schema is None or name not in self.event_types:
                raise ValueError(f"'{name}' is not an event type the runs count "
                                 f"(they count: {', '.join(self.event_types)})")
            missing = [a for a in attrs if a not in schema.param_names]
            if missing or not attrs:
                raise ValueError(f"{name} has no parameter '{(missing or [''])[0]}' "
                                 f"(it has: {', '.join(schema.param_names)})")
            self._groups.setdefault(name, []).append(
                (attrs, tuple(schema.index_of(a) for a in attrs)))

    def describe(self) -> str:
        """What a run is: ``1 d``, ``1,000 events``, ``1,000 events (at most 1 d)``."""
        span = duration_text(self.duration_ms) if self.duration_ms is not None else ""
        if self.events is None:
            return span
        return f"{self.events:,} events" + (f" (at most {span})" if span else "")

    @property
    def event_types(self) -> list[str]:
        return [*self.simple, *self.complex]

    def run(self, run: int, seed: int | None = None) -> RunResult:
        """Generate run ``run``'s events (of ``seed``, default the simulation's), detect,
        count."""
        c0, t0 = time.process_time(), time.perf_counter()
        generated = generate(self.model, self.duration_ms, self.seed if seed is None else seed,
                             run, limit=self.events)
        events = generated.events(self.program.schemas)
        t1 = time.perf_counter()
        side = SideChannel()
        engine = Engine(self.program, strict_actions=False, start=self.model.start_ms,
                        side=side)
        groups: Counter[str] = Counter()
        if self._groups:
            self._count_groups(events, groups)
            self._count_groups(engine.run(events), groups)
            self._count_groups(engine.advance_to(generated.end_ms), groups)
        else:
            deque(engine.run(events), maxlen=0)
            engine.advance_to(generated.end_ms)
        t2 = time.perf_counter()
        counts = generated.counts()
        for name in self.complex:
            counts[name] = engine.stats.by_pattern.get(name, 0)
        out = {t: counts.get(t, 0) for t in self.event_types}
        out.update(sorted(groups.items()))
        return RunResult(run, out, t2 - t0, t1 - t0, t2 - t1, generated.digest(),
                         len(side), time.process_time() - c0)

    def _count_groups(self, events: Iterable[Event], into: Counter[str]) -> None:
        groups = self._groups
        for e in events:
            for attrs, where in groups.get(e.type, ()):
                into[group_key(e.type, attrs, [e.params[i] for i in where])] += 1


def group_key(name: str, attrs: Sequence[str], values: Sequence[Any]) -> str:
    """The row of events of type ``name`` whose ``attrs`` have ``values``:
    ``AirQualityLevel[station=S7,grade=Good]`` (booleans and null as in JSON)."""
    shown = ("null" if v is None else ("true" if v else "false") if isinstance(v, bool)
             else str(v) for v in values)
    return f"{name}[{','.join(f'{a}={v}' for a, v in zip(attrs, shown, strict=True))}]"


def parse_count_by(text: str) -> tuple[str, tuple[str, ...]]:
    """``TYPE.ATTR[,ATTR…]`` (``--count-by``) as ``(TYPE, (ATTR, …))``."""
    name, dot, attrs = text.partition(".")
    names = tuple(a.strip() for a in attrs.split(",") if a.strip())
    if not dot or not name or not names:
        raise ValueError(f"{text!r}: write TYPE.ATTR or TYPE.ATTR,ATTR (e.g. "
                         "AirQualityLevel.station,grade)")
    return name, names


def compatibility(model: SimulationModel, program: Program) -> list[Diagnostic]:
    """Problems between a model and the patterns: a generated type the patterns do not declare
    or declare as complex, an attribute missing or extra, a value type the parameter does not
    accept — each located at the model's key."""
    out: list[Diagnostic] = []
    complex_names = {a.name for a in program.automata} | {w.name for w in program.windows}
    for src in model.sources:
        schema = program.schemas.get(src.event)
        if schema is None or src.event in complex_names:
            what = "a complex event" if schema is not None else "not declared"
            out.append(model.diagnostic(f"{src.key}.event", f"event type '{src.event}' is "
                                        f"{what} in {program.module.source}"))
            continue
        names = schema.param_names
        for p in schema.params:
            spec = src.attributes.get(p.name)
            if spec is None:
                out.append(model.diagnostic(f"{src.key}.attributes", f"no value for "
                                            f"'{p.name}', a parameter of {src.event}"))
            elif spec.type not in _ACCEPTS[p.type]:
                out.append(model.diagnostic(spec.key, f"{spec.type} values, but {src.event}."
                                            f"{p.name} is {p.declared_type or p.type}"))
        for name, spec in src.attributes.items():
            if name not in names:
                out.append(model.diagnostic(spec.key, f"{src.event} has no parameter "
                                            f"'{name}' (it has: {', '.join(names)})"))
    return out


def usable_cores() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_WORKER_SIMULATION: Simulation | None = None


def _run_in_worker(run: int) -> RunResult:
    assert _WORKER_SIMULATION is not None
    return _WORKER_SIMULATION.run(run)


class LocalRunner:
    """Runs on this machine, one worker process per core (forked, so each inherits the
    compiled program and model); a context manager keeping its workers between batches.

    Where processes cannot be forked (Windows) or one worker is asked for, runs go one after
    the other in this process."""

    def __init__(self, simulation: Simulation, workers: int | None = None) -> None:
        self.simulation = simulation
        self.workers = max(1, workers or usable_cores())
        self._pool: Any = None

    @property
    def where(self) -> str:
        return f"{self.workers} process{'es' if self.workers > 1 else ''}"

    def __enter__(self) -> LocalRunner:
        global _WORKER_SIMULATION
        if self.workers > 1 and "fork" in multiprocessing.get_all_start_methods():
            _WORKER_SIMULATION = self.simulation
            self._pool = multiprocessing.get_context("fork").Pool(self.workers)
        else:
            self.workers = 1
        return self

    def __exit__(self, *exc: object) -> None:
        global _WORKER_SIMULATION
        if self._pool is not None:
            self._pool.terminate() if exc[0] is not None else self._pool.close()
            self._pool.join()
            self._pool = None
        _WORKER_SIMULATION = None

    def map(self, runs: Sequence[int]) -> Iterator[RunResult]:
        """The results of ``runs`` as they finish (not in run order)."""
        if self._pool is None:
            for r in runs:
                yield self.simulation.run(r)
            return
        chunk = max(1, min(16, len(runs) // (self.workers * 8)))
        yield from self._pool.imap_unordered(_run_in_worker, runs, chunksize=chunk)


def run_local(simulation: Simulation, runs: Iterable[int], workers: int | None = None,
              on_result: Callable[[RunResult], None] | None = None) -> list[RunResult]:
    """Run ``runs`` (run numbers) on this machine; the results in run order."""
    todo = list(runs)
    out: list[RunResult] = []
    with LocalRunner(simulation, min(workers or usable_cores(), max(1, len(todo)))) as pool:
        for res in pool.map(todo):
            out.append(res)
            if on_result is not None:
                on_result(res)
    return sorted(out, key=lambda r: r.run)
