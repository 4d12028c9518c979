"""The finite domain a bounded search explores (003 §V.E): which input events can come, with
which attribute values, and how much time may pass between two of them.

A domain is given in a small TOML file (data: read with tomllib, every key validated,
errors name the file, the key and its line) or derived from the patterns:

```toml
steps = [0, 1000]          # ms between consecutive events (0: the same instant)
start = 0                  # the first event's timestamp (default 0)

[events.Motorbike]         # an input event type; the types listed are the ones generated
motorbikeId = [1]
speed = [0, 60]
seat = [true, false]       # a parameter left out is derived (below)
```

**Derived values** (decision): for each parameter of an input type, the constants its field is
compared with in the conditions of the patterns and statements that read the type split the
values into regions (below the smallest constant, each constant, between two, above the
largest); one value per region is kept, and regions in which every such comparison has the
same truth value are merged (``speed > 0``, ``speed >= 50``, ``speed == 0`` give ``-1``, ``0``,
``25``, ``50``). A field compared with another term (``c2.temperature > c1.temperature``)
keeps every region, so that rising and falling sequences exist. Booleans compared with
anything get both values; strings their constants and one other value; a parameter no
condition names gets one value (so unification keys are always equal). **Derived steps**: 0
and, for every window, batch, interval and every-distinct expiry length Δ of the program,
Δ + 1 ms (past a deadline). Without ``[events]`` every input type some pattern or statement
reads is generated.
"""

from __future__ import annotations

import itertools
import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cepflow.compiler.conditions import Literal, dnf
from cepflow.compiler.program import Program
from cepflow.events.event import EventType
from cepflow.language import ast
from cepflow.language.walk import strip_alias

_DEFAULTS = {"int": 0, "float": 0.0, "str": "a", "bool": False, "any": 0}


class DomainError(ValueError):
    """A domain file that is not valid: ``FILE:LINE: key: what`` (line when found)."""


@dataclass
class Domain:
    """Candidate events (type, parameter values) in a fixed order, the time steps and the
    first timestamp; ``values`` records each parameter's values and ``derived`` which of them
    were derived."""

    events: list[tuple[str, tuple[Any, ...]]]
    steps: list[float]
    start: float = 0.0
    values: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    derived: set[tuple[str, str]] = field(default_factory=set)

    def describe(self) -> str:
        """One line per type: its values, and the steps."""
        lines = []
        for t, params in self.values.items():
            parts = [f"{p}={vals}" + ("*" if (t, p) in self.derived else "")
                     for p, vals in params.items()]
            lines.append(f"{t}: {', '.join(parts)}")
        lines.append(f"steps (ms): {self.steps}; first event at {self.start:g}")
        return "\n".join(lines)


# ---------------------------------------------------------------- derivation


def _literals(expr: ast.Expr | None, fields: Mapping[str, str]) -> Iterable[Literal]:
    if expr is None:
        return ()
    try:
        form = dnf(expr, True, fields)
    except ValueError:
        return ()
    return [lit for conj in form for lit in conj]


def _conditions(program: Program, t: str) -> list[ast.Expr]:
    """Every condition on an event of type ``t``: steps and NOTs of patterns, the filters of
    statements that read it (their own fields as bare names)."""
    out: list[ast.Expr] = []
    for a in program.automata:
        for m in (*a.edges.values(), *a.forbids.values()):
            for items in m.values():
                for it in items:
                    pos = it.position
                    if pos.type == t and pos.where is not None:
                        out.append(pos.where)
    for w in program.windows:
        types = getattr(w, "input_types", (w.input_type,))
        if t in types and w.filter is not None:
            out.append(strip_alias(w.filter, w.alias))
    return out


def _regions(consts: list[float], integer: bool) -> list[float]:
    """One value below, at, between and above the sorted constants."""
    out: list[float] = []
    below = consts[0] - 1
    out.append(int(below) if integer else below)
    for a, b in itertools.pairwise(consts):
        out.append(a)
        mid = (a + b) / 2
        if integer:
            mid = math.floor(mid)
            if mid <= a:
                continue
        out.append(mid)
    out.append(consts[-1])
    out.append(consts[-1] + 1)
    # (floats printed as people write them: 0.2, not 0.19999999999999996)
    return [int(v) if integer and float(v).is_integer() else float(f"{v:.12g}") for v in out]


def _holds(value: Any, lit: Literal) -> bool:
    v = lit.value
    try:
        if lit.op == "==":
            return bool(value == v)
        if lit.op == "!=":
            return bool(value != v)
        if value is None or v is None:
            return False
        return bool({"<": value < v, "<=": value <= v, ">": value > v, ">=": value >= v}
                    .get(lit.op, False))
    except TypeError:
        return False


def derive_values(program: Program, t: str, p: str) -> list[Any]:
    """The derived values of parameter ``p`` of type ``t`` (see the module docstring)."""
    schema = program.schemas[t]
    kind = schema.params[schema.index_of(p)].type
    fields = {q.name: q.type for q in schema.params}
    lits = [lit for c in _conditions(program, t) for lit in _literals(c, fields)
            if lit.term == p or (lit.relational and lit.value == p)]
    relational = any(lit.relational for lit in lits)
    consts = [lit for lit in lits if not lit.relational and lit.op != "is"]
    if kind == "bool" or any(isinstance(lit.value, bool) for lit in consts):
        return [True, False] if consts or relational else [False]
    numbers = sorted({float(lit.value) for lit in consts
                      if isinstance(lit.value, int | float) and not isinstance(lit.value, bool)})
    texts = sorted({lit.value for lit in consts if isinstance(lit.value, str)})
    if texts:
        other = "other"
        while other in texts:
            other += "_"
        return [*texts, other]
    if not numbers:
        if relational and kind in ("int", "float", "any"):
            return [0, 1, 2] if kind != "float" else [0.0, 1.0, 2.0]
        return [_DEFAULTS.get(kind, 0)]
    integer = kind == "int" or (all(float(c).is_integer() for c in numbers)
                                and kind != "float")
    cands = _regions(numbers, integer)
    if kind == "float":
        cands = [float(c) for c in cands]
    if relational:
        return cands
    kept: list[Any] = []
    seen: set[tuple[bool, ...]] = set()
    for c in cands:
        vec = tuple(_holds(c, lit) for lit in consts)
        if vec not in seen:
            seen.add(vec)
            kept.append(c)
    return kept


