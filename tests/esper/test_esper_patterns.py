"""Esper-style patterns (every, every-distinct, aliases, select, timer:within) against the
seeds' published outputs (004 §III.B.1 every1/every2, §IV Duration; 003 Listings 1-7) and
Esper's documented semantics; EPL and cepflow syntax of the same pattern agree."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event, SideChannel
from cepflow.inputs import read_events
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.language.parser import parse
from cepflow.language.printer import format_module
from cepflow.loader import load, load_module
from cepflow.runtime.engine import Engine

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(program, events):
    engine = Engine(program)
    return [m for e in events for m in engine.process(e)]


def run_file(patterns: Path, events: Path):
    program = load(patterns)
    return run(program, list(read_events(events, program.schemas, SideChannel())))


def rows(matches):
    return [(m.type, m.ts, m.bindings_for_output(), [str(r) for r in m.event_refs])
            for m in matches]


@pytest.mark.parametrize("name", ["every.epl", "every.vepl"])
def test_every_placements_give_the_published_markings(name: str) -> None:
    """004 §III.B.1: every (A -> B) vs every A -> B on the A/B/C… sequence."""
    out = run_file(EXAMPLES / "every" / name, EXAMPLES / "every" / "events.jsonl")
    pairs = {p: [tuple(e.seq + 1 for e in m.parts) for m in out if m.type == p]
             for p in ("every1", "every2")}
    assert pairs["every1"] == [(1, 2), (5, 8), (10, 12)]
    assert pairs["every2"] == [(1, 2), (5, 8), (7, 8), (10, 12)]
    every2 = [m.bindings_for_output() for m in out if m.type == "every2"]
    assert [(b["k1"], b["k2"]) for b in every2] == [(1, 1), (2, 3), (3, 3), (4, 4)]


@pytest.mark.parametrize("name", ["contractions.epl", "contractions.vepl"])
def test_contractions_duration_gives_the_published_marking(name: str) -> None:
    """004 §IV: M' = {(1, 14, Barbara, 5), (2, 16, Alice, 4), (3, 29, Alice, 4)}."""
    out = run_file(EXAMPLES / "contractions" / name,
                   EXAMPLES / "contractions" / "patients.jsonl")
    got = [(m.ts / 60000, m.bindings_for_output()["patientId"], m.bindings_for_output()["delay"])
           for m in out if m.type == "Duration"]
    assert got == [(14, "Barbara", 5), (16, "Alice", 4), (29, "Alice", 4)]


def test_motorbike_listing_1() -> None:
    """003 Listing 1: bike 1 stops from 100 and 90 km/h within 3 s (two Crash, one per
    every-instance of a1) and then leaves the seat; nobody rides a ghost bike."""
    out = run_file(EXAMPLES / "motorbike" / "motorbike.epl",
                   EXAMPLES / "motorbike" / "listing1.jsonl")
    assert [(m.type, m.bindings_for_output().get("initialSpeed")) for m in out] == [
        ("Crash", 100), ("Crash", 90), ("DriverLeftSeat", None)]
    assert out[-1].bindings_for_output() == {"timestamp": 1488326403000, "motorbikeId": 1,
                                             "location": "Cadiz"}


def test_motorbike_accident_is_a_higher_order_event() -> None:
    out = run_file(EXAMPLES / "motorbike" / "motorbike.epl",
                   EXAMPLES / "motorbike" / "accident.jsonl")
    assert [m.type for m in out] == ["BlowOutTire", "Crash", "Crash", "DriverLeftSeat",
                                     "Accident"]
    assert out[-1].bindings_for_output()["motorbikeId"] == 3


SCHEMA = "create schema ME(id string, k integer);\n"


def me(seq):
    return [Event("ME", (x, k), (i + 1) * 1000, None, i) for i, (x, k) in enumerate(seq)]


def test_without_every_a_pattern_matches_once() -> None:
    program = load_module(parse_epl(SCHEMA + "insert into P from pattern "
                                    "[a = ME(a.id = 'A') -> b = ME(b.id = 'B')]"))
    out = run(program, me([("A", 1), ("B", 1), ("A", 2), ("B", 2)]))
    assert [[e.seq for e in m.parts] for m in out] == [[0, 1]]


