"""Patterns that start with ``timer:interval``: they begin at the statement's start (the
engine's ``start``, else its first event), against the Esper reference ("EPL Reference:
Patterns": timer:interval, "Limiting Subexpression Lifetime", Not, Followed-by), the same
patterns in cepflow syntax, the engine's timer order, saved state and the Spark plan."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from cepflow.cli.main import app
from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load, load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import restore_state, save_state
from cepflow.spark.partitioning import plan

EPL_SCHEMA = "".join(f"create schema {t}(n int);\n" for t in "ABC")
CEP_SCHEMA = "".join(f"atomicEvent {t}(n: Integer)\n" for t in "ABC")


def epl(pattern: str):
    return load_module(parse_epl(EPL_SCHEMA + f"insert into P from pattern [{pattern}]"))


def cep(pattern: str):
    return load(CEP_SCHEMA + f"complexEvent P {{ as {pattern} context esper }}\n")


def events(seq: str) -> list[Event]:
    """``"A1@500 B2@1500"``: type, n and timestamp (ms)."""
    out = []
    for i, tok in enumerate(seq.split()):
        name, ts = tok.split("@")
        out.append(Event(name[0], (int(name[1:]),), float(ts), None, i))
    return out


def matches(program, seq: str, start: float | None = None, close: bool = False,
            engine: Engine | None = None) -> list[tuple[str, float]]:
    engine = engine or Engine(program, start=start)
    out = [m for e in events(seq) for m in engine.process(e)]
    out += engine.finish(close_windows=close)
    return [(" ".join(f"{p.type}{p.params[0]}" for p in m.parts), m.ts) for m in out]


# ---- the reference's examples ---------------------------------------------------------------

def test_every_interval_fires_every_period_from_the_statement_start() -> None:
    """'The pattern below fires every 20 seconds: every timer:interval(20 sec)'."""
    assert matches(epl("every timer:interval(20 sec)"), "A1@0 A2@65000") == [
        ("", 20_000), ("", 40_000), ("", 60_000)]
    assert matches(epl("timer:interval(20 sec)"), "A1@0 A2@65000") == [("", 20_000)]


def test_each_interval_without_an_a_is_reported() -> None:
    """'every (timer:interval(10 sec) and not A)' reports each 10-second interval during which
    no A event occurred: an A ends the interval (false) and every starts the next at once."""
    seq = "B1@0 A1@5000 B2@16000 A2@40000 B3@61000"
    assert matches(epl("every (timer:interval(10 sec) and not A)"), seq) == [
        ("", 15_000), ("", 25_000), ("", 35_000), ("", 50_000), ("", 60_000)]


def test_every_interval_followed_by_b_starts_one_subexpression_per_second() -> None:
    """'every timer:interval(1 sec) -> b=B': after 5 seconds 5 subexpressions look for a B
    and 5 matches occur at once when it arrives; with 'b=B where timer:within(1 sec)' only
    the one started in the last second is still alive."""
    seq = "C1@0 B1@5500"
    assert matches(epl("every timer:interval(1 sec) -> b=B"), seq) == [("B1", 5500)] * 5
    assert matches(epl("every timer:interval(1 sec) -> (b=B where timer:within(1 sec))"),
                   seq) == [("B1", 5500)]


def test_interval_then_a_and_its_restarting_form() -> None:
    """'timer:interval(10 sec) -> A' takes the first A after 10 s; 'every (…)' starts the next
    interval when that A ended the instance."""
    seq = "C1@0 A1@5000 A2@12000 A3@13000 A4@30000"
    assert matches(epl("timer:interval(10 sec) -> A"), seq) == [("A2", 12_000)]
    assert matches(epl("every (timer:interval(10 sec) -> A)"), seq) == [
        ("A2", 12_000), ("A4", 30_000)]


def test_a_not_preceded_by_b() -> None:
    """'every (timer:interval(5 min) and not B -> A)' (Followed-by section): an A after a
    5-minute interval without B; a B restarts the interval."""
    m = 60_000
    seq = f"C1@0 A1@{m} B1@{2 * m} A2@{6 * m} A3@{8 * m} A4@{20 * m}"
    assert matches(epl("every (timer:interval(5 min) and not B -> A)"), seq) == [
        ("A3", 8 * m), ("A4", 20 * m)]


def test_every_on_the_interval_alone_restarts_it_whether_it_ended_true_or_false() -> None:
    """'every (timer:interval(5 sec) and not A) -> B': an A restarts the interval; each
    interval that passes starts a new B-waiter."""
    seq = "C1@0 A1@3000 B1@9000 B2@20000"
    assert matches(epl("every (timer:interval(5 sec) and not A) -> B"), seq) == [
        ("B1", 9000), ("B2", 20_000), ("B2", 20_000)]


# ---- the statement start --------------------------------------------------------------------

def test_the_statement_starts_at_the_first_event_or_at_the_given_start() -> None:
    p = epl("every (timer:interval(10 sec) and not A)")
    assert matches(p, "B1@7000 B2@29000") == [("", 17_000), ("", 27_000)]
    assert matches(p, "B1@7000 B2@29000", start=0) == [("", 10_000), ("", 20_000)]
    # an event before the given start does not end the interval begun at the start
    assert matches(p, "A1@-3000 B2@29000", start=0) == [("", 10_000), ("", 20_000)]


def test_the_first_event_is_seen_by_the_statement_it_starts() -> None:
    assert matches(epl("every (timer:interval(10 sec) and not A)"), "A1@0 B1@25000") == [
        ("", 10_000), ("", 20_000)]


def test_the_timer_fires_before_an_event_at_the_end_of_the_interval() -> None:
    """Esper's timers fire before the events of their instant (docs/esper.md, "One instant"):
    at exactly start + Δ the interval has passed, so an ``A`` then no longer ends it; under
    ``every (…)`` the next interval begins at that instant and the ``A`` ends *that* one, the
    one after it fires at 20 s. What follows the interval already sees the event."""
    p = epl("every (timer:interval(10 sec) and not A)")
    assert matches(p, "B1@0 A1@10000 B2@25000") == [("", 10_000), ("", 20_000)]
    assert matches(epl("timer:interval(10 sec) -> A"), "B1@0 A1@10000 A2@10001") == [
        ("A1", 10_000)]
    # one millisecond earlier the A still ends the first interval
    assert matches(p, "B1@0 A1@9999 B2@25000") == [("", 19_999)]


def test_the_interval_ends_with_the_input_and_does_not_start_again() -> None:
    """finish(close_windows=True): the interval under way fires once; no new one begins."""
    p = epl("every timer:interval(10 sec)")
    assert matches(p, "A1@0 A2@25000", close=True) == [("", 10_000), ("", 20_000),
                                                      ("", 30_000)]
    assert matches(p, "A1@0 A2@25000") == [("", 10_000), ("", 20_000)]


def test_clock_timers_fire_in_time_order_with_window_deadlines() -> None:
    """Two patterns' timers: the clock's (every 3 s) and a window's (A -> 4 s) in one order."""
    text = EPL_SCHEMA + ("insert into Tick from pattern [every timer:interval(3 sec)];\n"
                         "insert into Late from pattern [every a=A -> timer:interval(4 sec)];\n")
    engine = Engine(load_module(parse_epl(text)))
    out = [m for e in events("A1@0 A2@2000 C1@10000") for m in engine.process(e)]
    assert [(m.type, m.ts) for m in out] == [
        ("Tick", 3000), ("Late", 4000), ("Late", 6000), ("Tick", 6000), ("Tick", 9000)]


