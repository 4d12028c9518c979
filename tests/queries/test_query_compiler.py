"""Checking queries against a metamodel: normalisation and located name/type errors."""

from pathlib import Path

import pytest

from cepflow.models import read_metamodel
from cepflow.queries import FunctionRegistry, QueryError, compile_queries, load_queries
from cepflow.queries.ir import AttrRel, Compare, HistoryRel, MatchRel, RefRel, TypeRel

DATA = Path(__file__).parent / "data"
KINECT = read_metamodel(DATA / "kinect.mm")
CPS = read_metamodel(DATA / "cps.mm")


def errors(text: str, mm=CPS, functions=None) -> list[str]:
    with pytest.raises(QueryError) as e:
        compile_queries(text, mm, name="q.vql", functions=functions)
    return [str(d) for d in e.value.diagnostics]


def test_gesture_queries_compile():
    qs = load_queries(DATA / "gesture.vql", KINECT)
    assert list(qs.queries) == ["rightHandAboveHead", "stretchedRightArm", "ForwardStart"]
    assert qs.order.index("ForwardStart") > qs.order.index("rightHandAboveHead")
    fs = qs["ForwardStart"]
    assert fs.param_types == ("Body", "RightHand", "RightElbow", "RightShoulder", "Head")
    assert fs.dependencies() == {"stretchedRightArm", "rightHandAboveHead"}
    (body,) = fs.bodies
    (neg,) = body.negs
    assert (neg.pattern, neg.positions, neg.args) == ("rightHandAboveHead", (0, 1, 2),
                                                      ("B", "RH", "H"))
    above = qs["rightHandAboveHead"].bodies[0]
    assert HistoryRel("movingAverage", (3,), "RightHand", "y") in [
        a.rel for a in above.atoms]
    assert qs.history_sites() == {HistoryRel("movingAverage", (3,), "RightHand", "y")}


def test_normalisation_of_a_body():
    qs = compile_queries("""
    pattern p(H: HostInstance, X) {
        HostInstance.applications(H, A);
        ApplicationInstance.allocatedTo(A, H2);
        H2 == X;
        H != X;
        HostInstance.totalCpu(H, 4);
        find q(A, _);
    }
    pattern q(A: ApplicationInstance, T: int) { ApplicationInstance(A); T == 1; }
    """, CPS)
    (body,) = qs["p"].bodies
    assert body.params == ("H", "X")  # H2 == X unified, the parameter's name kept
    rels = [(a.rel, a.args) for a in body.atoms]
    assert (TypeRel("HostInstance"), ("H",)) in rels
    assert (RefRel("HostInstance", "applications"), ("H", "A")) in rels
    assert (RefRel("ApplicationInstance", "allocatedTo"), ("A", "X")) in rels
    assert any(r == MatchRel("q") and a[0] == "A" and a[1].startswith("_#") for r, a in rels)
    assert next(a for r, a in rels if r == AttrRel("HostInstance", "totalCpu"))[1].value == 4
    assert body.filters == (Compare("!=", "H", "X"),)
    assert qs["p"].param_types == ("HostInstance", "HostInstance")  # X inferred


