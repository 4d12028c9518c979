"""Design space exploration: hard objectives, shortest fixes, de-duplication, depth bound,
checked against brute-force enumeration on small models."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.dse import (
    DSEError,
    HardObjective,
    SoftObjective,
    TransformationRule,
    explore,
    fingerprint,
)
from cepflow.models import Model, ModelError, parse_metamodel, read_metamodel
from cepflow.models.jsonio import model_from_dict, model_to_dict
from cepflow.queries import compile_queries, evaluate, load_queries

CPS = Path(__file__).resolve().parents[2] / "examples" / "cps"


def dec(app):
    app.model.set(app.bindings["host"], "availableCpu", app.bindings["total"])


def inc(app):
    app.model.set(app.bindings["host"], "totalCpu", app.bindings["available"])


CPS_RULES = [TransformationRule("decreaseAvailableCpu", "availableGreaterThanTotalCpu", dec),
             TransformationRule("increaseTotalCpu", "availableGreaterThanTotalCpu", inc)]
CPS_HARD = [HardObjective("availableGreaterThanTotalCpu")]


def cps_model(*hosts: tuple[str, int, int]):
    mm = read_metamodel(CPS / "cps.mm")
    model = Model(mm)
    with model.transaction(ts=0):
        for h, avail, total in hosts:
            model.create("HostInstance", h, availableCpu=avail, totalCpu=total)
    return model, load_queries(CPS / "cps.vql", mm)


def test_cps_two_quick_fixes_of_fig_12():
    model, qs = cps_model(("h1", 10, 8))
    before = fingerprint(model)
    r = explore(model, qs, CPS_HARD, CPS_RULES, max_depth=3)
    assert [s.describe() for s in r.solutions] == [
        "decreaseAvailableCpu(host=h1, available=10, total=8)",
        "increaseTotalCpu(host=h1, available=10, total=8)"]
    assert fingerprint(model) == before          # the live model was never touched
    r.solutions[1].apply(model)
    assert (model["h1"]["availableCpu"], model["h1"]["totalCpu"]) == (10, 10)
    assert not evaluate(qs, model)["availableGreaterThanTotalCpu"]


def test_shortest_first_and_states_deduplicated():
    model, qs = cps_model(("h1", 10, 8), ("h2", 5, 4))
    r = explore(model, qs, CPS_HARD, CPS_RULES, max_depth=3)
    # 2 fixes per host, in either order: 4 distinct valid states, each reached once (length 2)
    assert len(r.solutions) == 4 and all(len(s.steps) == 2 for s in r.solutions)
    assert len({s.fingerprint for s in r.solutions}) == 4
    assert r.duplicates == 4 and r.states == 1 + 4 + 4


def test_depth_bound_is_respected():
    model, qs = cps_model(("h1", 10, 8), ("h2", 5, 4))
    assert explore(model, qs, CPS_HARD, CPS_RULES, max_depth=1).solutions == []
    r = explore(model, qs, CPS_HARD, CPS_RULES, max_depth=0)
    assert r.solutions == [] and r.states == 1 and r.expanded == 0


def test_valid_model_needs_no_fix():
    model, qs = cps_model(("h1", 4, 8))
    r = explore(model, qs, CPS_HARD, CPS_RULES)
    assert [s.steps for s in r.solutions] == [()]
    assert r.solutions[0].describe() == "(no change needed)"


def test_soft_objectives_order_solutions_of_equal_length():
    model, qs = cps_model(("h1", 10, 8))
    prefer_total = SoftObjective("small available", score=lambda m: m["h1"]["availableCpu"])
    r = explore(model, qs, CPS_HARD, CPS_RULES, soft=[prefer_total])
    assert [s.steps[0].rule for s in r.solutions] == ["decreaseAvailableCpu",
                                                       "increaseTotalCpu"]
    assert [s.cost for s in r.solutions] == [8.0, 10.0]
    big_total = SoftObjective("small total", score=lambda m: m["h1"]["totalCpu"], weight=-1)
    r = explore(model, qs, CPS_HARD, CPS_RULES, soft=[big_total])
    assert [s.steps[0].rule for s in r.solutions] == ["increaseTotalCpu",
                                                       "decreaseAvailableCpu"]


def test_metamodel_violations_are_skipped_and_stale_fixes_refused():
    model, qs = cps_model(("h1", 10, 8))

    def broken(app):
        app.model.set(app.bindings["host"], "totalCpu", "many")

    r = explore(model, qs, CPS_HARD, [TransformationRule("broken", "invalidHost", broken),
                                      *CPS_RULES])
    assert r.skipped == 1 and len(r.solutions) == 2
    with model.transaction():
        model.set("h1", "availableCpu", 11)
    with pytest.raises(DSEError, match="no longer applies"):
        r.solutions[0].apply(model)
    assert model["h1"]["availableCpu"] == 11


def test_set_up_errors():
    model, qs = cps_model(("h1", 10, 8))
    with pytest.raises(DSEError, match="unknown query 'nope'"):
        explore(model, qs, [HardObjective("nope")], CPS_RULES)
    with pytest.raises(DSEError, match="unknown precondition query"):
        explore(model, qs, CPS_HARD, [TransformationRule("r", "nope", dec)])
    with pytest.raises(DSEError, match="not registered"):
        explore(model, qs, CPS_HARD, [TransformationRule("r", "invalidHost", "no.such")],
                actions={})
    with pytest.raises(DSEError, match="query or a score"):
        SoftObjective("s")
    with pytest.raises(DSEError, match="max_depth"):
        explore(model, qs, CPS_HARD, CPS_RULES, max_depth=-1)


# ---------------------------------------------------------------- against brute force
MM = "metamodel c\nclass Counter { attr v: int }\n"
VQL = """
pattern odd(C: Counter, V: int) { Counter.v(C, V); check(V % 2 == 1); }
pattern big(C: Counter, V: int) { Counter.v(C, V); check(V > 3); }
pattern any(C: Counter, V: int) { Counter.v(C, V); }
pattern pos(C: Counter, V: int) { Counter.v(C, V); check(V > 0); }
"""


def _inc(app):
    app.model.set(app.bindings["C"], "v", app.bindings["V"] + 1)


def _dec(app):
    app.model.set(app.bindings["C"], "v", app.bindings["V"] - 1)


def _double(app):
    app.model.set(app.bindings["C"], "v", app.bindings["V"] * 2)


def _limit(app):
    if app.bindings["V"] >= 6:
        raise ModelError("too big", app.bindings["C"], "v")
    _double(app)


SMALL_RULES = [TransformationRule("inc", "any", _inc), TransformationRule("dec", "pos", _dec),
               TransformationRule("double", "any", _limit)]


def brute_force(model: Model, qs, hard: list[str], depth: int) -> dict[str, int]:
    """Every valid state reachable within ``depth`` steps without passing a valid state, with
    its shortest distance — by plain enumeration over model copies."""
    best: dict[str, int] = {}

    def go(m: Model, d: int) -> None:
        res = evaluate(qs, m)
        if all(not res[h] for h in hard):
            fp = fingerprint(m)
            best[fp] = min(best.get(fp, d), d)
            return
        if d == depth:
            return
        for rule in SMALL_RULES:
            params = qs[rule.precondition].params
            for match in res[rule.precondition]:
                copy = model_from_dict(model_to_dict(m, embed_metamodel=False), m.metamodel)
                from cepflow.dse import RuleApplication
                try:
                    with copy.transaction():
                        rule.action(RuleApplication(rule, match, dict(zip(params, match,
                                                                          strict=True)), copy))
                except ModelError:
                    continue
                go(copy, d + 1)

    go(model, 0)
    return best


@settings(max_examples=25, deadline=None)
@given(values=st.lists(st.integers(0, 5), min_size=1, max_size=2),
       hard=st.sets(st.sampled_from(["odd", "big"]), min_size=1),
       depth=st.integers(0, 3))
def test_solutions_match_brute_force(values, hard, depth):
    mm = parse_metamodel(MM, "c.mm")
    qs = compile_queries(VQL, mm)
    model = Model(mm)
    with model.transaction():
        for i, v in enumerate(values):
            model.create("Counter", f"c{i}", v=v)
    hard = sorted(hard)
    r = explore(model, qs, [HardObjective(h) for h in hard], SMALL_RULES, max_depth=depth)
    expected = brute_force(model, qs, hard, depth)
    assert {s.fingerprint: len(s.steps) for s in r.solutions} == expected
    lengths = [len(s.steps) for s in r.solutions]
    assert lengths == sorted(lengths)
    for s in r.solutions:                     # every solution satisfies every hard objective
        copy = model_from_dict(model_to_dict(model, embed_metamodel=False), mm)
        s.apply(copy)
        assert all(not evaluate(qs, copy)[h] for h in hard)
        assert fingerprint(copy) == s.fingerprint
