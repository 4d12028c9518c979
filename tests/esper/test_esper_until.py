"""Esper's ``until`` after a stage — ``every a = A(f) -> ([m:n] b = B(g, key) until c = C(h,
key)) [where timer:within(Δ)]`` — on the token path, the reference a batch route must equal
(docs/esper.md, "`until` after a stage"), and its shape (runtime.shapes.esper_until_of).

Pinned, hand-derived from the lowering (compiler.esper, ``_Lowering.until``: ``m`` times ``B``
with ``NOT C`` in every gap, then up to ``n - m`` more ``B`` or ``C``) and the matcher's rules
(the until is one instance, Esper's EvalMatchUntilStateNode: at a state whose edges are all
the until's own a thread takes the ``B`` and keeps no run that skipped it,
CompiledPattern.greedy): a ``C`` below ``m`` traps the instance; from ``m`` on it completes it
with the *first* ``min(count, n)`` ``b`` of its key (not a sliding set); the instance
meanwhile holds one thread; ``[n] b until c`` completes at the n-th
``b``. The shape is recognised for every bound and declined where a batch route could not be
proved (the pair kernel takes it: kernels.until, tests/esper/test_esper_until_kernel.py)."""

import pytest
from tests.esper.test_esper_alternatives import C_SCHEMA
from tests.esper.test_esper_kernel import SCHEMA, events

from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.compiled import CompiledPattern
from cepflow.runtime.engine import Engine
from cepflow.runtime.shapes import esper_until_of

SELECT = "select a.k as k, b[0].v as v0, b[1].v as v1, b[2].v as v2 "


def program(body: str, select: str = SELECT):
    return load_module(parse_epl(SCHEMA + C_SCHEMA + f"@Name('P')\ninsert into P\n{select}"
                                 f"from pattern [every a = A -> ({body})];\n"))


def run(body: str, spec, select: str = SELECT, fast_path: bool = True):
    """The matches (time, parts, params) of ``body`` over ``spec``, event by event, and the
    engine; both routes must agree."""
    got = []
    for fp in (fast_path, False):
        engine = Engine(program(body, select), fast_path=fp)
        found = [m for e in events(spec) for m in engine.process(e)]
        got.append(([(m.ts, tuple(m.event_refs), m.params) for m in found], engine))
    assert got[0][0] == got[1][0]
    return got[1]


def threads(engine: Engine) -> list[list[tuple[int, tuple[str, ...]]]]:
    """Per open instance, its threads (state, events) in the token path's order."""
    return [[(th.state, tuple(e.ref for e in th.events)) for th in t.threads]
            for t in engine.matchers[0].all_tokens()]


# A(0), four B(0) v=2..5, C(0): the C completes with the first three b (e1, e2, e3), not the
# last three; then A(0), B(0), C(0): one b, below m = 2: the NOT C traps the instance
BOUNDED = [("A", 0, 1, 0.0, 0), ("B", 0, 2, 0.0, 1), ("B", 0, 3, 0.0, 1), ("B", 0, 4, 0.0, 1),
           ("B", 0, 5, 0.0, 1), ("C", 0, 6, 0.0, 1), ("A", 0, 1, 0.0, 0), ("B", 0, 2, 0.0, 1),
           ("C", 0, 6, 0.0, 1)]


def test_bounded_until_takes_the_first_b_and_traps_below_m() -> None:
    got, engine = run("[2:3] b = B(b.k = a.k) until c = C(c.k = a.k)", BOUNDED)
    assert got == [(5, ("e0", "e1", "e2", "e3", "e5"), (0, 2, 3, 4))]
    assert threads(engine) == []


def test_bounded_until_is_one_instance_that_takes_the_first_n() -> None:
    """After A B B B B (no C yet): Esper's until is one instance that takes each B while it
    holds fewer than n (EvalMatchUntilStateNode restarts its operand up to the upper bound),
    so the instance holds one thread — its first three b — at q7, where a B is ignored."""
    _, engine = run("[2:3] b = B(b.k = a.k) until c = C(c.k = a.k)", BOUNDED[:5])
    assert threads(engine) == [[(7, ("e0", "e1", "e2", "e3"))]]


def test_unbounded_until_one_thread_and_all_b_at_c() -> None:
    """``b until c``: a C at once matches with no b; after three B the instance holds one
    thread with all three (no thread per subset of them), and the C takes all three."""
    spec = [("A", 0, 1, 0.0, 0), ("C", 0, 6, 0.0, 1), ("A", 0, 1, 0.0, 0), ("B", 0, 3, 0.0, 1),
            ("B", 0, 4, 0.0, 1), ("B", 0, 5, 0.0, 1)]
    body = "b = B(b.k = a.k) until c = C(c.k = a.k)"
    got, engine = run(body, spec)
    assert got == [(1, ("e0", "e1"), (0, None, None, None))]
    assert [evs for _, evs in threads(engine)[0]] == [("e2", "e3", "e4", "e5")]
    got, _ = run(body, [*spec, ("C", 0, 7, 0.0, 1)])
    assert got[1:] == [(5, ("e2", "e3", "e4", "e5", "e6"), (0, 3, 4, 5))]


