"""An Arrow record batch of the event layout (:mod:`cepflow.inputs.columnar`) as the engine's
column source, and the engine's column-wise matches back as Arrow rows — what the Spark runners
and the in-process file job (:mod:`cepflow.replay`) feed :meth:`Engine.process_columns` with
and write: :class:`ArrowRows` makes Python events only for the rows that end up in complex
events or partial matches; :func:`encode_match_table` writes a
:class:`~cepflow.runtime.rows.MatchTable` as rows of the match schema without one Python object
per match."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cepflow.events.event import Event, output_ts
from cepflow.inputs.columnar import SLOTS, column, constant, decode, stamps
from cepflow.outputs.encoding import dumps, json_texts
from cepflow.outputs.order import in_order
from cepflow.outputs.records import MATCH_SCHEMA, match_batch, match_ts_column, value_texts
from cepflow.runtime.rows import (
    CONST,
    VALUE,
    ChainMatches,
    MatchTable,
    ObjectMatches,
    Rows,
    StageMatches,
    distinct,
)

#: up to this many rows asked at once are read value by value (ArrowRows._event), more are
#: decoded as a batch
FEW_ROWS = 4


class ArrowRows(Rows):
    """A record batch of the layout as the engine's column source (time-ordered rows)."""

    def __init__(self, batch: pa.RecordBatch, arities: Mapping[str, int], arity: int) -> None:
        self.batch, self.arities, self.arity = batch, arities, arity
        self.n = batch.num_rows
        self.ts = column(batch, "ts").to_numpy()
        enc = pc.dictionary_encode(column(batch, "type"))
        self.type_names = enc.dictionary.to_pylist()
        self.codes = enc.indices.to_numpy().astype(np.int64)
        self._made: dict[int, Event] = {}
        self._reader: tuple[Any, ...] | None = None  # (see _event)
        #: per written column (a parameter's texts, the events' names) the rows asked for so
        #: far, and its texts for every row once they pass half the batch (:meth:`_written`)
        self._asked: dict[Any, int] = {}
        self._whole: dict[Any, pa.Array] = {}

    def time_at(self, row: int) -> Any:
        tsi = column(self.batch, "tsi")[row].as_py()
        return tsi if tsi is not None else float(self.ts[row])

    def times(self, rows: np.ndarray) -> list[Any]:
        return stamps(self.batch, pa.array(rows))

    def values(self, param: int, rows: np.ndarray) -> tuple[np.ndarray, list[Any]]:
        codes = np.full(len(rows), -1, dtype=np.int64)
        uniques: list[Any] = []
        take = pa.array(rows)
        for p, _ in SLOTS:
            col = column(self.batch, f"{p}{param}")
            if col.null_count == len(col):
                continue
            enc = pc.dictionary_encode(col.take(take))
            idx = enc.indices.fill_null(-1).to_numpy()
            found = idx >= 0
            codes[found] = idx[found] + len(uniques)
            uniques.extend(enc.dictionary.to_pylist())
        if bool((codes < 0).any()):
            codes[codes < 0] = len(uniques)
            uniques.append(None)
        return codes, uniques

    def column(self, param: int, rows: np.ndarray) -> np.ndarray:
        """Rows.column; a parameter held in one integer column without nulls (a key) read
        from it directly, not coded first (the same values: as_column makes int64 of them)."""
        used = [c for c in (column(self.batch, f"{p}{param}") for p, _ in SLOTS)
                if c.null_count < len(c)]
        if (len(rows) and len(used) == 1 and used[0].null_count == 0
                and pa.types.is_integer(used[0].type)):
            return used[0].to_numpy().astype(np.int64, copy=False)[rows]
        return super().column(param, rows)

    def lookup(self, rows: np.ndarray) -> Mapping[int, Event]:
        made = self._made
        if len(rows) == 1 and int(rows[0]) in made:  # (one row, made already: the usual ask)
            return made
        # (the rows' distinct numbers by a sort: numpy 2.4's np.unique hashes integers,
        # ten times the cost of sorting 200,000 of them — rows.distinct)
        new = distinct(rows).tolist()
        if made:
            new = [r for r in new if r not in made]
        if len(new) > FEW_ROWS:
            evs = decode(self.batch.take(pa.array(new)), self.arities, self.arity)
            made.update(zip(new, evs, strict=True))
        else:
            for r in new:
                made[r] = self._event(r)
        return made

    def _event(self, row: int) -> Event:
        """The event of one row, as :func:`decode` makes it (each field the first non-null of
        its columns), read value by value: a few rows (those a timer makes the program split
        step, runtime/kernels/split.py) cost a tenth of decoding them as a batch."""
        if self._reader is None:
            b = self.batch

            def used(*names: str) -> list[pa.Array]:
                return [c for c in (column(b, n) for n in names) if c.null_count < len(c)]

            self._reader = (column(b, "type"), used("tsi", "ts"), used("id_s", "id_i"),
                            [used(*(f"{p}{i}" for p, _ in SLOTS)) for i in range(self.arity)],
                            column(b, "seq"))
        types, tss, ids, slots, seq = self._reader

        def first(cols: list[pa.Array]) -> Any:
            for c in cols:
                v = c[row].as_py()
                if v is not None:
                    return v
            return None

        t = types[row].as_py()
        params = tuple(first(cols) for cols in slots)
        if self.arities.get(t, self.arity) < self.arity:
            params = params[:self.arities[t]]
        return Event(t, params, first(tss), first(ids), seq[row].as_py())

    def number(self, engine: Any) -> None:
        counters = engine.host.counters
        if self.n and counters.renumber:  # (after a restore: the saved numbering goes on)
            seq = column(self.batch, "seq")
            first = seq[0].as_py()
            shift = 0 if first is None or first < 0 else counters.continued(first) - first
            if shift:
                self.batch = self.batch.set_column(self.batch.schema.get_field_index("seq"),
                                                   "seq", pc.add(seq, shift))
                self._reader = None
        if self.n:
            top = int(pc.max(column(self.batch, "seq")).as_py())
            if top >= counters.input:
                counters.input = top + 1

    def _written(self, key: Any, rows: pa.Array, make: Any) -> pa.Array:
        """``make(rows)`` — texts of a column at ``rows``, each row's a function of its values
        alone — or, once the rows asked for under ``key`` pass half the batch (the blocks of
        one batch — air quality's window rows and grades — name each row several times), the
        texts of every row made once (``make(None)``) and taken at ``rows``."""
        whole = self._whole.get(key)
        if whole is None:
            asked = self._asked[key] = self._asked.get(key, 0) + len(rows)
            if asked * 2 <= self.n:
                return make(rows)
            whole = self._whole[key] = make(None)
        return whole.take(rows)

    def texts(self, param: int, rows: pa.Array) -> pa.Array:
        """The JSON text of parameter ``param`` of ``rows`` as the match writer writes the
        value :func:`decode` makes of it (the row's one non-null slot; ``null`` for none)."""
        return self._written(("texts", param), rows, partial(self._texts, param))

    def _texts(self, param: int, rows: pa.Array | None) -> pa.Array:
        """:meth:`texts` of ``rows`` (None: every row)."""
        used = [c for c in (column(self.batch, f"{p}{param}") for p, _ in SLOTS)
                if c.null_count < len(c)]
        if not used:
            return constant("null", self.n if rows is None else len(rows))
        if len(used) == 1:
            part = used[0] if rows is None else used[0].take(rows)
            fast = float_texts(part) if pa.types.is_float64(part.type) else None
            return fast if fast is not None else json_texts(part, ascii_only=False)
        out = None
        for col in used:
            part = col if rows is None else col.take(rows)
            # (json_texts writes null as the text "null": a null slot stays null to coalesce)
            text = pc.if_else(pc.is_null(part), pa.scalar(None, pa.string()),
                              json_texts(part, ascii_only=False))
            out = text if out is None else pc.coalesce(out, text)
        return pc.fill_null(out, "null")

    def time_texts(self, rows: pa.Array) -> pa.Array:
        """The JSON text of the time of ``rows`` as :func:`decode` makes it (the integer
        column when given, else the double)."""
        tsi = column(self.batch, "tsi").take(rows)
        if tsi.null_count == 0:
            return tsi.cast(pa.string())
        ts = json_texts(column(self.batch, "ts").take(rows), ascii_only=False)
        return pc.coalesce(tsi.cast(pa.string()), ts)

    def refs(self, rows: pa.Array) -> pa.Array:
        """The text that names the event of each of ``rows`` in outputs: its id, else its
        number."""
        return self._written("refs", rows, self._refs)

    def _refs(self, rows: pa.Array | None) -> pa.Array:
        """:meth:`refs` of ``rows`` (None: every row)."""
        b = self.batch
        used = [c if rows is None else c.take(rows)
                for c in (column(b, "id_s"), column(b, "id_i"), column(b, "seq"))
                if c.null_count < len(c)]
        # (as many rows as half the batch or more: every row's text made once, then taken —
        # ArrowRows._written)
        texts = [c if pa.types.is_string(c.type) else c.cast(pa.string()) for c in used]
        if not texts:
            return pa.nulls(self.n if rows is None else len(rows), pa.string())
        return texts[0] if len(texts) == 1 else pc.coalesce(*texts)


