"""Sensor frames → model transactions: how a live model follows a stream of readings.

A *frame* reports, for one root object (a body observed by a Kinect, a machine), readings of
some of its parts: rows ``(part, value, value, …)`` where ``part`` names the part's class
(``RightHand``) and the values are the part's attributes (``x``, ``y``, ``z``) in the
layout's order. :class:`FrameLayout` applies a frame to a model:

* the root ``KEY`` (an instance of the layout's root class) is created when a frame names it
  for the first time; a part is created — with the frame's values as its initial attributes —
  and attached to the root through the root's single-valued containment reference to the
  part's class, the first time a frame reports it. Part ids are ``KEY.Part``;
* afterwards every value that is not None is an attribute ``set`` — also when it equals the
  current value (a reading is an observation; history functions such as moving averages count
  it); None means "not reported in this frame" and changes nothing. The readings of existing
  parts go to the model as one :meth:`~cepflow.models.Model.set_many` (one validation pass;
  a bad value changes none of them).

The caller decides the transaction: one frame = one transaction (000 §7.1), e.g.
``with session.transaction(ts=frame_ts): layout.apply(model, "body0", rows)``.
:meth:`FrameLayout.apply_frame` applies the frames of many roots — a sensor frame covering
every body — making the same changes as :meth:`~FrameLayout.apply` root after root, but the
readings of existing parts go to the model as column blocks (:meth:`Model.set_block
<cepflow.models.Model.set_block>`), which the query engine maintains its matches from in
bulk (docs/models.md "Frames"). Nothing is
evaluated: part names are looked up in the metamodel, values go through the model's own type
checks, and a bad row raises :class:`FrameError` naming the key, the row and the field.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from itertools import accumulate, chain
from operator import attrgetter, itemgetter
from typing import Any

from cepflow.models.changes import BLOCK_MIN
from cepflow.models.live_model import MObject, Model, ModelError
from cepflow.models.metamodel import Metamodel
from cepflow.runtime.collector import gc_paused


class FrameError(ValueError):
    """A frame row that cannot be applied; ``field`` names the offending column."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class FrameLayout:
    """Where the rows of a frame go: parts of a ``root`` object, attributes by position.

    ``parts`` maps each part class to the root's containment reference that holds it; by default
    every single-valued containment reference of ``root`` whose target class is concrete.
    """

    def __init__(self, metamodel: Metamodel, root: str, attributes: Sequence[str],
                 parts: dict[str, str] | None = None) -> None:
        if root not in metamodel:
            raise FrameError(f"the metamodel {metamodel.name} has no class '{root}'")
        cls = metamodel[root]
        if parts is None:
            parts = {r.target: r.name for r in cls.references.values()
                     if r.containment and not r.many and not metamodel[r.target].abstract}
        for part, ref in parts.items():
            r = cls.references.get(ref)
            if r is None or not r.containment or r.many or not metamodel[part].is_a(r.target):
                raise FrameError(f"{root}.{ref} is not a single-valued containment reference "
                                 f"to {part}")
            missing = [a for a in attributes if a not in metamodel[part].attributes]
            if missing:
                raise FrameError(f"part class {part} has no attribute(s) {missing}")
        self.metamodel = metamodel
        self.root = root
        self.attributes = tuple(attributes)
        self.parts = dict(parts)
        self._columns = tuple(enumerate(self.attributes, start=1))
        self._parts: dict[str, dict[Any, MObject]] = {}  # root -> part -> the part object
        # root -> (model, the parts its last frame named, their objects): apply_frame's
        # shortcut for a frame naming the same parts
        self._known: dict[str, tuple[Model, tuple[Any, ...], list[MObject]]] = {}
        #: apply_frame's readings of fewer values than this go as ordinary changes
        self.block_min = BLOCK_MIN
        self._last: _Frame | None = None  # the last frame apply_frame went through

    def apply(self, model: Model, key: str, rows: Iterable[Sequence[Any]]) -> int:
        """Apply one frame of root ``key`` to ``model``; returns the number of elementary
        changes (creations, containment links and attribute sets)."""
        changes, parts = self._root(model, key)
        rows = rows if isinstance(rows, list | tuple) else list(rows)
        width = len(self.attributes) + 1
        columns = self._columns
        sets: list[tuple[MObject, str, Any]] = []  # the readings of existing parts, in order
        append = sets.append
        first = 0  # the row of sets[0]
        for n, row in enumerate(rows):
            o = self._part(model, key, parts, row, n, width)
            if o is not None:
                for i, attr in columns:
                    value = row[i]
                    if value is not None:
                        append((o, attr, value))
                continue
            if sets:  # keep the frame's order: readings before this part's creation
                changes += self._set(model, key, sets, rows, first)
                sets = []
                append = sets.append
            first = n + 1
            parts[row[0]] = self._create(model, key, row[0], row, n)
            changes += 2
        if sets:
            changes += self._set(model, key, sets, rows, first)
        return changes

    def apply_frame(self, model: Model,
                    frame: Mapping[str, Sequence[Sequence[Any]]]
                    | Iterable[tuple[str, Sequence[Sequence[Any]]]]) -> int:
        """Apply the frames of many roots — ``{key: rows}`` or ``(key, rows)`` pairs, in order —
        as :meth:`apply` would one after the other (the same changes in the same order, the
        same errors), the readings of parts that exist going to the model in blocks of
        columns (one block per frame unless roots or parts appear in it). Returns the number of
        elementary changes. Put it in one transaction to make the frame one commit."""
        items = frame.items() if isinstance(frame, Mapping) else frame
        if isinstance(items, list | tuple | type({}.items())) and _readings(
                items) * len(self.attributes) < self.block_min:
            # a few readings (a body or two): body after body, no block worth making
            return sum(self.apply(model, key, rows) for key, rows in items)
        # a frame's rows become thousands of short-lived containers: the collector waits
        with gc_paused():
            return self._apply_blocks(model, items, frame)

    def _apply_blocks(self, model: Model, items: Iterable[tuple[str, Sequence[Sequence[Any]]]],
                      frame: Any) -> int:
        """:meth:`apply_frame` of a frame worth blocks: in one go if it repeats the last
        frame's layout (:meth:`_repeat`), else root by root."""
        repeated = self._repeat(model, frame)
        if repeated is not None:
            return repeated
        self._last = None
        width = len(self.attributes) + 1
        block = _Block(len(self.attributes))
        changes = 0
        known = self._known
        alive = attrgetter("alive")
        # what the frame named (roots, their parts, those objects), for the next frame
        keys: list[str] = []
        names_seen: list[tuple[Any, ...]] = []
        objects_seen: list[list[MObject]] = []
        complete = True
        for key, rows in items:
            keys.append(key)
            # the usual case: the same parts as the key's last frame, all still there
            seen = known.get(key)
            if seen is not None and seen[0] is model:
                rows = rows if isinstance(rows, list | tuple) else list(rows)
                if rows and set(map(len, rows)) == {width}:
                    parts_then_values = tuple(zip(*rows, strict=True))  # parts, then values
                    if parts_then_values[0] == seen[1] and all(map(alive, seen[2])):
                        block.segment(key, rows)
                        block.objects.extend(seen[2])
                        for column, values in zip(block.columns, parts_then_values[1:],
                                                  strict=True):
                            column.extend(values)
                        names_seen.append(seen[1])
                        objects_seen.append(seen[2])
                        continue
            if key not in model:  # (the readings before it first: the frame's order)
                changes += self._flush(model, block)
            created, parts = self._root(model, key)
            changes += created
            rows = rows if isinstance(rows, list | tuple) else list(rows)
            block.segment(key, rows)
            objects, columns = block.objects, block.columns
            for n, row in enumerate(rows):
                o = self._part(model, key, parts, row, n, width)
                if o is not None:
                    objects.append(o)
                    for i, column in enumerate(columns, start=1):
                        column.append(row[i])
                    continue
                changes += self._flush(model, block)
                parts[row[0]] = self._create(model, key, row[0], row, n)
                changes += 2
                block.segment(key, rows, n + 1)
            names = tuple(map(_PART, rows))
            objs = [parts.get(p) for p in names]
            if None not in objs:
                known[key] = (model, names, objs)
                names_seen.append(names)
                objects_seen.append(objs)  # type: ignore[arg-type]
            else:
                complete = False
        changes += self._flush(model, block)
        if complete and keys:
            self._last = _Frame(model, tuple(keys), names_seen, objects_seen)
        return changes

    def _repeat(self, model: Model, frame: Any) -> int | None:
        """Apply ``frame`` in one go if it names the same roots with the same parts, in the
        same order, as the last frame :meth:`apply_frame` went through (and no object of the
        model died since): the rows' values become the block's columns with no work per row
        in Python (one ``map`` per column), the objects are the last frame's. None: not such a
        frame (nothing done)."""
        last = self._last
        if last is None or last.model is not model or last.deaths != model.deaths:
            return None
        if isinstance(frame, Mapping):
            keys, rowlists = tuple(frame), tuple(frame.values())
        elif isinstance(frame, list | tuple):
            try:
                keys, rowlists = zip(*frame, strict=True)
            except (TypeError, ValueError):  # not (key, rows) pairs: the general path says why
                return None
        else:
            return None
        if keys != last.keys or not set(map(type, rowlists)) <= {list, tuple} or tuple(
                map(len, rowlists)) != last.counts:
            return None
        rows = list(chain.from_iterable(rowlists))
        if set(map(len, rows)) != {len(self.attributes) + 1}:
            return None
        # column by column (map over the rows: no iterator per row, which zip(*rows) would
        # make — 20,000 short-lived containers a frame that the cyclic collector walks)
        if list(map(_PART, rows)) != last.parts:
            return None
        columns = [list(map(itemgetter(i), rows)) for i in range(1, len(self.attributes) + 1)]
        try:
            return model.set_block(last.objects, self.attributes, columns)
        except ModelError as e:
            k = bisect_right(last.starts, e.row or 0) - 1
            n = (e.row or 0) - last.starts[k]
            raise _frame_error(keys[k], n, rowlists[k][n][0], e) from None

    def _flush(self, model: Model, block: _Block) -> int:
        """Set the readings collected in ``block`` (one :meth:`Model.set_block`); a bad value
        raises the :class:`FrameError` :meth:`apply` raises for it."""
        if not block.objects:
            return 0
        if len(block.objects) * len(self.attributes) < self.block_min:
            return self._set_small(model, block)
        try:
            return model.set_block(block.objects, self.attributes, block.columns)
        except ModelError as e:
            raise _frame_error(*block.locate(e.row or 0), e) from None
        finally:
            block.clear()

    @staticmethod
    def _set(model: Model, key: str, sets: list[tuple[MObject, str, Any]],
             rows: Sequence[Sequence[Any]], first: int) -> int:
        """One bulk set (checked as a whole before any value is applied) of the readings of
        rows ``first``, ``first + 1``, …"""
        try:
            return model.set_many(sets)
        except ModelError as e:
            raise _frame_error(key, *_row_of(rows, first, e.row or 0), e) from None

    def _set_small(self, model: Model, block: _Block) -> int:
        """A few readings: ordinary changes (:meth:`Model.set_many`), not worth a block."""
        sets: list[tuple[MObject, str, Any]] = []
        where: list[int] = []  # the object of each reading
        for i, o in enumerate(block.objects):
            for attr, column in zip(self.attributes, block.columns, strict=True):
                if column[i] is not None:
                    sets.append((o, attr, column[i]))
                    where.append(i)
        try:
            return model.set_many(sets)
        except ModelError as e:
            raise _frame_error(*block.locate(where[e.row or 0]), e) from None
        finally:
            block.clear()

    def _root(self, model: Model, key: str) -> tuple[int, dict[Any, MObject]]:
        """(1 if root ``key`` is created now, else 0; the parts known of it)."""
        created = 0
        if key not in model:
            model.create(self.root, key)
            created = 1
        parts = self._parts.get(key)
        if parts is None:
            parts = self._parts[key] = {}
        return created, parts

    def _part(self, model: Model, key: str, parts: dict[Any, MObject], row: Sequence[Any],
              n: int, width: int) -> MObject | None:
        """The live part object row ``n`` reads (None: not created yet), after checking the
        row's width."""
        if len(row) != width:
            raise FrameError(f"{key}: row {n}: expected a part and {width - 1} value(s) "
                             f"{list(self.attributes)}, got {len(row)} field(s)")
        part = row[0]
        o = parts.get(part)
        if o is None or not o.alive or o.model is not model:
            # not created yet, or deleted (and maybe re-created under its id) since
            o = model.get(f"{key}.{part}") if part in parts else None
            if o is not None:
                parts[part] = o
        return o

    def _create(self, model: Model, key: str, part: Any, row: Sequence[Any],
                n: int) -> MObject:
        """Create part ``part`` of root ``key`` from its first reading and attach it."""
        ref = self.parts.get(part)
        if ref is None:
            raise FrameError(f"{key}: row {n}: unknown part '{part}' (one of "
                             f"{', '.join(self.parts)})", "part")
        values = {attr: row[i] for i, attr in self._columns if row[i] is not None}
        try:
            obj = model.create(part, f"{key}.{part}", **values)
        except ModelError as e:
            raise FrameError(f"{key}: row {n} ({part}): {e}", e.feature) from None
        model.set(key, ref, obj)
        return obj