def test_exact_until_completes_at_the_nth_b() -> None:
    """``[2] b until c``: a C after one b traps; the second b completes (no C needed), and a
    third b belongs to no instance."""
    spec = [("A", 0, 1, 0.0, 0), ("B", 0, 3, 0.0, 1), ("C", 0, 6, 0.0, 1), ("A", 0, 1, 0.0, 0),
            ("B", 0, 3, 0.0, 1), ("B", 0, 4, 0.0, 1), ("B", 0, 5, 0.0, 1)]
    got, engine = run("[2] b = B(b.k = a.k) until c = C(c.k = a.k)", spec,
                      "select a.k as k, b[0].v as v0, b[1].v as v1 ")
    assert got == [(4, ("e3", "e4", "e5"), (0, 3, 4))]
    assert threads(engine) == []


def test_until_in_a_window_expires_at_the_deadline() -> None:
    """Within 10 ms: a C exactly 10 ms after the A comes after the timer (Esper's timer
    first): no match; one 9 ms after it completes."""
    body = "[1:2] b = B(b.k = a.k) until c = C(c.k = a.k)) where timer:within(10 msec"
    spec = [("A", 0, 1, 0.0, 0), ("B", 0, 3, 0.0, 1), ("C", 0, 6, 0.0, 9)]
    got, _ = run(body, spec)
    assert got == []
    got, _ = run(body, [*spec[:2], ("C", 0, 6, 0.0, 8)])
    assert got == [(9, ("e0", "e1", "e2"), (0, 3, None, None))]


def shape(body: str, select: str = "select a.k as k "):
    prog = program(body, select)
    return esper_until_of(CompiledPattern(prog.automata[0], False))


@pytest.mark.parametrize(("body", "want"), [
    ("b = B(b.k = a.k) until c = C(c.k = a.k)", (0, None, True, 0)),
    ("[:2] b = B(k = a.k) until c = C(k = a.k)", (0, 2, True, 0)),
    ("[2:3] b = B(b.k = a.k and b.v > 1) until c = C(c.k = a.k and c.v < 3)", (2, 3, True, 2)),
    ("[2:] b = B(a.k = b.k) until c = C(c.k = a.k)", (2, None, True, 2)),
    ("[2] b = B(b.k = a.k) until c = C(c.k = a.k and c.s = 'x')", (2, 2, False, 2)),
])
def test_the_until_shape(body: str, want) -> None:
    """The bounds, whether a C completes, and the shortest match's chain (``a``, ``m`` b, then
    ``c`` unless ``[n]``), whose stages name ``b[k].<field>``; the pair kernel takes it (not
    without the fast path)."""
    pr = shape(body)
    u = pr.until
    assert (u.low, u.high, u.closes, len(pr.stages) - 1 - u.closes) == want
    top = u.high if u.high is not None else u.low + 3
    for k in range(u.low, top + 1):
        view = u.view(k)
        assert len(view.stages) == 1 + k + u.closes and view.key_var == "a.k"
        assert [v for j in range(1, k + 1) for _, v in view.new[j]][::4] == [
            f"b[{j}].k" for j in range(k)]
    engine = Engine(program(body, "select a.k as k "))
    took = engine.matchers[0].pattern.pair.until
    assert engine._pairs is not None and (took.low, took.high, took.closes) == want[:3]
    assert Engine(program(body, "select a.k as k "), fast_path=False)._pairs is None


@pytest.mark.parametrize("body", [
    "[2:3] b = B(b.k = a.k and b.v > a.v) until c = C(c.k = a.k)",  # (g reads a)
    "[2:3] b = B(b.k = a.k) until c = C(c.k = a.k and c.v > a.v)",  # (h reads a)
    "[2:3] b = B until c = C",  # (no key)
    "[2:3] b = B(b.k = a.k) until c = C(c.v = a.v)",  # (another key)
    "[2:3] b = B(b.k = a.k, b.v = a.v) until c = C(c.k = a.k)",  # (b binds more)
    "[2:3] b = B(b.k = a.k) until c = C(c.k = a.k) -> d = A(d.k = a.k)",  # (more after)
])
def test_what_the_until_shape_declines(body: str) -> None:
    assert shape(body) is None, body
