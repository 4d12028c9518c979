"""Record → Event conversion shared by every reader, so a record means the same in every format.

A *record* is a mapping (a JSON object, a CSV row keyed by header, a Parquet row) with:

* ``type`` — required, non-empty string.
* ``ts`` — required; a finite number of milliseconds, or an ISO-8601 date-time string (no zone
  means UTC) converted to epoch milliseconds (``int`` when whole). ``bool``, NaN and ±inf are
  rejected. Text sources (CSV) also accept numeric strings (``"1500"``, ``"1.5e3"``), which
  are read as milliseconds, not as basic-format ISO dates.
* ``id`` — optional ``str`` or ``int`` (a whole float such as Parquet's ``7.0`` becomes ``7``;
  in CSV a canonical integer such as ``"7"`` becomes ``7``, while ``"007"`` stays a string).
  Ids are unique within a file: a record whose id an earlier record of the same file has is
  rejected (``duplicate id``; ``unique_ids=False`` turns the check off). The check keeps the
  file's ids while it is read.
* the event parameters — every other field.

**Numbers are finite** in every format: a NaN or an infinity — JSON's ``NaN``/``Infinity``
tokens, a Parquet double, a CSV cell such as ``nan``, ``inf`` or ``1e999`` for a ``Double``
parameter — makes the record rejected (``not a finite number``), never an event whose value
no output could write as JSON (docs/formats.md, "NaN and Infinity").

Parameters:

* **Typed** (the record's type has a schema): ``params`` is built in the schema's declared
  order by field name. A record that lacks a declared parameter is rejected (``missing
  required parameter``); with ``strict_params=False`` the parameter becomes ``None``
  instead. (An explicit JSON ``null`` or an empty CSV cell is a value: ``None``.) Each
  value must satisfy ``ParamSpec.accepts``; an ``int`` for a ``float`` parameter is converted
  to ``float``. From text sources, numeric strings are converted for ``int``/``float``
  parameters and ``true``/``false`` (any case) for ``bool``. A field that is not a declared
  parameter is rejected by default (``unknown_fields="reject"``: silently dropping it would
  be data loss); ``unknown_fields="ignore"`` opts into ignoring such fields.
* **Untyped** (no schema for the type, or no schemas at all): ``params`` are the remaining
  fields in the record's own order (JSON key order, CSV column order; an empty CSV cell is
  ``None``). With ``infer_types=True`` (CSV default) untyped cells (and cells of ``any``
  parameters) that look like a canonical integer (no leading zeros), a decimal number or
  ``true``/``false`` are converted; everything else stays text.
* A field ``params`` holding a list gives the parameters positionally (typed: at most as many
  as the schema declares; a shorter list is rejected, or with ``strict_params=False`` padded
  with ``None``). A record may not combine such a list with named parameter fields.
* A schema parameter named like an envelope field (``type``, ``ts``, ``id``) receives that
  field's value as well.
* Parameter values must be scalars (``None``, ``bool``, ``int``, ``float``, ``str``); dates
  and date-times (Parquet) become epoch milliseconds like ``ts``; anything else is rejected.

Records whose type is not in ``schemas`` are rejected with ``unknown event type 'X'``
(``unknown_types="reject"``, the default: no pattern reads them, and counting them as processed
would hide a misspelt type) or kept untyped (``unknown_types="keep"``).

A record that cannot be converted raises :class:`RecordError` (reason and field); readers turn
it into a :class:`~cepflow.events.event.Rejected` on the side channel, or, in strict mode,
into an :class:`EventFormatError`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime, time
from typing import Any, Literal

from cepflow.events.event import (
    NONFINITE_TEXT,
    Event,
    EventType,
    ParamSpec,
    Rejected,
    SideChannel,
)

UnknownFields = Literal["reject", "ignore"]
UnknownTypes = Literal["keep", "reject"]

#: Fields that describe the event itself rather than its parameters.
ENVELOPE_FIELDS = ("type", "ts", "id")

_INT_RE = re.compile(r"[+-]?[0-9]+")
_CANONICAL_INT_RE = re.compile(r"-?(?:0|[1-9][0-9]*)")
_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SCALARS = (str, int, float)


class RecordError(ValueError):
    """A record that cannot become an Event: ``reason`` and the offending ``field`` (if any)."""

    def __init__(self, reason: str, field: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field


class EventFormatError(ValueError):
    """Raised for a bad input record in strict mode; ``str`` is ``FILE:LINE: message (field 'x')``.

    ``rejected`` holds the same :class:`Rejected` the side channel would have received.
    Sources without lines (Parquet) read ``FILE:row N: message``.
    """

    def __init__(
        self, rejected: Rejected, line: int | None = None, column: int | None = None
    ) -> None:
        self.rejected = rejected
        self.line = line
        self.column = column
        super().__init__(self._render())

    @property
    def source(self) -> str:
        return self.rejected.source

    @property
    def field(self) -> str | None:
        return self.rejected.field

    @property
    def reason(self) -> str:
        return self.rejected.reason

    def _render(self) -> str:
        r = self.rejected
        if self.line is None:
            return str(r)
        where = f"{r.source}:{self.line}"
        if self.column is not None:
            where += f":{self.column}"
        fld = f" (field {r.field!r})" if r.field else ""
        return f"{where}: {r.reason}{fld}"


class Rejector:
    """Routes bad records of one source to the side channel, or raises when that is not possible.

    Without a side channel there is nowhere to report a bad record, so the first one raises
    :class:`EventFormatError` exactly as in strict mode: bad input is never dropped silently.
    """

    def __init__(self, source: str, side: SideChannel | None, strict: bool) -> None:
        self.source = source
        self.side = side
        self.strict = strict

    def __call__(
        self,
        location: str,
        reason: str,
        field: str | None = None,
        record: Any = None,
        *,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        """Report one bad record (or raise in strict mode / without a side channel)."""
        rejected = Rejected(self.source, location, reason, record, field)
        if self.strict or self.side is None:
            raise EventFormatError(rejected, line, column)
        self.side.malformed.append(rejected)


class Cursor:
    """Where a reader is: the line (JSON Lines, CSV: 1-based, where the record starts) or the
    row (Parquet: 0-based) of the record it yielded last — so a later report about an event
    (it came too late) can name its record as a rejection would."""

    __slots__ = ("at", "unit")

    def __init__(self, unit: str = "line") -> None:
        self.unit = unit
        self.at: int | None = None

    def location(self) -> str:
        return f"{self.unit} {self.at}"


def _fmt(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def datetime_to_ms(value: datetime | date) -> int | float:
    """Epoch milliseconds of a date or date-time (naive = UTC); ``int`` when whole, exact math."""
    if not isinstance(value, datetime):
        value = datetime.combine(value, time(), tzinfo=UTC)
    elif value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - _EPOCH
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return micros // 1000 if micros % 1000 == 0 else micros / 1000


def _parse_int(text: str) -> int | None:
    """The integer an integer string spells, or None (also beyond Python's digit limit)."""
    s = text.strip()
    if not _INT_RE.fullmatch(s):
        return None
    try:
        return int(s)
    except ValueError:
        return None


def _parse_number(text: str) -> int | float | None:
    """The number a numeric string spells (int for integer text), or None if it is not one."""
    number = _parse_int(text)
    if number is None and _NUMBER_RE.fullmatch(text.strip()):
        return float(text)
    return number


def _to_float(value: int | float, name: str) -> float:
    """``float(value)``, or RecordError for integers beyond the float range and for values that
    are not finite (``1e999`` read from text)."""
    try:
        number = float(value)
    except OverflowError:
        digits = len(str(abs(int(value))))
        raise RecordError(f"a {digits}-digit integer is out of range for a float", name) from None
    return _finite(number, name)


def _finite(value: float, name: str) -> float:
    """``value``, or RecordError if it is NaN or an infinity (module docstring)."""
    if math.isfinite(value):
        return value
    raise RecordError(f"not a finite number: {NONFINITE_TEXT[repr(value)]}", name)


#: CSV text that spells a non-finite float (read by Python's ``float``), for the reason given
_NONFINITE_WORDS = {"nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity",
                    "-infinity"}


def parse_timestamp(value: Any, *, text: bool = False) -> int | float:
    """Timestamp in epoch ms from a number, an ISO-8601 string or a date-time; else RecordError.

    ``text=True`` (CSV) also reads numeric strings as milliseconds.
    """
    if isinstance(value, bool):
        raise RecordError(f"ts must be a number or an ISO-8601 date-time, got {value!r}", "ts")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise RecordError(f"ts must be finite, got {value!r}", "ts")
        return value
    if isinstance(value, datetime | date):
        return datetime_to_ms(value)
    if isinstance(value, str):
        if text:
            number = _parse_number(value)
            if number is not None:
                return parse_timestamp(number)
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            expected = "an ISO-8601 date-time"
            if text:
                expected = "a number of ms or " + expected
            raise RecordError(f"invalid timestamp {value!r}: expected {expected}", "ts") from None
        return datetime_to_ms(parsed)
    raise RecordError(
        f"ts must be a number or an ISO-8601 date-time, got {type(value).__name__}", "ts"
    )


def _parse_id(value: Any, *, text: bool) -> str | int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise RecordError(f"id must be a string or an integer, got {value!r}", "id")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        if text and _CANONICAL_INT_RE.fullmatch(value):
            number = _parse_int(value)
            return value if number is None else number
        return value
    raise RecordError(f"id must be a string or an integer, got {_fmt(value)}", "id")


def _infer(text: str, name: str) -> Any:
    """Best-effort typing of an untyped text cell: canonical int, decimal number, bool, or text
    (RecordError for a number beyond the float range, such as ``1e999``)."""
    s = text.strip()
    if _CANONICAL_INT_RE.fullmatch(s):
        number = _parse_int(s)
        return text if number is None else number
    if _NUMBER_RE.fullmatch(s) and any(c in s for c in ".eE"):
        return _finite(float(s), name)
    low = s.lower()
    if low in ("true", "false"):
        return low == "true"
    return text


def _scalar(value: Any, name: str) -> Any:
    """``value`` as an event parameter scalar, or RecordError for nested/unsupported values
    and for numbers that are not finite."""
    if isinstance(value, float):
        return _finite(value, name)
    if value is None or isinstance(value, _SCALARS):
        return value
    if isinstance(value, datetime | date):
        return datetime_to_ms(value)
    kind = {dict: "object", list: "array", tuple: "array"}.get(type(value), type(value).__name__)
    raise RecordError(f"unsupported value of type {kind}: parameters must be scalars", name)


def _coerce(spec: ParamSpec, value: Any, *, text: bool, infer: bool) -> Any:
    """Check (and for text sources convert) one typed parameter value; RecordError on mismatch."""
    value = _scalar(value, spec.name)
    if value is None:
        return None
    if text and isinstance(value, str):
        if spec.type == "str":
            return value
        if spec.type == "any":
            return _infer(value, spec.name) if infer else value
        if spec.type == "bool":
            low = value.strip().lower()
            if low in ("true", "false"):
                return low == "true"
        elif spec.type == "int":
            number = _parse_int(value)
            if number is not None:
                return number
        elif spec.type == "float":
            number = _parse_number(value)
            if number is not None:
                return _to_float(number, spec.name)
            if value.strip().lower() in _NONFINITE_WORDS:
                raise RecordError(f"not a finite number: {value.strip()}", spec.name)
    elif spec.accepts(value):
        return _to_float(value, spec.name) if spec.type == "float" else value
    expected = spec.declared_type or spec.type
    raise RecordError(f"expected {expected}, got {_fmt(value)}", spec.name)


class RecordConverter:
    """Converts records to Events under one set of options (see the module docstring)."""

    def __init__(
        self,
        schemas: Mapping[str, EventType] | None = None,
        *,
        text: bool = False,
        infer_types: bool = False,
        strict_params: bool = True,
        unknown_fields: UnknownFields = "reject",
        unknown_types: UnknownTypes = "reject",
        unique_ids: bool = True,
    ) -> None:
        if unknown_fields not in ("reject", "ignore"):
            raise ValueError(f"unknown_fields must be 'reject' or 'ignore', not {unknown_fields!r}")
        if unknown_types not in ("keep", "reject"):
            raise ValueError(f"unknown_types must be 'keep' or 'reject', not {unknown_types!r}")
        self.schemas = schemas
        self.text = text
        self.infer_types = infer_types
        self.strict_params = strict_params
        self.unknown_fields = unknown_fields
        self.unknown_types = unknown_types
        #: the ids taken so far (None: not checked)
        self.ids: set[Any] | None = set() if unique_ids else None
        #: the declared types' names: the events of one type share its name object (as
        #: events a program makes with a literal name do), not a text per record — less
        #: memory, and the engine's batches tell the types apart by reading one object
        self._names: dict[str, str] = {t: t for t in schemas or ()}

    def __call__(self, record: Mapping[str, Any], seq: int = -1) -> Event:
        """The Event for ``record`` (with ``seq``), or RecordError naming the bad field."""
        etype = record.get("type")
        if etype is None:
            raise RecordError("missing required field 'type'", "type")
        if not isinstance(etype, str) or not etype:
            raise RecordError(f"type must be a non-empty string, got {_fmt(etype)}", "type")
        raw_ts = record.get("ts")
        if raw_ts is None:
            raise RecordError("missing required field 'ts'", "ts")
        ts = parse_timestamp(raw_ts, text=self.text)
        ident = _parse_id(record.get("id"), text=self.text)

        schema = self.schemas.get(etype) if self.schemas is not None else None
        if schema is None:
            if self.schemas is not None and self.unknown_types == "reject":
                raise RecordError(f"unknown event type {etype!r}", "type")
            params = self._untyped(record)
        else:
            params = self._typed(record, schema)
        ids = self.ids
        if ident is not None and ids is not None:
            if ident in ids:
                raise RecordError(f"duplicate id {ident!r}: an earlier record of this file has "
                                  "it", "id")
            ids.add(ident)
        return Event(self._names.get(etype, etype), params, ts, ident, seq)

    def _untyped(self, record: Mapping[str, Any]) -> tuple[Any, ...]:
        positional = record.get("params")
        named = [k for k in record if k not in ENVELOPE_FIELDS]
        if isinstance(positional, list | tuple):
            if len(named) > 1:
                other = next(k for k in named if k != "params")
                raise RecordError("a 'params' list cannot be combined with named fields", other)
            return tuple(_scalar(v, f"params[{i}]") for i, v in enumerate(positional))
        infer = self.text and self.infer_types
        out = []
        for k in named:
            v = _scalar(record[k], k)
            out.append(_infer(v, k) if infer and isinstance(v, str) else v)
        return tuple(out)

    def _typed(self, record: Mapping[str, Any], schema: EventType) -> tuple[Any, ...]:
        names = schema.param_names
        positional = record.get("params")
        if "params" not in names and isinstance(positional, list | tuple):
            for k in record:
                if k in names and k not in ENVELOPE_FIELDS:
                    raise RecordError("a 'params' list cannot be combined with named fields", k)
            self._check_unknown(record, names, skip="params")
            if len(positional) > len(names):
                raise RecordError(
                    f"{schema.name} declares {len(names)} parameters, got {len(positional)}",
                    "params",
                )
            if len(positional) < len(names) and self.strict_params:
                missing = names[len(positional)]
                raise RecordError(f"missing required parameter {missing!r}", missing)
            values = [*positional, *[None] * (len(names) - len(positional))]
            pairs = zip(schema.params, values, strict=True)
            return tuple(self._value(spec, v) for spec, v in pairs)
        self._check_unknown(record, names)
        out = []
        for spec in schema.params:
            if spec.name in record:
                out.append(self._value(spec, record[spec.name]))
            elif self.strict_params:
                raise RecordError(f"missing required parameter {spec.name!r}", spec.name)
            else:
                out.append(None)
        return tuple(out)

    def _value(self, spec: ParamSpec, value: Any) -> Any:
        return _coerce(spec, value, text=self.text, infer=self.infer_types)

    def _check_unknown(
        self, record: Mapping[str, Any], names: tuple[str, ...], skip: str | None = None
    ) -> None:
        if self.unknown_fields == "ignore":
            return
        for k in record:
            if k not in names and k not in ENVELOPE_FIELDS and k != skip:
                raise RecordError(f"unknown field {k!r} for event type {record['type']!r}", k)


def record_to_event(
    record: Mapping[str, Any],
    schemas: Mapping[str, EventType] | None = None,
    seq: int = -1,
    **opts: Any,
) -> Event:
    """Convert one record (options as for :class:`RecordConverter`); RecordError if it is bad."""
    return RecordConverter(schemas, **opts)(record, seq)
