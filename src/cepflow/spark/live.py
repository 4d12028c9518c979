"""The live pipeline on Spark, keyed: frames in, complex events out (issue 5, 000 §7).

Sensor frames arrive as a DataFrame of readings, one row per key (a body), frame and part (a
joint): ``body, frame, ts, joint, x, y, z`` (column names are parameters; attribute values may
be null = not reported in that frame). :func:`detect_live` groups the rows by key
(``groupBy(key).applyInPandas``) and, per key, runs the *same* live pipeline as in-process —
:class:`cepflow.models.frames.FrameLayout` applies each frame as one transaction of a fresh
:class:`cepflow.live.LiveSession` (model → incremental queries → query events → CEP engine →
rules) — and returns one row per complex event plus one ``stats`` row per key.

Decisions:

* **One session per key.** Keys share nothing: each has its own model, query engine, CEP
  engine and agenda. This equals one in-process session over all keys exactly when the
  queries, patterns and rules never relate two keys (the gesture case: every query joins
  through one ``Body``, ``ForwardGesture(B)`` unifies on the body, the rule changes that body
  only); for a pipeline that does relate keys, run it in-process (or key by the larger unit).
* **Order.** Within a key, frames are applied in ``order`` (then part name, for a
  deterministic creation order); each frame's rows must carry one ``ts``, non-decreasing
  over the frames — otherwise the task fails with a message naming the key and the frame.
* **What travels.** A :class:`LiveSpec` holds the texts of the metamodel, queries and patterns
  (compiled once per worker process) and the Python callables for actions and query
  functions (pickled by reference: they must be importable on the workers, or registered with
  ``cloudpickle.register_pickle_by_value``). Nothing read from a file is executed.
* **Output.** ``kind = "complex"`` rows carry the complex event's ``type``, ``ts``, its
  bindings as JSON (``params``) and its direct parts as JSON ``[[type, ts], ...]``; event ids
  are per session, so they are not part of the output. ``kind = "stats"`` rows carry the key's
  :class:`cepflow.live.LiveStats` plus ``frames`` as JSON in ``params``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame

from cepflow.compiler.program import Program
from cepflow.events.event import ComplexEvent
from cepflow.language.parser import parse
from cepflow.live import LiveSession
from cepflow.loader import load_module
from cepflow.models import Metamodel, Model
from cepflow.models.frames import FrameLayout
from cepflow.models.mmparser import parse_metamodel
from cepflow.queries import FunctionRegistry, QuerySet, compile_queries

#: output columns after the key column (named like the input's key column)
LIVE_COLUMNS = ("kind", "type", "ts", "params", "parts")


@dataclass(frozen=True)
class LiveSpec:
    """A live pipeline as data: what each Spark worker builds its sessions from."""

    metamodel: str  # .mm text
    queries: str  # .vql text
    patterns: str  # VEPL text (queryEvent declarations, complex events, rules)
    root: str  # the class of a key's root object (Body)
    attributes: tuple[str, ...]  # the part attributes, in column order (x, y, z)
    actions: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    functions: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    sources: tuple[str, str, str] = ("<metamodel>", "<queries>", "<patterns>")

    def compile(self) -> tuple[Metamodel, QuerySet, Program]:
        """The compiled metamodel, queries and program (cached per process)."""
        cache_key = (self.metamodel, self.queries, self.patterns, self.sources,
                     tuple(sorted(self.functions.items())))
        compiled = _COMPILED.get(cache_key)
        if compiled is None:
            mm = parse_metamodel(self.metamodel, self.sources[0])
            queries = compile_queries(self.queries, mm, name=self.sources[1],
                                      functions=FunctionRegistry(dict(self.functions)))
            program = load_module(parse(self.patterns, self.sources[2]))
            compiled = _COMPILED[cache_key] = (mm, queries, program)
        return compiled

    def session(self) -> tuple[LiveSession, FrameLayout]:
        """A fresh model with its live session, and the layout that applies frames to it."""
        mm, queries, program = self.compile()
        session = LiveSession(Model(mm), queries, program, actions=dict(self.actions))
        return session, FrameLayout(mm, self.root, self.attributes)


_COMPILED: dict[Any, tuple[Metamodel, QuerySet, Program]] = {}


def _value(v: Any) -> Any:
    """A reading: None for null/NaN (not reported), else the value (numpy scalars → Python)."""
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    return v.item() if hasattr(v, "item") else v


def run_key(spec: LiveSpec, key: str, frames: pd.DataFrame, *, part: str = "joint",
            order: str = "frame", ts: str = "ts") -> tuple[list[ComplexEvent], dict[str, Any]]:
    """Run one key's frames through a fresh session: its complex events and its stats."""
    session, layout = spec.session()
    found: list[ComplexEvent] = []
    session.on_complex_event(found.append)
    frames = frames.sort_values([order, part], kind="stable")
    orders = frames[order].tolist()
    stamps = frames[ts].tolist()
    parts = frames[part].tolist()
    columns = [[_value(v) for v in frames[a].tolist()] for a in spec.attributes]
    n, i, count, last_ts = len(orders), 0, 0, None
    while i < n:
        j = i
        while j < n and orders[j] == orders[i]:
            j += 1
        frame_ts = _value(stamps[i])
        if any(_value(s) != frame_ts for s in stamps[i:j]):
            raise ValueError(f"key {key}: frame {orders[i]}: its rows carry different "
                             f"timestamps {sorted(set(stamps[i:j]))}")
        if last_ts is not None and frame_ts < last_ts:
            raise ValueError(f"key {key}: frame {orders[i]}: timestamp {frame_ts} is older "
                             f"than the previous frame's ({last_ts})")
        rows = [(parts[k], *(c[k] for c in columns)) for k in range(i, j)]
        with session.transaction(ts=frame_ts):
            layout.apply(session.model, key, rows)
        last_ts, count, i = frame_ts, count + 1, j
    stats = session.finish().to_dict()
    stats["frames"] = count
    return found, stats


