"""The CPS validation and quick-fix case study (000 §3 and §6, Fig. 13), step by step.

The files beside this module are the case: ``cps.mm`` (Fig. 4a), ``cps.vql`` (Fig. 10),
``cps.vepl`` (Fig. 11) and ``model.json`` (the initial, valid model). This module holds the
Python side that VIATRA writes in Java/Xbase: the two transformation rules' actions (Fig. 12)
and the DSE engine the ``toleranceLimitReached`` rule notifies — registered callables, nothing
executed from a file. :func:`run_scenario` plays Fig. 13; ``cepflow demo cps`` prints it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cepflow
from cepflow.dse import Exploration, HardObjective, RuleApplication, TransformationRule, explore
from cepflow.live import LiveSession
from cepflow.models import Model, read_metamodel
from cepflow.models.jsonio import load_model
from cepflow.queries import QuerySet, load_queries
from cepflow.rules import RuleActivation
from cepflow.runtime.actions import action

HERE = Path(__file__).resolve().parent
VALIDATION_QUERY = "availableGreaterThanTotalCpu"


# ---------------------------------------------------------------- Fig. 12: the DSE configuration
@action("cps.decreaseAvailableCpu")
def decrease_available_cpu(app: RuleApplication) -> None:
    """Quick fix 1: decrease the host's available CPU to its total CPU."""
    app.model.set(app.bindings["host"], "availableCpu", app.bindings["total"])


@action("cps.increaseTotalCpu")
def increase_total_cpu(app: RuleApplication) -> None:
    """Quick fix 2: increase the host's total CPU to its available CPU."""
    app.model.set(app.bindings["host"], "totalCpu", app.bindings["available"])


#: the model must be valid: the validation query has no match (ModelQueryType.NO_MATCH)
HARD_OBJECTIVES = [HardObjective(VALIDATION_QUERY)]
#: LHS = the validation query's match, action = a registered callable
TRANSFORMATION_RULES = [
    TransformationRule("decreaseAvailableCpu", VALIDATION_QUERY, "cps.decreaseAvailableCpu"),
    TransformationRule("increaseTotalCpu", VALIDATION_QUERY, "cps.increaseTotalCpu"),
]


@dataclass
class Offer:
    """Quick fixes generated for one toleration-range match."""

    src: str
    ts: float
    exploration: Exploration


class QuickFixGenerator:
    """The DSE engine of Fig. 8: notified by ``toleranceLimitReached`` (Step 1b), it reads the
    model (Step 2a) and generates the quick fixes (Step 2b), which wait for the user's choice."""

    def __init__(self, queries: QuerySet, max_depth: int = 2) -> None:
        self.queries = queries
        self.max_depth = max_depth
        self.offers: list[Offer] = []

    def __call__(self, activation: RuleActivation) -> None:
        result = explore(activation.model, self.queries, HARD_OBJECTIVES, TRANSFORMATION_RULES,
                         max_depth=self.max_depth)
        self.offers.append(Offer(activation.bindings["src"], activation.session.time, result))


# ---------------------------------------------------------------- the scenario of Fig. 13
@dataclass
class Step:
    """What one step of the scenario did and caused."""

    phase: str
    ts: float
    what: str
    query_events: list[str] = field(default_factory=list)
    complex_events: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    valid: bool = True


@dataclass
class CaseRun:
    steps: list[Step]
    summary: dict[str, Any]
    session: LiveSession


def load_case(directory: Path = HERE) -> tuple[Model, QuerySet, cepflow.Program]:
    """The initial model, the compiled validation queries and the compiled event patterns."""
    mm = read_metamodel(directory / "cps.mm")
    return (load_model(directory / "model.json", mm), load_queries(directory / "cps.vql", mm),
            cepflow.load(directory / "cps.vepl"))


#: (phase, ts, description, edits) — the user's edits of host h1 (available 6 of 8 at first)
USER_EDITS: list[tuple[str, float, str, list[tuple[str, str, int]]]] = [
    ("Phase 1", 1000, "the user sets h1.availableCpu to 10 (totalCpu is 8)",
     [("h1", "availableCpu", 10)]),
    ("Phase 2", 2000, "the user modifies h1 further: availableCpu 12 — still invalid",
     [("h1", "availableCpu", 12)]),
    ("Phase 2", 3000, "the user modifies h1 again: availableCpu back to 10 — still invalid",
     [("h1", "availableCpu", 10)]),
]


