"""Explanations say which events moved each token and why partial matches died."""

from cepflow.language import ast as A
from cepflow.runtime.explain import format_stories, trace_run
from support import at, program, seq, stream


def explain(body: A.Pattern, spec: str, context: str | None = None, **kw) -> str:
    prog = program(body, context=context, **kw)
    stories, _ = trace_run(prog, stream(spec, arity=kw.get("arity", 0)))
    return format_stories(prog, stories)


def test_path_of_a_match() -> None:
    text = explain(seq(A.Atom("a"), A.Atom("b")), "a d b")
    assert "token 1: match" in text
    assert "event a1: q0 -> q1(after a)" in text
    assert "MATCH events=['a1', 'b1']" in text


def test_trap_by_negation_and_window_expiry() -> None:
    text = explain(seq(A.Atom("a"), A.Not(A.Atom("b")), A.Atom("c")), "a b c")
    assert "trap" in text and "NOT b observed" in text
    text = explain(A.Window(seq(A.Atom("a"), A.Atom("b")), 5), "a@0 c@9 b@10")
    assert "window of 5 ms expired" in text


def test_noise_under_immediate_and_partial_left() -> None:
    text = explain(seq(A.Atom("a"), A.Atom("b")), "a c a", context="immediate")
    assert "disposed: noise under immediate: c contributes to no partial match" in text
    assert "waiting in q1(after a)" in text


def test_holds_for_too_short() -> None:
    text = explain(A.Window(seq(at("a", "x"), at("b", "x")), 10, "holds_for"),
                   "a(1)@0 b(1)@3", arity=1, params=("x",))
    assert "holds-for 10 ms not reached" in text
