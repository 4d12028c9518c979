"""Change notifications: the elementary changes of a model and the committed transactions.

Every change to a model is one :class:`Change` (EMF's notifications, 002 §3.1 "elementary
changes"). A transaction's changes are delivered together as a :class:`Commit` (one Kinect
frame = one transaction). Changes carry everything needed to replay them without reading the
model — the query engine relies on this, because by the time it sees a commit a listener that
ran before it may already have changed the model again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, NamedTuple

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


class Commit(NamedTuple):
    """A committed transaction: its changes in order, its timestamp and its number (from 1).
    A named tuple, like :class:`Change`: one is made per frame and body."""

    changes: tuple[Change, ...]
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