# ---- both syntaxes ----------------------------------------------------------------------------

CLOCKED = [  # (EPL, cepflow)
    ("every timer:interval(2 sec)", "every timer:interval(2 s)"),
    ("timer:interval(2 sec) -> A", "timer:interval(2 s) -> A"),
    ("every timer:interval(2 sec) -> A", "every timer:interval(2 s) -> A"),
    ("every (timer:interval(2 sec) -> A)", "every (timer:interval(2 s) -> A)"),
    ("every (timer:interval(2 sec) and not A)", "every (timer:interval(2 s) AND NOT A)"),
    ("every (timer:interval(2 sec) and not A) -> B", "every (timer:interval(2 s) AND NOT A) -> B"),
    ("every (timer:interval(2 sec) and not B -> A)",
     "every ((timer:interval(2 s) AND NOT B) -> A)"),
    ("timer:interval(1 sec) -> (A and not B)", "timer:interval(1 s) -> (A AND NOT B)"),
    ("every timer:interval(1 sec) -> A -> timer:interval(1 sec)",
     "every timer:interval(1 s) -> A -> timer:interval(1 s)"),
    ("every timer:interval(1 sec) -> (A where timer:within(2 sec))",
     "(every timer:interval(1 s) -> A)[2 s]"),
]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CLOCKED),
       st.lists(st.tuples(st.sampled_from("ABC"), st.integers(0, 1500)), max_size=10),
       st.sampled_from([None, 0.0, -1500.0]), st.booleans())
