"""Event processing contexts, 000 §4.4 (Fig. 5 and the definitions of Def. 11)."""

from cepflow.language import ast as A
from support import program, refs, run, seq, stream

FIG5 = "a1 a1 a1 a2 a3 a2"


def fig5(context: str) -> list[list[str]]:
    prog = program(A.Fol(A.Atom("a1"), A.Atom("a2")), context=context, types=("a1", "a2", "a3"))
    return refs(run(prog, stream(FIG5)))


def test_fig5_chronicle_pairs_oldest_partial_matches() -> None:
    # "a1(1)-a2(1) and a1(2)-a2(2), while a partial event pattern instance is still unmatched"
    assert fig5("chronicle") == [["a11", "a21"], ["a12", "a22"]]


def test_fig5_immediate_disposes_partial_matches_on_noise() -> None:
    # a3 is noise: the two partial matches a1(2), a1(3) are disposed; a2(2) then finds none.
    assert fig5("immediate") == [["a11", "a21"]]


def test_fig5_strict_immediate_tracks_one_partial_match() -> None:
    # a1(2) cannot contribute (one partial match at a time) and is noise: a1(1) is disposed.
    assert fig5("strict") == [["a13", "a21"]]


def test_chronicle_uses_every_event_in_exactly_one_match() -> None:
    prog = program(seq(A.Atom("a"), A.Atom("b")), types=("a", "b"))
    out = run(prog, stream("a a b b b a b"))
    assert refs(out) == [["a1", "b1"], ["a2", "b2"], ["a3", "b4"]]
    used = [r for m in refs(out) for r in m]
    assert len(used) == len(set(used))


def test_immediate_unrelated_event_type_is_noise() -> None:
    prog = program(seq(A.Atom("a"), A.Atom("b")), context="immediate")
    assert refs(run(prog, stream("a c b"))) == []
    assert refs(run(prog, stream("a b c a b"))) == [["a1", "b1"], ["a2", "b2"]]


def test_strict_new_match_starts_only_after_the_previous_one_ends() -> None:
    prog = program(seq(A.Atom("a"), A.Atom("b"), A.Atom("c")), context="strict")
    # the second a is noise (one partial match at a time): the first one is disposed
    assert refs(run(prog, stream("a b a b c"))) == []
    assert refs(run(prog, stream("a b c a b c"))) == [["a1", "b1", "c1"], ["a2", "b2", "c2"]]


def test_partitioned_immediate_judges_noise_per_key() -> None:
    body = seq(A.Atom("a", ("k",)), A.Atom("b", ("k",)))
    shared = program(body, params=("k",), context="immediate", arity=1)
    parted = program(body, params=("k",), context="immediate", arity=1, partition_by=("k",))
    events = stream("a(1) a(2) b(1) b(2)")
    # on the whole stream b(1) contributes, b(2) finds its partial match still there
    assert refs(run(shared, events)) == [["a1", "b1"], ["a2", "b2"]]
    noisy = stream("a(1) c(2) b(1)", arity=1)
    assert refs(run(shared, noisy)) == []  # c(2) is noise for the whole stream
    # c(2) belongs to no partition of the pattern (it does not bind k): nothing is disposed
    assert refs(run(parted, noisy)) == [["a1", "b1"]]
    # strict: one partial match per key; the second a(2) is noise for key 2 only
    strict = program(body, params=("k",), context="strict", arity=1, partition_by=("k",))
    assert refs(run(strict, stream("a(1) a(2) a(2) b(1) b(2)"))) == [["a1", "b1"]]
    whole = program(body, params=("k",), context="strict", arity=1)
    assert refs(run(whole, stream("a(1) a(2) b(1) b(2)"))) == []


def test_context_declared_per_pattern_overrides_module_default() -> None:
    decls = (
        A.AtomicEventDecl("a1"), A.AtomicEventDecl("a2"), A.AtomicEventDecl("a3"),
        A.ComplexEventDecl("X", (), A.Fol(A.Atom("a1"), A.Atom("a2")), "strict"),
        A.ComplexEventDecl("Y", (), A.Fol(A.Atom("a1"), A.Atom("a2"))),
    )
    from cepflow.compiler.program import compile_module
    from cepflow.runtime.engine import run_patterns

    prog = compile_module(A.Module(decls, context="immediate"))
    out = run_patterns(prog, stream(FIG5))
    assert [(m.type, m.event_refs) for m in out] == [
        ("X", ["a13", "a21"]), ("Y", ["a11", "a21"])]
