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
``with session.transaction(ts=frame_ts): layout.apply(model, "body0", rows)``. Nothing is
evaluated: part names are looked up in the metamodel, values go through the model's own type
checks, and a bad row raises :class:`FrameError` naming the key, the row and the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from cepflow.models.live_model import MObject, Model, ModelError
from cepflow.models.metamodel import Metamodel


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

    def apply(self, model: Model, key: str, rows: Iterable[Sequence[Any]]) -> int:
        """Apply one frame of root ``key`` to ``model``; returns the number of elementary
        changes (creations, containment links and attribute sets)."""
        changes = 0
        if key not in model:
            model.create(self.root, key)
            changes += 1
        parts = self._parts.get(key)
        if parts is None:
            parts = self._parts[key] = {}
        rows = rows if isinstance(rows, list | tuple) else list(rows)
        width = len(self.attributes) + 1
        columns = self._columns
        sets: list[tuple[MObject, str, Any]] = []  # the readings of existing parts, in order
        append = sets.append
        first = 0  # the row of sets[0]
        for n, row in enumerate(rows):
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
            try:
                parts[part] = self._create(model, key, part, row, n)
            except ModelError as e:
                raise FrameError(f"{key}: row {n} ({part}): {e}", e.feature) from None
            changes += 2
        if sets:
            changes += self._set(model, key, sets, rows, first)
        return changes

    @staticmethod
    def _set(model: Model, key: str, sets: list[tuple[MObject, str, Any]],
             rows: Sequence[Sequence[Any]], first: int) -> int:
        """One bulk set (checked as a whole before any value is applied) of the readings of
        rows ``first``, ``first + 1``, …"""
        try:
            return model.set_many(sets)
        except ModelError as e:
            n, part = _row_of(rows, first, e.row or 0)
            where = e.obj if e.feature is None else f"{e.obj}.{e.feature}"
            raise FrameError(f"{key}: row {n} ({part}): {where}: {e.reason}",
                             e.feature) from None

    def _create(self, model: Model, key: str, part: Any, row: Sequence[Any],
                n: int) -> MObject:
        """Create part ``part`` of root ``key`` from its first reading and attach it."""
        ref = self.parts.get(part)
        if ref is None:
            raise FrameError(f"{key}: row {n}: unknown part '{part}' (one of "
                             f"{', '.join(self.parts)})", "part")
        values = {attr: row[i] for i, attr in self._columns if row[i] is not None}
        obj = model.create(part, f"{key}.{part}", **values)
        model.set(key, ref, obj)
        return obj


def _row_of(rows: Sequence[Sequence[Any]], first: int, index: int) -> tuple[int, Any]:
    """The row (number, part) of the ``index``-th reading (non-None value) from row ``first``
    on — where a bulk set's bad value came from."""
    for n in range(first, len(rows)):
        count = sum(v is not None for v in rows[n][1:])
        if index < count:
            return n, rows[n][0]
        index -= count
    return first, rows[first][0] if first < len(rows) else "?"  # pragma: no cover
