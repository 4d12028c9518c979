"""Simulation models: which simple events a stochastic environment produces (seed 003 §V.B).

A model file is TOML and is data only — read with :mod:`tomllib`, every key validated, nothing
evaluated. It lists *sources* (motorbikes, sensors, stations), each a number of instances that
produce one event type by an arrival process, every attribute drawn from a distribution,
optionally around the instance's initial value (Listing 30: ``speed = s0 + normal(0, s0/2)``)
and with rare flips of booleans (the seat sensor wrong once in 10,000 events). docs/simulation.md
describes the format; every error names its key and, where the text tells, its line::

    model.toml:14:12: error: source[0].attributes.speed.sd: must be a number ≥ 0 (got -1)
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cepflow.language.diagnostics import Diagnostic, DiagnosticError
from cepflow.language.limits import LimitError
from cepflow.language.parser import TIME_UNITS, to_milliseconds
from cepflow.simulation.tomlkeys import KeyPositions

#: the value types an attribute can have (as cepflow.events.event.PARAM_TYPES, without any)
VALUE_TYPES = ("int", "float", "bool", "str")

#: distribution → its parameters (required ones first) and their defaults (None: required)
DISTRIBUTIONS: dict[str, dict[str, Any]] = {
    "uniform": {"low": None, "high": None},
    "normal": {"mean": 0.0, "sd": None},
    "exponential": {"mean": None},
    "lognormal": {"mu": 0.0, "sigma": None},
    "choice": {"values": None, "p": ()},
    "constant": {"value": None},
}
NUMERIC_DISTRIBUTIONS = ("uniform", "normal", "exponential", "lognormal")

#: where an attribute's value comes from when it is not drawn (``from = ...``)
ORIGINS = ("time", "instance", "initial")

PROCESSES: dict[str, tuple[str, ...]] = {
    "exponential": ("mean",),
    "periodic": ("period", "phase"),
    "poisson": ("events", "per"),
}

#: at most this many instances per source (a typo of a few zeros should not exhaust memory)
MAX_INSTANCES = 10_000_000

_DURATION_RE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]+)\s*")


class SimulationModelError(DiagnosticError):
    """A model file that cannot be used: every problem found, each with its key and line."""


def parse_duration(text: str) -> float:
    """A duration written with its unit (``60 s``, ``1d``, ``1.5 h``, ``250 ms``) in ms.

    A bare number is refused: ``86400`` could mean seconds or milliseconds."""
    m = _DURATION_RE.fullmatch(text)
    if not m:
        raise ValueError(f"{text!r} is not a duration: write a number and a unit, such as "
                         "'60 s', '1 d', '10 min', '250 ms'")
    number, unit = m.groups()
    if unit not in TIME_UNITS:
        units = ", ".join(sorted({"ms", "s", "min", "h", "d"}))
        raise ValueError(f"{text!r}: unknown time unit {unit!r} (use {units})")
    try:
        return to_milliseconds(number, unit)
    except LimitError as e:
        raise ValueError(str(e)) from None


def parse_instant(value: Any) -> float:
    """A start time: milliseconds since the epoch (a number) or an ISO-8601 date-time (UTC when
    it names no zone)."""
    if isinstance(value, bool):
        raise ValueError("must be milliseconds since the epoch or an ISO-8601 date-time")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError("must be finite")
        return value
    if isinstance(value, datetime):
        when = value if value.tzinfo else value.replace(tzinfo=UTC)
        return when.timestamp() * 1000
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(f"{value!r} is not an ISO-8601 date-time") from None
        return parse_instant(when)
    raise ValueError("must be milliseconds since the epoch or an ISO-8601 date-time")


@dataclass
class Distribution:
    """A distribution and its parameters (``values`` and ``p`` for ``choice``)."""

    kind: str
    params: dict[str, float] = field(default_factory=dict)
    values: tuple[Any, ...] = ()
    p: tuple[float, ...] | None = None


@dataclass
class ValueSpec:
    """How one attribute (or one instance's initial value) is produced.

    ``origin`` is ``dist`` (drawn from ``dist``), ``time`` (the event's time in ``unit_ms``
    units, whole), ``instance`` (the instance's number, from ``first``), ``initial`` (the
    instance's initial value) or ``list`` (``values``, one per instance: initial values only).
    A numeric draw ``x`` becomes ``around + scale · x``, where each of ``around`` and ``scale``
    is a number or ``"initial"`` (the instance's initial value of the same attribute); then
    ``clip``, rounding (``type = "int"``: to the nearest integer, ties to even; ``digits``:
    decimals), and for booleans ``flip``: the value negated with that probability per event.
    """

    key: str
    origin: str
    type: str
    dist: Distribution | None = None
    around: float | str = 0.0
    scale: float | str = 1.0
    clip: tuple[float, float] | None = None
    digits: int | None = None
    flip: float = 0.0
    unit_ms: int = 1
    first: int = 1
    values: tuple[Any, ...] = ()

    @property
    def relative(self) -> bool:
        """Whether the value depends on the instance's initial value."""
        return "initial" in (self.around, self.scale) or self.origin == "initial"


@dataclass
class Arrival:
    """When an instance produces events: ``exponential`` inter-arrival times of mean
    ``mean_ms``; ``periodic`` every ``period_ms`` from ``phase_ms`` (None: a uniformly random
    phase per instance); ``poisson``: ``rate`` events per ms, at uniformly random times."""

    process: str
    mean_ms: float = 0.0
    period_ms: float = 0.0
    phase_ms: float | None = 0.0
    rate: float = 0.0

    def expected(self, duration_ms: float) -> float:
        """The expected number of events of one instance over ``duration_ms``."""
        if self.process == "exponential":
            return duration_ms / self.mean_ms
        if self.process == "periodic":
            return duration_ms / self.period_ms + 1
        return duration_ms * self.rate


@dataclass
class Source:
    """``instances`` instances of a kind (motorbike, sensor, station) producing ``event``."""

    kind: str
    event: str
    instances: int
    arrival: Arrival
    initial: dict[str, ValueSpec]
    attributes: dict[str, ValueSpec]
    key: str = ""


@dataclass
class SimulationModel:
    """A validated model: its sources, the start time and the default duration of a run."""

    sources: list[Source]
    #: the start of every run, whole milliseconds since the epoch
    start_ms: int = 0
    duration_ms: float | None = None
    path: str = "<model>"
    #: where the model file writes each key (for errors found later, e.g. against patterns)
    positions: KeyPositions | None = field(default=None, repr=False, compare=False)

    def diagnostic(self, key: str, message: str) -> Diagnostic:
        """A located error about the model key ``key`` (``source[0].attributes.speed``)."""
        line, col = self.positions.find(_path_of(key)) if self.positions else (1, 1)
        return Diagnostic(self.path, line, col, f"{key}: {message}")

    def event_types(self) -> dict[str, dict[str, str]]:
        """Each generated event type's attributes and their value types, in model order."""
        out: dict[str, dict[str, str]] = {}
        for s in self.sources:
            out.setdefault(s.event, {a: v.type for a, v in s.attributes.items()})
        return out


def load_model(path: str | Path) -> SimulationModel:
    """Read and validate a model file; raises :class:`SimulationModelError` (every problem, located)
    or OSError."""
    path = Path(path)
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SimulationModelError([Diagnostic(
            str(path), 1, 1, f"not UTF-8 text ({e.reason} at byte {e.start})")]) from None
    return parse_model(text, str(path))


def parse_model(text: str, source: str = "<model>") -> SimulationModel:
    """Validate the TOML ``text`` of a model; raises :class:`SimulationModelError`."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        line, col = _toml_error_position(str(e))
        raise SimulationModelError(
            [Diagnostic(source, line, col, f"not valid TOML: {e}")]) from None
    reader = _Reader(source, KeyPositions(text))
    model = reader.model(doc)
    if reader.errors:
        raise SimulationModelError(reader.errors)
    assert model is not None
    model.path = source
    model.positions = reader.positions
    return model


def _toml_error_position(message: str) -> tuple[int, int]:
    m = re.search(r"line (\d+), column (\d+)", message)
    return (int(m.group(1)), int(m.group(2))) if m else (1, 1)


def _key_text(path: Sequence[str | int]) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _scalar_type(v: Any) -> str | None:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    return None


class _Invalid(Exception):
    """One problem found (already recorded); stops validating the enclosing item."""


class _Reader:
    """Validates a parsed document, collecting every located problem."""

    def __init__(self, source: str, positions: KeyPositions) -> None:
        self.source = source
        self.positions = positions
        self.errors: list[Diagnostic] = []

    def fail(self, path: Sequence[str | int], message: str) -> _Invalid:
        line, col = self.positions.find(path)
        self.errors.append(Diagnostic(self.source, line, col, f"{_key_text(path)}: {message}"))
        return _Invalid()

    def table(self, value: Any, path: Sequence[str | int], allowed: Sequence[str],
              required: Sequence[str] = ()) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(path, f"must be a table, got {_describe(value)}")
        for k in value:
            if k not in allowed:
                raise self.fail((*path, k), f"unknown key (expected one of: "
                                            f"{', '.join(allowed)})")
        for k in required:
            if k not in value:
                raise self.fail(path, f"missing key '{k}'")
        return value

    # -- the document ----------------------------------------------------------------------
    def model(self, doc: dict[str, Any]) -> SimulationModel | None:
        start, duration = 0, None
        try:
            self.table(doc, (), ("simulation", "source"), ("source",))
        except _Invalid:
            return None
        sim = doc.get("simulation", {})
        try:
            self.table(sim, ("simulation",), ("start", "duration"))
            if "start" in sim:
                start = math.floor(self.instant(sim["start"], ("simulation", "start")))
            if "duration" in sim:
                duration = self.duration(sim["duration"], ("simulation", "duration"))
        except _Invalid:
            pass
        raw = doc["source"]
        if not isinstance(raw, list) or not raw:
            self.fail(("source",), "must be one or more [[source]] tables")
            return None
        sources: list[Source] = []
        kinds: dict[str, int] = {}
        for i, item in enumerate(raw):
            try:
                s = self.source_table(item, ("source", i))
            except _Invalid:
                continue
            if s.kind in kinds:
                self.fail(("source", i, "kind"), f"'{s.kind}' is also the kind of "
                                                 f"source[{kinds[s.kind]}]")
                continue
            kinds[s.kind] = i
            sources.append(s)
        self.same_event_types(sources)
        return SimulationModel(sources, start, duration)

    def same_event_types(self, sources: list[Source]) -> None:
        """Sources of one event type must give it the same attributes and types."""
        first: dict[str, Source] = {}
        for s in sources:
            other = first.setdefault(s.event, s)
            if other is s:
                continue
            mine = {a: v.type for a, v in s.attributes.items()}
            theirs = {a: v.type for a, v in other.attributes.items()}
            if mine != theirs:
                self.fail((*_path_of(s.key), "attributes"),
                          f"event '{s.event}' has attributes {_sig(theirs)} in source "
                          f"'{other.kind}' but {_sig(mine)} here")

    def source_table(self, item: Any, path: tuple[str | int, ...]) -> Source:
        t = self.table(item, path, ("kind", "event", "instances", "arrival", "initial",
                                    "attributes"), ("kind", "event", "arrival", "attributes"))
        kind = self.name(t["kind"], (*path, "kind"))
        event = self.name(t["event"], (*path, "event"))
        n = t.get("instances", 1)
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_INSTANCES:
            raise self.fail((*path, "instances"),
                            f"must be a whole number from 1 to {MAX_INSTANCES:,} "
                            f"(got {_describe(n)})")
        arrival = self.arrival(t["arrival"], (*path, "arrival"))
        initial: dict[str, ValueSpec] = {}
        raw_initial = t.get("initial", {})
        if not isinstance(raw_initial, dict):
            raise self.fail((*path, "initial"), "must be a table of initial values")
        ok = True
        for name, v in raw_initial.items():
            try:
                initial[name] = self.initial_value(v, (*path, "initial", name), n)
            except _Invalid:
                ok = False
        attrs = t["attributes"]
        if not isinstance(attrs, dict) or not attrs:
            raise self.fail((*path, "attributes"), "must be a table with one entry per "
                                                   "attribute of the event")
        attributes: dict[str, ValueSpec] = {}
        for name, v in attrs.items():
            try:
                attributes[name] = self.attribute(v, (*path, "attributes", name), initial,
                                                  name)
            except _Invalid:
                ok = False
        if not ok:
            raise _Invalid()
        return Source(kind, event, n, arrival, initial, attributes, key=_key_text(path))

    def name(self, v: Any, path: Sequence[str | int]) -> str:
        if not isinstance(v, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            raise self.fail(path, f"must be a name (letters, digits, _), got {_describe(v)}")
        return v

    def duration(self, v: Any, path: Sequence[str | int], zero: bool = False) -> float:
        if not isinstance(v, str):
            raise self.fail(path, f"must be a duration with its unit such as \"60 s\", got "
                                  f"{_describe(v)}")
        try:
            ms = parse_duration(v)
        except ValueError as e:
            raise self.fail(path, str(e)) from None
        if ms <= 0 and not zero:
            raise self.fail(path, "must be longer than 0")
        return ms

    def instant(self, v: Any, path: Sequence[str | int]) -> float:
        try:
            ms = parse_instant(v)
        except ValueError as e:
            raise self.fail(path, str(e)) from None
        if abs(ms) > 2**53:  # (times stay exact in doubles and far inside int64)
            raise self.fail(path, "must be within ±2**53 ms of the epoch (about 285,000 years)")
        return ms

    def number(self, v: Any, path: Sequence[str | int], low: float | None = None,
               strict_low: bool = False, high: float | None = None) -> float:
        if not _is_number(v) or not math.isfinite(v):
            raise self.fail(path, f"must be a finite number, got {_describe(v)}")
        if low is not None and (v < low or (strict_low and v == low)):
            raise self.fail(path, f"must be a number {'>' if strict_low else '≥'} {low:g} "
                                  f"(got {v:g})")
        if high is not None and v > high:
            raise self.fail(path, f"must be a number ≤ {high:g} (got {v:g})")
        return float(v) + 0.0  # (-0.0 is 0: numpy refuses a scale of -0.0 as negative)

    def arrival(self, v: Any, path: tuple[str | int, ...]) -> Arrival:
        t = self.table(v, path, ("process", "mean", "period", "phase", "events", "per"),
                       ("process",))
        process = t["process"]
        if not isinstance(process, str) or process not in PROCESSES:
            raise self.fail((*path, "process"), f"unknown arrival process {_describe(process)} "
                                                f"(expected one of: {', '.join(PROCESSES)})")
        allowed = ("process", *PROCESSES[process])
        for k in t:
            if k not in allowed:
                raise self.fail((*path, k), f"not a parameter of the {process} process "
                                            f"(it has: {', '.join(PROCESSES[process])})")
        if process == "exponential":
            self.table(t, path, allowed, ("mean",))
            return Arrival(process, mean_ms=self.duration(t["mean"], (*path, "mean")))
        if process == "periodic":
            self.table(t, path, allowed, ("period",))
            period = self.duration(t["period"], (*path, "period"))
            phase: float | None = 0.0
            if t.get("phase") == "random":
                phase = None
            elif "phase" in t:
                phase = self.duration(t["phase"], (*path, "phase"), zero=True)
            return Arrival(process, period_ms=period, phase_ms=phase)
        self.table(t, path, allowed, ("events", "per"))
        events = self.number(t["events"], (*path, "events"), 0, strict_low=True)
        per = self.duration(t["per"], (*path, "per"))
        return Arrival(process, rate=events / per)

    # -- values ----------------------------------------------------------------------------
    def initial_value(self, v: Any, path: tuple[str | int, ...], n: int) -> ValueSpec:
        key = _key_text(path)
        if isinstance(v, list):
            if len(v) != n:
                raise self.fail(path, f"has {len(v)} value(s) for {n} instance(s)")
            types = {_scalar_type(x) for x in v}
            if None in types:
                raise self.fail(path, "must hold numbers, strings or booleans")
            if types == {"int", "float"}:
                types = {"float"}
            if len(types) != 1:
                raise self.fail(path, f"mixes value types ({', '.join(sorted(types))})")
            return ValueSpec(key, "list", types.pop(), values=tuple(v))
        if isinstance(v, dict):
            return self.value_table(v, path, initial=None, name="")
        t = _scalar_type(v)
        if t is None:
            raise self.fail(path, f"must be a value, a list of values (one per instance) or a "
                                  f"distribution table, got {_describe(v)}")
        return ValueSpec(key, "list", t, values=(v,) * n)

    def attribute(self, v: Any, path: tuple[str | int, ...], initial: dict[str, ValueSpec],
                  name: str) -> ValueSpec:
        if not isinstance(v, dict):
            raise self.fail(path, "must be a table such as { dist = \"normal\", mean = 0, "
                                  "sd = 1 } or { from = \"instance\" }")
        return self.value_table(v, path, initial, name)

    def value_table(self, t: dict[str, Any], path: tuple[str | int, ...],
                    initial: dict[str, ValueSpec] | None, name: str) -> ValueSpec:
        key = _key_text(path)
        modifiers = ("type", "clip", "digits", "flip")
        if initial is not None:
            modifiers = (*modifiers, "around", "scale")
        if "dist" in t and "from" in t:
            raise self.fail((*path, "from"), "give either 'dist' or 'from', not both")
        if "from" in t:
            if initial is None:
                raise self.fail((*path, "from"), "initial values are drawn from a "
                                                 "distribution, a list or a value")
            return self.origin_table(t, path, initial, name, modifiers)
        if "dist" not in t:
            raise self.fail(path, "needs 'dist' (one of: " + ", ".join(DISTRIBUTIONS)
                            + ") or 'from' (one of: " + ", ".join(ORIGINS) + ")")
        kind = t["dist"]
        if not isinstance(kind, str) or kind not in DISTRIBUTIONS:
            raise self.fail((*path, "dist"), f"unknown distribution {_describe(kind)} "
                                             f"(expected one of: {', '.join(DISTRIBUTIONS)})")
        params = DISTRIBUTIONS[kind]
        allowed = ("dist", *params, *modifiers)
        for k in t:
            if k not in allowed:
                raise self.fail((*path, k), f"is not allowed with the {kind} distribution "
                                            f"(allowed: {', '.join(allowed[1:])})")
        for p, default in params.items():
            if default is None and p not in t:
                raise self.fail(path, f"the {kind} distribution needs '{p}'")
        dist = self.distribution(kind, t, path)
        if kind in NUMERIC_DISTRIBUTIONS:
            natural = "float"
        elif kind == "choice":
            natural = _common_type(dist.values)
        else:
            natural = _scalar_type(dist.values[0]) or "str"
        spec = ValueSpec(key, "dist", natural, dist=dist)
        return self.modifiers(spec, t, path, initial or {}, name)

    def distribution(self, kind: str, t: dict[str, Any], path: tuple[str | int, ...]
                     ) -> Distribution:
        p = (*path,)
        if kind == "uniform":
            low = self.number(t["low"], (*p, "low"))
            high = self.number(t["high"], (*p, "high"))
            if not low < high:
                raise self.fail((*p, "high"), f"must be greater than low ({low:g})")
            return Distribution(kind, {"low": low, "high": high})
        if kind == "normal":
            return Distribution(kind, {"mean": self.number(t.get("mean", 0.0), (*p, "mean")),
                                       "sd": self.number(t["sd"], (*p, "sd"), 0)})
        if kind == "exponential":
            return Distribution(kind, {"mean": self.number(t["mean"], (*p, "mean"), 0,
                                                           strict_low=True)})
        if kind == "lognormal":
            return Distribution(kind, {"mu": self.number(t.get("mu", 0.0), (*p, "mu")),
                                       "sigma": self.number(t["sigma"], (*p, "sigma"), 0)})
        if kind == "constant":
            value = t["value"]
            if _scalar_type(value) is None:
                raise self.fail((*p, "value"), f"must be a number, string or boolean, got "
                                               f"{_describe(value)}")
            return Distribution(kind, values=(value,))
        values = t["values"]
        if not isinstance(values, list) or not values:
            raise self.fail((*p, "values"), "must be a non-empty list")
        types = {_scalar_type(v) for v in values}
        if None in types or len(types - {"int", "float"}) > 1 or (
                types & {"int", "float"} and types - {"int", "float"}):
            raise self.fail((*p, "values"), "must hold values of one type (numbers, strings "
                                            "or booleans)")
        probs = t.get("p", ())
        if probs == ():
            return Distribution(kind, values=tuple(values), p=None)
        if not isinstance(probs, list) or len(probs) != len(values):
            raise self.fail((*p, "p"), f"must be a list of {len(values)} probabilities, one "
                                       "per value")
        ps = [self.number(x, (*p, "p", i), 0, high=1) for i, x in enumerate(probs)]
        if abs(sum(ps) - 1) > 1e-9:
            raise self.fail((*p, "p"), f"must add up to 1 (they add up to {sum(ps):.12g})")
        total = math.fsum(ps)
        return Distribution(kind, values=tuple(values), p=tuple(x / total for x in ps))

    def origin_table(self, t: dict[str, Any], path: tuple[str | int, ...],
                     initial: dict[str, ValueSpec], name: str, modifiers: tuple[str, ...]
                     ) -> ValueSpec:
        key = _key_text(path)
        origin = t["from"]
        if not isinstance(origin, str) or origin not in ORIGINS:
            raise self.fail((*path, "from"), f"unknown origin {_describe(origin)} (expected "
                                             f"one of: {', '.join(ORIGINS)})")
        extra = {"time": ("unit",), "instance": ("first",), "initial": ()}[origin]
        allowed = ("from", *extra, *(m for m in modifiers if m not in ("around", "scale")))
        for k in t:
            if k not in allowed:
                raise self.fail((*path, k), f"is not allowed with from = \"{origin}\" "
                                            f"(allowed: {', '.join(allowed[1:])})")
        if origin == "time":
            unit = t.get("unit", "ms")
            if not isinstance(unit, str) or unit not in TIME_UNITS:
                raise self.fail((*path, "unit"), f"unknown time unit {_describe(unit)} (use "
                                                 "ms, s, min, h or d)")
            spec = ValueSpec(key, "time", "int", unit_ms=TIME_UNITS[unit])
        elif origin == "instance":
            first = t.get("first", 1)
            if not isinstance(first, int) or isinstance(first, bool) or abs(first) > 2**53:
                raise self.fail((*path, "first"), f"must be a whole number within ±2**53, got "
                                                  f"{_describe(first)}")
            spec = ValueSpec(key, "instance", "int", first=first)
        else:
            if name not in initial:
                raise self.fail((*path, "from"), f"there is no initial value '{name}' "
                                                 f"(add it to the source's [initial] table)")
            spec = ValueSpec(key, "initial", initial[name].type)
        return self.modifiers(spec, t, path, initial, name)

    def modifiers(self, spec: ValueSpec, t: dict[str, Any], path: tuple[str | int, ...],
                  initial: dict[str, ValueSpec], name: str) -> ValueSpec:
        numeric = spec.type in ("int", "float")
        drawn_numeric = spec.origin == "dist" and spec.dist is not None and (
            spec.dist.kind in NUMERIC_DISTRIBUTIONS)
        for k in ("around", "scale"):
            if k not in t:
                continue
            v = t[k]
            if not drawn_numeric:
                raise self.fail((*path, k), "applies to draws from uniform, normal, "
                                            "exponential and lognormal distributions")
            if v == "initial":
                ini = initial.get(name)
                if ini is None:
                    raise self.fail((*path, k), f"there is no initial value '{name}' (add it "
                                                "to the source's [initial] table)")
                if ini.type not in ("int", "float"):
                    raise self.fail((*path, k), f"the initial value '{name}' is not a number")
                setattr(spec, k, "initial")
            else:
                setattr(spec, k, self.number(v, (*path, k)))
        if "type" in t:
            want = t["type"]
            if not isinstance(want, str) or want not in VALUE_TYPES:
                raise self.fail((*path, "type"), f"unknown type {_describe(want)} (expected "
                                                 f"one of: {', '.join(VALUE_TYPES)})")
            ok = (want == spec.type or (numeric and want in ("int", "float") and (
                spec.origin == "dist" or want == "float")))
            if not ok:
                raise self.fail((*path, "type"), f"cannot make {spec.type} values {want}")
            spec.type = want
            numeric = want in ("int", "float")
        if "clip" in t:
            c = t["clip"]
            if not numeric:
                raise self.fail((*path, "clip"), "applies to numbers only")
            if not (isinstance(c, list) and len(c) == 2 and all(
                    _is_number(x) and not math.isnan(x) for x in c)) or not c[0] <= c[1]:
                raise self.fail((*path, "clip"), "must be [low, high] with low ≤ high "
                                                 "(inf allowed)")
            spec.clip = (float(c[0]), float(c[1]))
        if "digits" in t:
            d = t["digits"]
            if spec.type != "float":
                raise self.fail((*path, "digits"), "applies to float values only")
            if not isinstance(d, int) or isinstance(d, bool) or not 0 <= d <= 15:
                raise self.fail((*path, "digits"), f"must be a whole number from 0 to 15, got "
                                                   f"{_describe(d)}")
            spec.digits = d
        if "flip" in t:
            if spec.type != "bool":
                raise self.fail((*path, "flip"), "applies to boolean values only")
            spec.flip = self.number(t["flip"], (*path, "flip"), 0, high=1)
        return spec


def _common_type(values: Sequence[Any]) -> str:
    types = {_scalar_type(v) for v in values}
    if types <= {"int", "float"}:
        return "int" if types == {"int"} else "float"
    return next(iter(types)) or "str"


def _sig(attrs: Mapping[str, str]) -> str:
    return "(" + ", ".join(f"{a}: {t}" for a, t in attrs.items()) + ")"


def _path_of(key: str) -> tuple[str | int, ...]:
    out: list[str | int] = []
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", key):
        out.append(int(part[1:-1]) if part.startswith("[") else part)
    return tuple(out)


def _describe(v: Any) -> str:
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "a table"
    if isinstance(v, list):
        return "a list"
    return repr(v)
