"""Change notifications: the elementary changes of a model and the committed transactions.

Every change to a model is one :class:`Change` (EMF's notifications, 002 §3.1 "elementary
changes"). A transaction's changes are delivered together as a :class:`Commit` (one Kinect
frame = one transaction). Changes carry everything needed to replay them without reading the
model — the query engine relies on this, because by the time it sees a commit a listener that
ran before it may already have changed the model again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, NamedTuple, overload

ChangeKind = Literal["create", "delete", "set", "add", "remove"]


class Change(NamedTuple):
    """One elementary change of object ``obj`` (an id) of class ``cls``.

    * ``create``: ``new`` is the dict of every attribute's initial value.
    * ``delete``: ``old`` is the dict of every attribute's last value. Its references were
      removed (and contained objects deleted) by the changes just before it.
    * ``set``: attribute ``feature`` went from ``old`` to ``new`` (possibly equal: a set is
      recorded even when it does not change the value — it still is an observation).
    * ``add`` / ``remove``: target id ``new`` / ``old`` added to / removed from reference
      ``feature`` at position ``index``.

    A named tuple (immutable, compared by value) rather than a frozen dataclass: a Kinect
    frame makes 40 of them, and building a frozen dataclass costs seven times as much.
    """

    kind: ChangeKind
    obj: str
    cls: str
    feature: str | None = None
    old: Any = None
    new: Any = None
    index: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (for logs and tests)."""
        d: dict[str, Any] = {"kind": self.kind, "obj": self.obj, "class": self.cls}
        for key in ("feature", "old", "new", "index"):
            value = getattr(self, key)
            if value is not None:
                d[key] = value
        return d


#: Below this many values, a frame's readings are worth no block: FrameLayout.apply_frame
#: sets them as ordinary changes, and the query engine takes a commit of fewer changes change
#: by change (the bulk path's fixed cost, ~0.5 ms a frame, exceeds its gain below about six
#: gesture bodies; benchmarks/README.md, gesture_live).
BLOCK_MIN = 256


class AttributeBlock:
    """Attribute sets of many objects made by one call (:meth:`Model.set_block
    <cepflow.models.Model.set_block>`), kept as columns: for every object ``i`` (id
    ``objects[i]``, class ``classes[i]``) and every attribute ``j`` of ``features`` whose
    ``new[j][i]`` is not None, the change ``set`` of ``features[j]`` from ``old[j][i]`` to
    ``new[j][i]`` — object after object, attributes in order (:meth:`changes`).

    Why: a sensor frame of a thousand bodies sets 40,000 attributes; as columns they are made
    and read without one :class:`Change` each (the query engine's bulk path reads the columns;
    any other reader of the commit gets the same changes, made when it asks).
    """

    __slots__ = ("_classes", "_ids", "features", "new", "objects_key", "old", "size", "targets")

    def __init__(self, targets: list[Any], features: tuple[str, ...], old: list[list[Any]],
                 new: list[list[Any]], size: int) -> None:
        self.targets = targets  # the objects (MObjects), ids and classes read when asked
        self.features = features
        self.old = old
        self.new = new
        self.size = size  # how many sets (values that are not None)
        self._ids: list[str] | None = None
        self._classes: list[str] | None = None
        #: stands for the list of objects — the same while the same objects come again and
        #: none died (what a reader derives from them can be kept under it); None: unknown
        self.objects_key: Any = None

    @property
    def objects(self) -> list[str]:
        """The objects' ids."""
        if self._ids is None:
            self._ids = [o.id for o in self.targets]
        return self._ids

    @property
    def classes(self) -> list[str]:
        """The objects' class names."""
        if self._classes is None:
            self._classes = [o.cls.name for o in self.targets]
        return self._classes

    def changes(self) -> Iterator[Change]:
        """The block as elementary changes, in order."""
        make = tuple.__new__
        rows = list(enumerate(zip(self.features, self.old, self.new, strict=True)))
        for i, (obj, cls) in enumerate(zip(self.objects, self.classes, strict=True)):
            for _, (feature, old, new) in rows:
                value = new[i]
                if value is not None:
                    yield make(Change, ("set", obj, cls, feature, old[i], value, None))

    def __repr__(self) -> str:
        return f"<AttributeBlock {self.size} set(s) of {len(self.objects)} object(s)>"


class BlockChanges(Sequence[Change]):
    """The changes of a commit that holds attribute blocks: a sequence of :class:`Change` like
    the tuple of any other commit (the same changes, in order, compared equal to that tuple),
    whose blocks are made into changes only when read; ``entries`` holds the changes and
    blocks as they were made."""

    __slots__ = ("_size", "_tuple", "entries")

    def __init__(self, entries: tuple[Change | AttributeBlock, ...]) -> None:
        self.entries = entries
        self._size = sum(e.size if e.__class__ is AttributeBlock else 1  # type: ignore[union-attr]
                         for e in entries)
        self._tuple: tuple[Change, ...] | None = None

    def as_tuple(self) -> tuple[Change, ...]:
        """Every change, made once and kept."""
        if self._tuple is None:
            self._tuple = tuple(self)
        return self._tuple

    def __iter__(self) -> Iterator[Change]:
        if self._tuple is not None:
            yield from self._tuple
            return
        for e in self.entries:
            if e.__class__ is AttributeBlock:
                yield from e.changes()  # type: ignore[union-attr]
            else:
                yield e  # type: ignore[misc]

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> Change: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Change, ...]: ...

    def __getitem__(self, index: int | slice) -> Change | tuple[Change, ...]:
        return self.as_tuple()[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BlockChanges | tuple | list):
            return self.as_tuple() == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"BlockChanges({len(self)} change(s) in {len(self.entries)} entries)"


class Commit(NamedTuple):
    """A committed transaction: its changes in order, its timestamp and its number (from 1).
    A named tuple, like :class:`Change`: one is made per frame and body. ``changes`` is a
    tuple, or :class:`BlockChanges` when the transaction set attributes in blocks."""

    changes: tuple[Change, ...] | BlockChanges
    ts: float
    number: int


def add_listener(listeners: list[Any], listener: Any) -> Callable[[], None]:
    """Append ``listener`` to ``listeners``; return the function that removes it again (the
    subscribe protocol of models, query engines, query event sources and live sessions)."""
    listeners.append(listener)

    def unsubscribe() -> None:
        if listener in listeners:
            listeners.remove(listener)

    return unsubscribe
