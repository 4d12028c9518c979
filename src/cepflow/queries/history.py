"""The state of history functions (``movingAverage`` …): one accumulator per site and object.

A *site* is a :class:`~cepflow.queries.ir.HistoryRel` — function, constant arguments and the
attribute it observes. :meth:`History.apply` replays a commit's changes (never reading the
model, which may already be ahead) and returns how each function value changed; the engine
turns that into updates of the history relations, the naive evaluator reads :meth:`value`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cepflow.models.changes import Commit
from cepflow.models.metamodel import Metamodel
from cepflow.models.model import Model
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
        self._features = {s.feature for s in self.sites}
        # (class name, feature) -> the sites observing it (empty for the unobserved ones)
        self._observing: dict[tuple[str, str], list[HistoryRel]] = {
            (c, f): [s for s in sites_of_c if s.feature == f]
            for c, sites_of_c in self._by_class.items() for f in self._features}

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
        if not self.sites:
            return []
        created: dict[str, str] = {}            # object -> class, created in this commit
        deleted: dict[str, str] = {}            # object -> class, existed before and deleted
        final: dict[tuple[str, str], Any] = {}  # (object, feature) -> last value set
        classes: dict[str, str] = {}            # object -> class, of the objects in final
        observing = self._observing
        for ch in commit.changes:
            kind = ch.kind
            if kind == "set":
                if observing.get((ch.cls, ch.feature)):  # type: ignore[arg-type]
                    final[(ch.obj, ch.feature)] = ch.new  # type: ignore[index]
                    classes[ch.obj] = ch.cls
            elif kind == "create":
                created[ch.obj] = classes[ch.obj] = ch.cls
                for f, v in ch.new.items():
                    final[(ch.obj, f)] = v
            elif kind == "delete" and created.pop(ch.obj, None) is None:
                deleted[ch.obj] = ch.cls  # existed before the commit
        out: list[HistoryChange] = []
        for obj, cls in deleted.items():
            for site in self._by_class[cls]:
                acc = self._state[site].pop(obj)
                out.append((site, obj, acc.value(), ABSENT))
        for obj, cls in created.items():
            for site in self._by_class[cls]:
                acc = self._state[site][obj] = self._new(site, final[(obj, site.feature)])
                out.append((site, obj, ABSENT, acc.value()))
        for (obj, feature), value in final.items():
            if obj in created:
                continue
            for site in observing.get((classes[obj], feature), ()):
                acc = self._state[site].get(obj)
                if acc is None:  # deleted later in the commit
                    continue
                old = acc.value()
                acc.add(value)
                new = acc.value()
                if new != old:
                    out.append((site, obj, old, new))
        return out
