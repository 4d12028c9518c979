"""Operator semantics, 000 §4.3.1, one group per operator (chronicle unless stated)."""

import pytest

from cepflow.compiler.automata import CompileError
from cepflow.language import ast as A
from support import a, at, b, c, d, program, refs, run, seq, stream


class TestFollowedBy:
    def test_order_is_required(self) -> None:
        prog = program(seq(a, b))
        assert refs(run(prog, stream("a b"))) == [["a1", "b1"]]
        assert refs(run(prog, stream("b a"))) == []

    def test_irrelevant_events_between_are_skipped(self) -> None:
        assert refs(run(program(seq(a, b, c)), stream("a d b d c"))) == [["a1", "b1", "c1"]]

    def test_timestamp_of_match_is_last_event_def9(self) -> None:
        out = run(program(seq(a, b)), stream("a@3 d@4 b@9"))
        assert [m.ts for m in out] == [9]

    def test_left_and_right_nesting_give_the_same_matches(self) -> None:
        ev = stream("a b a c b c")
        left = A.Fol(A.Fol(a, b), c)
        right = A.Fol(a, A.Fol(b, c))
        assert refs(run(program(left), ev)) == refs(run(program(right), ev))


class TestOr:
    def test_either_operand(self) -> None:
        prog = program(A.Or(a, b))
        assert refs(run(prog, stream("a b c"))) == [["a1"], ["b1"]]

    def test_or_of_sequences(self) -> None:
        prog = program(A.Or(seq(a, b), seq(a, c)))
        assert refs(run(prog, stream("a c"))) == [["a1", "c1"]]
        assert refs(run(prog, stream("a b"))) == [["a1", "b1"]]


class TestAnd:
    def test_both_orders(self) -> None:
        prog = program(A.And(a, b))
        assert refs(run(prog, stream("a b"))) == [["a1", "b1"]]
        assert refs(run(prog, stream("b a"))) == [["b1", "a1"]]

    def test_and_is_or_of_fols(self) -> None:
        ev = stream("b a a c b a")
        lhs = A.And(a, b)
        rhs = A.Or(A.Fol(a, b), A.Fol(b, a))
        assert refs(run(program(lhs), ev)) == refs(run(program(rhs), ev))


class TestMultiplicity:
    def test_exact_count_with_unification(self) -> None:
        # tolerationRange(src) = invalidModel(src){3} (000 §6.2)
        prog = program(A.Mult(at("a", "s"), 3), params=("s",), arity=1)
        out = run(prog, stream("a(1) a(2) a(1) a(2) a(1) a(2)"))
        assert [(m.event_refs, m.params) for m in out] == [
            (["a1", "a3", "a5"], (1,)), (["a2", "a4", "a6"], (2,))]

    def test_plus_completes_at_first_occurrence_def9(self) -> None:
        assert refs(run(program(A.Mult(a, "+")), stream("a a"))) == [["a1"], ["a2"]]

    def test_plus_in_sequence_is_greedy(self) -> None:
        prog = program(seq(a, A.Mult(b, "+"), c))
        assert refs(run(prog, stream("a b d b c"))) == [["a1", "b1", "b2", "c1"]]
        assert refs(run(prog, stream("a c"))) == []

    def test_star_allows_zero_occurrences(self) -> None:
        prog = program(seq(a, A.Mult(b, "*"), c))
        assert refs(run(prog, stream("a c"))) == [["a1", "c1"]]
        assert refs(run(prog, stream("a b b c"))) == [["a1", "b1", "b2", "c1"]]

    def test_plus_is_fol_c_star(self) -> None:
        ev = stream("a b b c a c b a b c")
        lhs = seq(a, A.Mult(b, "+"), c)
        rhs = seq(a, b, A.Mult(b, "*"), c)
        assert refs(run(program(lhs), ev)) == refs(run(program(rhs), ev))

    def test_star_alone_is_rejected(self) -> None:
        with pytest.raises(CompileError, match="empty"):
            program(A.Mult(a, "*"))


class TestNegation:
    def test_absence_between_neighbours(self) -> None:
        prog = program(seq(a, A.Not(b), c))
        assert refs(run(prog, stream("a c"))) == [["a1", "c1"]]
        assert refs(run(prog, stream("a b c"))) == []
        assert refs(run(prog, stream("a b a c"))) == [["a2", "c1"]]

    def test_negation_unifies_with_bindings(self) -> None:
        prog = program(seq(at("a", "x"), A.Not(at("b", "x")), at("c", "x")), params=("x",),
                       arity=1)
        assert refs(run(prog, stream("a(1) b(2) c(1)"))) == [["a1", "c1"]]
        assert refs(run(prog, stream("a(1) b(1) c(1)"))) == []

    def test_not_of_or_forbids_both_operands(self) -> None:
        prog = program(seq(a, A.Not(A.Or(b, d)), c))
        assert refs(run(prog, stream("a d c"))) == []
        assert refs(run(prog, stream("a b c"))) == []
        assert refs(run(prog, stream("a c"))) == [["a1", "c1"]]

    def test_not_plus_is_not(self) -> None:
        ev = stream("a b c a c")
        assert refs(run(program(seq(a, A.Not(A.Mult(b, "+")), c)), ev)) == refs(
            run(program(seq(a, A.Not(b), c)), ev))

    def test_not_star_is_undefined(self) -> None:
        with pytest.raises(CompileError, match="undefined"):
            program(seq(a, A.Not(A.Mult(b, "*")), c))

    def test_leading_and_unwindowed_trailing_not_are_rejected(self) -> None:
        with pytest.raises(CompileError, match="start"):
            program(seq(A.Not(b), c))
        with pytest.raises(CompileError, match="window"):
            program(seq(a, A.Not(b)))

    def test_trailing_not_in_window_completes_at_deadline(self) -> None:
        prog = program(A.Window(seq(a, A.Not(b)), 10))
        out = run(prog, stream("a@0 d@11"))
        assert [(m.event_refs, m.ts) for m in out] == [(["a1"], 10)]
        assert run(prog, stream("a@0 b@5 d@11")) == []
        assert run(prog, stream("a@0 b@10 d@11")) == []  # 10 is still within the window
        assert run(prog, stream("a@0 d@3")) == []  # the window has not closed yet
        assert [m.ts for m in run(prog, stream("a@0 d@3"), close=True)] == [10]