_PART = itemgetter(0)


def _frame_error(key: str, n: int, part: Any, e: ModelError) -> FrameError:
    """The FrameError of model error ``e`` about row ``n`` (part ``part``) of root ``key``."""
    where = e.obj if e.feature is None else f"{e.obj}.{e.feature}"
    return FrameError(f"{key}: row {n} ({part}): {where}: {e.reason}", e.feature)


class _Frame:
    """What a frame named — roots in order, each one's parts and their objects — and the
    model's deaths then: :meth:`FrameLayout._repeat` applies a frame naming the same in one go."""

    __slots__ = ("counts", "deaths", "keys", "model", "objects", "parts", "starts")

    def __init__(self, model: Model, keys: tuple[str, ...], names: list[tuple[Any, ...]],
                 objects: list[list[MObject]]) -> None:
        self.model = model
        self.deaths = model.deaths
        self.keys = keys
        self.counts = tuple(map(len, names))
        self.parts = list(chain.from_iterable(names))
        self.objects = list(chain.from_iterable(objects))
        self.starts = [0, *accumulate(self.counts)][:-1]  # each root's first object


def _readings(items: Iterable[tuple[str, Any]]) -> int | float:
    """How many rows a frame's ``(key, rows)`` items hold (infinity if some rows are an
    iterator: not counted, not consumed)."""
    try:
        return sum(len(rows) for _, rows in items)
    except TypeError:
        return float("inf")


