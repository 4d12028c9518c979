"""Bounded design space exploration: the shortest rule-application sequences to valid states.

:func:`explore` searches breadth first over applications of transformation rules (one per
precondition match) from the given model, up to ``max_depth`` applications:

* a state satisfying every hard objective is a **solution** and is not expanded (a fix ends when
  the model is valid; the empty sequence is the solution for an already valid model);
* states are **de-duplicated** by :func:`fingerprint` — each distinct state is kept with the
  first, hence shortest, sequence reaching it; so solutions are distinct end states, each with a
  shortest sequence (property-tested against brute force);
* the search runs on **one private copy** of the model: a state is reached by replaying its
  sequence inside a transaction that is rolled back afterwards (the model's undo log), so the
  live model and its listeners never see it and memory holds sequences and fingerprints only;
* preconditions and objectives are evaluated from scratch per state
  (:func:`cepflow.queries.evaluate`, the incremental engine's oracle);
* an action raising :class:`~cepflow.models.live_model.ModelError` is an inapplicable step
  (skipped);
* solutions are ordered by length, then total soft cost, then the order of the rules and
  matches that produced them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cepflow.dse.objectives import (
    DSEError,
    HardObjective,
    RuleApplication,
    SoftObjective,
    TransformationRule,
)
from cepflow.models.jsonio import model_from_dict, model_to_dict
from cepflow.models.live_model import Model, ModelError
from cepflow.queries.incremental import match_sort_key
from cepflow.queries.ir import QuerySet
from cepflow.queries.naive import evaluate
from cepflow.runtime.actions import registered


def fingerprint(model: Model) -> str:
    """A canonical digest of the model's state: objects by id with class, attribute values and
    reference targets (the order of a many-valued reference is ignored)."""
    items = []
    for o in sorted(model.objects(), key=lambda o: o.id):
        attrs = tuple((a, o[a]) for a in sorted(o.cls.attributes))
        refs = tuple((r, tuple(sorted(t.id for t in o.targets(r))))
                     for r in sorted(o.cls.references))
        items.append((o.id, o.cls.name, attrs, refs))
    return hashlib.blake2b(repr(items).encode(), digest_size=16).hexdigest()


@dataclass(frozen=True)
class RuleStep:
    """One rule application: the rule's name and the precondition match it was applied to."""

    rule: str
    match: tuple[Any, ...]
    bindings: tuple[tuple[str, Any], ...]

    def describe(self) -> str:
        return f"{self.rule}({', '.join(f'{k}={v}' for k, v in self.bindings)})"


@dataclass(frozen=True)
class Solution:
    """A fix: steps leading to a state that satisfies every hard objective."""

    steps: tuple[RuleStep, ...]
    cost: float
    fingerprint: str
    _explorer: _Explorer = field(repr=False, compare=False)

    def describe(self) -> str:
        return " ; ".join(s.describe() for s in self.steps) or "(no change needed)"

    def apply(self, model: Model) -> None:
        """Apply the steps to ``model`` in one transaction; each step's match must still be a
        match of its rule's precondition (else :class:`DSEError`, and nothing changes)."""
        with model.transaction():
            for step in self.steps:
                self._explorer.apply_step(model, step, check=True)


@dataclass
class Exploration:
    """The result of :func:`explore`."""

    solutions: list[Solution]
    states: int
    expanded: int
    duplicates: int
    skipped: int
    truncated: bool
    max_depth: int

    def summary(self) -> dict[str, Any]:
        return {"solutions": len(self.solutions), "states": self.states,
                "expanded": self.expanded, "duplicates": self.duplicates,
                "skipped": self.skipped, "truncated": self.truncated,
                "max_depth": self.max_depth}


class _Undo(Exception):
    """Raised to roll a transaction back after looking at a state."""


