"""Join plans: how one body is evaluated from one changed tuple (delta join) or from scratch.

A body is a join of *items* — positive atoms over :class:`~cepflow.queries.relations.Relation`
memories and negative atoms over :class:`~cepflow.queries.relations.Projection` memories — and
filters. For every item ``k`` the engine compiles a *seeded plan*: given one tuple inserted into
(or deleted from) item ``k``'s memory, it binds the tuple's variables, joins the other items
through their indexes, applies each filter as soon as its variables are bound, and adds
``±1`` per satisfying assignment to the pattern's match counts. The work is proportional to the
tuple's neighbourhood, not to the model.

Correctness of applying updates one at a time (the delta rule): when tuple ``t`` changes
relation ``R`` and ``R`` occurs at several items, the change of the join is the sum over the
occurrences ``k`` of the join with ``t`` at ``k``, the occurrences before ``k`` seeing ``R``
*after* the update and those after ``k`` seeing it *before*. Memories hold the state before
the update while it is propagated; steps for an earlier occurrence of the seed's memory read
``pending`` to see the state after it.

Plans are chains of closures over a slot array (one slot per variable), ordered greedily:
bound lookups on functional features first, scans last.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from cepflow.models.metamodel import Metamodel
from cepflow.queries.ir import (
    Arg,
    AttrRel,
    Check,
    Compare,
    CompiledBody,
    ConstArg,
    ConstRel,
    Filter,
    HistoryRel,
    MatchRel,
    RefRel,
    RelAtom,
    TypeRel,
)
from cepflow.queries.relations import EMPTY, Projection, Relation, key_function

Env = list[Any]
Step = Callable[[Env], None]


class Counter:
    """A pattern's match counts: how many satisfying assignments project onto each key.

    ``touched`` remembers, for every key changed since the last :meth:`settle`, whether it was
    a match before; ``sign`` is the sign of the update being propagated.
    """

    __slots__ = ("counts", "sign", "touched")

    def __init__(self) -> None:
        self.counts: dict[tuple[Any, ...], int] = {}
        self.touched: dict[tuple[Any, ...], bool] = {}
        self.sign = 1

    def settle(self) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        """(appeared, disappeared) keys since the last settle."""
        appeared, disappeared = [], []
        counts = self.counts
        for key, was in self.touched.items():
            now = key in counts
            if now != was:
                (appeared if now else disappeared).append(key)
        self.touched = {}
        return appeared, disappeared

    def add(self, key: tuple[Any, ...], delta: int) -> None:
        """``delta`` more (or fewer) assignments project onto ``key`` (what the sinks do)."""
        counts = self.counts
        c = counts.get(key, 0)
        touched = self.touched
        if key not in touched:
            touched[key] = c > 0
        c += delta
        if c:
            counts[key] = c
        else:
            del counts[key]


@dataclass
class Item:
    """A body item bound to its memory: a positive atom or a negative one."""

    position: int
    args: tuple[Arg, ...]
    memory: Relation | Projection
    atom: RelAtom | None  # None for negative items

    @property
    def negative(self) -> bool:
        return self.atom is None

    @property
    def variables(self) -> set[str]:
        return {a for a in self.args if isinstance(a, str)}


def prune_implied_types(atoms: Iterable[RelAtom], mm: Metamodel) -> list[RelAtom]:
    """Drop type atoms that other atoms imply: ``Host(H)`` is implied by
    ``Host.applications(H, A)`` (sources of the reference are Hosts) and by ``SubHost(H)``.
    Fewer atoms, fewer joins; same matches, since the model only holds well-typed edges."""
    atoms = list(dict.fromkeys(atoms))
    kept = []
    for atom in atoms:
        if isinstance(atom.rel, TypeRel):
            var, cls = atom.args[0], atom.rel.cls
            if any(_implies(other, var, cls, mm) for other in atoms if other is not atom):
                continue
        kept.append(atom)
    return kept


def _implies(other: RelAtom, var: Arg, cls: str, mm: Metamodel) -> bool:
    for arg, col in zip(other.args, other.columns, strict=True):
        if arg != var or col is None or not mm[col].is_a(cls):
            continue
        # another type atom implies this one only if strictly more specific (not both dropped)
        if not isinstance(other.rel, TypeRel) or col != cls:
            return True
    return False


class BodyPlanner:
    """Compiles the seeded plans and the full plan of one body."""

    def __init__(self, body: CompiledBody, items: list[Item], counter: Counter,
                 mm: Metamodel) -> None:
        self.body = body
        self.items = items
        self.filters = list(body.filters)
        self.counter = counter
        self.mm = mm
        variables: dict[str, None] = dict.fromkeys(body.params)
        for item in items:
            variables.update(dict.fromkeys(item.variables))
        self.slots = {v: i for i, v in enumerate(variables)}
        self._groups: dict[tuple[int, ...], Any] = {}  # group_modifier's, compiled on demand

    # ------------------------------------------------------------ entry points

    def seeded(self, k: int) -> Callable[[Any, int], None]:
        """The subscriber of item ``k``'s memory: ``entry(tuple_or_key, sign)``."""
        seed = self.items[k]
        env: Env = [None] * len(self.slots)
        chain = self._chain(self._order(seed), seed)
        counter = self.counter
        negate = seed.negative
        bind = self._binder(seed)

        def entry(t: Any, sign: int) -> None:
            if bind(t, env):
                counter.sign = -sign if negate else sign
                chain(env)

        return entry

    def modifier(self, k: int) -> Callable[[Any, Any, Any], None] | None:
        """An in-place update of item ``k``: ``modify(obj, old, new)`` when object ``obj``'s
        value in item ``k``'s functional relation (an attribute or a history function) goes
        from ``old`` to ``new`` — one join instead of a deletion and an insertion.

        Only when the value's variable is used by filters alone (no other item, not a
        parameter) and the relation occurs once in the body: then the join does not depend
        on the value, and each assignment counts ``holds(new) - holds(old)`` (nothing when
        both agree — the common case of a small movement). None when not applicable.
        """
        var = self._modifiable(k)
        if var is None:
            return None
        if not any(var in f.variables for f in self.filters):
            return _unchanged  # the value is not looked at: no assignment changes
        first = self.items[k].args[0]
        env, chain, (old_slot,), (new_slot,), flags = self._dual_chain((k,))
        if isinstance(first, ConstArg):
            value = first.value

            def modify_const(obj: Any, old: Any, new: Any) -> None:
                if obj == value:
                    env[old_slot], env[new_slot], env[flags] = old, new, 3
                    chain(env)

            return modify_const
        obj_slot = self.slots[first]

        def modify(obj: Any, old: Any, new: Any) -> None:
            env[obj_slot], env[old_slot], env[new_slot], env[flags] = obj, old, new, 3
            chain(env)

        return modify

    def group_modifier(self, ks: tuple[int, ...]
                       ) -> Callable[[Any, list[tuple[Any, Any]]], None] | None:
        """Several in-place updates of one object at once (a frame moves a joint's x and y):
        ``modify(obj, [(old, new), …])`` for items ``ks``, one join for all. The same as
        applying them one after the other, since no item reads another's relation. None
        unless every item qualifies for :meth:`modifier` and all bind the same variable to
        the object."""
        if ks in self._groups:
            return self._groups[ks]
        variables = [self._modifiable(k) for k in ks]
        firsts = {self.items[k].args[0] for k in ks}
        fn: Callable[[Any, list[tuple[Any, Any]]], None] | None = None
        if None not in variables and len(firsts) == 1:
            (first,) = firsts
            if not any(v in f.variables for f in self.filters for v in variables):
                fn = _unchanged_group  # no value is looked at
            elif isinstance(first, str):
                obj_slot = self.slots[first]
                env, chain, olds, news, flags = self._dual_chain(ks)
                pairs = list(zip(olds, news, strict=True))

                def modify_group(obj: Any, values: list[tuple[Any, Any]]) -> None:
                    env[obj_slot] = obj
                    for (o, n), (old, new) in zip(pairs, values, strict=True):
                        env[o] = old
                        env[n] = new
                    env[flags] = 3
                    chain(env)

                fn = modify_group
        self._groups[ks] = fn
        return fn

    def _modifiable(self, k: int) -> str | None:
        """The value variable of item ``k`` if it can be updated in place (:meth:`modifier`)."""
        seed = self.items[k]
        atom = seed.atom
        if atom is None or not isinstance(atom.rel, AttrRel | HistoryRel):
            return None
        first, var = seed.args
        if not isinstance(var, str) or var == first or var in self.body.params:
            return None
        if any(i is not seed and (i.memory is seed.memory or var in i.variables)
               for i in self.items):
            return None
        return var

    def _dual_chain(self, ks: tuple[int, ...]
                    ) -> tuple[Env, Step, tuple[int, ...], tuple[int, ...], int]:
        """The join of an in-place update of items ``ks``: (env, chain, old value slots, new
        value slots, flags slot)."""
        n = len(self.slots)
        seeds = [self.items[k] for k in ks]
        m = len(ks)
        dual = _Dual(tuple(self.slots[s.args[1]] for s in seeds),  # type: ignore[index]
                     tuple(range(n, n + m)), tuple(range(n + m, n + 2 * m)), n + 2 * m)
        env: Env = [None] * (n + 2 * m + 1)
        chain = self._chain(self._order(seeds[0], seeds[1:]), seeds[0], dual, seeds[1:])
        return env, chain, dual.old, dual.new, dual.flags

    def value_items(self) -> tuple[int, ...]:
        """The items whose value can be updated in place (:meth:`modifier`)."""
        return tuple(k for k in range(len(self.items)) if self._modifiable(k) is not None)

    def table(self, skip: tuple[int, ...], filters: list[Filter]
              ) -> Callable[[], list[tuple[Any, ...]]] | None:
        """The join of every item but ``skip`` under ``filters`` (those reading none of the
        skipped items' values): each satisfying assignment as the slot array (a tuple). None
        if those items leave a parameter, a filter's variable or a skipped item's object
        unbound (then there is no such join)."""
        rest = [i for i in self.items if i.position not in skip]
        bound: set[str] = set().union(*(i.variables for i in rest if not i.negative))
        needed = set(self.body.params)
        for f in filters:
            needed |= set(f.variables)
        for i in rest:
            needed |= i.variables
        needed |= {a for k in skip for a in self.items[k].args[:1] if isinstance(a, str)}
        if not needed <= bound:
            return None
        env: Env = [None] * len(self.slots)
        rows: list[tuple[Any, ...]] = []

        def collect(env: Env) -> None:
            rows.append(tuple(env))

        chain = self._chain(self._order(None, items=rest, filters=filters), None, sink=collect)

        def run() -> list[tuple[Any, ...]]:
            rows.clear()
            chain(env)
            out = list(rows)
            rows.clear()
            return out

        return run

    def full(self) -> Callable[[], None]:
        """Evaluate the body from scratch, adding +1 per satisfying assignment."""
        env: Env = [None] * len(self.slots)
        chain = self._chain(self._order(None), None)
        counter = self.counter

        def run() -> None:
            counter.sign = 1
            chain(env)

        return run

    # ------------------------------------------------------------ ordering

    def _order(self, seed: Item | None, extra: list[Item] | None = None,
               items: list[Item] | None = None, filters: list[Filter] | None = None
               ) -> list[Item | Filter]:
        """Items greedily by estimated fan-out, each filter as soon as it is bound; ``extra``
        are further seeds (bound from the start, like ``seed``); ``items`` and ``filters``
        (default: the body's) what to join."""
        seeds = ([] if seed is None else [seed]) + (extra or [])
        bound: set[str] = set().union(*(s.variables for s in seeds))
        todo = [i for i in (self.items if items is None else items)
                if all(i is not s for s in seeds)]
        filters = list(self.filters if filters is None else filters)
        steps: list[Item | Filter] = []

        def flush() -> None:
            for f in [f for f in filters if set(f.variables) <= bound]:
                filters.remove(f)
                steps.append(f)
            for item in [i for i in todo if i.negative and i.variables <= bound]:
                todo.remove(item)
                steps.append(item)

        flush()
        while any(not i.negative for i in todo):
            best = min((i for i in todo if not i.negative), key=lambda i: (
                self._cost(i, bound), i.position))
            todo.remove(best)
            steps.append(best)
            bound |= best.variables
            flush()
        assert not todo and not filters, "the compiler guarantees every variable is bound"
        return steps

    def _cost(self, item: Item, bound: set[str]) -> float:
        """Estimated tuples a lookup yields (0: a membership test)."""
        cols = [isinstance(a, ConstArg) or a in bound for a in item.args]
        if all(cols):
            return 0
        atom = item.atom
        assert atom is not None
        rel = atom.rel
        if isinstance(rel, ConstRel):
            return 1
        if not any(cols):
            return 1000 + (0 if isinstance(rel, TypeRel) else len(cols))
        if isinstance(rel, AttrRel | HistoryRel):
            return 1 if cols[0] else 20
        if isinstance(rel, RefRel):
            ref = self.mm[rel.owner].references[rel.feature]
            if cols[0]:
                return 1 if ref.upper == 1 else 4
            return 1 if ref.containment else 3
        assert isinstance(rel, MatchRel)
        return 2 + cols.count(False)

    # ------------------------------------------------------------ compiling steps

    def _chain(self, steps: list[Item | Filter], seed: Item | None,
               dual: _Dual | None = None, extra: list[Item] | None = None,
               sink: Step | None = None) -> Step:
        """Closures from the last step (the sink) back to the first. With ``dual`` the chain
        evaluates an in-place update (:meth:`modifier`): the filters over its variables test
        the old and the new values, and the sink counts the difference. ``sink``: another
        last step (what :meth:`table` collects with)."""
        bound: set[str] = set(seed.variables) if seed else set()
        for s in extra or ():
            bound |= s.variables
        bound_before = []
        for s in steps:
            bound_before.append(set(bound))
            bound |= set(s.variables)
        nxt = sink or (self._sink() if dual is None else self._dual_sink(dual))
        duals = set() if dual is None else {v for v, i in self.slots.items() if i in dual.slots}
        for step, before in zip(reversed(steps), reversed(bound_before), strict=True):
            if isinstance(step, Check | Compare):
                test = self._test(step)
                if duals.intersection(step.variables):
                    nxt = _dual_filter(test, dual, nxt)
                else:
                    nxt = _filter(test, nxt)
            else:
                sees_after = seed is not None and step.memory is seed.memory and \
                    step.position < seed.position
                if step.negative:
                    nxt = self._negative(step, nxt, sees_after)
                else:
                    nxt = self._lookup(step, before, nxt, sees_after)
        return nxt

    def _sink(self) -> Step:
        counter = self.counter
        slots = [self.slots[p] for p in self.body.params]
        key_of = _tuple_getter(slots)

        def sink(env: Env) -> None:
            key = key_of(env)
            counts = counter.counts
            c = counts.get(key, 0)
            touched = counter.touched
            if key not in touched:
                touched[key] = c > 0
            c += counter.sign
            if c:
                counts[key] = c
            else:
                del counts[key]

        return sink

    def _dual_sink(self, dual: _Dual) -> Step:
        """The sink of an in-place update: +1 if only the new value satisfies the filters, -1
        if only the old one did, nothing if both (or neither — never reached) do."""
        counter = self.counter
        slots = [self.slots[p] for p in self.body.params]
        key_of = _tuple_getter(slots)
        flags = dual.flags

        add = counter.add

        def dual_sink(env: Env) -> None:
            f = env[flags]
            sign = (f >> 1) - (f & 1)  # 1: old only, 2: new only, 3: both
            if sign:
                add(key_of(env), sign)

        return dual_sink

    def _binder(self, seed: Item) -> Callable[[Any, Env], bool]:
        """Binds a seed tuple (or a projection key) into the slots; False if it cannot match
        (a constant or a repeated variable disagrees)."""
        binds: list[tuple[int, int]] = []
        consts: list[tuple[int, Any]] = []
        equal: list[tuple[int, int]] = []
        first: dict[str, int] = {}
        for i, a in enumerate(seed.args):
            if isinstance(a, ConstArg):
                consts.append((i, a.value))
            elif a in first:
                equal.append((i, first[a]))
            else:
                first[a] = i
                binds.append((i, self.slots[a]))
        if seed.negative and len(seed.args) == 1:  # a one-column projection key is bare
            if consts:
                value = consts[0][1]
                return lambda key, env: key == value
            ((_, slot),) = binds

            def bind_key(key: Any, env: Env) -> bool:
                env[slot] = key
                return True

            return bind_key
        if not consts and not equal and len(binds) == 2:
            (i0, s0), (i1, s1) = binds

            def bind_two(t: Any, env: Env) -> bool:
                env[s0] = t[i0]
                env[s1] = t[i1]
                return True

            return bind_two

        def bind(t: Any, env: Env) -> bool:
            for i, v in consts:
                if t[i] != v:
                    return False
            for i, j in equal:
                if t[i] != t[j]:
                    return False
            for i, s in binds:
                env[s] = t[i]
            return True

        return bind

    def _lookup(self, item: Item, bound: set[str], nxt: Step, sees_after: bool) -> Step:
        """Join a positive item: a membership test if all its arguments are bound, else an
        index lookup (or a scan) binding the rest."""
        rel = item.memory
        assert isinstance(rel, Relation)
        key_cols: list[int] = []
        key_parts: list[tuple[bool, Any]] = []  # (is slot, slot or constant)
        outs: list[tuple[int, int]] = []
        equal: list[tuple[int, int]] = []
        first: dict[str, int] = {}
        for i, a in enumerate(item.args):
            if isinstance(a, ConstArg):
                key_cols.append(i)
                key_parts.append((False, a.value))
            elif a in bound:
                key_cols.append(i)
                key_parts.append((True, self.slots[a]))
            elif a in first:
                equal.append((i, first[a]))
            else:
                first[a] = i
                outs.append((i, self.slots[a]))
        key_of = _key_builder(key_parts)
        if not outs:
            return _member(rel, key_of, nxt, sees_after)
        index = rel.index(tuple(key_cols)) if key_cols else None
        pending_key = key_function(tuple(key_cols))

        def candidates(env: Env) -> Iterable[tuple[Any, ...]]:
            if index is None:
                bucket: Iterable[tuple[Any, ...]] = rel.tuples
                key = ()
            else:
                key = key_of(env)
                bucket = index.get(key, EMPTY)
            if not sees_after:
                return bucket
            return _after(bucket, rel, key, pending_key)

        if not equal and len(outs) == 1 and len(key_parts) == 1 and key_parts[0][0] \
                and index is not None and not sees_after:
            # the hot path: one bound slot in, one variable out (e.g. B -> its head)
            ((o, s),), k = outs, key_parts[0][1]
            get = index.get

            def lookup_one(env: Env) -> None:
                for t in get(env[k], EMPTY):
                    env[s] = t[o]
                    nxt(env)

            return lookup_one

        def lookup(env: Env) -> None:
            for t in candidates(env):
                if equal and any(t[i] != t[j] for i, j in equal):
                    continue
                for i, s in outs:
                    env[s] = t[i]
                nxt(env)

        return lookup

    def _negative(self, item: Item, nxt: Step, sees_after: bool) -> Step:
        proj = item.memory
        assert isinstance(proj, Projection)
        key_of = _key_builder([(False, a.value) if isinstance(a, ConstArg)
                               else (True, self.slots[a])
                               for a in item.args])
        counts = proj.counts

        def absent(env: Env) -> None:
            key = key_of(env)
            present = key in counts
            if sees_after and proj.pending_sign and key == proj.pending:
                present = proj.pending_sign > 0
            if not present:
                nxt(env)

        return absent

    def _test(self, f: Filter) -> Callable[[Env], bool]:
        """A filter as a test over the slot array."""
        if isinstance(f, Check):
            return f.test(self.slots)

        def value(a: Arg) -> Callable[[Env], Any]:
            if isinstance(a, ConstArg):
                v = a.value
                return lambda env: v
            s = self.slots[a]
            return lambda env: env[s]

        left, right, holds = value(f.left), value(f.right), f.holds
        return lambda env: holds(left(env), right(env))


