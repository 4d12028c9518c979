"""The search's engine copies: a fork goes on exactly as the original would, neither changes
the other, and the lists of what is state name every attribute processing changes."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepflow
from cepflow.analysis.domain import load_domain
from cepflow.analysis.fingerprint import fingerprint
from cepflow.analysis.fork import (
    ENGINE_SHARED,
    ENGINE_STATE,
    HOST_SHARED,
    HOST_STATE,
    MATCHER_SHARED,
    MATCHER_STATE,
    RUNNER_SHARED,
    RUNNER_STATE,
    WINDOW_STATE,
    Forker,
    state_key,
)
from cepflow.events.event import Event
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import save_state

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = [ROOT / "examples" / "motorbike" / "motorbike.epl",
            ROOT / "examples" / "temperature" / "alerts.epl",
            ROOT / "examples" / "temperature" / "temperature.vepl",
            ROOT / "examples" / "contractions" / "contractions.epl",
            ROOT / "examples" / "every" / "every.epl"]
WINDOWS = """atomicEvent R(k: Integer, v: Integer)
complexEvent S1 { from r = R window time(3) select r.k as k, avg(r.v) as a group by r.k }
complexEvent S2 { from r = R window length(2) per group select r.k as k, max(r.v) as m
                  group by r.k }
complexEvent S3 { from r = R window length_batch(2) select count(*) as n }
complexEvent S4 { from r = R where r.v > 0 window time_batch(4) select r.k as k,
                  min(r.v) as lo group by r.k }
complexEvent S5 { from r = R window time(5) select r.k as k, r.v as v, min(r.v) as lo,
                  sum(r.v) as s group by r.k }
