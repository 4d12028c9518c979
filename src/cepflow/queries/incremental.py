"""The incremental query engine: after each commit, the matches that appeared and disappeared.

The engine keeps its own memories of the base relations the queries use (class extents,
reference edges, attribute values, history function values), of each pattern's matches and
of the projections that ``neg find`` asks about. A commit is processed in two phases:

1. each change becomes updates of base relations (a ``set`` deletes ``(obj, old)`` and inserts
   ``(obj, new)``); each update runs the seeded join plans of every atom over that relation
   (:mod:`cepflow.queries.plans`), adjusting the affected patterns' match counts — pattern
   matches are still as they were before the commit. A value that a body only filters on is
   updated in place (one join counting ``holds(new) - holds(old)``), and the values of one
   object that a commit changes together (a joint's x and y averages) in one join per body
   that reads them all (:meth:`BodyPlanner.modifier`, :meth:`BodyPlanner.group_modifier`);
2. patterns in dependency order: the keys whose count went from 0 to positive appeared, those
   that went to 0 disappeared; these become updates of the pattern's match relation and
   projections, which run the plans of the patterns that ``find`` / ``neg find`` it.

Every update is evaluated against the current state of the other memories and then applied,
so the result equals evaluating the queries from scratch (property-tested against
:func:`cepflow.queries.naive.evaluate`), with work proportional to the neighbourhood of the
changes. Counting assignments (not only matches) makes deletions exact without re-derivation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from cepflow.compiler.evaluator import BUILTINS
from cepflow.models.changes import (
    BLOCK_MIN,
    AttributeBlock,
    BlockChanges,
    Change,
    Commit,
    add_listener,
)
from cepflow.models.live_model import Model
from cepflow.queries.bulk import BulkBody, ValueChanges
from cepflow.queries.history import ABSENT, History
from cepflow.queries.ir import (
    AttrRel,
    ConstRel,
    HistoryRel,
    MatchRel,
    Query,
    QuerySet,
    RefRel,
    RelKey,
    TypeRel,
)
from cepflow.queries.plans import BodyPlanner, Counter, Item, prune_implied_types
from cepflow.queries.relations import Projection, Relation

Match = tuple[Any, ...]


@dataclass(frozen=True)
class QueryDelta:
    """How one query's match set changed in one commit (each list sorted)."""

    query: str
    appeared: tuple[Match, ...]
    disappeared: tuple[Match, ...]


@dataclass(frozen=True)
class MatchUpdate:
    """The effect of one commit: the deltas of the (public) queries whose matches changed, in
    declaration order, with the commit's timestamp and number."""

    ts: float
    commit: int
    deltas: tuple[QueryDelta, ...]

    def __getitem__(self, query: str) -> QueryDelta:
        for d in self.deltas:
            if d.query == query:
                return d
        return QueryDelta(query, (), ())


UpdateListener = Callable[[MatchUpdate], None]


def match_sort_key(match: Match) -> tuple[Any, ...]:
    """Orders matches deterministically: numbers before strings, then by value."""
    return tuple((1, v) if isinstance(v, str) else (0, v) if isinstance(v, int | float)
                 else (2, repr(v)) for v in match)


def in_match_order(matches: list[Match]) -> list[Match]:
    """``matches`` (distinct tuples of one arity) sorted by :func:`match_sort_key`. When each
    position holds only strings or only ints (object ids, int parameters) that order is the
    tuples' own, so they are sorted without a key per match (a frame's thousand deltas)."""
    if len(matches) < 2:
        return list(matches)
    if all(set(map(type, map(itemgetter(i), matches))) in _NATIVE
           for i in range(len(matches[0]))):
        return sorted(matches)
    return sorted(matches, key=match_sort_key)


_NATIVE = ({str}, {int})  # a position's value types whose own order is match_sort_key's


class _Routes:
    """The base relations that changes of one class's instances update."""

    __slots__ = ("attrs", "observed", "refs", "sets", "types")

    def __init__(self) -> None:
        self.observed: frozenset[str] = frozenset()  # attributes history functions observe
        # attribute -> (observed?, its relations or None), for the attributes that matter
        self.sets: dict[str, tuple[bool, list[Relation] | None]] = {}
        self.types: list[Relation] = []
        self.attrs: dict[str, list[Relation]] = {}  # one per class a query names it with
        self.refs: dict[str, Relation] = {}


Modifier = Callable[[Any, Any, Any], None]