@pytest.mark.parametrize("text, expected", [
    ("pattern p(H: Host) { }", "q.vql:1:11: error: unknown type 'Host' of parameter H"),
    ("pattern p(H: HostInstance) {\n  Hst(H);\n}", "q.vql:2:3: error: unknown class 'Hst'"),
    ("pattern p(H: HostInstance) { HostInstance.totalCPU(H, C); }",
     "q.vql:1:43: error: class HostInstance has no feature 'totalCPU' (did you mean 'totalCpu'?)"),
    ("pattern p(H: HostInstance) { find q(H); }", "q.vql:1:30: error: unknown pattern 'q'"),
    ("pattern p(H: HostInstance) { find q(H, H); }\npattern q(X: HostInstance) {}",
     "q.vql:1:30: error: pattern 'q' takes 1 parameter(s), 2 given"),
    ("pattern p(H: HostInstance) { find q(H); }\npattern q(X: HostInstance) { find p(X); }",
     "recursive pattern call"),
    ("pattern p(X) { }", "q.vql:1:11: error: parameter 'X' of pattern 'p' is not bound"),
    ("pattern p(H: HostInstance) { check(C > 1); }",
     "q.vql:1:36: error: unknown variable 'C' in check"),
    ("pattern p(H: HostInstance) { HostInstance.totalCpu(H, C);\n  check(C > D); }",
     "q.vql:2:13: error: unknown variable 'D' in check"),
    ("pattern p(H: HostInstance) { HostInstance.totalCpu(H, C); check(_ > 1); }",
     "anonymous variable '_' cannot be used in a check"),
    ("pattern p(H: HostInstance) { X != H; }",
     "q.vql:1:30: error: variable 'X' in a comparison must be bound by a positive constraint"),
    ("pattern p(H: HostInstance) { neg find q(H, X); X != H; }\n"
     "pattern q(A: HostInstance, B: HostInstance) { HostInstance.applications(A, C); A == B; }",
     "variable 'X' in a 'neg find' must be bound"),
    ("pattern p(H: HostInstance) { HostInstance.totalCpu(H, C); check(nosuch(C)); }",
     "q.vql:1:65: error: unknown function 'nosuch'"),
    ("pattern p(H: HostInstance) { HostInstance.totalCpu(H, \"x\"); }",
     "HostInstance.totalCpu is of type int, the constant 'x' is a str"),
    ("pattern p(H: HostInstance) { HostInstance.applications(H, 3); }",
     "a constant (3) cannot stand for an object"),
    ("pattern p(H: HostInstance) { HostInstance(\"h1\"); }", "cannot stand for an object"),
    ("pattern p(H: HostInstance) { ApplicationInstance(H); }",
     "variable 'H' cannot be both a HostInstance and a ApplicationInstance"),
    ("pattern p(H: HostInstance) { HostInstance.totalCpu(H, C); HostInstance.applications(H, C); }",
     "variable 'C' is used both as an object (ApplicationInstance) and as a value (int)"),
    ("pattern p(H: HostInstance) { HostInstance.totalCpu(H, C); Identifiable.identifier(H, C); }",
     "variable 'C' has incompatible value types: int, str"),
    ("pattern p(H: HostInstance, H: HostInstance) { }", "parameter 'H' is declared twice"),
    ("pattern p(_H: HostInstance) { }", "parameter '_H' cannot be anonymous"),
    ("pattern p(H: HostInstance) { }\npattern p(H: HostInstance) { }",
     "q.vql:2:9: error: pattern 'p' is declared twice"),
    ("pattern p(H: HostInstance) { 1 == 2; }", "comparison of two constants"),
    ("pattern p(H: HostInstance) { _ == H; }", "anonymous variable '_' cannot be compared"),
    ("pattern p(H: HostInstance) { int(H); }", "unknown class 'int' (a primitive type"),
    ("pattern p(H: HostInstance) { HostInstance.totalCpu(H, C); check(movingAverage(C + 1) > 1); }",
     "the first argument of history function movingAverage must be a variable bound by an "
     "attribute constraint"),
    ("pattern p(H: HostInstance) { HostInstance.totalCpu(H, C); check(movingAverage(C, H) > 1); }",
     "the other arguments of history function movingAverage must be constants"),
    ("pattern p(H: HostInstance) { HostInstance.totalCpu(H, C); check(movingAverage(C, 0) > 1); }",
     "movingAverage window must be a positive integer"),
    ("pattern p(H: HostInstance) { find q(H, C); check(movingAverage(C) > 1); }\n"
     "pattern q(H: HostInstance, C: int) { HostInstance.totalCpu(H, C); }",
     "must be a variable bound by an attribute constraint such as Class.attr(obj, C)"),
    ("pattern p(H: HostInstance) { find q(H, \"x\"); }\n"
     "pattern q(H: HostInstance, C: int) { HostInstance.totalCpu(H, C); }",
     "parameter of 'q' is of type int, the constant 'x' is a str"),
    ("pattern p(H: HostInstance) { neg find q(A); ApplicationInstance(A); A == H; }\n"
     "pattern q(A: ApplicationInstance) { ApplicationInstance(A); }",
     "cannot be both"),
])
def test_errors_are_located(text, expected):
    found = errors(text)
    assert any(expected in e for e in found), found


def test_all_errors_are_reported_together():
    found = errors("pattern p(H: HostInstance) { Nope(H); }\n"
                   "pattern q(H: HostInstance) { HostInstance.nope(H, X); }")
    assert [e.split(": error")[0] for e in found] == ["q.vql:1:30", "q.vql:2:43"]


def test_functions_come_from_the_registry_only():
    text = "pattern p(H: HostInstance) { HostInstance.totalCpu(H, C); check(half(C) > 1); }"
    assert any("unknown function 'half'" in e for e in errors(text))
    registry = FunctionRegistry({"half": lambda x: x / 2})
    assert "p" in compile_queries(text, CPS, functions=registry).queries
    with pytest.raises(ValueError, match="already registered"):
        registry.register("half", abs)
    with pytest.raises(ValueError, match="not an identifier"):
        registry.register("a b", abs)