def derive_steps(program: Program) -> list[float]:
    """0 and Δ + 1 ms for every time length of the program."""
    lengths: set[float] = set()
    for a in program.automata:
        lengths |= {z.length for z in a.zones}
        if a.clock is not None:
            lengths.add(a.clock.length)
        if a.distinct_expiry is not None:
            lengths.add(a.distinct_expiry)
    for w in program.windows:
        if w.window.kind in ("time", "time_batch"):
            lengths.add(float(w.window.size))
    return [0.0, *sorted(x + 1 for x in lengths)]


def input_types(program: Program) -> list[str]:
    """The input (atomic or query) types something in the program reads, in schema order."""
    produced = {a.name for a in program.automata} | {w.name for w in program.windows}
    read: set[str] = set()
    for a in program.automata:
        read |= a.alphabet
        if a.clock is not None:
            read |= {p.type for p in a.clock.forbids}
    for w in program.windows:
        read |= set(getattr(w, "input_types", (w.input_type,)))
    return [t for t in program.schemas if t in read and t not in produced]


# ---------------------------------------------------------------- the file


def _line_of(text: str, table: str | None, key: str) -> int | None:
    """The line of ``key`` (in ``[table]`` when given) in TOML text, if found."""
    lines = text.splitlines()
    start = 0
    if table is not None:
        dotted = r"\s*\.\s*".join(re.escape(part) for part in table.split("."))
        head = re.compile(rf"^\s*\[\s*{dotted}\s*\]")
        start = next((i for i, ln in enumerate(lines) if head.match(ln)), -1)
        if start < 0:
            return None
        start += 1
    pat = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for i in range(start, len(lines)):
        if table is not None and lines[i].lstrip().startswith("["):
            break
        if pat.match(lines[i]):
            return i + 1
    return None


def _error(path: str, text: str, table: str | None, key: str, what: str) -> DomainError:
    line = _line_of(text, table, key.split(".")[-1]) if key else None
    where = f"{path}:{line}" if line else path
    name = f"{table}.{key}" if table else key
    return DomainError(f"{where}: {name}: {what}")


def _check_value(spec_type: str, v: Any) -> bool:
    if spec_type == "bool":
        return isinstance(v, bool)
    if spec_type == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    if spec_type == "float":
        return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    if spec_type == "str":
        return isinstance(v, str)
    return isinstance(v, bool | int | float | str)


def load_domain(path: str | Path | None, program: Program) -> Domain:
    """The domain of ``path`` (derived where it says nothing), or derived entirely."""
    raw: dict[str, Any] = {}
    text = ""
    name = str(path) if path is not None else ""
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise DomainError(f"{name}: not UTF-8 text: {e.reason}") from None
        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise DomainError(f"{name}: {e}") from None
    unknown = set(raw) - {"steps", "start", "events"}
    if unknown:
        key = sorted(unknown)[0]
        raise _error(name, text, None, key, "unknown key (known: steps, start, events)")
    steps = raw.get("steps")
    if steps is None:
        step_list = derive_steps(program)
    else:
        if not isinstance(steps, list) or not steps or not all(
                _check_value("float", s) and s >= 0 for s in steps):
            raise _error(name, text, None, "steps", "a non-empty list of milliseconds >= 0")
        step_list = sorted({float(s) for s in steps})
    start = raw.get("start", 0)
    if not _check_value("float", start):
        raise _error(name, text, None, "start", "a timestamp in milliseconds")
    events = raw.get("events")
    inputs = input_types(program)
    if events is None:
        chosen: dict[str, dict[str, Any]] = {t: {} for t in inputs}
    else:
        if not isinstance(events, dict) or not events:
            raise _error(name, text, None, "events", "a table of event types")
        chosen = {}
        for t, params in events.items():
            if t not in program.schemas or t not in inputs:
                known = ", ".join(inputs) or "none"
                raise _error(name, text, None, f"events.{t}",
                             f"not an input event type the patterns read (inputs: {known})")
            if not isinstance(params, dict):
                raise _error(name, text, None, f"events.{t}", "a table of parameter values")
            chosen[t] = params
    dom = Domain([], step_list, float(start))
    for t, given in chosen.items():
        schema: EventType = program.schemas[t]
        names = schema.param_names
        for p, vals in given.items():
            table = f"events.{t}"
            if p not in names:
                raise _error(name, text, table, p,
                             f"{t} has no parameter '{p}' (parameters: {', '.join(names)})")
            spec = schema.params[schema.index_of(p)].type
            if not isinstance(vals, list) or not vals:
                raise _error(name, text, table, p, "a non-empty list of values")
            for v in vals:
                if not _check_value(spec, v):
                    raise _error(name, text, table, p,
                                 f"{v!r} is not a value of its type ({spec})")
        per: dict[str, list[Any]] = {}
        for p in names:
            if p in given:
                per[p] = list(given[p])
            else:
                per[p] = derive_values(program, t, p)
                dom.derived.add((t, p))
        dom.values[t] = per
        for combo in itertools.product(*(per[p] for p in names)):
            dom.events.append((t, tuple(combo)))
    return dom