complexEvent P(k: Integer) { as (S1(k, _) -> S5(k, _, _, _))[6] }
"""


def _program(source: Path | str):
    return cepflow.load(source)


def _stream(program, seed: int, n: int) -> list[Event]:
    rng = random.Random(seed)
    events = load_domain(None, program).events
    ts, out = 0, []
    for _ in range(n):
        ts += rng.choice([0, 0, 1, 2, 5, 3001])
        t, params = rng.choice(events)
        out.append(Event(t, params, ts))
    return out


def _run(engine: Engine, events: list[Event]) -> list[tuple]:
    return [(c.type, c.params, c.ts) for e in events
            for c in engine.process(Event(e.type, e.params, e.ts))]


def _doc(engine: Engine) -> dict:
    doc = save_state(engine)
    doc.pop("counters")
    return doc


@pytest.mark.parametrize("source", [*PROGRAMS, WINDOWS], ids=lambda s: getattr(s, "name", "w"))
@pytest.mark.parametrize("seed", range(4))
def test_a_fork_goes_on_as_the_original(source, seed: int) -> None:
    program = _program(source)
    forker = Forker(program, Engine(program))
    events = _stream(program, seed, 40)
    cut = random.Random(seed).randrange(len(events))
    reference = Engine(program)
    expected = _run(reference, events)
    original = Engine(program)
    head = _run(original, events[:cut])
    fork = forker.fork(original)
    # the fork runs first: the original must not notice
    assert head + _run(fork, events[cut:]) == expected
    assert head + _run(original, events[cut:]) == expected
    assert _doc(fork) == _doc(original) == _doc(reference)
    assert state_key(fork) == state_key(reference)


@pytest.mark.parametrize("source", [*PROGRAMS, WINDOWS], ids=lambda s: getattr(s, "name", "w"))
def test_the_fork_fingerprint_agrees_with_the_saved_state(source) -> None:
    """Two states have the same fork fingerprint exactly when their saved states are the same
    without numbering (analysis/fingerprint.py, the reference)."""
    program = _program(source)
    by_fork: dict[bytes, bytes] = {}
    by_doc: dict[bytes, bytes] = {}
    for seed in range(60):
        engine = Engine(program)
        _run(engine, _stream(program, seed, random.Random(seed).randrange(1, 5)))
        f, (d, _) = state_key(engine), fingerprint(engine)
        assert by_fork.setdefault(f, d) == d
        assert by_doc.setdefault(d, f) == f


@pytest.mark.parametrize("source", [*PROGRAMS, WINDOWS], ids=lambda s: getattr(s, "name", "w"))
def test_every_attribute_is_state_or_shared(source) -> None:
    """A new attribute in the engine, a matcher or a runner must be classified here, or the
    fork would share what it should copy."""
    program = _program(source)
    engine = Engine(program)
    assert set(vars(engine)) == ENGINE_STATE | ENGINE_SHARED
    assert set(vars(engine.host)) == HOST_STATE | HOST_SHARED
    for m in engine.matchers:
        assert set(vars(m)) == MATCHER_STATE | MATCHER_SHARED
    for r in engine.windows:
        assert set(vars(r)) == RUNNER_STATE | RUNNER_SHARED


@pytest.mark.parametrize("source", [*PROGRAMS, WINDOWS], ids=lambda s: getattr(s, "name", "w"))
def test_only_state_attributes_change(source) -> None:
    """Processing changes no attribute the fork shares (compared by identity and value)."""
    program = _program(source)
    engine = Engine(program)
    objects = [(engine, ENGINE_STATE), (engine.host, HOST_STATE),
               *((m, MATCHER_STATE) for m in engine.matchers),
               *((r, RUNNER_STATE) for r in engine.windows)]
    before = [{k: (id(v), repr(v)) for k, v in vars(o).items() if k not in state}
              for o, state in objects]
    wins = [(w, {k: repr(v) for k, v in vars(w).items()
                 if k not in WINDOW_STATE[type(w)]})
            for r in engine.windows for w in _window_objects(r.window)]
    _run(engine, _stream(program, 7, 60))
    after = [{k: (id(v), repr(v)) for k, v in vars(o).items() if k not in state}
             for o, state in objects]
    assert before == after
    for w, shared in wins:
        assert {k: repr(v) for k, v in vars(w).items()
                if k not in WINDOW_STATE[type(w)]} == shared


def _window_objects(window) -> list:
    out = [window]
    proc = getattr(window, "proc", None)
    if proc is not None:
        out.append(proc)
        out.append(proc.agg)
    return out


@pytest.mark.parametrize("source", [*PROGRAMS, WINDOWS], ids=lambda s: getattr(s, "name", "w"))
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 1 << 16))
def test_copy_on_write_forks_are_deep_copies(source, seed: int) -> None:
    """A tree of forks, as the search makes them: each engine forked several times, every
    fork given its own random events, and the engine forked from going on too (the search's
    last move). In the end every engine's saved state and fingerprint equal those of a fresh
    engine fed the same events: no engine saw another's events through the parts they share
    (analysis/fork.py, ``_Lazy``)."""
    program = _program(source)
    forker = Forker(program, Engine(program))
    rng = random.Random(seed)
    pool = _stream(program, seed, 60)
    root = Engine(program)
    paths: dict[int, tuple[Engine, list[Event]]] = {id(root): (root, [])}
    nodes = [root]
    ts = 0
    for _ in range(4):  # levels
        ts += rng.choice([0, 1, 2, 5, 3001])
        level = []
        for engine in nodes:
            kids = [forker.fork(engine) for _ in range(rng.randint(1, 3))]
            for kid in kids:
                paths[id(kid)] = (kid, list(paths[id(engine)][1]))
            for kid in [*kids, engine]:  # (the engine itself goes on last)
                for _ in range(rng.randint(0, 2)):
                    e = rng.choice(pool)
                    kid.process(Event(e.type, e.params, ts))
                    paths[id(kid)][1].append(Event(e.type, e.params, ts))
                    state_key(kid)  # (as the search does after each step: nothing cached stale)
                level.append(kid)
        nodes = rng.sample(level, min(len(level), 6))
    assert len(paths) > 8
    for engine, path in paths.values():
        fresh = Engine(program)
        _run(fresh, path)
        assert save_state(engine) == save_state(fresh)
        assert state_key(engine) == state_key(fresh)