def test_epl_and_cepflow_syntax_agree(texts, steps, start, close) -> None:
    t, seq = 0, []
    for i, (name, gap) in enumerate(steps):
        t += gap
        seq.append(f"{name}{i}@{t}")
    stream = " ".join(seq)
    e_prog, c_prog = epl(texts[0]), cep(texts[1])
    assert matches(e_prog, stream, start, close) == matches(c_prog, stream, start, close)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CLOCKED),
       st.lists(st.tuples(st.sampled_from("ABC"), st.integers(0, 1500)), min_size=1,
                max_size=10), st.data())
def test_saved_and_restored_mid_stream_gives_the_uninterrupted_answer(texts, steps, data
                                                                     ) -> None:
    t, seq = 0, []
    for i, (name, gap) in enumerate(steps):
        t += gap
        seq.append(f"{name}{i}@{t}")
    program = epl(texts[0])
    cut = data.draw(st.integers(0, len(seq)))
    whole = matches(program, " ".join(seq), close=True)
    first = Engine(program)
    head = [m for e in events(" ".join(seq))[:cut] for m in first.process(e)]
    state = json.loads(json.dumps(save_state(first)))
    second = restore_state(Engine(program), state)
    tail_events = events(" ".join(seq))[cut:]
    tail = [m for e in tail_events for m in second.process(e)] + second.finish(True)
    got = [(" ".join(f"{p.type}{p.params[0]}" for p in m.parts), m.ts) for m in head + tail]
    assert got == whole


# ---- where the statement start cannot be given ---------------------------------------------

def test_spark_runs_a_clocked_pattern_on_the_whole_stream_in_one_partition() -> None:
    """Per key its intervals would begin at each key's first event: the plan gives its group
    every event of the stream, in one partition (the in-process answer)."""
    text = EPL_SCHEMA + ("insert into Tick from pattern [every (timer:interval(3 sec) and "
                         "not A)];\ninsert into Pair from pattern [every a=A -> b=B(b.n = a.n)];\n")
    groups = {tuple(g.patterns): g for g in plan(load_module(parse_epl(text)))}
    tick = groups[("Tick",)]
    assert not tick.partitioned and tick.types is None
    assert "timer:interval" in tick.reason and groups[("Pair",)].partitioned


def test_spark_batch_equals_in_process(tmp_path: Path, spark) -> None:  # the shared session
    from cepflow.spark import PartitionWarning, detect_prepared, read_events

    text = EPL_SCHEMA + "insert into Tick from pattern [every (timer:interval(3 sec) and not A)]"
    program = load_module(parse_epl(text))
    evs = events("C1@1000 B2@2000 A3@5000 C4@9000 B5@16000")
    f = tmp_path / "ev.jsonl"
    f.write_text("".join(json.dumps({"type": e.type, "ts": e.ts, "n": e.params[0]}) + "\n"
                         for e in evs))
    with pytest.warns(PartitionWarning, match="starts with timer:interval"):
        got = detect_prepared(read_events(spark, f, program), program).collect()
    local = [m.ts for m in Engine(program).run(evs)]
    assert sorted(r["ts"] for r in got) == local == [4000, 8000, 11000, 14000]


def test_cepflow_run_takes_a_start(tmp_path: Path) -> None:
    pat = tmp_path / "p.epl"
    pat.write_text(EPL_SCHEMA + "insert into Tick from pattern [every timer:interval(10 sec)]")
    ev = tmp_path / "ev.jsonl"
    ev.write_text('{"type": "A", "ts": 5000, "n": 1}\n{"type": "A", "ts": 31000, "n": 2}\n')
    out = tmp_path / "m.jsonl"
    runner = CliRunner()
    for extra, expected in (([], [15000, 25000]), (["--start", "0"], [10000, 20000, 30000])):
        res = runner.invoke(app, ["run", str(pat), "-i", str(ev), "-o", str(out),
                                  "--no-progress", *extra])
        assert res.exit_code == 0, res.output
        assert [json.loads(ln)["ts"] for ln in out.read_text().splitlines()] == expected


@pytest.mark.parametrize(("pattern", "what"), [
    ("every timer:interval(1 sec) or A", "not inside 'or' or 'and'"),
    ("A or timer:interval(1 sec) -> B", "inside 'or' is supported beside single events at "
     "the end"),
    ("every-distinct(n) timer:interval(1 sec) -> A", "every-distinct on timer:interval"),
])
def test_unsupported_clock_forms_are_reported(pattern, what) -> None:
    from cepflow.language.diagnostics import PatternSyntaxError

    with pytest.raises(PatternSyntaxError) as info:
        epl(pattern)
    assert what in str(info.value)