def encode_match_table(table: MatchTable, rows: ArrowRows) -> pa.RecordBatch:
    """:func:`encode_matches` (:func:`cepflow.outputs.records.match_batch`) of a
    :class:`~cepflow.runtime.rows.MatchTable`, column-wise: ids taken from the batch's
    columns, the parameters' JSON made once per key value."""
    ts = column(rows.batch, "ts")
    cols: dict[str, list[pa.Array]] = {f.name: [] for f in MATCH_SCHEMA}
    ranks = []
    for b in table.blocks:
        if isinstance(b, ChainMatches) and (
                (b.bindings is not None and b.fields is None)
                or (b.old and (b.bindings is not None or b.fields is not None))):
            # (a chain binding more than its key whose bindings are not fields of its events
            # whatever the path, or with matches from before the batch: its bindings are the
            # events' values, made as the complex events are)
            whole = MatchTable([b], table.values, table.first_id, table.count,
                               table.source).complex_events()
            b = ObjectMatches(b.at, b.rank, [whole[r] for r in b.rank.tolist()])
        if isinstance(b, ObjectMatches):  # (made as objects by the kernel: as match_batch)
            made = match_batch(b.events)
            for f in MATCH_SCHEMA:
                cols[f.name].append(made.column(f.name))
            ranks.append(b.rank)
            continue
        m, k = len(b.at), b.rows.shape[0]
        flat = b.rows.T.ravel()
        ids = rows.refs(pa.array(np.where(flat >= 0, flat, 0)))
        if isinstance(b, ChainMatches) and b.old:
            # events from before the batch: the first stages of those matches
            earlier = [str(e.ref) for r in sorted(b.old) for e in b.old[r]]
            ids = pc.replace_with_mask(ids, pa.array(flat < 0), pa.array(earlier, pa.string()))
        offsets = pa.array(np.arange(0, m * k + 1, k, dtype=np.int32))
        cols["events"].append(pa.ListArray.from_arrays(offsets, ids))
        cols["pattern"].append(constant(b.pattern, m))
        cols["ts"].append(_delayed_ts(b, rows) if isinstance(b, StageMatches)
                          and b.delay is not None else match_ts_column(ts.take(pa.array(b.at))))
        ranks.append(b.rank)
        if isinstance(b, StageMatches):
            cols["params"].append(_stage_params(b, rows))
            continue
        keys, which = np.unique(b.value, return_inverse=True)
        if b.fields is not None:  # (its bindings are fields of its events)
            cols["params"].append(_field_params(b, [table.values[v] for v in keys.tolist()],
                                                which, rows))
            continue
        if b.var is None or b.var.startswith("_"):  # (unkeyed; internal names not shown)
            texts = constant("{}", len(keys))
        else:
            values = [table.values[v] for v in keys.tolist()]
            texts = pc.binary_join_element_wise("{" + dumps(b.var) + ":",
                                                _value_texts(values), "}", "")
        cols["params"].append(texts.take(pa.array(which.ravel())))
    if not ranks:
        return pa.RecordBatch.from_pylist([], schema=MATCH_SCHEMA)
    return pa.RecordBatch.from_arrays(
        in_order([cols[f.name] for f in MATCH_SCHEMA], np.concatenate(ranks)),
        schema=MATCH_SCHEMA)