def run_scenario(choice: int = 0, directory: Path = HERE,
                 report: Callable[[str], None] = lambda line: None) -> CaseRun:
    """Play Fig. 13: three invalidating edits, the toleration pattern, DSE offering two quick
    fixes, the user choosing fix number ``choice`` (0 = decrease available CPU, the paper's
    choice), the transformation applied, the model valid again."""
    model, queries, program = load_case(directory)
    dse = QuickFixGenerator(queries)
    session = LiveSession(model, queries, program, actions={"cps.generateQuickFixes": dse})
    steps: list[Step] = []
    session.query_events.subscribe(
        lambda events: steps[-1].query_events.extend(f"{e.type}({', '.join(map(str, e.params))})"
                                                     for e in events) if steps else None)
    session.on_complex_event(lambda ce: steps[-1].complex_events.append(
        f"{ce.type}({', '.join(map(str, ce.params))})"))

    def valid() -> bool:
        return not session.queries.matches(VALIDATION_QUERY)

    def show(step: Step) -> None:
        report(f"[{step.phase} @ {step.ts:g} ms] {step.what}")
        for e in step.query_events:
            report(f"    query event  {e}")
        for e in step.complex_events:
            report(f"    complex event {e}")
        for i, f in enumerate(step.fixes, 1):
            report(f"    quick fix {i}: {f}")
        report(f"    model is {'valid' if step.valid else 'INVALID'}")

    report(f"initial model: h1 availableCpu={model['h1']['availableCpu']} "
           f"totalCpu={model['h1']['totalCpu']} — {'valid' if valid() else 'invalid'}")
    for phase, ts, what, edits in USER_EDITS:
        steps.append(Step(phase, ts, what))
        offers_before = len(dse.offers)
        with session.transaction(ts=ts):
            for obj, attr, value in edits:
                session.model.set(obj, attr, value)
        if len(dse.offers) > offers_before:
            offer = dse.offers[-1]
            steps[-1].what += (f"; tolerationRange({offer.src}) matched, rule "
                               "toleranceLimitReached notified the DSE engine")
            steps[-1].fixes = [s.describe() for s in offer.exploration.solutions]
        steps[-1].valid = valid()
        show(steps[-1])

    fixes: list[str] = []
    applied = None
    if dse.offers:
        offer = dse.offers[-1]
        fixes = [s.describe() for s in offer.exploration.solutions]
        if not 0 <= choice < len(fixes):
            raise ValueError(f"choice {choice + 1} is not one of the {len(fixes)} quick fixes")
        chosen = offer.exploration.solutions[choice]
        applied = chosen.describe()
        steps.append(Step("Phase 3-4", 4000, f"the user selects quick fix {choice + 1}: "
                          f"{applied}; the transformation is applied"))
        with session.transaction(ts=4000):
            chosen.apply(session.model)
        steps[-1].valid = valid()
        show(steps[-1])
    h1 = session.model["h1"]
    report(f"final model: h1 availableCpu={h1['availableCpu']} totalCpu={h1['totalCpu']}")
    stats = session.finish()
    summary = {
        "fixes_offered": fixes,
        "fix_applied": applied,
        "valid_at_end": valid_after(session, model),
        "invalid_model_events": sum(e.startswith("invalidModel") for s in steps
                                    for e in s.query_events),
        "valid_model_events": sum(e.startswith("validModel") for s in steps
                                  for e in s.query_events),
        "toleration_matches": sum(e.startswith("tolerationRange") for s in steps
                                  for e in s.complex_events),
        "dse": dse.offers[-1].exploration.summary() if dse.offers else None,
        "h1": {"availableCpu": h1["availableCpu"], "totalCpu": h1["totalCpu"]},
        "stats": stats.to_dict(),
    }
    return CaseRun(steps, summary, session)


def valid_after(session: LiveSession, model: Model) -> bool:
    """Whether the final model is valid, checked from scratch (not by the incremental engine)."""
    from cepflow.queries import evaluate

    return not evaluate(session.queries.queries, model)[VALIDATION_QUERY]