@pytest.mark.parametrize("body", [
    "a = ME(a.id = 'A') -> b = ME(b.id = 'B' and b.k = a.k) where timer:within(1500 msec)",
    "(a = ME(a.id = 'A') -> b = ME(b.id = 'B' and b.k = a.k)) where timer:within(1500 msec)",
    "a = ME(a.id = 'A') -> (b = ME(b.id = 'B' and b.k = a.k) and not ME(id = 'X'))",
])
def test_without_every_a_pattern_that_turned_false_is_over(body: str) -> None:
    """Esper runs a pattern without every once: when its instance turns permanently false (its
    guard expired, its not ended it) the pattern is over (EvalRootStateNode quits it; Esper's
    regression case ``b=B -> d=D where timer:within(4 sec)`` on set one matches nothing, not
    B3 D3) — no instance begins at a later A. A state saved while the instance runs keeps that,
    also one written before ``done`` marked a begun instance."""
    from cepflow.runtime.state import restore_state, save_state

    program = load_module(parse_epl(SCHEMA + f"insert into P from pattern [{body}]"))
    seq = me([("A", 1), ("X", 0), ("B", 1), ("A", 2), ("B", 2), ("A", 3), ("B", 3)])
    assert run(program, seq) == []
    for cut in range(1, len(seq)):
        first = Engine(program)
        for e in seq[:cut]:
            first.process(e)
        state = json.loads(json.dumps(save_state(first)))
        if cut == 1:  # (the one instance under way: an older state did not mark it)
            assert state["esper"]["P"]["done"] is True
            state["esper"]["P"]["done"] = False
        second = restore_state(Engine(program), state)
        assert [m for e in seq[cut:] for m in second.process(e)] == []


def test_every_distinct_suppresses_seen_keys_until_they_expire() -> None:
    text = SCHEMA + ("insert into P from pattern [every-distinct(a.k{}) a = ME(a.id = 'A') "
                     "-> b = ME(b.id = 'B')]")
    seq = [("A", 1), ("A", 1), ("B", 0), ("A", 2), ("A", 1), ("B", 0)]
    out = run(load_module(parse_epl(text.format(""))), me(seq))
    assert [[e.seq for e in m.parts] for m in out] == [[0, 2], [3, 5]]
    out = run(load_module(parse_epl(text.format(", 2 seconds"))), me(seq))
    # the key 1 seen at t=1 s has expired by t=5 s: the A at index 4 starts again
    assert [[e.seq for e in m.parts] for m in out] == [[0, 2], [3, 5], [4, 5]]


def test_a_condition_between_aliases_is_unification() -> None:
    """a2.id = a1.id is served by the same key index as VEPL parameters."""
    program = load(EXAMPLES / "contractions" / "contractions.epl")
    auto = program.automaton("Duration")
    (second,) = [p for p in auto.positions if any(v == "a1.id" for _, v in p.binds)
                 and p.id != auto.positions[0].id]
    assert (1, "a1.id") in second.binds
    assert any(v == "a1.id" for m in auto.key_index.values() for _, v in m.values())


BARE_FORMS = {
    "tagged": "every a = ME(a.id = 'A') -> b = ME(b.id = 'B' and b.k = a.k)",
    "bare": "every a = ME(a.id = 'A') -> b = ME(id = 'B' and k = a.k)",
    "untagged": "every a = ME(a.id = 'A') -> ME(id = 'B' and a.k = k)",
    "filter": "every a = ME(a.id = 'A') -> b = ME(b.id = 'B' and b.k + 0 = a.k)",
}


def _bare_form(form: str):
    return load_module(parse_epl(SCHEMA + "insert into P select a.k as k from pattern ["
                                 + BARE_FORMS[form] + "]"))


@pytest.mark.parametrize("form", ["tagged", "bare", "untagged"])
def test_an_own_field_named_bare_unifies_too(form: str) -> None:
    """Esper lets a filter name its event's fields bare (with or without a tag): an equality
    with an earlier tag's field still goes through the key index."""
    auto = _bare_form(form).automaton("P")
    assert any(v == "a.k" for m in auto.key_index.values() for _, v in m.values())
    assert (1, "a.k") in auto.positions[-1].binds
    plain = _bare_form("filter").automaton("P")  # (an expression is no field: a filter)
    assert (1, "a.k") not in plain.positions[-1].binds


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ABC"), st.integers(0, 3)), max_size=14))
def test_bare_untagged_tagged_and_filter_forms_agree(seq) -> None:
    outs = {form: [(m.params, [e.seq for e in m.parts])
                   for m in run(_bare_form(form), me(seq))] for form in BARE_FORMS}
    assert outs["bare"] == outs["tagged"] == outs["untagged"] == outs["filter"]