@dataclass(frozen=True)
class _Dual:
    """The slots of an in-place update: the updated variables, their old and new values, and
    the flags (bit 0: the old values still satisfy the filters so far, bit 1: the new ones)."""

    slots: tuple[int, ...]
    old: tuple[int, ...]
    new: tuple[int, ...]
    flags: int


def _unchanged(obj: Any, old: Any, new: Any) -> None:
    """The in-place update of a value that no filter reads: no assignment changes."""


def _unchanged_group(obj: Any, values: list[tuple[Any, Any]]) -> None:
    """The grouped in-place update of values that no filter reads: nothing changes."""


def _filter(test: Callable[[Env], bool], nxt: Step) -> Step:
    def filter_step(env: Env) -> None:
        if test(env):
            nxt(env)

    return filter_step


def _dual_filter(test: Callable[[Env], bool], dual: _Dual, nxt: Step) -> Step:
    """A filter over updated variables: tests the old and/or the new values (those still
    alive) and goes on if either passes, with the flags of those that did."""
    flags = dual.flags
    if len(dual.slots) == 1:
        (slot,), (old,), (new,) = dual.slots, dual.old, dual.new

        def dual_filter(env: Env) -> None:
            alive = env[flags]
            passed = 0
            if alive & 1:
                env[slot] = env[old]
                if test(env):
                    passed = 1
            if alive & 2:
                env[slot] = env[new]
                if test(env):
                    passed |= 2
            if passed:
                env[flags] = passed
                nxt(env)
                env[flags] = alive

        return dual_filter
    olds = list(zip(dual.slots, dual.old, strict=True))
    news = list(zip(dual.slots, dual.new, strict=True))

    def dual_filter_many(env: Env) -> None:
        alive = env[flags]
        passed = 0
        if alive & 1:
            for s, o in olds:
                env[s] = env[o]
            if test(env):
                passed = 1
        if alive & 2:
            for s, n in news:
                env[s] = env[n]
            if test(env):
                passed |= 2
        if passed:
            env[flags] = passed
            nxt(env)
            env[flags] = alive

    return dual_filter_many