class _Block:
    """The readings of existing parts collected for one :meth:`Model.set_block`: objects,
    one column per attribute, and where each run of objects came from (for errors)."""

    __slots__ = ("columns", "objects", "starts")

    def __init__(self, width: int) -> None:
        self.objects: list[MObject] = []
        self.columns: list[list[Any]] = [[] for _ in range(width)]
        # (first object, key, rows, row of that object): rows map one to one to objects
        self.starts: list[tuple[int, str, Sequence[Sequence[Any]], int]] = []

    def segment(self, key: str, rows: Sequence[Sequence[Any]], first_row: int = 0) -> None:
        self.starts.append((len(self.objects), key, rows, first_row))

    def locate(self, i: int) -> tuple[str, int, Any]:
        """(key, row number, part) of object ``i``."""
        k = bisect_right([s[0] for s in self.starts], i) - 1
        first, key, rows, row = self.starts[k]
        n = row + i - first
        return key, n, rows[n][0]

    def clear(self) -> None:
        """Empty the lists in place (the frame's loop holds them)."""
        self.objects.clear()
        for column in self.columns:
            column.clear()
        self.starts.clear()


def _row_of(rows: Sequence[Sequence[Any]], first: int, index: int) -> tuple[int, Any]:
    """The row (number, part) of the ``index``-th reading (non-None value) from row ``first``
    on — where a bulk set's bad value came from."""
    for n in range(first, len(rows)):
        count = sum(v is not None for v in rows[n][1:])
        if index < count:
            return n, rows[n][0]
        index -= count
    return first, rows[first][0] if first < len(rows) else "?"  # pragma: no cover
