"""Bounded search (003 §V.E): witnesses are shortest (against brute-force enumeration on tiny
domains), reproduce with a fresh engine and with ``cepflow run``, and "none" is said when no
sequence within the bound has one."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import cepflow
from cepflow.analysis import read
from cepflow.analysis.bounded_search import SearchError, search
from cepflow.analysis.domain import Domain, DomainError, load_domain
from cepflow.cli.main import app
from cepflow.events.event import Event
from cepflow.runtime.engine import Engine

ROOT = Path(__file__).resolve().parents[2]
MOTORBIKE = ROOT / "examples" / "motorbike"

PROGRAMS = {
    "window": """atomicEvent A(x: Integer)
atomicEvent B(x: Integer)
complexEvent T(x: Integer) { as (A(x) where x > 0 -> B(x))[2] }""",
    "not": """atomicEvent A(x: Integer)
atomicEvent B(x: Integer)
complexEvent T(x: Integer) { as (A(x) -> NOT B(x) -> A(x))[3] }""",
    "deadline": """atomicEvent A(x: Integer)
atomicEvent B(x: Integer)
complexEvent T(x: Integer) { as (A(x) where x == 1 -> NOT B(x))[2] }""",
    "esper": """atomicEvent A(x: Integer)
atomicEvent B(x: Integer)
complexEvent T { as (every a = A where a.x > 0 -> b = B where b.x == a.x)[2]
                 select a.x as x }""",
    "higher": """atomicEvent A(x: Integer)
atomicEvent B(x: Integer)
complexEvent C(x: Integer) { as A(x) -> A(x) }
complexEvent T(x: Integer) { as C(x) -> B(x) }""",
    "statement": """atomicEvent A(x: Integer)