class _BulkRoute:
    """What a block's value of one (class, attribute) updates: the history sites observing
    it and the attribute relations holding it."""

    __slots__ = ("relations", "sites")

    def __init__(self, sites: tuple[HistoryRel, ...], relations: tuple[Relation, ...]) -> None:
        self.sites = sites
        self.relations = relations


_NO_BULK: Any = _BulkRoute((), ())  # the route of a value some body cannot take in bulk


class _Layout:
    """A block's objects as the bulk path reads them (:meth:`QueryEngine._bulk_layout`)."""

    __slots__ = ("distinct", "groups", "ids")

    def __init__(self, ids: frozenset[str], distinct: bool,
                 groups: list[list[tuple[_BulkRoute, list[int], list[str]]]]) -> None:
        self.ids = ids
        self.distinct = distinct  # no object twice, no attribute twice
        self.groups = groups  # per attribute: (route, positions, their ids)


def _pick(rows: list[int], values: list[Any]) -> list[Any]:
    """``values`` at positions ``rows``."""
    if len(rows) == 1:
        return [values[rows[0]]]
    return list(itemgetter(*rows)(values)) if rows else []


class _GroupPlan:
    """How a group of value changes of one object runs: the bodies that take them in one
    join (updater, positions in the group) and, per relation, the in-place updaters left."""

    __slots__ = ("groups", "rest")

    def __init__(self) -> None:
        self.groups: list[tuple[Callable[[Any, list[tuple[Any, Any]]], None],
                                tuple[int, ...]]] = []
        self.rest: list[list[Modifier]] = []


