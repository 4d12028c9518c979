"""What a data-window statement says: the AST-like description the runtime executes.

A :class:`WindowStatement` is the runtime's view of one Esper-style statement such as::

    insert into AccidentsReport
    select location, count(*) as n
    from Accident(speed > 0) as a1 #time_batch(1 day)
    group by location having count(*) > 2

It holds ``cepflow.language.ast`` expressions (the same nodes the DSL parser and the Python
builder produce), so the language front end only has to fill the fields in; nothing is parsed
or evaluated here. Aggregates are ``ast.Call`` nodes named ``count``, ``sum``, ``avg``, ``min``
or ``max`` with one argument; ``count(*)`` is ``Call("count", ())`` (what ``count()`` parses to)
or ``Call("count", (Name("*"),))``. See ``docs/windows.md`` for the semantics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cepflow.language import ast

WindowKind = ast.DataWindowKind

#: Esper's view names (``#time``, ``win:time`` …) for each kind, for messages and docs.
ESPER_NAMES: dict[str, str] = {
    "time": "#time", "length": "#length", "time_batch": "#time_batch",
    "length_batch": "#length_batch",
}


class WindowError(Exception):
    """A statement that cannot run (invalid description) or input it cannot take; for input,
    ``statement``, ``field`` (the expression it could not use) and ``value`` say what."""

    def __init__(self, message: str, loc: ast.Loc = None, *, statement: str | None = None,
                 field: str | None = None, value: Any = None) -> None:
        super().__init__(message)
        self.loc = loc
        self.statement, self.field, self.value = statement, field, value


@dataclass(frozen=True)
class WindowSpec:
    """The data window of a statement.

    ``size`` is a duration in the unit of ``Event.ts`` (milliseconds in cepflow) for ``time``
    and ``time_batch``, a number of events for ``length`` and ``length_batch``.
    ``reference_point`` (``time_batch`` only) anchors batch boundaries at
    ``reference_point + k * size``, as Esper's optional second parameter; without it the first
    event's timestamp is the reference point. ``per_group`` keeps a separate window per
    ``group by`` value (Esper's ``#groupwin(<group by>)#length(n)``); length windows only.
    """

    kind: WindowKind
    size: float
    reference_point: float | None = None
    per_group: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ESPER_NAMES:
            raise WindowError(f"unknown window kind {self.kind!r} "
                              f"(known: {', '.join(ESPER_NAMES)})")
        if isinstance(self.size, bool) or not isinstance(self.size, int | float):
            raise WindowError(f"window size must be a number, not {self.size!r}")
        if not self.size > 0 or self.size != self.size or self.size == float("inf"):
            raise WindowError(f"window size must be a positive finite number, not {self.size!r}")
        if self.kind in ("length", "length_batch") and int(self.size) != self.size:
            raise WindowError(f"{ESPER_NAMES[self.kind]} needs a whole number of events, "
                              f"not {self.size!r}")
        if self.reference_point is not None and self.kind != "time_batch":
            raise WindowError(f"a reference point applies to #time_batch only, not "
                              f"{ESPER_NAMES[self.kind]}")
        if self.per_group and self.kind not in ("length", "length_batch"):
            raise WindowError(
                f"per-group windows (#groupwin) are supported for #length and #length_batch; "
                f"for {ESPER_NAMES[self.kind]} use one window with group by, which gives the "
                "same aggregates per group")

    @classmethod
    def time(cls, duration: float) -> WindowSpec:
        """Sliding time window ``#time(duration)``: events of the last ``duration``."""
        return cls("time", duration)

    @classmethod
    def length(cls, n: int, per_group: bool = False) -> WindowSpec:
        """Sliding length window ``#length(n)``: the last ``n`` events (per group if asked)."""
        return cls("length", n, per_group=per_group)

    @classmethod
    def time_batch(cls, duration: float, reference_point: float | None = None) -> WindowSpec:
        """Tumbling time window ``#time_batch(duration[, reference_point])``."""
        return cls("time_batch", duration, reference_point)

    @classmethod
    def length_batch(cls, n: int, per_group: bool = False) -> WindowSpec:
        """Tumbling length window ``#length_batch(n)``: batches of ``n`` events."""
        return cls("length_batch", n, per_group=per_group)

    @property
    def is_batch(self) -> bool:
        return self.kind in ("time_batch", "length_batch")

    def __str__(self) -> str:
        args = [_number(self.size)]
        if self.reference_point is not None:
            args.append(_number(self.reference_point))
        text = f"{ESPER_NAMES[self.kind]}({', '.join(args)})"
        return f"#groupwin(<group by>){text}" if self.per_group else text


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


@dataclass(frozen=True)
class SelectItem:
    """One column of the select list: an expression and the output parameter it becomes."""

    expr: ast.Expr
    alias: str | None = None


SelectLike = SelectItem | tuple[ast.Expr, str | None] | ast.Expr


def _select_item(item: SelectLike) -> SelectItem:
    if isinstance(item, SelectItem):
        return item
    if isinstance(item, tuple):
        expr, alias = item
        return SelectItem(expr, alias)
    return SelectItem(item)


@dataclass(frozen=True)
class WindowStatement:
    """``insert into name select … from input_type(filter) as alias window group by … having …``.

    ``select`` items may be given as :class:`SelectItem`, ``(expr, alias)`` pairs or bare
    expressions; they are normalised to :class:`SelectItem`. ``alias`` is the stream alias, so
    that ``a1.location`` (``Name("a1", ("location",))``) means the field ``location``.
    """

    name: str
    input_type: str
    window: WindowSpec
    select: tuple[SelectItem, ...]
    filter: ast.Expr | None = None
    group_by: tuple[ast.Expr, ...] = ()
    having: ast.Expr | None = None
    alias: str | None = None
    loc: ast.Loc = field(default=None, compare=False, repr=False)
    #: further input types read as one stream with ``input_type`` (a union; same fields)
    more_inputs: tuple[str, ...] = field(default=(), repr=False)

    @property
    def input_types(self) -> tuple[str, ...]:
        """Every event type the statement reads."""
        return (self.input_type, *self.more_inputs)

    def __post_init__(self) -> None:
        items: Sequence[SelectLike] = self.select
        object.__setattr__(self, "select", tuple(_select_item(i) for i in items))
        object.__setattr__(self, "group_by", tuple(self.group_by))
        if not self.select:
            raise WindowError(f"statement '{self.name}': the select list is empty", self.loc)
        if self.window.per_group and not self.group_by:
            raise WindowError(f"statement '{self.name}': a per-group window needs group by",
                              self.loc)