def _field_params(b: ChainMatches, keys: list[Any], which: np.ndarray, rows: ArrowRows
                  ) -> pa.Array:
    """The ``params`` text of each match of a :class:`ChainMatches` block whose bindings are
    fields of its events (``fields``, named ``bound``; no match from before the batch): the
    JSON object of the key value (``keys``, per match ``which``) and the fields of its events,
    internal ``_`` names left out, as :func:`~cepflow.outputs.records.match_batch` writes the
    complex events."""
    parts: list[Any] = []
    for name, (m, k) in zip(b.bound or (), b.fields or (), strict=True):
        if name.startswith("_"):
            continue
        text = (_value_texts(keys).take(pa.array(which.ravel())) if m < 0
                else rows.texts(k, pa.array(b.rows[m])))
        parts += [("," if parts else "{") + dumps(name) + ":", text]
    if not parts:
        return constant("{}", len(b.at))
    return pc.binary_join_element_wise(*parts, "}", "")


def _delayed_ts(b: StageMatches, rows: ArrowRows) -> pa.Array:
    """The written time of each match of a block at its last event's time plus ``delay`` (a
    timer's deadline): ``output_ts(e.ts + delay)`` — in float64 when every time is below
    2**53 in magnitude (an int's float then exact, the sum as Python makes it), else value by
    value."""
    last = b.rows[-1]
    t = rows.ts[last] + b.delay
    if len(t) and not bool((np.abs(t) < 2.0**53).all()):
        return pa.array([output_ts(rows.time_at(r) + b.delay) for r in last.tolist()],
                        pa.int64())
    return pa.array(np.ceil(t).astype(np.int64))  # (a whole deadline: itself)