class QueryEngine:
    """Maintains the matches of ``queries`` over ``model`` incrementally.

    >>> engine = QueryEngine(model, queries)            # doctest: +SKIP
    >>> engine.subscribe(lambda update: print(update.deltas))  # doctest: +SKIP
    """

    def __init__(self, model: Model, queries: QuerySet, *, bulk: bool = True) -> None:
        if queries.metamodel is not model.metamodel:
            raise ValueError(f"the queries are compiled for metamodel {queries.metamodel.name}, "
                             f"not the model's ({model.metamodel.name})")
        if model.in_transaction:
            raise ValueError("create the query engine outside a transaction: it starts from "
                             "the committed state")
        self.model = model
        self.queries = queries
        self._mm = model.metamodel
        self._relations: dict[RelKey, Relation] = {}
        self._projections: dict[str, dict[tuple[int, ...], Projection]] = {}
        self._counters: dict[str, Counter] = {}
        self._full: dict[str, list[Callable[[], None]]] = {}
        # for updating several values of one object at once (_modify_group): the in-place
        # updaters of each relation, the planners that read it otherwise, and the plans
        self._modifying: dict[Relation, list[tuple[BodyPlanner, int, Modifier]]] = {}
        self._readers: dict[Relation, set[BodyPlanner]] = {}
        self._group_plans: dict[tuple[Relation, ...], _GroupPlan] = {}
        #: take attribute blocks column-wise (:mod:`cepflow.queries.bulk`); False: change by
        #: change, the reference the bulk path is tested against
        self.bulk = bulk
        #: a commit of fewer changes goes change by change even with blocks (BLOCK_MIN: the
        #: bulk path's fixed cost exceeds its gain below it)
        self.bulk_min = BLOCK_MIN
        self._bulk_bodies: dict[BodyPlanner, BulkBody] = {}
        self._bulk_routes: dict[tuple[str, str], _BulkRoute | None] = {}
        self._bulk_layouts: dict[tuple[tuple[str, ...], tuple[Any, ...]], _Layout] = {}
        self._functions = {**BUILTINS, **queries.functions.plain}
        self._history = History(queries.history_sites(), queries.functions, self._mm)
        for name in queries.order:
            self._build(queries[name])
        self._routes = {c.name: self._route(c.name) for c in self._mm}
        self._listeners: list[UpdateListener] = []
        self.last_update: MatchUpdate | None = None
        self._initialize()
        self._unsubscribe = model.subscribe(self._on_commit)

    # ------------------------------------------------------------ public API

    def matches(self, query: str) -> set[Match]:
        """The current matches of ``query`` (tuples in parameter order; objects as ids)."""
        counter = self._counters.get(query)
        if counter is None:
            raise KeyError(f"no query '{query}' (queries: {', '.join(self.queries.queries)})")
        return set(counter.counts)

    def sorted_matches(self, query: str) -> list[Match]:
        """The current matches of ``query`` in deterministic order."""
        return sorted(self.matches(query), key=match_sort_key)

    def subscribe(self, listener: UpdateListener) -> Callable[[], None]:
        """Call ``listener(update)`` after every commit; returns a function that unsubscribes."""
        return add_listener(self._listeners, listener)

    def close(self) -> None:
        """Stop following the model."""
        self._unsubscribe()

    # ------------------------------------------------------------ building

    def _relation(self, key: RelKey) -> Relation:
        rel = self._relations.get(key)
        if rel is None:
            arity = len(self.queries[key.pattern].params) if isinstance(key, MatchRel) else \
                1 if isinstance(key, TypeRel | ConstRel) else 2
            rel = self._relations[key] = Relation(repr(key), arity)
        return rel

    def _projection(self, pattern: str, positions: tuple[int, ...]) -> Projection:
        by_positions = self._projections.setdefault(pattern, {})
        proj = by_positions.get(positions)
        if proj is None:
            proj = by_positions[positions] = Projection(pattern, positions)
        return proj

    def _build(self, query: Query) -> None:
        counter = self._counters[query.name] = Counter()
        fulls = []
        for body in query.bodies:
            atoms = prune_implied_types(body.atoms, self._mm)
            items = [Item(i, a.args, self._relation(a.rel), a) for i, a in enumerate(atoms)]
            items += [Item(len(atoms) + j, n.args, self._projection(n.pattern, n.positions), None)
                      for j, n in enumerate(body.negs)]
            planner = BodyPlanner(body, items, counter, self._mm)
            for k, item in enumerate(items):
                entry = planner.seeded(k)
                memory = item.memory
                memory.subscribers.append(entry)
                if isinstance(memory, Relation):
                    modify = planner.modifier(k)
                    if modify is None:
                        memory.unmodified.append(entry)
                        self._readers.setdefault(memory, set()).add(planner)
                    else:
                        memory.modifiers.append(modify)
                        self._modifying.setdefault(memory, []).append((planner, k, modify))
            fulls.append(planner.full())
        self._full[query.name] = fulls

    def _route(self, cls_name: str) -> _Routes:
        cls = self._mm[cls_name]
        routes = _Routes()
        for key, rel in self._relations.items():
            if isinstance(key, TypeRel) and cls.is_a(key.cls):
                routes.types.append(rel)
            elif isinstance(key, AttrRel) and cls.is_a(key.owner):
                routes.attrs.setdefault(key.feature, []).append(rel)
            elif isinstance(key, RefRel) and cls.is_a(key.owner):
                routes.refs[key.feature] = rel
        routes.observed = self._history.observes(cls_name)
        routes.sets = {f: (f in routes.observed, routes.attrs.get(f))
                       for f in routes.observed | set(routes.attrs)}
        return routes

    def _initialize(self) -> None:
        """Fill the memories from the model as it is now, then every pattern from scratch."""
        self._history.reset(self.model)
        for key, rel in self._relations.items():
            for t in self._base_tuples(key):
                rel.insert(t)
        for name in self.queries.order:
            counter = self._counters[name]
            for run in self._full[name]:
                run()
            counter.touched = {}
            rel = self._relations.get(MatchRel(name))
            for match in counter.counts:
                if rel is not None:
                    rel.insert(match)
                for proj in self._projections.get(name, {}).values():
                    key = proj.key(match)
                    proj.counts[key] = proj.counts.get(key, 0) + 1
                    proj.shape += 1

    def _base_tuples(self, key: RelKey) -> Iterator[tuple[Any, ...]]:
        if isinstance(key, ConstRel):
            yield (key.value,)
        elif isinstance(key, TypeRel):
            for o in self.model.instances(key.cls):
                yield (o.id,)
        elif isinstance(key, RefRel):
            for o in self.model.instances(key.owner):
                for t in o.targets(key.feature):
                    yield (o.id, t.id)
        elif isinstance(key, AttrRel):
            for o in self.model.instances(key.owner):
                yield (o.id, o[key.feature])
        elif isinstance(key, HistoryRel):
            for o in self.model.instances(key.owner):
                yield (o.id, self._history.value(key, o.id))

    # ------------------------------------------------------------ processing a commit

    def _on_commit(self, commit: Commit) -> None:
        changes = commit.changes
        if not (self.bulk and changes.__class__ is BlockChanges
                and len(changes) >= self.bulk_min
                and self._bulk(changes.entries)):  # type: ignore[union-attr]
            self._apply(changes)
        self._settle(commit)

    def _apply(self, changes: Iterable[Change]) -> None:
        """Phase 1, change by change: base relation updates and history values."""
        update = self._update
        modify = self._modify
        routes = self._routes
        observed: list[Change] = []  # what the history functions need to see
        for ch in changes:
            kind, obj, cls, feature, old, new, _ = ch
            r = routes[cls]
            if kind == "set":
                hit = r.sets.get(feature)  # type: ignore[arg-type]
                if hit is None:  # nothing reads this attribute
                    continue
                watched, rels = hit
                if watched:
                    observed.append(ch)
                if rels is not None and old != new:
                    for rel in rels:
                        modify(rel, obj, old, new)
            elif kind == "add" or kind == "remove":
                rel = r.refs.get(feature)  # type: ignore[arg-type]
                if rel is not None:
                    if kind == "add":
                        update(rel, (obj, new), 1)
                    else:
                        update(rel, (obj, old), -1)
            else:
                if r.observed:
                    observed.append(ch)
                sign = 1 if kind == "create" else -1
                values = new if kind == "create" else old
                for rel in r.types:
                    update(rel, (obj,), sign)
                for attr, rels in r.attrs.items():
                    for rel in rels:
                        update(rel, (obj, values[attr]), sign)
        history = self._history.apply_changes(observed) if observed else ()
        relations = self._relations
        i, n = 0, len(history)
        while i < n:
            site, obj, old, new = history[i]
            i += 1
            if old is ABSENT:
                update(relations[site], (obj, new), 1)
            elif new is ABSENT:
                update(relations[site], (obj, old), -1)
            elif i < n and history[i][1] == obj and history[i][2] is not ABSENT \
                    and history[i][3] is not ABSENT:  # several values of one object
                group = [(relations[site], old, new)]
                while i < n and history[i][1] == obj and history[i][2] is not ABSENT \
                        and history[i][3] is not ABSENT:
                    group.append((relations[history[i][0]], history[i][2], history[i][3]))
                    i += 1
                self._modify_group(obj, group)
            else:
                modify(relations[site], obj, old, new)

    def _settle(self, commit: Commit) -> None:
        """Phase 2: the patterns' deltas in dependency order, then the listeners."""
        deltas: dict[str, QueryDelta] = {}
        counters = self._counters
        for name in self.queries.order:
            counter = counters[name]
            if not counter.touched:
                continue
            appeared, disappeared = counter.settle()
            if not appeared and not disappeared:
                continue
            self._propagate(name, appeared, disappeared)
            if not self.queries[name].private:
                deltas[name] = QueryDelta(name, tuple(in_match_order(appeared)),
                                          tuple(in_match_order(disappeared)))
        result = MatchUpdate(commit.ts, commit.number, tuple(
            deltas[n] for n in self.queries.queries if n in deltas) if deltas else ())
        self.last_update = result
        for listener in list(self._listeners):
            listener(result)

    def _bulk(self, entries: tuple[Change | AttributeBlock, ...]) -> bool:
        """Phase 1 of a commit holding attribute blocks, the blocks column-wise; False (and
        nothing done) unless every block value can go that way: the blocks' objects are
        distinct, set each attribute once and are not otherwise changed by the commit, and
        every body reading a value they change reads it in place (:mod:`cepflow.queries.bulk`).
        """
        blocks: list[AttributeBlock] = []
        ordinary: list[Change] = []
        for e in entries:
            (blocks if e.__class__ is AttributeBlock else ordinary).append(e)  # type: ignore[arg-type]
        layouts = [self._bulk_layout(b) for b in blocks]
        objects = layouts[0].ids if len(layouts) == 1 else \
            frozenset().union(*(layout.ids for layout in layouts))
        if not all(layout.distinct for layout in layouts) or len(objects) != sum(
                len(layout.ids) for layout in layouts) or any(
                ch.obj in objects for ch in ordinary):
            return False
        # the values each (class, attribute) of the blocks changes, and how
        for b, layout in zip(blocks, layouts, strict=True):
            for news, routes in zip(b.new, layout.groups, strict=True):
                for route, rows, _ in routes:
                    if route is _NO_BULK and _pick(rows, news).count(None) != len(rows):
                        return False  # a value some body cannot take in bulk is set
        if ordinary:
            self._apply(ordinary)
        changed: dict[Relation, ValueChanges] = {}
        relations = self._relations
        history = self._history
        for b, layout in zip(blocks, layouts, strict=True):
            for olds, news, routes in zip(b.old, b.new, layout.groups, strict=True):
                for route, rows, objs in routes:
                    if route is _NO_BULK:
                        continue
                    old, new = _pick(rows, olds), _pick(rows, news)
                    if None in new:  # (not set in this block)
                        kept = [r for r, v in enumerate(new) if v is not None]
                        objs, old, new = _pick(kept, objs), _pick(kept, old), _pick(kept, new)
                    for site in route.sites:
                        moved = history.observe(site, objs, new)
                        if moved:
                            before, after = changed.get(relations[site]) or \
                                changed.setdefault(relations[site], ({}, {}))
                            for obj, o, v in moved:
                                before[obj] = o
                                after[obj] = v
                    for rel in route.relations:
                        before, after = changed.get(rel) or changed.setdefault(rel, ({}, {}))
                        for obj, o, v in zip(objs, old, new, strict=True):
                            if o != v:
                                before[obj] = o
                                after[obj] = v
        bodies: dict[BulkBody, None] = {}
        for rel in changed:
            for planner, _, _ in self._modifying.get(rel, ()):
                bodies[self._bulk_bodies[planner]] = None
        for body in bodies:
            body.apply(changed)
        for rel, (before, after) in changed.items():
            rel.replace_values(before, after)
        return True

    def _bulk_layout(self, block: AttributeBlock) -> _Layout:
        """What ``block``'s objects are (ids, distinct?) and, per attribute, its objects
        grouped by what their value updates (``_NO_BULK``: some body cannot take it in
        bulk) — kept per list of objects and attributes: a frame's blocks repeat theirs."""
        key = (block.features, block.objects_key if block.objects_key is not None
               else tuple(block.targets))
        layout = self._bulk_layouts.get(key)
        if layout is None:
            ids, classes = block.objects, block.classes
            groups = []
            for feature in block.features:
                by_route: dict[_BulkRoute, list[int]] = {}
                for i, cls in enumerate(classes):
                    route = self._bulk_route(cls, feature)
                    if route is not None:
                        route = _NO_BULK if route is False else route
                        by_route.setdefault(route, []).append(i)  # type: ignore[arg-type]
                groups.append([(route, rows, _pick(rows, ids))
                               for route, rows in by_route.items()])
            layout = _Layout(frozenset(ids), len(set(ids)) == len(ids) and len(
                set(block.features)) == len(block.features), groups)
            if len(self._bulk_layouts) > 64:  # (frames of ever other bodies: no reuse)
                self._bulk_layouts.clear()
            self._bulk_layouts[key] = layout
        return layout

    def _bulk_route(self, cls: str, feature: str) -> _BulkRoute | bool | None:
        """What a block's ``set`` of ``feature`` of a ``cls`` updates (None: nothing), or
        False when a body reading it cannot take it in bulk."""
        key = (cls, feature)
        if key in self._bulk_routes:
            route = self._bulk_routes[key]
            return False if route is _NO_BULK else route
        sites = tuple(self._history.sites_of(cls, feature))
        hit = self._routes[cls].sets.get(feature)
        rels = tuple(hit[1] or ()) if hit is not None else ()
        route: _BulkRoute | None = _BulkRoute(sites, rels) if sites or rels else None
        for rel in (*rels, *(self._relations[s] for s in sites)):
            if rel.unmodified or not all(self._bulk_body(p).usable
                                         for p, _, _ in self._modifying.get(rel, ())):
                route = _NO_BULK
                break
        self._bulk_routes[key] = route
        return False if route is _NO_BULK else route

    def _bulk_body(self, planner: BodyPlanner) -> BulkBody:
        body = self._bulk_bodies.get(planner)
        if body is None:
            body = self._bulk_bodies[planner] = BulkBody(planner, self._functions)
        return body

    def _update(self, rel: Relation, t: tuple[Any, ...], sign: int) -> None:
        """Propagate inserting (sign 1) or deleting (-1) ``t``, then apply it."""
        if (t in rel.tuples) == (sign > 0):
            return  # already there / already gone
        subscribers = rel.subscribers
        if subscribers:
            rel.pending, rel.pending_sign = t, sign
            for entry in subscribers:
                entry(t, sign)
            rel.pending, rel.pending_sign = None, 0
        if sign > 0:
            rel.insert(t)
        else:
            rel.delete(t)

    def _modify(self, rel: Relation, obj: Any, old: Any, new: Any,
                modifiers: list[Modifier] | None = None) -> None:
        """Object ``obj``'s value in a functional relation goes from ``old`` to ``new``: the
        same as deleting ``(obj, old)`` and then inserting ``(obj, new)``, but the plans that
        can (:meth:`BodyPlanner.modifier`) take both in one join. ``modifiers``: those of
        ``rel`` to run (default: all)."""
        t_old, t_new = (obj, old), (obj, new)
        tuples = rel.tuples
        if t_old not in tuples or t_new in tuples:  # pragma: no cover - not functional
            self._update(rel, t_old, -1)
            self._update(rel, t_new, 1)
            return
        for m in rel.modifiers if modifiers is None else modifiers:
            m(obj, old, new)  # they do not read rel (it occurs once in their body)
        rest = rel.unmodified
        if rest:
            rel.pending, rel.pending_sign = t_old, -1
            for entry in rest:
                entry(t_old, -1)
            rel.delete(t_old)
            rel.pending, rel.pending_sign = t_new, 1
            for entry in rest:
                entry(t_new, 1)
            rel.pending, rel.pending_sign = None, 0
            rel.insert(t_new)
        else:
            rel.replace(t_old, t_new)

    def _modify_group(self, obj: Any, changes: list[tuple[Relation, Any, Any]]) -> None:
        """Several functional relations change their value for ``obj`` in one commit (a
        frame's x and y of a joint). A body that reads them all in place, through one object
        variable, takes them in one join (:meth:`BodyPlanner.group_modifier`); the rest is
        :meth:`_modify` one relation after the other. The result is the same: a grouped
        body reads none of these relations' memories."""
        key = tuple(rel for rel, _, _ in changes)
        plan = self._group_plans.get(key)
        if plan is None:
            plan = self._group_plans[key] = self._plan_group(key)
        for fn, positions in plan.groups:
            fn(obj, [changes[i][1:] for i in positions])
        for (rel, old, new), rest in zip(changes, plan.rest, strict=True):
            self._modify(rel, obj, old, new, rest)

    def _plan_group(self, rels: tuple[Relation, ...]) -> _GroupPlan:
        by_planner: dict[BodyPlanner, list[tuple[int, int]]] = {}
        for i, rel in enumerate(rels):
            for planner, k, _ in self._modifying.get(rel, ()):
                by_planner.setdefault(planner, []).append((i, k))
        blocked = set().union(*(self._readers.get(rel, set()) for rel in rels))
        plan = _GroupPlan()
        grouped: set[tuple[BodyPlanner, int]] = set()
        for planner, entries in by_planner.items():
            if len(entries) < 2 or planner in blocked:
                continue
            fn = planner.group_modifier(tuple(k for _, k in entries))
            if fn is not None:
                plan.groups.append((fn, tuple(i for i, _ in entries)))
                grouped.update((planner, k) for _, k in entries)
        plan.rest = [[m for planner, k, m in self._modifying.get(rel, ())
                      if (planner, k) not in grouped] for rel in rels]
        return plan

    def _propagate(self, name: str, appeared: list[Match], disappeared: list[Match]) -> None:
        """A pattern's changed matches become updates of its match relation and projections."""
        rel = self._relations.get(MatchRel(name))
        projections = list(self._projections.get(name, {}).values())
        for sign, matches in ((-1, disappeared), (1, appeared)):
            for m in matches:
                if rel is not None:
                    self._update(rel, m, sign)
                for proj in projections:
                    self._project(proj, m, sign)

    @staticmethod
    def _project(proj: Projection, match: Match, sign: int) -> None:
        """Count ``match`` in (or out of) a projection; a key that becomes present or absent
        is propagated to the ``neg find`` items over it (present keys forbid)."""
        key = proj.key(match)
        counts = proj.counts
        c = counts.get(key, 0) + sign
        if (c > 0) != (c - sign > 0):
            proj.shape += 1
        if (c > 0) != (c - sign > 0) and proj.subscribers:
            proj.pending, proj.pending_sign = key, sign
            for entry in proj.subscribers:
                entry(key, sign)
            proj.pending, proj.pending_sign = None, 0
        if c:
            counts[key] = c
        else:
            del counts[key]
