"""The graph query syntax: what the parser builds, and located syntax errors."""

import pytest

from cepflow.language import ast as E
from cepflow.queries import QueryError, parse_queries
from cepflow.queries import query_ast as Q

LISTING_2 = """
// 002 Listing 2, with the Xbase moving average written as a registered history function
pattern rightHandAboveHead(B: Body, RH: RightHand, H: Head) {
    Body.rightHand(B, RH);
    Body.head(B, H);
    RightHand.y(RH, RHy);
    Head.y(H, Hy);
    check(movingAverage(Hy) < movingAverage(RHy));
}
"""


def test_listing_2_parses_to_constraints():
    (p,) = parse_queries(LISTING_2).patterns
    assert p.name == "rightHandAboveHead" and not p.private
    assert [(x.name, x.type) for x in p.params] == [("B", "Body"), ("RH", "RightHand"),
                                                    ("H", "Head")]
    (body,) = p.bodies
    assert body.constraints[0] == Q.PathConstraint("Body", "rightHand", Q.Var("B"), Q.Var("RH"))
    assert body.constraints[-1] == Q.CheckConstraint(E.Binary(
        "<", E.Call("movingAverage", (E.Name("Hy"),)), E.Call("movingAverage", (E.Name("RHy"),))))
    assert body.constraints[0].loc == (4, 5) and p.loc == (3, 9)


def test_every_constraint_form():
    (p, q) = parse_queries("""
    private pattern p(X, N: int) {
        Host(X); Host.totalCpu(X, N); find q(X, _, 3); neg find q(_, "s", -1.5);
        X == Y; X != 3; check(not (N > 1) && N + 2 * 3 >= 1 || !false);
    } or {
        Host(X); N == 0;
    }
    pattern q(A, B, C) { A == B; }
    """).patterns
    assert p.private and len(p.bodies) == 2 and q.params[2] == Q.QueryParam("C")
    c = p.bodies[0].constraints
    assert c[0] == Q.TypeConstraint("Host", Q.Var("X"))
    assert c[2] == Q.FindConstraint("q", (Q.Var("X"), Q.Var("_"), Q.Literal_(3)), False)
    assert c[3] == Q.FindConstraint("q", (Q.Var("_"), Q.Literal_("s"), Q.Literal_(-1.5)), True)
    assert c[4] == Q.CompareConstraint("==", Q.Var("X"), Q.Var("Y"))
    assert c[5] == Q.CompareConstraint("!=", Q.Var("X"), Q.Literal_(3))
    gt = E.Binary(">", E.Name("N"), E.Const(1))
    arith = E.Binary(">=", E.Binary("+", E.Name("N"), E.Binary("*", E.Const(2), E.Const(3))),
                     E.Const(1))
    assert c[6] == Q.CheckConstraint(E.Binary("or", E.Binary("and", E.Unary("not", gt), arith),
                                              E.Unary("not", E.Const(False))))
    assert Q.Var("_x").anonymous and not Q.Var("x_").anonymous


def test_negative_literals_fold():
    (p,) = parse_queries("pattern p(X) { check(-X > -2); }").patterns
    (c,) = p.bodies[0].constraints
    assert c.expr == E.Binary(">", E.Unary("-", E.Name("X")), E.Const(-2))


@pytest.mark.parametrize("text, expected", [
    ("pattern p(X: Host) {\n  Host(X)\n}", "q.vql:3:1: error: unexpected '}', expected ';'"),
    ("pattern p(X {}", "q.vql:1:13: error: unexpected '{', expected"),
    ("pattern p(X) { check(X > ); }", "q.vql:1:26: error: unexpected ')'"),
    ("pattern p(X) {\n  X = 1;\n}", "q.vql:2:5: error: unexpected character '='"),
    ("pattern p(X) { Host.x(X, \"abc); }", "q.vql:1:26: error: unterminated string"),
    ("pattern p(X) { neg Host(X); }", "q.vql:1:20: error: unexpected 'Host', expected 'find'"),
    ("pattern p(X) { find q(X; }", "q.vql:1:24: error: unexpected ';'"),
    ("pattern p(X) {", "q.vql:1:15: error: unexpected end of input"),
    ("pattern (X) {}", "q.vql:1:9: error: unexpected '(', expected name"),
    ("patern p() {}", "q.vql:1:1: error: unexpected 'patern'"),
])
def test_syntax_errors_are_located(text, expected):
    with pytest.raises(QueryError) as e:
        parse_queries(text, "q.vql")
    (d,) = e.value.diagnostics
    assert str(d).startswith(expected), str(d)