def _stage_params(b: StageMatches, rows: ArrowRows) -> pa.Array:
    """The ``params`` text of each match of a :class:`StageMatches` block: the JSON object of
    its bindings (``dict(zip(names, values))``; internal ``_`` names left out), as
    :func:`~cepflow.outputs.records.match_batch` writes the complex events."""
    last: dict[str, int] = {}  # (a name given twice keeps its first place and last value)
    for i, name in enumerate(b.names):
        last[name] = i
    shown = [(name, b.fields[i]) for name, i in last.items() if not name.startswith("_")]
    if not shown:
        return constant("{}", len(b.at))
    at = pa.array(b.at)
    parts: list[Any] = []
    for j, (name, f) in enumerate(shown):
        if f is None:
            text = constant("null", len(b.at))
        elif f[0] == CONST:
            text = _value_texts([b.consts[f[1]]]).take(pa.array(np.zeros(len(b.at), np.int64)))
        elif f[0] == VALUE:
            text = _value_column_texts(b.values[f[1]])
        elif f[0] < 0:
            text = rows.time_texts(at)
        else:
            text = rows.texts(f[1], pa.array(b.rows[f[0]]))
        parts += [("{" if j == 0 else ",") + dumps(name) + ":", text]
    return pc.binary_join_element_wise(*parts, "}", "")


def _value_column_texts(values: list[Any]) -> pa.Array:
    """:func:`~cepflow.outputs.records.value_texts` of a column of values given per match
    (a window row's aggregate): floats only, as :func:`float_texts` makes them."""
    if values and set(map(type, values)) == {float}:
        fast = float_texts(pa.array(values, pa.float64()))
        if fast is not None:
            return fast
    return value_texts(values)


#: a float whose magnitude is in [_POSITIONAL, _EXPONENT) is written positionally by
#: ``repr`` (the shortest digits that read back as it, at least one after the point)
_POSITIONAL, _EXPONENT = 1e-4, 1e16


def float_texts(values: pa.Array) -> pa.Array | None:
    """The JSON text of each of ``values`` (float64) as the match writer writes a float —
    ``repr``, the shortest digits that read back as the value — column-wise: Arrow's text of
    a double is its shortest digits too (double-conversion's), written positionally without
    ``.0`` for a whole value and with an exponent from some magnitude on; so a value in
    repr's positional range whose text has no exponent is that text (``.0`` added when it
    has no point), the others (below 1e-4, from 1e16 on, or written with an exponent) are
    ``repr``'s own, one by one. None when a value is null or not finite (the caller's texts
    then: NaN, infinities). **Decision:** the digits of the two agree on every double (both
    are the shortest round-trip digits, the nearest when several): checked on 40 million
    values — random bit patterns, rounded decimals, ratios — before it was taken
    (tests/runtime/test_arrow_float_texts.py keeps a property)."""
    if values.null_count:
        return None
    x = values.to_numpy(zero_copy_only=False)
    if not bool(np.isfinite(x).all()):
        return None
    text = values.cast(pa.string())
    if pa.types.is_large_string(text.type):
        text = text.cast(pa.string())
    mag = np.abs(x)
    bad = ((mag < _POSITIONAL) & (x != 0)) | (mag >= _EXPONENT)
    bad |= pc.match_substring(text, "e").to_numpy(zero_copy_only=False)
    whole = pc.invert(pc.match_substring(text, "."))
    out = pc.if_else(whole, pc.binary_join_element_wise(text, ".0", ""), text)
    if bad.any():
        idx = np.flatnonzero(bad)
        fixed = pa.array(list(map(float.__repr__, x[idx].tolist())), pa.string())
        out = pc.replace_with_mask(out, pa.array(bad), fixed)
    return out


def _value_texts(values: list[Any]) -> pa.Array:
    """:func:`json_texts` (``ensure_ascii=False``, as the match writer) of Python values."""
    try:
        arr = pa.array(values)
    except (pa.ArrowException, TypeError, OverflowError):
        arr = None
    if arr is None or not (pa.types.is_string(arr.type) or pa.types.is_integer(arr.type)
                           or pa.types.is_boolean(arr.type)):
        return pa.array([dumps(v) for v in values], pa.string())
    return json_texts(arr, ascii_only=False)