@pytest.mark.parametrize(("text", "line", "col", "what"), [
    ("insert into X select count(*) as n from pattern [every a = ME].win:ext_timed(1 sec)",
     2, 63, "view 'win:ext_timed' is not supported"),
    ("insert into X from pattern [not b = ME]", 2, 29, "'not' needs a partner"),
    ("insert into X from pattern [every a = ME where timer:interval(1 sec)]", 2, 48,
     "guard 'timer:interval'"),
    ("insert into X from pattern [every (a = ME -> every (b = ME -> c = ME))]", 2, 1,
     "every inside every"),
    ("insert into X select a.k as k from ME(k > 1) group by k", 2, 36, "without a data window"),
])
def test_unsupported_epl_is_reported_with_its_location(text, line, col, what) -> None:
    with pytest.raises(PatternSyntaxError) as info:
        load_module(parse_epl(SCHEMA + text, "x.epl"))
    d = info.value.diagnostics[0]
    assert what in d.message
    assert (d.file, d.line) == ("x.epl", line)
    if what != "every inside every":
        assert d.col == col


def test_cepflow_syntax_round_trips_through_the_printer() -> None:
    module = parse((EXAMPLES / "every" / "every.vepl").read_text()
                   + (EXAMPLES / "contractions" / "contractions.vepl").read_text()
                   .replace("atomicEvent Patient", "atomicEvent Patient2")
                   .replace("Patient where", "Patient2 where")
                   .replace("complexEvent Duration", "complexEvent Duration2")
                   + "complexEvent D3 { as every-distinct(a.k; 2 s) a = ME -> b = ME "
                     "context esper }\n")
    assert parse(format_module(module)) == module


# ---- the same pattern in EPL and in cepflow syntax ----------------------------------------

atoms = st.tuples(st.sampled_from("ABC"), st.booleans())  # letter, correlate on k


@st.composite
def esper_patterns(draw):
    n = draw(st.integers(1, 3))
    steps = [draw(atoms) for _ in range(n)]
    every = draw(st.sampled_from(["none", "spawn", "restart"] if n > 1 else ["none", "spawn"]))
    within = draw(st.sampled_from([None, 3]))
    return steps, every, within


def render(steps, every, within):
    """(EPL, cepflow) text of one pattern."""
    epl, cep = [], []
    for i, (letter, corr) in enumerate(steps):
        cond_e = f"a{i}.id = '{letter}'" + (f" and a{i}.k = a0.k" if corr and i else "")
        cond_c = f'a{i}.id == "{letter}"' + (f" and a{i}.k == a0.k" if corr and i else "")
        epl.append(f"a{i} = ME({cond_e})")
        cep.append(f"a{i} = ME where {cond_c}")
    if every == "spawn":
        epl[0], cep[0] = "every " + epl[0], "every " + cep[0]
    e_body, c_body = " -> ".join(epl), " -> ".join(cep)
    if every == "restart":
        e_body, c_body = f"every ({e_body})", f"every ({c_body})"
    if within and len(steps) > 1:
        # EPL: the guard on the rest starts at a0; cepflow: a window around the sequence
        rest_e = " -> ".join(epl[1:])
        e_body = f"{epl[0]} -> ({rest_e}) where timer:within({within} sec)"
        if every == "restart":
            e_body = f"every ({epl[0].removeprefix('every ')} -> ({rest_e}) " \
                     f"where timer:within({within} sec))"
        inner = c_body.removeprefix("every (").removesuffix(")") if every == "restart" \
            else c_body
        c_body = f"({inner})[{within} s]"
        if every == "restart":
            c_body = f"every ({c_body})"
    epl_text = SCHEMA + f"insert into P from pattern [{e_body}]"
    cep_text = ("atomicEvent ME(id: String, k: Integer)\n"
                f"complexEvent P {{ as {c_body} context esper }}\n")
    return epl_text, cep_text


@settings(max_examples=60, deadline=None)
@given(esper_patterns(), st.lists(st.tuples(st.sampled_from("ABC"), st.integers(0, 2)),
                                  max_size=14))
