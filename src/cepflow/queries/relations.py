"""The engine's memories: sets of tuples with hash indexes, changed one tuple at a time.

A :class:`Relation` holds the tuples of one base relation (class extent, reference edges,
attribute values, history values) or of a pattern's matches; a :class:`Projection` counts a
pattern's matches per key of some of their positions (what a ``neg find`` asks about).

While an update is being propagated, ``pending``/``pending_sign`` hold it: join steps that
must see the relation *after* the update (see :mod:`cepflow.queries.plans`) read them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from operator import itemgetter
from typing import Any

#: Called with (tuple or key, sign) for every update of a relation, before it is applied.
Subscriber = Callable[[Any, int], None]

EMPTY: frozenset[Any] = frozenset()


def key_function(columns: tuple[int, ...]) -> Callable[[tuple[Any, ...]], Any]:
    """Extract the key of ``columns`` from a tuple: the bare value for one column, else a
    tuple (how every index and projection keys its entries)."""
    if not columns:
        return lambda t: ()
    return itemgetter(*columns)


class Relation:
    """A set of tuples of one arity, with indexes on column subsets created on demand."""

    __slots__ = ("_indexes", "arity", "modifiers", "name", "pending", "pending_sign", "shape",
                 "subscribers", "tuples", "unmodified", "version")

    def __init__(self, name: str, arity: int) -> None:
        self.name = name
        self.arity = arity
        self.tuples: set[tuple[Any, ...]] = set()
        self._indexes: dict[tuple[int, ...], tuple[Callable[..., Any], dict[Any, set[Any]]]] = {}
        self.subscribers: list[Subscriber] = []
        # an in-place update of a functional relation (object, value): the plans that take it
        # in one join (``modify(obj, old, new)``) and the subscribers of the others
        self.modifiers: list[Callable[[Any, Any, Any], None]] = []
        self.unmodified: list[Subscriber] = []
        self.pending: Any = None
        self.pending_sign = 0
        # count the changes (what cached reads of it were made from): every change, and the
        # insertions and deletions only — not the values replaced in place, which no join
        # reads but the in-place plans (cepflow.queries.bulk)
        self.version = 0
        self.shape = 0

    def index(self, columns: tuple[int, ...]) -> dict[Any, set[tuple[Any, ...]]]:
        """The index key(columns) -> tuples, built now if it does not exist yet."""
        entry = self._indexes.get(columns)
        if entry is None:
            key = key_function(columns)
            index: dict[Any, set[tuple[Any, ...]]] = {}
            for t in self.tuples:
                index.setdefault(key(t), set()).add(t)
            entry = self._indexes[columns] = (key, index)
        return entry[1]

    def insert(self, t: tuple[Any, ...]) -> None:
        self.version += 1
        self.shape += 1
        self.tuples.add(t)
        for key, index in self._indexes.values():
            k = key(t)
            bucket = index.get(k)
            if bucket is None:
                index[k] = {t}
            else:
                bucket.add(t)

    def delete(self, t: tuple[Any, ...]) -> None:
        self.version += 1
        self.shape += 1
        self.tuples.discard(t)
        for key, index in self._indexes.values():
            k = key(t)
            bucket = index[k]
            bucket.discard(t)
            if not bucket:
                del index[k]

    def replace(self, old: tuple[Any, ...], new: tuple[Any, ...]) -> None:
        """``delete(old)`` then ``insert(new)``, keeping the buckets they share (an object's
        value changing in an index on the object)."""
        self.replace_all(((old, new),))

    def replace_values(self, old: dict[Any, Any], new: dict[Any, Any]) -> None:
        """:meth:`replace` of ``(obj, old[obj])`` by ``(obj, new[obj])`` for every object of
        ``new`` (a functional relation's values changed by a block): the tuple set changed
        in two C-level passes (the objects are distinct, so no pair touches another's tuples),
        an index on the object bucket by bucket."""
        olds = list(zip(new, map(old.__getitem__, new), strict=True))
        news = list(new.items())
        if any(columns != (0,) for columns in self._indexes):
            self.replace_all(zip(olds, news, strict=True))
            return
        self.version += 1
        self.tuples.difference_update(olds)
        self.tuples.update(news)
        for _, index in self._indexes.values():
            for obj, t_old, t_new in zip(new, olds, news, strict=True):
                bucket = index[obj]
                bucket.discard(t_old)
                bucket.add(t_new)

    def replace_all(self, pairs: Iterable[tuple[tuple[Any, ...], tuple[Any, ...]]]) -> None:
        """:meth:`replace` of each ``(old, new)`` pair, in order."""
        self.version += 1
        tuples = self.tuples
        indexes = list(self._indexes.values())
        for old, new in pairs:
            tuples.discard(old)
            tuples.add(new)
            for key, index in indexes:
                k_old, k_new = key(old), key(new)
                bucket = index[k_old]
                bucket.discard(old)
                if k_old == k_new:
                    bucket.add(new)
                    continue
                if not bucket:
                    del index[k_old]
                target = index.get(k_new)
                if target is None:
                    index[k_new] = {new}
                else:
                    target.add(new)

    def __repr__(self) -> str:
        return f"<relation {self.name}: {len(self.tuples)} tuples>"


class Projection:
    """How many matches of a pattern have each key at ``columns``; a key is *present* while
    its count is positive."""

    __slots__ = ("columns", "counts", "key", "name", "pending", "pending_sign", "shape",
                 "subscribers")

    def __init__(self, name: str, columns: tuple[int, ...]) -> None:
        self.name = name
        self.columns = columns
        self.key = key_function(columns)
        self.counts: dict[Any, int] = {}
        self.subscribers: list[Subscriber] = []
        self.pending: Any = None
        self.pending_sign = 0
        self.shape = 0  # counts the keys becoming present or absent

    def __repr__(self) -> str:
        return f"<projection {self.name}{list(self.columns)}: {len(self.counts)} keys>"