def _tuple_getter(slots: list[int]) -> Callable[[Env], tuple[Any, ...]]:
    """The tuple of the values in ``slots`` (a match's key): one C-level ``itemgetter`` for
    two slots or more — called for every assignment a join finds."""
    if not slots:
        return lambda env: ()
    if len(slots) == 1:
        (s,) = slots
        return lambda env: (env[s],)
    return itemgetter(*slots)


def _key_builder(parts: list[tuple[bool, Any]]) -> Callable[[Env], Any]:
    """The index key from the slots: a bare value for one column, else a tuple. Slots
    followed by constants (``find p(B, H, 1)``) are an ``itemgetter`` and a tuple
    concatenation, both C-level (a membership test per join step); any other mix value by
    value."""
    if len(parts) == 1:
        is_slot, x = parts[0]
        if is_slot:
            return lambda env: env[x]
        return lambda env: x
    slots = [x for is_slot, x in parts if is_slot]
    constants = tuple(x for is_slot, x in parts if not is_slot)
    if slots and all(is_slot for is_slot, _ in parts[:len(slots)]):  # the slots first
        if not constants:
            return itemgetter(*slots)
        if len(slots) == 1:
            (s,) = slots
            return lambda env: (env[s], *constants)
        get = itemgetter(*slots)
        return lambda env: get(env) + constants
    getters = [(lambda env, s=x: env[s]) if is_slot else (lambda env, c=x: c)
               for is_slot, x in parts]
    return lambda env: tuple([g(env) for g in getters])


def _member(rel: Relation, key_of: Callable[[Env], Any], nxt: Step, sees_after: bool) -> Step:
    """All arguments bound: is the tuple in the relation (after the pending update)?"""
    single = rel.arity == 1

    def member(env: Env) -> None:
        k = key_of(env)
        t = (k,) if single else k
        present = t in rel.tuples
        if sees_after and t == rel.pending:
            present = rel.pending_sign > 0
        if present:
            nxt(env)

    return member


def _after(bucket: Iterable[tuple[Any, ...]], rel: Relation, key: Any,
           key_of: Callable[[tuple[Any, ...]], Any]) -> Iterator[tuple[Any, ...]]:
    """``bucket`` as it is after the pending update of ``rel``."""
    p = rel.pending
    if rel.pending_sign < 0:
        return (t for t in bucket if t != p)
    if p is not None and key_of(p) == key and p not in bucket:
        return itertools.chain(bucket, (p,))
    return iter(bucket)