atomicEvent B(x: Integer)
complexEvent T { from a = A where a.x > 0 window length_batch(2) select count(*) as n }""",
}


def first_emission(program, seq: list[Event], target: str) -> int | None:
    """1-based index of the event after which ``target`` was first emitted (fresh engine)."""
    eng = Engine(program, actions={}, strict_actions=False)
    for i, e in enumerate(seq, 1):
        if any(c.type == target for c in eng.process(Event(e.type, e.params, e.ts))):
            return i
    return None


def brute_force(program, dom: Domain, n: int, target: str) -> int | None:
    best = None
    for k in range(1, n + 1):
        for evs in itertools.product(dom.events, repeat=k):
            for steps in itertools.product(dom.steps, repeat=k - 1):
                ts = [dom.start] + [dom.start + sum(steps[:i]) for i in range(1, k)]
                seq = [Event(t, p, s) for (t, p), s in zip(evs, ts, strict=True)]
                hit = first_emission(program, seq, target)
                if hit is not None and (best is None or hit < best):
                    best = hit
        if best is not None:
            return best
    return best


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(sorted(PROGRAMS)),
       values=st.sets(st.integers(0, 2), min_size=1, max_size=2),
       types=st.sets(st.sampled_from("AB"), min_size=1),
       steps=st.sets(st.sampled_from([0, 1, 3]), min_size=1, max_size=2),
       n=st.integers(1, 3))
def test_witnesses_are_shortest(name, values, types, steps, n) -> None:
    program = cepflow.load(PROGRAMS[name])
    dom = Domain([(t, (v,)) for t in sorted(types) for v in sorted(values)], sorted(steps))
    expected = brute_force(program, dom, n, "T")
    for copy, kept, jobs in (("fork", 20_000, 1), ("state", 20_000, 1), ("fork", 1, 1),
                             ("fork", 1, 2)):
        r = search(program, "T", dom, n, copy=copy, max_kept=kept,  # (1: replayed states)
                   jobs=jobs)
        assert (None if r.witness is None else len(r.witness)) == expected, (copy, kept)
        if r.witness is not None:
            assert first_emission(program, r.witness, "T") == len(r.witness)


def test_none_within_the_bound() -> None:
    program = cepflow.load(PROGRAMS["window"])
    dom = Domain([("A", (0,)), ("B", (0,))], [0, 1])  # x > 0 never holds
    r = search(program, "T", dom, 3)
    assert r.witness is None and r.complete and r.depth == 3
    # every sequence was tried: 2 first events, then 2 events x 2 steps per kept state
    kept = [1] + [k for _, k in r.levels[:2]]
    assert r.transitions == 2 * kept[0] + 4 * kept[1] + 4 * kept[2]


def test_motorbike_accident_and_listing_35() -> None:
    """A search for Accident finds a witness; TooHighTirePressure (§V.C's invariant) has none
    within the stated domain (Listing 35's empty result), and one when the domain comes from
    the patterns' constants (4.0 BAR)."""
    pset = read([MOTORBIKE / "motorbike.epl", MOTORBIKE / "properties.epl"])
    program = pset.program
    dom = load_domain(MOTORBIKE / "search.toml", program)
    r = search(program, "Accident", dom, 5)
    assert r.witness is not None and len(r.witness) == 4
    assert first_emission(cepflow.load(MOTORBIKE / "motorbike.epl"), r.witness,
                          "Accident") == 4
    none = search(program, "TooHighTirePressure", dom, 4, horizon=15_000)
    assert none.witness is None and none.complete
    derived = search(program, "TooHighTirePressure", load_domain(None, program), 2)
    assert derived.witness is not None and len(derived.witness) == 1


@pytest.mark.parametrize("kept", [5_000, 3])
def test_a_parallel_search_is_the_serial_search(kept: int) -> None:
    """Workers expand the states of a level; the parent merges them in the serial order, so
    the states kept, the levels and the witness are the serial search's (module docstring,
    "Parallel search"); with 3 engines kept per worker most states are replayed."""
    program = read([MOTORBIKE / "motorbike.epl", MOTORBIKE / "properties.epl"]).program
    dom = load_domain(MOTORBIKE / "search.toml", program)
    for target, n, cap in (("TooHighTirePressure", 3, None), ("Accident", 5, None),
                           ("TooHighTirePressure", 4, 300)):
        one = search(program, target, dom, n, max_states=cap, max_kept=kept)
        two = search(program, target, dom, n, max_states=cap, max_kept=kept, jobs=2)
        assert (two.states, two.levels, two.depth, two.complete) == (
            one.states, one.levels, one.depth, one.complete)
        assert two.witness == one.witness
        if one.witness is None and one.complete:
            assert two.transitions == one.transitions  # (with a witness: up to each hit)
    with pytest.raises(SearchError, match="jobs"):
        search(program, "Accident", dom, 2, jobs=0)


def test_the_fixed_motorbike_set_has_a_shorter_accident(tmp_path: Path) -> None:
    """With priorities (Crash before DriverLeftSeat) one event ends both: 3 events suffice."""
    from cepflow.analysis import analyze
    from cepflow.analysis.fix import write_fixed

    fixed = write_fixed(analyze([MOTORBIKE / "motorbike.epl"]), tmp_path / "fixed.epl")
    program = cepflow.load(fixed)
    dom = load_domain(MOTORBIKE / "search.toml", program)
    assert len(search(program, "Accident", dom, 5).witness) == 3


def test_domain_file_errors_name_the_key_and_line(tmp_path: Path) -> None:
    program = cepflow.load(MOTORBIKE / "motorbike.epl")
    bad = tmp_path / "d.toml"
    bad.write_text("steps = [0]\n[events.Motorbike]\nspeed = [0, \"fast\"]\n")
    with pytest.raises(DomainError, match=r"d.toml:3: events.Motorbike.speed: 'fast'"):
        load_domain(bad, program)
    bad.write_text("steps = [0]\n[events.Motorbike]\nsped = [0]\n")
    with pytest.raises(DomainError, match=r":3: events.Motorbike.sped: Motorbike has no"):
        load_domain(bad, program)
    bad.write_text("stepz = [0]\n")
    with pytest.raises(DomainError, match=r":1: stepz: unknown key"):
        load_domain(bad, program)
    bad.write_text("[events.Accident]\n")
    with pytest.raises(DomainError, match="not an input event type"):
        load_domain(bad, program)
    bad.write_text("steps = [-1]\n")
    with pytest.raises(DomainError, match="steps"):
        load_domain(bad, program)
    with pytest.raises(SearchError, match="unknown event type"):
        search(program, "Nope", load_domain(None, program), 1)
    with pytest.raises(SearchError, match="is an input event type"):
        search(program, "Motorbike", load_domain(None, program), 1)


def test_derived_domains() -> None:
    program = cepflow.load(MOTORBIKE / "motorbike.epl")
    dom = load_domain(None, program)
    vals = dom.values["Motorbike"]
    assert vals["speed"] == [-1, 0, 25, 50]  # speed > 0, >= 50, == 0: four classes
    assert vals["seat"] == [True, False] and vals["motorbikeId"] == [0]
    assert dom.steps == [0, 3001, 5001, 86_400_001]
    alerts = cepflow.load(ROOT / "examples" / "temperature" / "alerts.epl")
    temps = load_domain(None, alerts).values["TemperatureEvent"]["temperature"]
    assert temps == [99, 100, 250, 400, 401]  # compared with other readings: every region


def test_cli_search_writes_a_witness_cepflow_run_reproduces(tmp_path: Path) -> None:
    runner = CliRunner()
    witness = tmp_path / "w.jsonl"
    res = runner.invoke(app, ["search", str(MOTORBIKE / "motorbike.epl"), "--target",
                              "Accident", "--domain", str(MOTORBIKE / "search.toml"),
                              "-o", str(witness)])
    assert res.exit_code == 0, res.output
    assert "shortest witness for Accident: 4 event(s)" in res.stdout
    out = tmp_path / "out.jsonl"
    run = runner.invoke(app, ["run", str(MOTORBIKE / "motorbike.epl"), "-i", str(witness),
                              "-o", str(out)])
    assert run.exit_code == 0, run.output
    assert "Accident" in [json.loads(line)["pattern"] for line in out.read_text().splitlines()]
    none = runner.invoke(app, ["search", str(MOTORBIKE / "motorbike.epl"),
                               str(MOTORBIKE / "properties.epl"), "--target",
                               "TooHighTirePressure", "--domain",
                               str(MOTORBIKE / "search.toml"), "--max-events", "3",
                               "--horizon", "15 s", "--jobs", "2"])
    assert none.exit_code == 0
    assert "no witness for TooHighTirePressure within the bound" in none.stdout
    bad = runner.invoke(app, ["search", str(MOTORBIKE / "motorbike.epl"), "--target", "X"])
    assert bad.exit_code == 1 and "unknown event type 'X'" in bad.stderr


#: what the search found on the benchmark sets before it was made faster (the search of
#: 2026-11-26, commit 11b703f): (target, bound, explored, distinct states, states kept per
#: level, witness as (type, params, ts)). The speed-ups (the target's cone on the last
#: level, copy-on-write forks, the collector's settings) must change none of it.
MOTORBIKE_PINS = [
    ("TooHighTirePressure", 4, 13_832, 865, [(1, 7), (2, 75), (3, 782), (4, 0)], None),
    ("Accident", 5, 9_450, 5_571, [(1, 7), (2, 75), (3, 782)],
     [("Motorbike", (0, 1, "Cadiz", 60, 3.0, 3.0, True), 0),
      ("Motorbike", (0, 1, "Cadiz", 60, 1.0, 3.0, True), 0),
      ("Motorbike", (0, 1, "Cadiz", 0, 1.0, 3.0, True), 0),
      ("Motorbike", (0, 1, "Cadiz", 0, 1.0, 3.0, False), 0)]),
    ("TwoAccidentsTheSameDay", 4, 13_832, 865, [(1, 7), (2, 75), (3, 782), (4, 0)], None),
]
CHAIN = """atomicEvent A(k: Integer, v: Integer)
atomicEvent B(k: Integer, v: Integer)
complexEvent P(k: Integer) { as A(k, _) where v > 0 -> B(k, _) where v > 0 }
complexEvent Q(k: Integer) { as P(k) -> P(k) -> A(k, _) where v > 5 }
complexEvent Never(k: Integer) { as Q(k) -> B(k, _) where v > 1 and v < 1 }
"""


def _answer(r) -> tuple:
    return (r.transitions, r.states, r.levels,
            None if r.witness is None else [(e.type, e.params, e.ts) for e in r.witness])


@pytest.mark.parametrize("kept", [5_000, 40])
def test_the_answers_are_pinned(kept: int) -> None:
    """The same states explored, distinct states and witnesses as the search measured in
    docs/analysis.md before its speed-ups — also when most engines are not kept (replayed)."""
    program = read([MOTORBIKE / "motorbike.epl", MOTORBIKE / "properties.epl"]).program
    dom = load_domain(MOTORBIKE / "search.toml", program)
    for target, n, explored, distinct, levels, witness in MOTORBIKE_PINS:
        r = search(program, target, dom, n, max_kept=kept)
        assert _answer(r) == (explored, distinct, levels, witness), target
    chain = cepflow.load(CHAIN)
    assert _answer(search(chain, "Never", load_domain(None, chain), 4, max_kept=kept)) == (
        114, 19, [(1, 3), (2, 5), (3, 10), (4, 0)], None)
    alerts = cepflow.load(ROOT / "examples" / "temperature" / "alerts.epl")
    dom = load_domain(None, alerts)
    dom.steps = [0.0]
    assert _answer(search(alerts, "Critical", dom, 3, max_kept=kept)) == (
        45, 9, [(1, 4), (2, 4), (3, 0)], None)
