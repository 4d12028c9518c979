"""Multisets (seed 004 Def. 1) and CPN Tools' notation for them.

A multiset over colours is a function ``C`` from colours to the naturals; here a mapping
colour → count with no zero entries. ``C1 + C2``, ``C1 ⊆ C2`` and ``C2 - C1`` (defined when
``C1 ⊆ C2``) are Def. 1's operations. :func:`cpn_multiset` writes one as CPN Tools shows
markings — ``n`v`` for ``n`` tokens of colour ``v``, ``++`` between them
(``1`(14,"Barbara",5)++2`3``) — with colours in a stable order, and :func:`cpn_value` one
colour in CPN ML's literal syntax (negative numbers as ``~3``, strings in double quotes,
products in parentheses, lists in brackets).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any


class Multiset:
    """A finite multiset of hashable colours."""

    __slots__ = ("_c",)

    def __init__(self, items: Iterable[Any] | Mapping[Any, int] = ()) -> None:
        self._c: dict[Any, int] = {}
        if isinstance(items, Mapping):
            for v, n in items.items():
                self.add(v, n)
        else:
            for v in items:
                self.add(v)

    # -- Def. 1 -----------------------------------------------------------------------
    def count(self, value: Any) -> int:
        """``C(x)``: how many tokens of colour ``value``."""
        return self._c.get(value, 0)

    def add(self, value: Any, n: int = 1) -> None:
        if n < 0:
            raise ValueError("a multiset count cannot be negative")
        if n:
            self._c[value] = self._c.get(value, 0) + n

    def remove(self, value: Any, n: int = 1) -> None:
        """Take ``n`` tokens of ``value`` (ValueError when there are fewer)."""
        have = self._c.get(value, 0)
        if have < n:
            raise ValueError(f"cannot take {n} of {value!r}: only {have}")
        if have == n:
            del self._c[value]
        else:
            self._c[value] = have - n

    def __le__(self, other: Multiset) -> bool:
        """``C1 ⊆ C2``."""
        return all(other.count(v) >= n for v, n in self._c.items())

    def __add__(self, other: Multiset) -> Multiset:
        out = self.copy()
        for v, n in other._c.items():
            out.add(v, n)
        return out

    def __sub__(self, other: Multiset) -> Multiset:
        """``C2 - C1``, defined when ``C1 ⊆ C2`` (ValueError otherwise)."""
        if not other <= self:
            raise ValueError("multiset subtraction C2 - C1 needs C1 ⊆ C2")
        out = self.copy()
        for v, n in other._c.items():
            out.remove(v, n)
        return out

    # -- container protocol --------------------------------------------------------------
    def copy(self) -> Multiset:
        out = Multiset()
        out._c = dict(self._c)
        return out

    def items(self) -> Iterator[tuple[Any, int]]:
        """(colour, count) pairs in the stable order of :func:`order_key`."""
        return iter(sorted(self._c.items(), key=lambda kv: order_key(kv[0])))

    def distinct(self) -> list[Any]:
        """The colours present (each once), unordered: for binding enumeration."""
        return list(self._c)

    def elements(self) -> list[Any]:
        """Every token, a colour repeated by its count, in stable order."""
        return [v for v, n in self.items() for _ in range(n)]

    def __len__(self) -> int:
        """The number of tokens (``|C|``)."""
        return sum(self._c.values())

    def __bool__(self) -> bool:
        return bool(self._c)

    def __contains__(self, value: Any) -> bool:
        return value in self._c

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Multiset):
            return self._c == other._c
        return NotImplemented

    def __hash__(self) -> int:  # pragma: no cover - multisets are mutable
        raise TypeError("unhashable type: 'Multiset'")

    def __repr__(self) -> str:
        return f"Multiset({cpn_multiset(self)})"


def order_key(value: Any) -> tuple:
    """A total order over colours of mixed types (null, booleans, numbers, strings, tuples)."""
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, int | float):
        return (2, 0 if value == value else 1, value if value == value else 0)
    if isinstance(value, str):
        return (3, value)
    if isinstance(value, tuple):
        return (4, tuple(order_key(v) for v in value))
    return (5, repr(value))


def cpn_value(value: Any, cs: Any = None) -> str:
    """One colour in CPN ML's literal syntax. With its colour set ``cs`` a list is written in
    brackets (``[1,2]``), without one every tuple in parentheses."""
    kind = getattr(cs, "kind", None)
    if isinstance(value, tuple):
        if kind == "list":
            return "[" + ",".join(cpn_value(v, cs.element) for v in value) + "]"
        sets = [f for _, f in cs.fields] if kind == "product" else [None] * len(value)
        return "(" + ",".join(cpn_value(v, f) for v, f in zip(value, sets, strict=True)) + ")"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"~{-value}" if value < 0 else str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "~inf"
        text = repr(abs(value))
        if "e" in text and "." not in text.split("e")[0]:
            text = text.replace("e", ".0e")
        text = text.replace("e-", "e~")
        return f"~{text}" if value < 0 else text
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def cpn_multiset(ms: Multiset | Iterable[Any], cs: Any = None) -> str:
    """A multiset as CPN Tools writes it: ``1`3++2`5``; ``empty`` when it has no token.
    ``cs``: the place's colour set (lists are then written in brackets)."""
    if not isinstance(ms, Multiset):
        ms = Multiset(ms)
    parts = [f"{n}`{cpn_value(v, cs)}" for v, n in ms.items()]
    return "++".join(parts) if parts else "empty"
