"""One instant, two orders (docs/esper.md, "One instant"): Esper's timers fire before the events
of their instant — its runtime evaluates every schedule due at or before the time it is set to
(``SchedulingServiceImpl.evaluate``: ``headMap(currentTime + 1)``) before the events sent at
that time — so for Esper-style patterns (EPL, or cepflow syntax under context esper) an event
at exactly start + Δ is outside ``timer:within(Δ)``, comes after ``timer:interval(Δ)``, and finds
an every-distinct key of expiry Δ forgotten (``currentTime >= expiry``). VEPL's windows keep
000 §4.3.1's ``|c1.τ - c2.τ| ≤ Δ``: the end instant is inside. The expected answers are derived
by hand from those definitions, and a brute-force oracle of Esper's semantics is compared with
the engine on random streams with many events exactly on the boundary."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load, load_module
from cepflow.runtime.engine import Engine

EPL_SCHEMA = "create schema A(k int); create schema B(k int);\n"
CEP_SCHEMA = "atomicEvent A(k: Integer)\natomicEvent B(k: Integer)\n"


def epl(statement: str):
    return load_module(parse_epl(EPL_SCHEMA + statement))


def events(spec: str) -> list[Event]:
    """``"A1@0 B1@10000"``: type, key, @timestamp (ms); ids ``e0``, ``e1``, …"""
    out = []
    for i, tok in enumerate(spec.split()):
        head, ts = tok.split("@")
        out.append(Event(head[0], (int(head[1:]),), int(ts), id=f"e{i}"))
    return out


def found(program, spec: str | list[Event], close: bool = True, batch: bool = False
          ) -> list[tuple[list, float]]:
    evs = events(spec) if isinstance(spec, str) else spec
    eng = Engine(program)
    out = list(eng.run(evs)) if batch else [m for e in evs for m in eng.process(e)]
    out += eng.finish(close_windows=close)
    return [(m.event_refs, m.ts) for m in out]


WITHIN = "insert into P select a.k as k from pattern [every a=A -> b=B(b.k = a.k) " \
         "where timer:within(10 sec)]"


def test_within_excludes_its_end_instant() -> None:
    p = epl(WITHIN)
    assert found(p, "A1@0 B1@10000") == []
    assert found(p, "A1@0 B1@9999") == [(["e0", "e1"], 9999)]
    # the instance's timer fired at 10 s: a later B finds nothing, also in a batch
    assert found(p, "A1@0 B1@10000 B1@10000", batch=True) == []
    # two instances: the one begun at 0 is gone at 10 s, the one begun at 1 s takes the B
    assert found(p, "A1@0 A1@1000 B1@10000", batch=True) == [(["e1", "e2"], 10000)]


def test_within_written_in_cepflow_syntax_is_esper_too() -> None:
    p = load(CEP_SCHEMA + "complexEvent P(k: Integer) { as (every a = A -> b = B where "
                          "b.k == a.k)[10 s] select a.k as k }\n")
    assert p.automata[0].context == "esper"
    assert found(p, "A1@0 B1@10000") == []
    assert found(p, "A1@0 B1@9999") == [(["e0", "e1"], 9999)]


def test_vepl_within_includes_its_end_instant() -> None:
    """000 §4.3.1: within ⇔ |c1.τ - c2.τ| ≤ Δ."""
    p = load(CEP_SCHEMA + "complexEvent P(k: Integer) { as (A(k) -> B(k))[10 s] }\n")
    assert found(p, "A1@0 B1@10000") == [(["e0", "e1"], 10000)]
    assert found(p, "A1@0 B1@10001") == []


def test_interval_fires_before_an_event_at_its_end() -> None:
    """'every a=A -> (timer:interval(5 sec) and not B(k = a.k))': a B exactly 5 s after the A
    comes after the timer, so A is reported at a + 5 s; one a millisecond earlier cancels."""
    p = epl("insert into P select a.k as k from pattern [every a=A -> "
            "(timer:interval(5 sec) and not B(k = a.k))]")
    assert found(p, "A1@0 B1@5000") == [(["e0"], 5000)]
    assert found(p, "A1@0 B1@4999 B1@9000") == []
    # the VEPL form keeps the end instant inside the gap: the B cancels
    v = load(CEP_SCHEMA + "complexEvent P(k: Integer) { as (A(k) -> NOT B(k))[5 s] }\n")
    assert found(v, "A1@0 B1@5000") == []
    assert found(v, "A1@0 B1@5001") == [(["e0"], 5000)]


def test_every_distinct_key_expires_at_its_expiry_instant() -> None:
    """'every-distinct(a.k, 5 sec) a=A': a key seen at t is new again at exactly t + 5 s."""
    p = epl("insert into P select a.k as k from pattern [every-distinct(a.k, 5 sec) a=A]")
    assert found(p, "A1@0 A1@4999 A1@5000 A1@9999 A1@10000") == [
        (["e0"], 0), (["e2"], 5000), (["e4"], 10000)]


def test_a_time_window_expires_before_an_arrival_at_its_end() -> None:
    """'win:time(10 sec)': an event at t leaves when now ≥ t + 10 s (docs/windows.md), so a
    count at exactly 10 s no longer includes it — the same instant order as the patterns."""
    p = epl("insert into C select count(*) as n from A.win:time(10 sec)")
    out = [(m.ts, m.params) for m in Engine(p).run(events("A1@0 A1@10000"))]
    assert out == [(0, (1,)), (10000, (0,)), (10000, (1,))]


# ---- a brute-force oracle of Esper's semantics ---------------------------------------------

def oracle_within(evs: list[Event], delta: int) -> list[tuple[list, float]]:
    """Esper's ``every a=A -> b=B(b.k = a.k) where timer:within(Δ)``, written from its
    definition: each A starts an instance; an instance takes the first later B of its key; its
    guard quits at a + Δ, before any event of that instant (so the B must come before)."""
    out = []
    waiting: list[Event] = []  # instances, oldest first
    for e in evs:
        waiting = [a for a in waiting if e.ts < a.ts + delta]  # timers at <= now fired
        if e.type == "B":
            done = [a for a in waiting if a.params[0] == e.params[0]]
            out += [([a.id, e.id], e.ts) for a in done]
            waiting = [a for a in waiting if a not in done]
        if e.type == "A":
            waiting.append(e)
    return out


def oracle_interval(evs: list[Event], delta: int) -> list[tuple[list, float]]:
    """Esper's ``every a=A -> (timer:interval(Δ) and not B(k = a.k))`` with the input closed
    at the end: A is reported at a + Δ unless a B of its key came before that instant."""
    out = []
    for i, a in enumerate(evs):
        if a.type != "A":
            continue
        killed = any(b.type == "B" and b.params[0] == a.params[0] and b.ts < a.ts + delta
                     for b in evs[i + 1:])
        if not killed:
            out.append(([a.id], a.ts + delta))
    return sorted(out, key=lambda m: m[1])  # (stable: instances of one instant by age)


@st.composite
def boundary_streams(draw: st.DrawFn) -> list[Event]:
    """Timestamps in whole steps of 5 ms and windows of 0, 5 or 10 ms: many events sit
    exactly on a deadline, and many share an instant."""
    n = draw(st.integers(1, 14))
    ts, out = 0, []
    for i in range(n):
        ts += 5 * draw(st.integers(0, 2))
        out.append(Event(draw(st.sampled_from("AB")), (draw(st.integers(0, 1)),), ts,
                         id=f"e{i}"))
    return out


@settings(max_examples=300, deadline=None)
@given(boundary_streams(), st.sampled_from([0, 5, 10]), st.booleans())
def test_within_equals_the_esper_oracle(evs: list[Event], delta: int, batch: bool) -> None:
    p = epl(WITHIN.replace("10 sec", f"{delta} msec"))
    assert found(p, evs, batch=batch) == oracle_within(evs, delta)


@settings(max_examples=300, deadline=None)
@given(boundary_streams(), st.sampled_from([5, 10]))
def test_interval_equals_the_esper_oracle(evs: list[Event], delta: int) -> None:
    p = epl("insert into P select a.k as k from pattern [every a=A -> "
            f"(timer:interval({delta} msec) and not B(k = a.k))]")
    assert found(p, evs) == oracle_interval(evs, delta)
