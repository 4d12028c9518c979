"""Persistent runs of Esper's repeated tags: a collection that grows by sharing, not copying.

An ``until`` or ``[n]`` repetition collects its tag's events: the k-th one assigns
``a[k].<field>`` (runtime.binding.collect). Binding dicts and a thread's event list are never
changed in place, so each step used to copy both, and one instance of ``a=A until d=D`` that
took k events cost O(k²). Here the token path keeps them as structures shared by the runs that
took the same events:

* :class:`Trail` — an append-only list and a length per run: a run that extends the list's
  last element appends in place (O(1)); another run extending the same prefix copies its part
  first (the list only ever grows, so every run still reads its own elements);
* :class:`Collected` — a thread's bindings once it collected a tag: the plain names in a small
  dict, each collected tag's events as a :class:`Trail` of their parameter tuples, and the
  order the names were first bound in as another :class:`Trail`. A step copies only the small
  dict. Its public face is the plain dict the copying step made — ``get``, ``[]``, ``in``,
  iteration, ``items``, ``len``, ``==`` give the same names (``a[0].id`` …) in the same order
  with the same values — so filters, the select list, matches, saved state and traces read it
  as before; anything that copies it (``dict(b)``, ``{**b}``) gets that plain dict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain, islice
from typing import Any

from cepflow.automaton.automaton import Collect
from cepflow.language.tags import index_name, indexed

_MISSING = object()


class Trail(Sequence):
    """A run's elements, shared with the runs it has in common with: the first ``_off`` are
    those of the run ``_base`` (none without one), the rest the first ``len - _off`` of the
    list ``_items``, which other runs may share and extend. Immutable as seen from each run;
    :meth:`plus` is the run extended by one, in O(1) either way."""

    __slots__ = ("_base", "_items", "_n", "_off")

    def __init__(self, items: list[Any], n: int, base: Trail | None = None,
                 off: int = 0) -> None:
        self._items = items
        self._n = n
        self._base = base
        self._off = off

    @classmethod
    def of(cls, elements: Iterable[Any]) -> Trail:
        """A trail of ``elements`` (a list of its own)."""
        items = list(elements)
        return cls(items, len(items))

    def plus(self, x: Any) -> Trail:
        """This run extended by ``x``: in place when no other run extended the shared list
        past this one, else on a list of its own after this run (its base)."""
        items, n, off = self._items, self._n, self._off
        if len(items) == n - off:
            items.append(x)
            return Trail(items, n + 1, self._base, off)
        return Trail([x], n + 1, self, n)

    def segments(self) -> list[tuple[list[Any], int, int]]:
        """The run as ``(list, first index, count)`` pieces, oldest first (a list of a given
        piece always holds the same indices, whichever run reads it)."""
        out = []
        t: Trail | None = self
        upto = self._n
        while t is not None:
            out.append((t._items, t._off, upto - t._off))
            upto = t._off
            t = t._base
        out.reverse()
        return out

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: Any) -> Any:
        n = self._n
        if isinstance(i, slice):
            return list(self)[i]
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("trail index out of range")
        t = self
        while i < t._off:
            t = t._base  # type: ignore[assignment]
        return t._items[i - t._off]

    def __iter__(self) -> Iterator[Any]:
        if self._base is None:
            return islice(self._items, self._n)
        return chain.from_iterable(islice(items, count) for items, _, count in self.segments())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Trail, list)):
            return equal(self, other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # (a list's equality: not hashable)

    def __repr__(self) -> str:
        return repr(list(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))  # (copied or pickled: a plain list of the run's elements)


def _pieces(s: Sequence[Any]) -> list[tuple[Any, int, int]]:
    return s.segments() if isinstance(s, Trail) else [(s, 0, len(s))]


def shared(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many first elements runs ``a`` and ``b`` read from the same lists (the very same
    objects, so equal): a lower bound of their common prefix, in O(pieces)."""
    p = 0
    for (la, oa, ca), (lb, _, cb) in zip(_pieces(a), _pieces(b), strict=False):
        if la is not lb:
            break
        p = oa + min(ca, cb)
        if ca != cb:
            break
    return p


