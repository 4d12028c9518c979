"""The naive evaluator: every pattern from scratch over the model — the incremental engine's
oracle.

Deliberately simple and independent of the engine: no memories, no indexes, no type pruning;
it reads the model through its public API and backtracks over the atoms of each body (most
bound atom first), then applies negative atoms and filters to complete assignments.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from cepflow.models.live_model import Model
from cepflow.queries.history import History
from cepflow.queries.ir import (
    AttrRel,
    Check,
    CompiledBody,
    ConstArg,
    ConstRel,
    HistoryRel,
    MatchRel,
    QuerySet,
    RefRel,
    RelAtom,
    TypeRel,
)

Match = tuple[Any, ...]


def evaluate(queries: QuerySet, model: Model,
             history: History | None = None) -> dict[str, set[Match]]:
    """The matches of every query (objects as ids). ``history`` gives the values of history
    functions; without one, each object's history is its current value only."""
    if history is None:
        history = History(queries.history_sites(), queries.functions, model.metamodel)
        history.reset(model)
    results: dict[str, set[Match]] = {}
    for name in queries.order:
        query = queries[name]
        found: set[Match] = set()
        for body in query.bodies:
            found |= _body(body, model, history, results)
        results[name] = found
    return {name: results[name] for name in queries.queries}


def _body(body: CompiledBody, model: Model, history: History,
          results: dict[str, set[Match]]) -> set[Match]:
    out: set[Match] = set()
    for binding in _solve(list(body.atoms), {}, model, history, results):
        if all(_neg_holds(n.pattern, n.positions, n.args, binding, results)
               for n in body.negs) and all(_filter(f, binding) for f in body.filters):
            out.add(tuple(binding[p] for p in body.params))
    return out


def _value(arg: Any, binding: dict[str, Any]) -> Any:
    return arg.value if isinstance(arg, ConstArg) else binding[arg]


def _neg_holds(pattern: str, positions: tuple[int, ...], args: tuple[Any, ...],
               binding: dict[str, Any], results: dict[str, set[Match]]) -> bool:
    wanted = tuple(_value(a, binding) for a in args)
    return not any(tuple(m[i] for i in positions) == wanted for m in results[pattern])


def _filter(f: Any, binding: dict[str, Any]) -> bool:
    if isinstance(f, Check):
        return f.holds({v: binding[v] for v in f.variables})
    return f.holds(_value(f.left, binding), _value(f.right, binding))


def _solve(atoms: list[RelAtom], binding: dict[str, Any], model: Model, history: History,
           results: dict[str, set[Match]]) -> Iterator[dict[str, Any]]:
    if not atoms:
        yield dict(binding)
        return
    atom = max(atoms, key=lambda a: sum(isinstance(x, ConstArg) or x in binding for x in a.args))
    rest = [a for a in atoms if a is not atom]
    for t in _tuples(atom, binding, model, history, results):
        extended = dict(binding)
        if all(_unify(arg, v, extended) for arg, v in zip(atom.args, t, strict=True)):
            yield from _solve(rest, extended, model, history, results)


def _unify(arg: Any, value: Any, binding: dict[str, Any]) -> bool:
    if isinstance(arg, ConstArg):
        return arg.value == value
    if arg in binding:
        return binding[arg] == value
    binding[arg] = value
    return True


def _tuples(atom: RelAtom, binding: dict[str, Any], model: Model, history: History,
            results: dict[str, set[Match]]) -> Iterator[tuple[Any, ...]]:
    """Candidate tuples of the atom's relation (restricted by a bound first argument)."""
    rel = atom.rel
    if isinstance(rel, MatchRel):
        yield from results[rel.pattern]
        return
    if isinstance(rel, ConstRel):
        yield (rel.value,)
        return
    first = atom.args[0]
    owner = rel.cls if isinstance(rel, TypeRel) else rel.owner
    if isinstance(first, str) and first in binding:
        obj = model.get(binding[first])
        objects = [obj] if obj is not None and obj.cls.is_a(owner) else []
    else:
        objects = model.instances(owner)
    for o in objects:
        if isinstance(rel, TypeRel):
            yield (o.id,)
        elif isinstance(rel, RefRel):
            for t in o.targets(rel.feature):
                yield (o.id, t.id)
        elif isinstance(rel, AttrRel):
            yield (o.id, o[rel.feature])
        elif isinstance(rel, HistoryRel):
            yield (o.id, history.value(rel, o.id))
