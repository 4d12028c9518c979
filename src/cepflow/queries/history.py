"""The state of history functions (``movingAverage`` …): one accumulator per site and object.

A site starts with an accumulator object per object; a site of a float attribute whose function
has a column form (:meth:`MovingAverage.columns <cepflow.queries.functions.MovingAverage.columns>`)
moves to it the first time a frame's block is observed (:meth:`History.observe`) and stays there:
the same floats, a few array operations per block instead of one accumulator call per object.

A *site* is a :class:`~cepflow.queries.ir.HistoryRel` — function, constant arguments and the
attribute it observes. :meth:`History.apply` replays a commit's changes (never reading the
model, which may already be ahead) and returns how each function value changed; the engine
turns that into updates of the history relations, the naive evaluator reads :meth:`value`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from cepflow.models.changes import Change, Commit
from cepflow.models.live_model import Model
from cepflow.models.metamodel import Metamodel
from cepflow.queries.functions import Accumulator, FunctionRegistry, MovingAverages
from cepflow.queries.ir import HistoryRel

#: The old value of an object created, or the new value of an object deleted, in a commit.
ABSENT: Any = object()

#: (site, object id, old value or ABSENT, new value or ABSENT)
HistoryChange = tuple[HistoryRel, str, Any, Any]


class _Accumulators:
    """A site's state as one accumulator object per object (any history function); the
    protocol :class:`~cepflow.queries.functions.MovingAverages` also follows."""

    __slots__ = ("args", "factory", "of")

    def __init__(self, factory: Any, args: tuple[Any, ...]) -> None:
        self.factory = factory
        self.args = args
        self.of: dict[str, Accumulator] = {}

    def start(self, obj: str, value: Any) -> Any:
        acc = self.of[obj] = self.factory(*self.args)
        acc.add(value)
        return acc.value()

    def add(self, obj: str, value: Any) -> tuple[Any, Any] | None:
        acc = self.of.get(obj)
        if acc is None:
            return None
        old = acc.value()
        acc.add(value)
        return old, acc.value()

    def observe(self, objects: list[str], values: list[Any]) -> tuple[list[Any], list[Any]]:
        olds, news = [], []
        for acc, value in zip(map(self.of.__getitem__, objects), values, strict=True):
            olds.append(acc.value())
            acc.add(value)
            news.append(acc.value())
        return olds, news

    def drop(self, obj: str) -> Any:
        return self.of.pop(obj).value()

    def value(self, obj: str) -> Any:
        return self.of[obj].value()


class History:
    """Accumulators of every site for every object that has the observed attribute."""

    def __init__(self, sites: Iterable[HistoryRel], functions: FunctionRegistry,
                 metamodel: Metamodel) -> None:
        self.sites = sorted(set(sites), key=repr)
        self.functions = functions
        self._state: dict[HistoryRel, _Accumulators | MovingAverages] = {
            s: self._empty(s) for s in self.sites}
        # the sites whose function has a column form, over a float attribute
        self._columnar = {s for s in self.sites
                          if metamodel[s.owner].attributes[s.feature].type == "float"
                          and "columns" in vars(self._factory(s))}
        # class name -> the sites observing one of its attributes
        self._by_class: dict[str, list[HistoryRel]] = {
            c.name: [s for s in self.sites if c.is_a(s.owner)] for c in metamodel}
        # class name -> feature -> the sites observing it (only the observed features)
        self._observed: dict[str, dict[str, list[HistoryRel]]] = {
            c: {f: [s for s in sites_of_c if s.feature == f]
                for f in {s.feature for s in sites_of_c}}
            for c, sites_of_c in self._by_class.items()}

    def _factory(self, site: HistoryRel) -> Any:
        return self.functions.history[site.function]

    def _empty(self, site: HistoryRel) -> _Accumulators:
        return _Accumulators(self._factory(site), site.args)

    def reset(self, model: Model) -> None:
        """Start every accumulator from the model's current values (one observation)."""
        for site in self.sites:
            state = self._state[site] = self._empty(site)
            for o in model.instances(site.owner):
                state.start(o.id, o[site.feature])

    def value(self, site: HistoryRel, obj: str) -> Any:
        """The function's current value for object ``obj``."""
        return self._state[site].value(obj)

    def apply(self, commit: Commit) -> list[HistoryChange]:
        """Observe a commit: each set attribute's final value once per object."""
        return self.apply_changes(commit.changes)

    def observes(self, cls: str) -> frozenset[str]:
        """The attributes of class ``cls`` that some site observes."""
        return frozenset(self._observed[cls])

    def sites_of(self, cls: str, feature: str) -> list[HistoryRel]:
        """The sites observing attribute ``feature`` of class ``cls`` (none: an empty list)."""
        return self._observed[cls].get(feature, [])

    def observe(self, site: HistoryRel, objects: list[str], values: list[Any]
                ) -> list[tuple[str, Any, Any]]:
        """One commit's observations of ``site``'s attribute, for objects that existed before
        it and that it neither creates nor deletes, at most once each (a frame's block, the
        query engine's bulk path): ``(object, old, new)`` for every value that changed — what
        :meth:`apply_changes` gives for the same sets."""
        state = self._state[site]
        if state.__class__ is _Accumulators and site in self._columnar:
            state = self._state[site] = self._to_columns(site, state)  # type: ignore[arg-type]
        olds, news = state.observe(objects, values)
        if olds.__class__ is np.ndarray:
            moved = np.flatnonzero(news != olds).tolist()  # type: ignore[operator]
            olds, news = olds.tolist(), news.tolist()  # type: ignore[union-attr]
            return [(objects[i], olds[i], news[i]) for i in moved]
        return [(obj, old, new) for obj, old, new in zip(objects, olds, news, strict=True)
                if new != old]

    def _to_columns(self, site: HistoryRel, state: _Accumulators) -> MovingAverages:
        """The column form of a site's accumulators (from now on)."""
        columns: MovingAverages = self._factory(site).columns(*site.args)
        columns.load(state.of)  # type: ignore[arg-type]
        return columns

    def apply_changes(self, changes: Iterable[Change]) -> list[HistoryChange]:
        """:meth:`apply` for a commit's changes — or only those that matter here (the sets
        of observed attributes, the creations and deletions of their classes' objects, in
        order), as the query engine passes them."""
        if not self.sites:
            return []
        created: dict[str, dict[str, Any]] = {}  # object -> its values, created in this commit
        classes: dict[str, str] = {}  # object -> class, of the created ones
        deleted: dict[str, str] = {}  # object -> class, existed before and deleted
        # (object, feature) -> (last value set, the sites observing it)
        final: dict[tuple[str, str], tuple[Any, list[HistoryRel]]] = {}
        observed = self._observed
        for kind, obj, cls, feature, _, new, _ in changes:
            if kind == "set":
                sites = observed[cls].get(feature)  # type: ignore[arg-type]
                if sites is not None:
                    values = created.get(obj)
                    if values is None:
                        final[(obj, feature)] = (new, sites)  # type: ignore[index]
                    else:
                        values[feature] = new  # type: ignore[index]
            elif kind == "create":
                created[obj] = dict(new)
                classes[obj] = cls
            elif kind == "delete" and created.pop(obj, None) is None:
                deleted[obj] = cls  # existed before the commit
        out: list[HistoryChange] = []
        state = self._state
        for obj, cls in deleted.items():
            for site in self._by_class[cls]:
                out.append((site, obj, state[site].drop(obj), ABSENT))
        for obj, values in created.items():
            for site in self._by_class[classes[obj]]:
                out.append((site, obj, ABSENT, state[site].start(obj, values[site.feature])))
        for (obj, _), (value, sites) in final.items():
            if obj in created:  # deleted and created again in this commit: started above
                continue
            for site in sites:
                kept = state[site]
                if kept.__class__ is _Accumulators:  # (inline: the one-body hot path)
                    acc = kept.of.get(obj)  # type: ignore[union-attr]
                    if acc is None:  # deleted later in the commit
                        continue
                    old = acc.value()
                    acc.add(value)
                    new = acc.value()
                else:
                    moved = kept.add(obj, value)
                    if moved is None:
                        continue
                    old, new = moved
                if new != old:
                    out.append((site, obj, old, new))
        return out
