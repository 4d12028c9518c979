"""Binding an event's parameters to the variables of the position it takes (000 Algorithm 1),
shared by every matching step."""

from __future__ import annotations

from typing import Any

from cepflow.automaton.automaton import Collect
from cepflow.language.tags import index_name
from cepflow.runtime.collected import Collected

_MISSING = object()
#: the bindings given to a filter that reads only its event
NO_BINDINGS: dict[str, Any] = {}


def bind(pos: Any, params: tuple, b: dict[str, Any]) -> dict[str, Any] | None:
    """Algorithm 1: the bindings after unifying occurrence ``pos`` with the event's parameters
    (``b`` itself when nothing new is bound — binding dicts are never changed in place), or
    None when a bound variable has another value."""
    if not b:  # nothing bound yet (a start): one dict, checking repeated variables
        newb = {}
        for i, var in pos.binds:
            v = params[i]
            cur = newb.setdefault(var, v)
            if cur is not v and cur != v:
                return None
        return newb
    newb = None
    for i, var in pos.binds:
        v = params[i]
        cur = (b if newb is None else newb).get(var, _MISSING)
        if cur is _MISSING:
            if newb is None:
                if b.__class__ is Collected:  # (a run's shared collection: not copied)
                    return b.bound(pos.binds, params)
                newb = dict(b)
            newb[var] = v
        elif cur != v:
            return None
    return b if newb is None else newb


def collect(c: Collect, params: tuple, b: dict[str, Any]) -> dict[str, Any]:
    """The bindings after a repeated tag (Esper's ``[n] b=B``, ``b=B until …``) took its k-th
    event: ``b[k].<field>``, the current event's variables and the count, in that order (a new
    dict; binding dicts are never changed in place) — the token path's step and the pair
    kernel's matches and open instances (kernels.pair._held) make them alike."""
    k = b.get(c.count, 0)
    nb = dict(b)
    head = index_name(c.alias, k)
    for i, f in enumerate(c.fields):
        nb[c.current[i]] = nb[f"{head}.{f}"] = params[i]
    nb[c.count] = k + 1
    return nb


#: how many events a tag collects in plain dicts before its run's collection is shared
#: (:func:`collect_run`): below it a copy is cheaper than the shared structure's steps
#: (Esper's ``[2] b=B``, short untils: the pattern_shapes ``esper_*`` shapes per event)
SHARE_FROM = 16


def collect_run(c: Collect, params: tuple, b: dict[str, Any]) -> dict[str, Any]:
    """The token path's collecting step: :func:`collect`'s bindings, from the
    :data:`SHARE_FROM`-th event of the tag on as one run's shared collection
    (runtime.collected.Collected: O(1) a step, where the plain dict is copied: O(k)) — the
    same names, values and order either way. Plain bindings become one once per run;
    bindings whose names of the tag do not follow its count (no step makes them) are
    collected plainly."""
    if b.__class__ is not Collected:
        if b.get(c.count, 0) < SHARE_FROM:
            return collect(c, params, b)
        b = Collected.of(b)
    nb = b.collect(c, params)
    return collect(c, params, b.plain()) if nb is None else nb


def spread(out: dict[str, Any], b: dict[str, Any], tags: tuple[Collect, ...]) -> dict[str, Any]:
    """A complex event's bindings ``out`` (its select list's) with, for each tag collected
    without bound (Esper's ``select *`` over ``a=A until D``: an array of any length), the
    ``a[k].<field>`` of every event the match's bindings ``b`` took, k from 0, in order."""
    for c in tags:
        for k in range(b.get(c.count, 0)):
            head = index_name(c.alias, k)
            for f in c.fields:
                name = f"{head}.{f}"
                out[name] = b[name]
    return out