def equal(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Do runs ``a`` and ``b`` hold equal elements (a list's ``==``)? Elements the two share
    are not looked at."""
    p = shared(a, b)
    if len(a) != len(b):
        return False
    return all(x is y or x == y for x, y in zip(_rest(a, p), _rest(b, p), strict=True))


def compare(a: Sequence[Any], b: Sequence[Any], key: Callable[[Any], Any]) -> int:
    """-1, 0 or 1 as run ``a`` comes before, with or after ``b`` in the order of their
    elements' keys at their first difference, a run before every shorter one it extends
    (runtime.matcher._age's order of a thread's events; element equality with ``key`` the
    identity). Elements the two share are not looked at."""
    p = shared(a, b)
    n, m = len(a), len(b)
    if p < n and p < m:
        for x, y in zip(_rest(a, p), _rest(b, p), strict=False):
            if x is not y:
                kx, ky = key(x), key(y)
                if kx != ky:
                    return -1 if kx < ky else 1
    if n == m:
        return 0
    return -1 if n > m else 1


def _rest(s: Sequence[Any], p: int) -> Iterator[Any]:
    """The elements of run ``s`` from index ``p`` on, lazily, each read by its index (islice
    would step over the first ``p`` one by one: O(p) where the rest is often one element)."""
    if not isinstance(s, Trail):
        return map(s.__getitem__, range(p, len(s)))
    return chain.from_iterable(map(items.__getitem__, range(max(p - off, 0), count))
                               for items, off, count in s.segments() if off + count > p)


class Collected(Mapping):
    """Bindings that collected a repeated tag, shared with the runs of the same events (see
    the module docstring): a read-only mapping that gives what the plain dict of the same
    bindings gives (not a dict subclass: C code reading a dict's storage directly, as the
    json encoder does, would see none of it; a mapping it refuses). Never changed in place,
    as binding dicts never are."""

    __slots__ = ("_order", "_own", "_tags")

    def __init__(self, own: dict[str, Any], tags: dict[str, tuple[Collect, Trail]],
                 order: Trail) -> None:
        #: the names that are no collected tag's indexed names, with their values
        self._own = own
        #: per collected tag: its Collect and its events' parameter tuples (``a[k]`` is the
        #: k-th; field i of it is ``a[k].<fields[i]>``)
        self._tags = tags
        #: the names in the order they were first bound: a name of ``_own``, or
        #: ``(alias, k, i)`` for ``a[k].<fields[i]>``
        self._order = order

    # -- the steps (what runtime.binding.collect and bind do to a plain dict) -------------
    def collect(self, c: Collect, params: tuple) -> Collected | None:
        """These bindings after tag ``c`` took its next event (runtime.binding.collect's
        names, values and order; only the small dict is copied); None when ``c``'s names
        here do not follow its count (see :meth:`_adopt`)."""
        tags = self._tags
        entry = tags.get(c.alias)
        if entry is None:
            adopted = self._adopt(c)
            return None if adopted is None else adopted.collect(c, params)
        trail = entry[1]
        own = dict(self._own)
        order = self._order
        k = len(trail)
        alias = c.alias
        for i, cur in enumerate(c.current):
            if cur not in own:
                order = order.plus(cur)
            own[cur] = params[i]
            order = order.plus((alias, k, i))
        if c.count not in own:
            order = order.plus(c.count)
        own[c.count] = k + 1
        tags = dict(tags)
        n = len(c.fields)  # (an event's parameters are its fields: kept whole, no copy)
        tags[alias] = (entry[0], trail.plus(params if len(params) == n else params[:n]))
        return Collected(own, tags, order)

    def bound(self, binds: tuple[tuple[int, str], ...], params: tuple) -> Collected | None:
        """Algorithm 1 on these bindings (runtime.binding.bind): the new variables added,
        None when a bound one has another value."""
        own = None
        order = self._order
        for i, var in binds:
            v = params[i]
            cur = (self if own is None else _Reader(self, own)).get(var, _MISSING)
            if cur is _MISSING:
                if own is None:
                    own = dict(self._own)
                own[var] = v
                order = order.plus(var)
            elif cur != v:
                return None
        return self if own is None else Collected(own, self._tags, order)

    def _adopt(self, c: Collect) -> Collected | None:
        """These bindings with tag ``c`` held as a trail: the indexed names it already has
        (states saved as plain dicts) move from ``_own`` to it, keeping their order. None
        unless they are exactly ``a[j].<field>`` for every j below its count (what the
        collecting steps make; other bindings are collected plainly: binding.collect_run)."""
        own = self._own
        k = own.get(c.count, 0)
        names = {f"{index_name(c.alias, j)}.{f}": (c.alias, j, i)
                 for j in range(k) for i, f in enumerate(c.fields)}
        head = f"{c.alias}["
        if type(k) is not int or sum(n.startswith(head) for n in own) != len(names) or any(
                n not in own for n in names):
            return None
        rows = [tuple(own[f"{index_name(c.alias, j)}.{f}"] for f in c.fields) for j in range(k)]
        order = Trail.of(names.get(x, x) if isinstance(x, str) else x for x in self._order)
        return Collected({n: v for n, v in own.items() if n not in names},
                         {**self._tags, c.alias: (c, Trail.of(rows))}, order)

    @classmethod
    def of(cls, b: dict[str, Any]) -> Collected:
        """Plain bindings ``b`` as a Collected (no tag held as a trail yet: :meth:`collect`
        adopts each as it takes its next event)."""
        return cls(dict(b), {}, Trail.of(b))

    # -- the plain dict's reads ------------------------------------------------------------
    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        v = self._own.get(name, _MISSING)
        if v is not _MISSING:
            return v
        return self._indexed(name, default)

    def _indexed(self, name: str, default: Any) -> Any:
        """The value of ``a[k].<field>`` when tag ``a`` is held as a trail, else ``default``."""
        head, dot, field = name.partition(".")
        ix = indexed(head) if dot else None
        if ix is None:
            return default
        entry = self._tags.get(ix[0])
        if entry is None:
            return default
        c, trail = entry
        if ix[1] >= len(trail) or field not in c.fields:
            return default
        return trail[ix[1]][c.fields.index(field)]

    def __getitem__(self, name: str) -> Any:
        v = self.get(name, _MISSING)
        if v is _MISSING:
            raise KeyError(name)
        return v

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name, _MISSING) is not _MISSING

    def __len__(self) -> int:
        return len(self._own) + sum(len(t) * len(c.fields) for c, t in self._tags.values())

    def plain(self) -> dict[str, Any]:
        """The plain dict of these bindings: the names in the order they were bound."""
        own, tags = self._own, self._tags
        out = {}
        for x in self._order:
            if isinstance(x, str):
                out[x] = own[x]
            else:
                alias, k, i = x
                c, trail = tags[alias]
                out[f"{index_name(alias, k)}.{c.fields[i]}"] = trail[k][i]
        return out

    def __iter__(self) -> Iterator[str]:
        return iter(self.plain())

    def keys(self) -> Any:
        return self.plain().keys()

    def values(self) -> Any:
        return self.plain().values()

    def items(self) -> Any:
        return self.plain().items()

    def copy(self) -> dict[str, Any]:
        return self.plain()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Collected):
            tags, theirs = self._tags, other._tags
            if tags.keys() == theirs.keys() and all(
                    theirs[a][0].fields == c.fields for a, (c, _) in tags.items()):
                # (the same names in the trails: the rest are in _own; a dict's equality
                # ignores the order)
                return other._own == self._own and all(
                    equal(theirs[a][1], t) for a, (_, t) in tags.items())
            return self.plain() == other.plain()
        if isinstance(other, dict):
            return self.plain() == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.plain())

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (self.plain(),))  # (copied or pickled: the plain dict)


class _Reader:
    """Reads a Collected's names with some of its plain names replaced (Collected.bound,
    while it binds several variables of one event)."""

    __slots__ = ("_b", "_own")

    def __init__(self, b: Collected, own: dict[str, Any]) -> None:
        self._b, self._own = b, own

    def get(self, name: str, default: Any = None) -> Any:
        v = self._own.get(name, _MISSING)
        return v if v is not _MISSING else self._b._indexed(name, default)


def extend(events: Sequence[Any], e: Any) -> Trail:
    """A run's events ``events`` and then ``e``, as a :class:`Trail` (a list becomes one
    first, once per run)."""
    return (events if events.__class__ is Trail else Trail.of(events)).plus(e)