class TestWindows:
    def test_within_bounds_span_inclusive(self) -> None:
        prog = program(A.Window(seq(a, b), 10))
        assert refs(run(prog, stream("a@0 b@10"))) == [["a1", "b1"]]
        assert refs(run(prog, stream("a@0 b@11"))) == []

    def test_expired_partial_match_lets_a_younger_one_match(self) -> None:
        prog = program(A.Window(seq(a, b), 10))
        assert refs(run(prog, stream("a@0 a@5 b@12"))) == [["a2", "b1"]]

    def test_holds_for_requires_a_minimum_span(self) -> None:
        prog = program(A.Window(seq(a, b), 10, "holds_for"))
        assert refs(run(prog, stream("a@0 b@10"))) == [["a1", "b1"]]
        # the token leaves the zone too early: trap (000 §5.1 timed zones)
        assert refs(run(prog, stream("a@0 b@4 b@12"))) == []

    def test_prop1_window_compares_leftmost_and_rightmost(self) -> None:
        prog = program(A.Window(seq(a, b, c), 10))
        assert refs(run(prog, stream("a@0 b@9 c@10"))) == [["a1", "b1", "c1"]]
        assert refs(run(prog, stream("a@0 b@2 c@11"))) == []

    def test_nested_windows(self) -> None:
        prog = program(A.Window(seq(a, A.Window(seq(b, c), 2)), 10))
        assert refs(run(prog, stream("a@0 b@5 c@7"))) == [["a1", "b1", "c1"]]
        assert refs(run(prog, stream("a@0 b@5 c@8"))) == []
        assert refs(run(prog, stream("a@0 b@9 c@11"))) == []

    def test_window_on_repeated_operand_restarts_each_round(self) -> None:
        prog = program(seq(A.Mult(A.Window(seq(a, b), 5), "+"), c))
        assert refs(run(prog, stream("a@0 b@4 a@10 b@14 c@30"))) == [
            ["a1", "b1", "a2", "b2", "c1"]]

    def test_not_with_window_interplay(self) -> None:
        prog = program(A.Window(seq(a, A.Not(b), c), 10))
        assert refs(run(prog, stream("a@0 c@5"))) == [["a1", "c1"]]
        assert refs(run(prog, stream("a@0 b@3 c@5"))) == []
        assert refs(run(prog, stream("a@0 c@12"))) == []


class TestUnification:
    def test_gesture_pattern_per_body(self) -> None:
        names = ("FSF", "FSL", "FEF", "FEL")
        body = seq(*(at(n, "B") for n in names))
        prog = program(body, params=("B",), types=names, arity=1)
        ev = stream("FSF(1) FSF(2) FSL(2) FSL(1) FEF(1) FEF(2) FEL(2) FEL(1)")
        out = run(prog, ev)
        assert [(m.params, m.event_refs) for m in out] == [
            ((2,), ["FSF2", "FSL1", "FEF2", "FEL1"]),
            ((1,), ["FSF1", "FSL2", "FEF1", "FEL2"]),
        ]

    def test_variables_shared_across_subpatterns(self) -> None:
        prog = program(seq(at("a", "x", "y"), at("b", "y", "x")), params=("x", "y"), arity=2)
        out = run(prog, stream("a(1,2) b(1,2) b(2,1)", arity=2))
        assert [(m.params, m.event_refs) for m in out] == [((1, 2), ["a1", "b2"])]

    def test_wildcards_bind_nothing(self) -> None:
        prog = program(seq(at("a", "_"), at("b", "_")), arity=1)
        assert refs(run(prog, stream("a(1) b(2)"))) == [["a1", "b1"]]

    def test_filter_on_atom(self) -> None:
        where = A.Binary(">", A.Name("p0"), A.Const(5))
        prog = program(seq(A.Atom("a", ("x",), where), at("b", "x")), params=("x",), arity=1)
        assert refs(run(prog, stream("a(3) a(7) b(3) b(7)"))) == [["a2", "b2"]]


class TestHigherOrder:
    def test_complex_events_re_enter_the_stream(self) -> None:
        inner = A.ComplexEventDecl("AB", (A.Param("x"),), seq(at("a", "x"), at("b", "x")))
        prog = program(seq(at("AB", "x"), at("c", "x")), params=("x",), arity=1,
                       extra=(inner,))
        out = run(prog, stream("a(1)@0 b(1)@2 c(1)@5"))
        assert [(m.type, m.ts, m.event_refs) for m in out] == [
            ("AB", 2, ["a1", "b1"]), ("P", 5, ["a1", "b1", "c1"])]

    def test_cycle_between_complex_events_is_rejected(self) -> None:
        x = A.ComplexEventDecl("X", (), seq(A.Atom("Y"), a))
        y = A.ComplexEventDecl("Y", (), seq(A.Atom("X"), b))
        with pytest.raises(CompileError, match="cycle"):
            program(a, extra=(x, y))


def test_not_variables_must_be_bound_before_the_gap() -> None:
    with pytest.raises(CompileError, match="not bound before the NOT"):
        program(seq(a, A.Not(at("b", "x")), at("c", "x")), params=("x",), arity=1)