def test_epl_and_cepflow_syntax_give_identical_matches(pattern, seq) -> None:
    epl_text, cep_text = render(*pattern)
    a = load_module(parse_epl(epl_text))
    b = load(cep_text)
    events = me(seq)
    assert rows(run(a, events)) == rows(run(b, events))
    assert a.automata[0].start == b.automata[0].start


def test_json_output_of_select_items() -> None:
    out = run_file(EXAMPLES / "every" / "every.epl", EXAMPLES / "every" / "events.jsonl")
    assert json.loads(json.dumps(out[1].to_dict()))["pattern"] == "every2"


def test_saved_state_keeps_the_esper_start_policy() -> None:
    """A restored engine remembers that a pattern without every has matched and which
    every-distinct keys it has seen (streaming and Spark restore state between batches)."""
    from cepflow.runtime.state import restore_state, save_state

    text = SCHEMA + ("insert into Once from pattern [a = ME(a.id = 'A') -> b = ME(b.id = 'B')];"
                     "insert into D from pattern [every-distinct(a.k) a = ME(a.id = 'A') "
                     "-> b = ME(b.id = 'B')]")
    program = load_module(parse_epl(text))
    seq = me([("A", 1), ("B", 1), ("A", 1), ("A", 2), ("B", 2)])
    whole = rows(run(program, seq))
    first = Engine(program)
    out = [m for e in seq[:2] for m in first.process(e)]
    state = json.loads(json.dumps(save_state(first)))
    second = restore_state(Engine(program), state)
    out += [m for e in seq[2:] for m in second.process(e)]
    assert rows(out) == whole
    assert [m[0] for m in whole] == ["Once", "D", "D"]


def test_epl_strings_and_syntax_errors() -> None:
    """Strings keep non-ASCII text and escapes; a syntax error names what was expected."""
    module = parse_epl(SCHEMA + "insert into X from pattern [every a = ME(a.id = 'né\\t')]")
    assert module.decls[1].body.pattern.where.right.value == "né\t"
    with pytest.raises(PatternSyntaxError) as info:
        parse_epl(SCHEMA + "insert into X from pattern [every a = ME(a.id = ]", "y.epl")
    d = info.value.diagnostics[0]
    assert (d.file, d.line, d.col) == ("y.epl", 2, 49)
    assert "unexpected ']'" in d.message and "name" in d.message and "_" not in d.message


def test_a_bare_number_in_a_timer_is_seconds() -> None:
    """Esper reads ``timer:interval(2.5)`` and ``timer:within(1)`` as seconds, as it reads
    ``win:time(30)``; the EPL reader does the same (it asked for a unit before)."""
    def body(text: str):
        return parse_epl(SCHEMA + f"insert into P from pattern [{text}]").decls[1].body

    assert body("a = ME -> timer:interval(2.5)").right.duration == 2500.0
    assert body("a = ME -> timer:interval(0)").right.duration == 0.0
    assert body("a = ME -> b = ME where timer:within(1)").duration == 1000.0
    with pytest.raises(PatternSyntaxError) as info:
        parse_epl(SCHEMA + "insert into P from pattern [a = ME -> timer:interval('x')]", "t.epl")
    d = info.value.diagnostics[0]
    assert (d.file, d.line) == ("t.epl", 2) and "needs a duration" in d.message


def test_a_time_period_of_several_units() -> None:
    """Esper's time periods add their parts: ``1 minute 30 seconds``, ``2 hours 1 minute``,
    ``1 hour 2 min 3 sec 4 msec`` — in timers, every-distinct expiries and windows."""
    def body(text: str):
        return parse_epl(SCHEMA + f"insert into P from pattern [{text}]").decls[1].body

    assert body("a = ME -> timer:interval(1 minute 30 seconds)").right.duration == 90000.0
    assert body("a = ME -> b = ME where timer:within(1 hour 2 min 3 sec 4 msec)"
                ).duration == 3723004.0
    assert body("every-distinct(a.id, 2 hours 1 minute) a = ME").expiry == 7260000.0
    with pytest.raises(PatternSyntaxError) as info:
        parse_epl(SCHEMA + "insert into P from pattern [every-distinct(2 sec) a = ME]", "t.epl")
    assert "needs one or more key expressions" in info.value.diagnostics[0].message
