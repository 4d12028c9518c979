"""Live models: objects typed by a metamodel, changed in transactions, observed by listeners.

Every mutation is validated against the metamodel *before* it touches the model, so an invalid
change raises :class:`ModelError` and changes nothing. Mutations are grouped into transactions
(``with model.transaction(ts=...)``); outside one, each mutation is its own transaction. A
transaction that raises is rolled back completely (nested transactions are savepoints: an
inner failure undoes only the inner changes). At the end of the outermost transaction the
listeners receive the :class:`~cepflow.models.changes.Commit` with every change in order.

A listener may change the model while it is notified; that new commit is delivered, to every
listener, after the current one — so each listener sees commits in commit order.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from types import TracebackType
from typing import Any

from cepflow.models.changes import AttributeBlock, BlockChanges, Change, Commit, add_listener
from cepflow.models.metamodel import (
    MANY,
    Attribute,
    Metamodel,
    ModelClass,
    Reference,
    coerce_value,
    did_you_mean,
)
from cepflow.runtime.collector import gc_paused

Listener = Callable[[Commit], None]
_NO_PAUSE = nullcontext()


class ModelError(Exception):
    """An invalid change or lookup, naming the object, the feature and the reason."""

    def __init__(self, reason: str, obj: str | None = None, feature: str | None = None,
                 row: int | None = None) -> None:
        self.reason = reason
        self.obj = obj
        self.feature = feature
        self.row = row  # the position of the offending row of a bulk change (set_many)
        where = obj if feature is None else f"{obj}.{feature}"
        message = f"{where}: {reason}" if where else reason
        super().__init__(message if row is None else f"row {row}: {message}")


class MObject:
    """An object of a model. Read it with ``obj[feature]``; change it through its model.

    ``obj["attr"]`` is the attribute's value; ``obj["ref"]`` is the target object (or None) of
    a single-valued reference and a tuple of targets of a many-valued one. The attribute values
    live in the model's columns of the object's class (:class:`Columns`), at the object's row.
    """

    __slots__ = ("_columns", "_container", "_incoming", "_refs", "_row", "_seq", "alive", "cls",
                 "id", "model")

    def __init__(self, model: Model, id: str, cls: ModelClass, columns: dict[str, list[Any]],
                 row: int, seq: int) -> None:
        self.model = model
        self._seq = seq  # creation order, restored when a rollback revives a deleted object
        self.id = id
        self.cls = cls
        self.alive = True
        self._columns = columns  # attribute -> its column (the class's); the value at _row
        self._row = row
        self._refs: dict[str, dict[MObject, None]] = {r: {} for r in cls.references}
        self._container: tuple[MObject, str] | None = None
        self._incoming: dict[tuple[MObject, str], None] = {}

    def __getitem__(self, feature: str) -> Any:
        column = self._columns.get(feature)
        if column is not None:
            return column[self._row]
        targets = self._refs.get(feature)
        if targets is None:
            raise ModelError(_no_feature(self.cls, feature), self.id, feature)
        if self.cls.references[feature].many:
            return tuple(targets)
        return next(iter(targets), None)

    def targets(self, ref: str) -> tuple[MObject, ...]:
        """The targets of reference ``ref`` in order (any multiplicity)."""
        if ref not in self._refs:
            raise ModelError(_no_reference(self.cls, ref), self.id, ref)
        return tuple(self._refs[ref])

    @property
    def container(self) -> MObject | None:
        """The object whose containment reference holds this one, or None for a root."""
        return self._container[0] if self._container else None

    @property
    def containing_feature(self) -> str | None:
        """The name of the containment reference that holds this object, or None."""
        return self._container[1] if self._container else None

    def __repr__(self) -> str:
        state = "" if self.alive else " (deleted)"
        return f"<{self.cls.name} {self.id}{state}>"


def _no_feature(cls: ModelClass, feature: str) -> str:
    return f"class {cls.name} has no feature '{feature}'{did_you_mean(feature, cls.feature_names)}"


def _no_reference(cls: ModelClass, feature: str) -> str:
    if feature in cls.attributes:
        return f"'{feature}' is an attribute of {cls.name}, not a reference (use set)"
    return f"class {cls.name} has no reference '{feature}'" + did_you_mean(
        feature, cls.references)


ObjRef = MObject | str
_NOTHING: Any = object()


class Columns:
    """The attribute values of one class's objects, column-wise: a list per attribute (in
    declaration order), a row per object (rows of deleted objects are reused once their
    deletion is committed). Why: a sensor frame sets the same attributes of thousands of
    objects; columns take them with slice assignments instead of one store per value, and any
    value reads back as the very object that was stored (docs/models.md "Frames")."""

    __slots__ = ("free", "lists", "size")

    def __init__(self, names: Iterable[str]) -> None:
        self.lists: dict[str, list[Any]] = {n: [] for n in names}
        self.free: list[int] = []
        self.size = 0  # rows made (used or free)

    def add(self, values: Mapping[str, Any]) -> int:
        """A row holding ``values`` (every attribute's): a freed one, or a new one."""
        if self.free:
            row = self.free.pop()
            for name, column in self.lists.items():
                column[row] = values[name]
            return row
        row = self.size
        self.size += 1
        for name, column in self.lists.items():
            column.append(values[name])
        return row

    def release(self, obj: MObject) -> None:
        """Free ``obj``'s row; the object keeps its last values in a column store of its own
        (a deleted object still reads them)."""
        row = obj._row
        obj._columns = {name: [column[row]] for name, column in self.lists.items()}
        obj._row = 0
        self.free.append(row)

    @staticmethod
    def values(obj: MObject) -> dict[str, Any]:
        """Every attribute value of ``obj`` (declaration order)."""
        row = obj._row
        return {name: column[row] for name, column in obj._columns.items()}


#: the Python type a value of each primitive type has (values of exactly this type are
#: stored as they are: coerce_value would return them unchanged)
_PYTYPES: dict[str, type] = {"float": float, "int": int, "str": str, "bool": bool}
_NONE = type(None)


class _Group:
    """The objects of one class in a block: their positions, their rows in the class's
    columns, and — when the positions are evenly spaced and the rows consecutive (bodies
    reporting the same parts frame after frame) — both as slices."""

    __slots__ = ("cls", "columns", "positions", "rows", "span", "take")

    def __init__(self, cls: ModelClass, columns: dict[str, list[Any]], positions: list[int],
                 rows: list[int]) -> None:
        self.cls = cls
        self.columns = columns
        self.positions = positions
        self.rows = rows
        n, p0, r0 = len(positions), positions[0], rows[0]
        step = positions[1] - p0 if n > 1 else 1
        regular = step > 0 and positions == list(range(p0, p0 + step * n, step)) \
            and rows == list(range(r0, r0 + n))
        self.take = slice(p0, p0 + step * (n - 1) + 1, step) if regular else None
        self.span = slice(r0, r0 + n) if regular else None


class _BlockPlan:
    """How the objects of a :meth:`Model.set_block` (distinct, live, of the model) sit in their
    classes' columns; the model keeps the last one while the same objects come again and no
    object dies. It doubles as the key of what a reader of the block derives from its objects
    (:attr:`AttributeBlock.objects_key`)."""

    __slots__ = ("deaths", "groups", "objects")

    def __init__(self, objects: list[MObject], deaths: int) -> None:
        self.objects = objects
        self.deaths = deaths
        by_class: dict[ModelClass, list[int]] = {}
        for i, o in enumerate(objects):
            by_class.setdefault(o.cls, []).append(i)
        self.groups = [_Group(cls, objects[positions[0]]._columns, positions,
                              [objects[i]._row for i in positions])
                       for cls, positions in by_class.items()]

    def apply(self, features: tuple[str, ...], columns: Sequence[Sequence[Any]]
              ) -> AttributeBlock | None:
        """Set the block's values class by class, column by column, and return the block; None
        (and nothing changed) if some value is not of its attribute's type or names no
        attribute (the checked path converts it or raises). Every value is checked before the
        first is stored."""
        n = len(self.objects)
        steps: list[tuple[int, str, _Group, Sequence[Any], bool]] = []
        size = 0
        for j, (feature, column) in enumerate(zip(features, columns, strict=True)):
            nones = column.count(None)
            if nones == n:
                continue
            size += n - nones
            for g in self.groups:
                values: Sequence[Any] = column[g.take] if g.take is not None else \
                    [column[i] for i in g.positions]
                kinds = set(map(type, values))
                if kinds == {_NONE}:
                    continue
                attr = g.cls.attributes.get(feature)
                if attr is None:
                    return None
                kind = _PYTYPES[attr.type]
                if kinds == {kind}:
                    steps.append((j, feature, g, values, True))
                elif kinds == {kind, _NONE}:
                    steps.append((j, feature, g, values, False))
                else:
                    return None
        old: list[list[Any]] = [[None] * n for _ in features]
        new: list[list[Any]] = [list(c) for c in columns]
        for j, feature, g, values, full in steps:
            stored, olds = g.columns[feature], old[j]
            if full and g.take is not None:
                olds[g.take] = stored[g.span]
                stored[g.span] = values
                continue
            for p, r, v in zip(g.positions, g.rows, values, strict=True):
                if v is not None:
                    olds[p] = stored[r]
                    stored[r] = v
        block = AttributeBlock(self.objects, features, old, new, size)
        block.objects_key = self
        return block


class Model:
    """A model (an instance of ``metamodel``) with change notifications and transactions."""

    def __init__(self, metamodel: Metamodel) -> None:
        self.metamodel = metamodel
        self._objects: dict[str, MObject] = {}
        self._log: list[Change | AttributeBlock] = []
        #: the objects deleted in the open transaction, per id in the order they died (for
        #: undo: an id deleted, created again and deleted again holds two)
        self._graveyard: dict[str, list[MObject]] = {}
        self._depth = 0
        self._txn_ts: float | None = None
        self._ts: float = 0
        self._commits = 0
        self._ids = itertools.count(1)
        self._seqs = itertools.count()
        self._listeners: list[Listener] = []
        self._pending: deque[Commit] = deque()
        self._delivering = False
        self._floats: dict[str, frozenset[str]] = {}  # class -> its float attributes
        self._stores: dict[str, Columns] = {}  # class -> the attribute values of its objects
        self._deaths = 0  # objects that stopped being alive (deleted, creation undone)
        self._block_plan: _BlockPlan | None = None  # set_block's last list of objects
        self._blocks = False  # the open transaction logged an AttributeBlock

    # ------------------------------------------------------------ reading

    def __getitem__(self, id: str) -> MObject:
        try:
            return self._objects[id]
        except KeyError:
            raise ModelError("no such object", id) from None

    def get(self, id: str) -> MObject | None:
        """The live object with this id, or None."""
        return self._objects.get(id)

    def __contains__(self, item: object) -> bool:
        if isinstance(item, MObject):
            return item.alive and item.model is self
        return item in self._objects

    def __len__(self) -> int:
        return len(self._objects)

    def objects(self) -> Iterator[MObject]:
        """Every live object, in creation order."""
        return iter(list(self._objects.values()))

    def instances(self, cls: ModelClass | str) -> list[MObject]:
        """Live objects that are instances of ``cls`` or of a subclass, in creation order."""
        name = self._class(cls).name
        return [o for o in self._objects.values() if name in o.cls.ancestors]

    @property
    def ts(self) -> float:
        """The timestamp of the last committed transaction (0 before the first)."""
        return self._ts

    @property
    def deaths(self) -> int:
        """How many objects stopped being alive so far (deleted, or their creation undone): a
        reader that kept objects of this model may use them while this stays the same."""
        return self._deaths

    @property
    def commits(self) -> int:
        """How many transactions were committed."""
        return self._commits

    @property
    def in_transaction(self) -> bool:
        """True inside ``with model.transaction()``."""
        return self._depth > 0

    def validate(self) -> list[str]:
        """Lower-bound violations (``obj.ref: needs at least n targets``), which changes never
        check: objects are created before their required references are set."""
        problems = []
        for obj in self._objects.values():
            for ref in obj.cls.references.values():
                if len(obj._refs[ref.name]) < ref.lower:
                    problems.append(f"{obj.id}.{ref.name}: needs at least {ref.lower} "
                                    f"target(s), has {len(obj._refs[ref.name])}")
        return problems

    # ------------------------------------------------------------ listeners

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(commit)`` after each commit; returns a function that unsubscribes."""
        return add_listener(self._listeners, listener)

    # ------------------------------------------------------------ transactions

    def transaction(self, ts: float | None = None) -> _Transaction:
        """Group changes; listeners get them at the end of the outermost transaction.

        ``ts`` (ms, the time of the changes — a Kinect frame's timestamp) must not be older
        than the previous commit's; it defaults to the previous one. A nested transaction joins
        the outer one (its ``ts``, if given, must be the outer one's). If the block raises,
        every change made in it is undone and the exception propagates.
        """
        if ts is not None:
            if isinstance(ts, bool) or not isinstance(ts, int | float):
                raise ModelError(f"transaction timestamp must be a number, got {ts!r}")
            if self._depth == 0 and ts < self._ts:
                raise ModelError(f"transaction timestamp {ts} is older than the previous "
                                 f"commit's ({self._ts})")
            if self._depth > 0 and ts != self._txn_ts:
                raise ModelError(f"nested transaction timestamp {ts} differs from the outer "
                                 f"transaction's ({self._txn_ts})")
        return _Transaction(self, ts)

    def _commit(self) -> None:
        log, self._log = self._log, []
        changes: tuple[Change, ...] | BlockChanges = tuple(log)  # type: ignore[arg-type]
        if self._blocks and any(e.__class__ is AttributeBlock for e in log):
            changes = BlockChanges(tuple(log))
        self._blocks = False
        for dead in self._graveyard.values():  # deleted for good: their rows are free
            for obj in dead:
                self._stores[obj.cls.name].release(obj)
        self._graveyard.clear()
        assert self._txn_ts is not None
        self._ts, self._txn_ts = self._txn_ts, None
        self._commits += 1
        self._pending.append(Commit(changes, self._ts, self._commits))
        if not self._delivering:
            self._deliver()

    def _deliver(self) -> None:
        """Deliver queued commits in order; re-raise the first listener error afterwards."""
        self._delivering = True
        error: BaseException | None = None
        try:
            while self._pending:
                commit = self._pending.popleft()
                # a frame's commit (blocks): its readers build many short-lived containers
                # (the query engine's columns, deltas): the collector waits until they are done
                with gc_paused() if commit.changes.__class__ is BlockChanges else _NO_PAUSE:
                    for listener in list(self._listeners):
                        try:
                            listener(commit)
                        except Exception as e:  # every listener still sees every commit
                            error = error or e
        finally:
            self._delivering = False
        if error is not None:
            raise error

    def _auto(self) -> _Transaction:
        """The implicit transaction around a mutation made outside any transaction."""
        return _Transaction(self, None)

    # ------------------------------------------------------------ mutations

    def create(self, cls: ModelClass | str, id: str | None = None, *,
               values: dict[str, Any] | None = None, **attrs: Any) -> MObject:
        """Create an object of ``cls`` with attribute values (others get their defaults).

        ``id`` is the object id (generated as ``Class#n`` if omitted). An attribute that is
        itself called ``id`` can be given in ``values``.
        """
        mclass = self._class(cls)
        given = {**(values or {}), **attrs}
        if mclass.abstract:
            raise ModelError(f"class {mclass.name} is abstract", id)
        if id is None:
            id = self._fresh_id(mclass.name)
        elif not isinstance(id, str) or not id:
            raise ModelError(f"object id must be a non-empty string, got {id!r}")
        elif id in self._objects:
            raise ModelError("an object with this id already exists", id)
        initial = {a.name: a.default for a in mclass.attributes.values()}
        for name, value in given.items():
            initial[name] = self._coerce(mclass, id, name, value)
        with self._auto():
            self._apply(Change("create", id, mclass.name, new=initial))
        return self._objects[id]

    def set(self, obj: ObjRef, feature: str, value: Any) -> None:
        """Set an attribute, or the target (an object or None) of a single-valued reference."""
        o = self._live(obj)
        ref = o.cls.references.get(feature)
        if ref is None:
            new = self._coerce(o.cls, o.id, feature, value)
            change = Change("set", o.id, o.cls.name, feature, o._columns[feature][o._row], new)
            if self._depth:  # inside a transaction (the hot path of a frame's updates)
                self._apply(change)
            else:
                with self._auto():
                    self._apply(change)
            return
        if ref.many:
            raise ModelError(f"reference is many-valued {ref.multiplicity}; use add/remove",
                             o.id, feature)
        current = next(iter(o._refs[feature]), None)
        target = None if value is None else self._live(value, o.id, feature)
        if target is current:
            return
        if target is not None:
            self._check_add(o, ref, target, replacing=current)
        with self._auto():
            if current is not None:
                self._apply(Change("remove", o.id, o.cls.name, feature, current.id, index=0))
            if target is not None:
                self._apply(Change("add", o.id, o.cls.name, feature, new=target.id, index=0))

    def set_many(self, rows: Iterable[tuple[ObjRef, str, Any]]) -> int:
        """Set many attributes at once — the readings of a sensor frame — and return how many
        ``set`` changes that made (one per row, in order, also for an unchanged value).

        Each row ``(object, attribute, value)`` is checked as it is applied; a bad row undoes
        the rows before it and raises :class:`ModelError` naming its object, attribute and row
        number (``.row``): the model is unchanged. The rows form one transaction, or join the
        open one. Attributes only: references change through :meth:`set`, :meth:`add` and
        :meth:`remove`. Why: one pass and one commit instead of a call (and, outside a
        transaction, a commit) per value — a sensor frame's hot path (docs/models.md).
        """
        if self._depth:
            return self._set_rows(rows)
        rows = list(rows)
        if not rows:
            return 0
        with self._auto():
            return self._set_rows(rows)

    def _set_rows(self, rows: Iterable[tuple[ObjRef, str, Any]]) -> int:
        """set_many inside a transaction: check and apply row by row; a bad row undoes the
        rows applied before it (the log is the undo record) and raises."""
        log = self._log
        mark = len(log)
        make = tuple.__new__
        last_ref: Any = _NOTHING
        o: Any = None
        floats: frozenset[str] = frozenset()
        n = 0
        try:
            for n, row in enumerate(rows):  # noqa: B007 - n names the bad row
                try:
                    obj, feature, value = row
                except (TypeError, ValueError):
                    raise ModelError(f"expected (object, attribute, value), got {row!r}"
                                     ) from None
                if feature.__class__ is not str:
                    raise ModelError(f"attribute names are strings, got {feature!r}")
                if obj is not last_ref or not o.alive:
                    if obj.__class__ is MObject and obj.model is self and obj.alive:
                        o = obj
                    else:
                        o = self._live(obj)
                    last_ref = obj
                    floats = self._floats.get(o.cls.name) or self._float_attributes(o.cls)
                if type(value) is not float or feature not in floats:
                    value = self._coerce(o.cls, o.id, feature, value)
                column = o._columns[feature]
                log.append(make(Change, ("set", o.id, o.cls.name, feature, column[o._row],
                                         value, None)))
                column[o._row] = value
        except ModelError as e:
            self._undo_to(mark)
            raise ModelError(e.reason, e.obj, e.feature, row=n) from None
        return len(log) - mark

    def set_block(self, objects: Sequence[ObjRef], features: Sequence[str],
                  columns: Sequence[Sequence[Any]]) -> int:
        """Set attributes of many objects at once, column by column: ``columns[j][i]`` is the
        new value of attribute ``features[j]`` of ``objects[i]`` (None: not set). Returns the
        number of ``set`` changes — the same changes, in the same order (object after object,
        attributes in order), as :meth:`set_many` of the rows ``(objects[i], features[j],
        columns[j][i])`` that are not None — but logged as one
        :class:`~cepflow.models.changes.AttributeBlock`: the commit's changes are made only
        when a listener reads them, and the query engine takes the block column-wise (a sensor
        frame of many bodies, docs/models.md "Frames").

        Checked as it is applied; a bad value (unknown object or attribute, a reference, a
        wrong type) undoes the block and raises :class:`ModelError` whose ``.row`` is the
        object's position ``i``: the model is unchanged. An object none of whose values is set
        is not checked (set_many has no row of it). One transaction, or joins the open one.
        """
        if len(columns) != len(features):
            raise ModelError(f"{len(features)} attribute(s) and {len(columns)} column(s)")
        features = tuple(features)
        columns = [c if isinstance(c, list | tuple) else list(c) for c in columns]
        for f in features:
            if f.__class__ is not str:
                raise ModelError(f"attribute names are strings, got {f!r}")
        n = len(objects)
        for f, col in zip(features, columns, strict=True):
            if len(col) != n:
                raise ModelError(f"column {f} has {len(col)} value(s) for {n} object(s)")
        if not n:
            return 0
        if self._depth:
            return self._set_block(objects, features, columns)
        with self._auto():
            return self._set_block(objects, features, columns)

    def _set_block(self, objects: Sequence[ObjRef], features: tuple[str, ...],
                   columns: Sequence[Sequence[Any]]) -> int:
        plan = self._plan(objects)
        if plan is not None:
            block = plan.apply(features, columns)
            if block is not None:
                self._log.append(block)
                self._blocks = True
                return block.size
        return self._set_block_checked(objects, features, columns)

    def _plan(self, objects: Sequence[ObjRef]) -> _BlockPlan | None:
        """How ``objects`` sit in their classes' columns (:class:`_BlockPlan`), kept while the
        same list comes again and no object died; None if they are not distinct live objects
        of this model (the checked path then raises or handles them)."""
        plan = self._block_plan
        if plan is not None and plan.deaths == self._deaths and objects == plan.objects:
            return plan
        objs = list(objects)
        if set(map(type, objs)) != {MObject} or not all(
                o.model is self and o.alive for o in objs) or len(set(objs)) != len(objs):
            return None
        plan = self._block_plan = _BlockPlan(objs, self._deaths)
        return plan

    def _set_block_checked(self, objects: Sequence[ObjRef], features: tuple[str, ...],
                           columns: Sequence[Sequence[Any]]) -> int:
        """set_block value by value (any objects, values needing conversion, errors)."""
        n = len(objects)
        # an object none of whose values is set is left out of the block, unchecked: set_many
        # has no row of it (so a deleted or unknown object there is no error)
        keep = [i for i in range(n) if any(c[i] is not None for c in columns)]
        m = len(keep)
        targets: list[MObject] = []
        old: list[list[Any]] = [[None] * m for _ in features]
        new: list[list[Any]] = [[None] * m for _ in features]
        block = AttributeBlock(targets, features, old, new, 0)
        # one pass over the objects (each object and its values touched once), the columns
        # that set nothing left out
        cols = [(f, c, o, v) for f, c, o, v in zip(features, columns, old, new, strict=True)
                if c.count(None) != n]
        add = targets.append
        floats_of = self._floats
        size = 0
        i = 0
        try:
            for k, i in enumerate(keep):  # (i names the bad object)
                obj = objects[i]
                if obj.__class__ is MObject and obj.model is self and obj.alive:  # type: ignore[union-attr]
                    o: MObject = obj  # type: ignore[assignment]
                else:
                    o = self._live(obj)
                add(o)
                cls = o.cls
                floats = floats_of.get(cls.name) or self._float_attributes(cls)
                stored, row = o._columns, o._row
                for feature, column, olds, news in cols:
                    value = column[i]
                    if value is None:
                        continue
                    if value.__class__ is not float or feature not in floats:
                        value = self._coerce(cls, o.id, feature, value)
                    values = stored[feature]
                    olds[k] = values[row]
                    values[row] = news[k] = value
                    size += 1
        except ModelError as e:
            block.size = size
            self._undo_block(block)
            raise ModelError(e.reason, e.obj, e.feature, row=i) from None
        block.size = size
        self._log.append(block)
        self._blocks = True
        return size

    def _undo_block(self, block: AttributeBlock) -> None:
        """Give the objects of ``block`` their old values back (last set first)."""
        for i in range(len(block.targets) - 1, -1, -1):
            o = block.targets[i]
            for j in range(len(block.features) - 1, -1, -1):
                if block.new[j][i] is not None:
                    o._columns[block.features[j]][o._row] = block.old[j][i]

    def _float_attributes(self, cls: ModelClass) -> frozenset[str]:
        """The float attributes of ``cls`` (a float value needs no conversion for them)."""
        floats = self._floats.get(cls.name)
        if floats is None:
            floats = self._floats[cls.name] = frozenset(
                a.name for a in cls.attributes.values() if a.type == "float")
        return floats

    def add(self, obj: ObjRef, ref: str, target: ObjRef) -> None:
        """Add ``target`` at the end of reference ``ref`` of ``obj``."""
        o = self._live(obj)
        r = self._reference(o, ref)
        t = self._live(target, o.id, ref)
        self._check_add(o, r, t)
        with self._auto():
            self._apply(Change("add", o.id, o.cls.name, ref, new=t.id, index=len(o._refs[ref])))

    def remove(self, obj: ObjRef, ref: str, target: ObjRef) -> None:
        """Remove ``target`` from reference ``ref`` of ``obj``."""
        o = self._live(obj)
        self._reference(o, ref)
        t = self._live(target, o.id, ref)
        if t not in o._refs[ref]:
            raise ModelError(f"does not contain {t.id}", o.id, ref)
        with self._auto():
            self._apply(Change("remove", o.id, o.cls.name, ref, t.id,
                               index=list(o._refs[ref]).index(t)))

    def delete(self, obj: ObjRef) -> None:
        """Delete ``obj``: what it contains first (depth first), then every reference to and
        from it, then the object itself — each as its own change."""
        o = self._live(obj)
        with self._auto():
            self._delete(o)

    def _delete(self, o: MObject) -> None:
        for ref in o.cls.references.values():
            if ref.containment:
                for child in list(o._refs[ref.name]):
                    self._delete(child)
        for src, feature in list(o._incoming):
            self._apply(Change("remove", src.id, src.cls.name, feature, o.id,
                               index=list(src._refs[feature]).index(o)))
        for feature, targets in o._refs.items():
            for t in reversed(list(targets)):
                self._apply(Change("remove", o.id, o.cls.name, feature, t.id,
                                   index=len(targets) - 1))
        self._apply(Change("delete", o.id, o.cls.name, old=Columns.values(o)))

    # ------------------------------------------------------------ validation helpers

    def _class(self, cls: ModelClass | str) -> ModelClass:
        if isinstance(cls, ModelClass):
            if self.metamodel.classes.get(cls.name) is not cls:
                raise ModelError(f"class {cls.name} is not from metamodel {self.metamodel.name}")
            return cls
        try:
            return self.metamodel[cls]
        except KeyError as e:
            raise ModelError(e.args[0]) from None

    def _live(self, obj: ObjRef, src: str | None = None, feature: str | None = None) -> MObject:
        """The live object for ``obj`` (an object or an id) — of this model."""
        if isinstance(obj, MObject):
            if obj.model is not self:
                raise ModelError(f"{obj.id} belongs to another model", src or obj.id, feature)
            if not obj.alive:
                what = f"target {obj.id} is deleted" if src else "object is deleted"
                raise ModelError(what, src or obj.id, feature)
            return obj
        if isinstance(obj, str):
            o = self._objects.get(obj)
            if o is None:
                raise ModelError(f"no object '{obj}'" if src else "no such object",
                                 src or obj, feature)
            return o
        raise ModelError(f"expected an object or an object id, got {obj!r}", src, feature)

    def _coerce(self, cls: ModelClass, obj_id: str | None, name: str, value: Any) -> Any:
        attr: Attribute | None = cls.attributes.get(name)
        if attr is None:
            reason = (f"'{name}' is a reference of {cls.name}, not an attribute"
                      if name in cls.references else _no_feature(cls, name))
            raise ModelError(reason, obj_id, name)
        try:
            return coerce_value(attr.type, value)
        except TypeError as e:
            raise ModelError(f"wrong type: {e}", obj_id, name) from None

    def _reference(self, o: MObject, ref: str) -> Reference:
        r = o.cls.references.get(ref)
        if r is None:
            raise ModelError(_no_reference(o.cls, ref), o.id, ref)
        return r

    def _check_add(self, o: MObject, ref: Reference, t: MObject,
                   replacing: MObject | None = None) -> None:
        where = (o.id, ref.name)
        if not t.cls.is_a(ref.target):
            raise ModelError(f"target {t.id} is a {t.cls.name}, not an instance of {ref.target}",
                             *where)
        targets = o._refs[ref.name]
        if t in targets:
            raise ModelError(f"already contains {t.id}", *where)
        size = len(targets) - (replacing is not None)
        if ref.upper != MANY and size >= ref.upper:
            raise ModelError(f"multiplicity upper bound {ref.upper} exceeded "
                             f"{ref.multiplicity} by adding {t.id}", *where)
        if ref.containment:
            if t._container is not None and t._container != (o, ref.name):
                c, f = t._container
                raise ModelError(f"{t.id} is already contained in {c.id}.{f} "
                                 f"(an object has at most one container)", *where)
            ancestor: MObject | None = o
            while ancestor is not None:
                if ancestor is t:
                    raise ModelError(f"containment cycle: {t.id} contains {o.id}"
                                     if t is not o else "containment cycle: an object cannot "
                                     "contain itself", *where)
                ancestor = ancestor.container

    def _fresh_id(self, cls_name: str) -> str:
        while True:
            candidate = f"{cls_name}#{next(self._ids)}"
            if candidate not in self._objects:
                return candidate

    # ------------------------------------------------------------ applying and undoing

    def _apply(self, ch: Change) -> None:
        """Apply a validated change and log it."""
        self._do(ch, forward=True)
        self._log.append(ch)

    def _undo_to(self, mark: int) -> None:
        revived = False
        while len(self._log) > mark:
            ch = self._log.pop()
            if ch.__class__ is AttributeBlock:
                self._undo_block(ch)  # type: ignore[arg-type]
                continue
            self._do(ch, forward=False)  # type: ignore[arg-type]
            revived = revived or ch.kind == "delete"  # type: ignore[union-attr]
        if revived:  # back in creation order
            self._objects = dict(sorted(self._objects.items(), key=lambda kv: kv[1]._seq))

    def _do(self, ch: Change, forward: bool) -> None:
        """Apply ``ch`` (forward) or its inverse; no validation."""
        kind = ch.kind
        if kind == "set":
            assert ch.feature is not None
            o = self._objects[ch.obj]
            o._columns[ch.feature][o._row] = ch.new if forward else ch.old
        elif kind in ("add", "remove"):
            target = ch.new if kind == "add" else ch.old
            if (kind == "add") == forward:
                self._link(ch, target)
            else:
                self._unlink(ch, target)
        elif kind == "create" and forward:
            store = self._store(ch.cls)
            self._objects[ch.obj] = MObject(self, ch.obj, self.metamodel.classes[ch.cls],
                                            store.lists, store.add(ch.new), next(self._seqs))
        elif kind == "delete" and not forward:  # the same object comes back to life
            dead = self._graveyard[ch.obj]
            obj = dead.pop()
            if not dead:
                del self._graveyard[ch.obj]
            obj.alive = True
            self._objects[ch.obj] = obj
        else:
            obj = self._objects.pop(ch.obj)
            obj.alive = False
            self._deaths += 1
            if forward:
                self._graveyard.setdefault(ch.obj, []).append(obj)
            else:  # a creation undone: its row is free again
                self._stores[ch.cls].release(obj)

    def _store(self, cls: str) -> Columns:
        """The columns of class ``cls``'s objects (made with the first one)."""
        store = self._stores.get(cls)
        if store is None:
            store = self._stores[cls] = Columns(self.metamodel.classes[cls].attributes)
        return store

    def _link(self, ch: Change, target_id: str) -> None:
        src, t, feature = self._objects[ch.obj], self._objects[target_id], ch.feature
        assert feature is not None and ch.index is not None
        targets = src._refs[feature]
        if ch.index >= len(targets):
            targets[t] = None
        else:
            items = list(targets)
            items.insert(ch.index, t)
            src._refs[feature] = dict.fromkeys(items)
        t._incoming[(src, feature)] = None
        if src.cls.references[feature].containment:
            t._container = (src, feature)

    def _unlink(self, ch: Change, target_id: str) -> None:
        src, t, feature = self._objects[ch.obj], self._objects[target_id], ch.feature
        assert feature is not None
        del src._refs[feature][t]
        del t._incoming[(src, feature)]
        if t._container == (src, feature):
            t._container = None


class _Transaction:
    """``with model.transaction(ts)``: a plain context manager (not a generator — one is
    entered per sensor frame and body)."""

    __slots__ = ("mark", "model", "ts")

    def __init__(self, model: Model, ts: float | None) -> None:
        self.model = model
        self.ts = ts
        self.mark = 0

    def __enter__(self) -> Model:
        m = self.model
        if m._depth == 0:
            m._txn_ts = m._ts if self.ts is None else self.ts
        self.mark = len(m._log)
        m._depth += 1
        return m

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 tb: TracebackType | None) -> None:
        m = self.model
        if kind is not None:
            m._undo_to(self.mark)
            m._depth -= 1
            if m._depth == 0:
                m._txn_ts = None
                m._blocks = False
            return  # the exception propagates
        m._depth -= 1
        if m._depth == 0:
            m._commit()
