"""The state of history functions (``movingAverage`` …): one accumulator per site and object.

A *site* is a :class:`~cepflow.queries.ir.HistoryRel` — function, constant arguments and the
attribute it observes. :meth:`History.apply` replays a commit's changes (never reading the
model, which may already be ahead) and returns how each function value changed; the engine
turns that into updates of the history relations, the naive evaluator reads :meth:`value`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cepflow.models.changes import Change, Commit
from cepflow.models.live_model import Model
from cepflow.models.metamodel import Metamodel
from cepflow.queries.functions import Accumulator, FunctionRegistry
from cepflow.queries.ir import HistoryRel

#: The old value of an object created, or the new value of an object deleted, in a commit.
ABSENT: Any = object()

#: (site, object id, old value or ABSENT, new value or ABSENT)
HistoryChange = tuple[HistoryRel, str, Any, Any]


class History:
    """Accumulators of every site for every object that has the observed attribute."""

    def __init__(self, sites: Iterable[HistoryRel], functions: FunctionRegistry,
                 metamodel: Metamodel) -> None:
        self.sites = sorted(set(sites), key=repr)
        self.functions = functions
        self._state: dict[HistoryRel, dict[str, Accumulator]] = {s: {} for s in self.sites}
        # class name -> the sites observing one of its attributes
        self._by_class: dict[str, list[HistoryRel]] = {
            c.name: [s for s in self.sites if c.is_a(s.owner)] for c in metamodel}
        # class name -> feature -> the sites observing it (only the observed features)
        self._observed: dict[str, dict[str, list[HistoryRel]]] = {
            c: {f: [s for s in sites_of_c if s.feature == f]
                for f in {s.feature for s in sites_of_c}}
            for c, sites_of_c in self._by_class.items()}

    def _new(self, site: HistoryRel, value: Any) -> Accumulator:
        acc = self.functions.history[site.function](*site.args)
        acc.add(value)
        return acc

    def reset(self, model: Model) -> None:
        """Start every accumulator from the model's current values (one observation)."""
        for site in self.sites:
            self._state[site] = {o.id: self._new(site, o[site.feature])
                                 for o in model.instances(site.owner)}

    def value(self, site: HistoryRel, obj: str) -> Any:
        """The function's current value for object ``obj``."""
        return self._state[site][obj].value()

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
        accumulators = list(map(self._state[site].__getitem__, objects))
        factory = self.functions.history[site.function]
        # (a class's own observe_all only: a subclass may change add or value)
        observe_all = vars(factory).get("observe_all") if isinstance(factory, type) else None
        if observe_all is not None:
            olds, news = observe_all(accumulators, values)
        else:
            olds, news = [], []
            for acc, value in zip(accumulators, values, strict=True):
                olds.append(acc.value())
                acc.add(value)
                news.append(acc.value())
        return [(obj, old, new) for obj, old, new in zip(objects, olds, news, strict=True)
                if new != old]

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
                acc = state[site].pop(obj)
                out.append((site, obj, acc.value(), ABSENT))
        for obj, values in created.items():
            for site in self._by_class[classes[obj]]:
                acc = state[site][obj] = self._new(site, values[site.feature])
                out.append((site, obj, ABSENT, acc.value()))
        for (obj, _), (value, sites) in final.items():
            if obj in created:  # deleted and created again in this commit: started above
                continue
            for site in sites:
                acc = state[site].get(obj)
                if acc is None:  # deleted later in the commit
                    continue
                old = acc.value()
                acc.add(value)
                new = acc.value()
                if new != old:
                    out.append((site, obj, old, new))
        return out