class _Explorer:
    def __init__(self, queries: QuerySet, hard: Sequence[HardObjective],
                 rules: Sequence[TransformationRule], soft: Sequence[SoftObjective],
                 actions: Mapping[str, Callable[..., Any]]) -> None:
        names = queries.queries
        for h in hard:
            if h.query not in names:
                raise DSEError(f"hard objective: unknown query '{h.query}'")
        for s in soft:
            if s.query is not None and s.query not in names:
                raise DSEError(f"soft objective '{s.name}': unknown query '{s.query}'")
        self.rules: dict[str, TransformationRule] = {}
        self.fns: dict[str, Callable[[RuleApplication], Any]] = {}
        for r in rules:
            if r.name in self.rules:
                raise DSEError(f"two transformation rules are named '{r.name}'")
            if r.precondition not in names:
                raise DSEError(f"transformation rule '{r.name}': unknown precondition query "
                               f"'{r.precondition}'")
            if isinstance(r.action, str):
                if r.action not in actions:
                    raise DSEError(f"transformation rule '{r.name}': action '{r.action}' is not "
                                   "registered")
                self.fns[r.name] = actions[r.action]
            else:
                self.fns[r.name] = r.action
            self.rules[r.name] = r
        self.queries = queries
        self.hard = list(hard)
        self.soft = list(soft)

    def step(self, rule: TransformationRule, match: tuple[Any, ...]) -> RuleStep:
        params = self.queries[rule.precondition].params
        return RuleStep(rule.name, match, tuple(zip(params, match, strict=True)))

    def apply_step(self, model: Model, step: RuleStep, check: bool = False) -> None:
        rule = self.rules[step.rule]
        if check and step.match not in evaluate(self.queries, model)[rule.precondition]:
            raise DSEError(f"quick fix step {step.describe()} no longer applies: "
                           f"{step.match!r} is not a match of {rule.precondition}")
        self.fns[step.rule](RuleApplication(rule, step.match, dict(step.bindings), model))

    def cost(self, model: Model, results: Mapping[str, set[tuple[Any, ...]]]) -> float:
        total = 0.0
        for s in self.soft:
            value = len(results[s.query]) if s.query is not None else s.score(model)  # type: ignore[misc]
            total += s.weight * value
        return total


def explore(model: Model, queries: QuerySet, hard: Iterable[HardObjective],
            rules: Iterable[TransformationRule], *, soft: Iterable[SoftObjective] = (),
            max_depth: int = 3, max_states: int = 100_000,
            actions: Mapping[str, Callable[..., Any]] | None = None) -> Exploration:
    """Every distinct state satisfying the hard objectives within ``max_depth`` rule
    applications, each with a shortest sequence (see the module docstring)."""
    if max_depth < 0:
        raise DSEError(f"max_depth must be >= 0, got {max_depth}")
    if queries.metamodel is not model.metamodel:
        raise DSEError("the queries are compiled for another metamodel than the model's")
    ex = _Explorer(queries, list(hard), list(rules), list(soft),
                   registered() if actions is None else actions)
    work = model_from_dict(model_to_dict(model, embed_metamodel=False), model.metamodel)
    root = fingerprint(work)
    visited = {root}
    # (path, its state's fingerprint)
    frontier: list[tuple[tuple[RuleStep, ...], str]] = [((), root)]
    found: list[tuple[int, float, int, Solution]] = []
    expanded = duplicates = skipped = 0
    truncated = False
    for depth in range(max_depth + 1):
        nxt: list[tuple[tuple[RuleStep, ...], str]] = []
        for path, path_fp in frontier:
            try:
                with work.transaction():
                    for step in path:
                        ex.apply_step(work, step)
                    results = evaluate(queries, work)
                    if all(not results[h.query] for h in ex.hard):
                        sol = Solution(path, ex.cost(work, results), path_fp, ex)
                        found.append((len(path), sol.cost, len(found), sol))
                    elif depth < max_depth:
                        expanded += 1
                        for rule in ex.rules.values():
                            for match in sorted(results[rule.precondition], key=match_sort_key):
                                step = ex.step(rule, match)
                                try:
                                    with work.transaction():
                                        ex.apply_step(work, step)
                                        fp = fingerprint(work)
                                        raise _Undo
                                except _Undo:
                                    pass
                                except ModelError:
                                    skipped += 1
                                    continue
                                if fp in visited:
                                    duplicates += 1
                                elif len(visited) >= max_states:
                                    truncated = True
                                else:
                                    visited.add(fp)
                                    nxt.append(((*path, step), fp))
                    raise _Undo
            except _Undo:
                pass
        frontier = nxt
        if not frontier:
            break
    found.sort(key=lambda x: x[:3])
    return Exploration([s for *_, s in found], len(visited), expanded, duplicates, skipped,
                       truncated, max_depth)