def detect_live(frames: DataFrame, spec: LiveSpec, *, key: str = "body", part: str = "joint",
                order: str = "frame", ts: str = "ts") -> DataFrame:
    """Per key, the live pipeline over its frames: ``key, kind, type, ts, params, parts``."""
    missing = [c for c in (key, part, order, ts, *spec.attributes) if c not in frames.columns]
    if missing:
        raise ValueError(f"the frames DataFrame has no column(s) {missing} "
                         f"(columns: {frames.columns})")
    spec.compile()  # report errors in the specification here, not in a task
    schema = (f"`{key}` string, kind string, type string, ts double, params string, "
              "parts string")
    columns = [key, part, order, ts, *spec.attributes]

    def per_key(pdf: pd.DataFrame) -> pd.DataFrame:
        k = str(pdf[key].iloc[0])
        found, stats = run_key(spec, k, pdf, part=part, order=order, ts=ts)
        out = [(k, "complex", ce.type, float(ce.ts),
                json.dumps(ce.bindings_for_output(), sort_keys=True, default=str),
                json.dumps([[p.type, p.ts] for p in ce.parts])) for ce in found]
        last = pdf[ts].max()
        out.append((k, "stats", None, float(last) if last == last else None,
                    json.dumps(stats, sort_keys=True), None))
        return pd.DataFrame(out, columns=[key, *LIVE_COLUMNS])

    return frames.select(*columns).groupBy(key).applyInPandas(per_key, schema)


def complex_rows(result: DataFrame, key: str = "body") -> list[tuple[Any, ...]]:
    """The complex events of a :func:`detect_live` result as sorted tuples
    ``(key, type, ts, params, parts)`` (collected to the driver)."""
    rows = result.where("kind = 'complex'").select(key, "type", "ts", "params", "parts")
    return sorted(tuple(r) for r in rows.collect())


def stats_by_key(result: DataFrame, key: str = "body") -> dict[str, dict[str, Any]]:
    """The ``stats`` rows of a :func:`detect_live` result, by key (collected)."""
    rows = result.where("kind = 'stats'").select(key, "params").collect()
    return {r[0]: json.loads(r[1]) for r in rows}


__all__ = ["LIVE_COLUMNS", "LiveSpec", "complex_rows", "detect_live", "run_key",
           "stats_by_key"]
