"""Esper's or in the net (sessions 41 and 42): where the engine follows EvalOrStateNode — one
event completing several operands goes to the one that reports first (Position.ties, side),
the or quits its other alternatives (side), the completing operand keeps only its own events
and tags (settle), ``every X or every Y`` starts an instance per operand the event fits (each).
Session 41 refused these; session 42 models them: the pinned cases (tests/esper's, hand-derived
from the state nodes) are answered as Esper does, each part of the model is shown needed by a
mutant, and the property draws random or patterns (crossval.random_or_pattern): the net agrees
with the engine or the translation refuses the statement."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.petri.crossval import (
    OR_SCHEMA,
    compare,
    random_or_pattern,
    random_or_stream,
    seeded,
)
from cepflow.petri.translate import Untranslatable, translate

EXAMPLES_N = int(os.environ.get("CEPFLOW_PETRI_EXAMPLES", "40"))
DERANDOMIZE = os.environ.get("CEPFLOW_PETRI_RANDOM", "") == ""


def program(pattern: str):
    return load_module(parse_epl(OR_SCHEMA + f"@Name('P') select * from pattern [{pattern}];",
                                 "t.epl"))


def events(stream: list) -> list[Event]:
    return [Event(t, (k, i), ts) for i, (t, k, ts) in enumerate(stream)]


# (pattern, stream, the matches' parts by event number, hand-derived from Esper's state
# nodes) — refused before session 42, modelled since: each, ties, settle
MODELLED = [
    # every X or every Y, one event fitting both: two every nodes, two instances (each).
    # B(1) fits both operands (two matches), B(0) only o2's
    ("every o1=B(k > 0) or every o2=B", [("B", 1, 100), ("B", 0, 200)],
     [(1,), (1,), (2,)]),
    ("(every o1=B(k > 0) or every o2=B) -> o3=C",
     [("B", 1, 100), ("B", 0, 200), ("C", 0, 300)], [(1, 3), (1, 3), (2, 3)]),
    # the first operand is an or of single events under its every: one report of the two
    ("every (o1=B(k > 0) or o2=B) or every o3=B", [("B", 1, 100)], [(1,), (1,)]),
    # sequences completed by one B: the operand whose B filter started first reports (ties):
    # A started o3's B filter before C started o1's, so o3 and o4 are the match
    ("(o1=C -> o2=B) or (o3=A -> o4=B)", [("A", 0, 100), ("C", 0, 200), ("B", 0, 300)],
     [(1, 3)]),
    ("(o1=C -> o2=B) or (o3=A -> o4=B)", [("C", 0, 100), ("A", 0, 200), ("B", 0, 300)],
     [(1, 3)]),
    ("every ((o1=C -> o2=B) or (o3=A -> o4=B))",
     [("A", 0, 100), ("C", 0, 200), ("B", 0, 300)], [(1, 3)]),
    # the completing operand keeps its own events only (settle): B, then D completes o3 —
    # B is no part and o1 is null
    ("(o1=B -> o2=C(k > 0)) or o3=D", [("B", 0, 200), ("D", 1, 400)], [(2,)]),
    # B completes o3 and is o1's too: o1's tag goes
    ("o0=A -> ((o1=B -> o2=C) or o3=B)", [("A", 0, 100), ("B", 0, 200), ("C", 0, 300)],
     [(1, 2)]),
    # an interleaving the other way: o1's sequence completes, D (o3's) is no part of it
    ("(o1=B -> o2=C) or (o3=D -> o4=A)", [("B", 0, 100), ("D", 0, 200), ("C", 0, 300)],
     [(1, 3)]),
    # an or of an and followed by more (side): the first to complete quits the others.
    # C completes o3 and the and at once: both filters started at A, o3 is written first
    ("o0=A -> (o3=C or (o1=B and o2=C)) -> o4=A",
     [("A", 0, 100), ("B", 0, 200), ("C", 0, 300), ("A", 0, 500)], [(1, 3, 4)]),
    # C completes o3: the and's run (B taken, waiting for D) ends; D then is nothing
    ("o0=A -> ((o1=B and (o5=C -> o2=D)) or o3=C) -> o4=A",
     [("A", 0, 100), ("B", 0, 200), ("C", 0, 300), ("D", 0, 400), ("A", 0, 500)],
     [(1, 3, 5)]),
    ("o0=A -> ((o1=B and o2=D) or o3=C) -> o4=A",
     [("A", 0, 100), ("B", 0, 200), ("C", 0, 300), ("D", 0, 400), ("A", 0, 500)],
     [(1, 3, 5)]),
    # at the end, one C completing both: o3 (written first; both filters started at A),
    # not the run of the older events (B)
    ("o0=A -> (o3=C or (o1=B and o2=C))", [("A", 0, 100), ("B", 0, 200), ("C", 0, 300)],
     [(1, 3)]),
    # the and's C filter started with the and (at A), o4's at D: the and reports first
    ("o0=A -> ((o1=B and o2=C) or (o3=D -> o4=C)) -> o5=A",
     [("A", 0, 100), ("D", 0, 200), ("B", 0, 300), ("C", 0, 400), ("A", 0, 500)],
     [(1, 3, 4, 5)]),
    ("o0=A -> ((o1=B and o2=C) or (o3=D -> o4=C))",
     [("A", 0, 100), ("D", 0, 200), ("B", 0, 300), ("C", 0, 400)], [(1, 3, 4)]),
]


def parts(result, source: str = "net") -> list[tuple[int, ...]]:
    return [tok[-1] for tok in getattr(result, source).get("P", [])]


def agrees_with_esper(pattern: str, stream: list, want: list) -> None:
    """The net of ``pattern`` over ``stream`` gives the hand-derived parts ``want``, as the
    engine does."""
    result = compare(program(pattern), events(stream))
    assert parts(result) == want, (pattern, parts(result))
    assert result.equal, (pattern, result.differences)


@pytest.mark.parametrize(("pattern", "stream", "want"), MODELLED)
def test_ors_modelled_since_session_42_agree_with_esper(pattern: str, stream: list,
                                                        want: list) -> None:
    agrees_with_esper(pattern, stream, want)


def test_or_tags_of_the_other_operands_are_null() -> None:
    """(settle) the match of ``(o1=B -> o2=C(k > 0)) or o3=D`` over B, D is o3's: o1 and o2
    are null in the select list, as Esper's result carries only the child that turned
    true."""
    result = compare(program("(o1=B -> o2=C(k > 0)) or o3=D"),
                     events([("B", 0, 200), ("D", 1, 400)]))
    (tok,) = result.net["P"]
    assert tok[2] == (None, None, None, None, 1, 1)


@pytest.mark.parametrize(("mutant", "function"), [
    ("keep every event", ("settled", lambda evs, track, i: evs)),
    ("the first written wins", ("first_done", lambda track, ops: ops[0])),
    ("one instance per event", ("each", None)),
    ("the or does not quit its alternatives", ("quit", None)),
    ("both completions stay", ("side", None)),
    ("no filter started with the alternative", ("fresh", None)),
])
def test_the_modelling_is_needed(monkeypatch, mutant: str, function) -> None:
    """Each part of the model is what keeps the net in agreement: mutated, some pinned case
    differs from the engine."""
    from cepflow.petri import inscriptions
    from cepflow.petri.translate import patterns

    fn, impl = function
    if fn == "each":  # every operand's instance numbered i: one instance for the event
        def one(self, edges, inst):
            return {None: patterns.binop("+", inst, patterns.const(1)),
                    **{k: inst for k in range(len(edges))}}
        monkeypatch.setattr(patterns.PatternNet, "each_instances", one)
    elif fn in ("quit", "side"):  # P.quit… / P.side… never fire
        built = patterns.PatternNet.side_quits

        def never(self):
            built(self)
            for tn, tr in self.b.net.transitions.items():
                if tn.startswith(f"{self.name}.{fn}."):
                    tr.guard = patterns.const(False)
        monkeypatch.setattr(patterns.PatternNet, "side_quits", never)
    elif fn == "fresh":  # every completion ranked by its run's events
        ranked = patterns.PatternNet.side_rank

        def late(self, e, src):
            r = ranked(self, e, src)
            evs = patterns.call("rev", patterns.name(self.ctl["evs"])) if src else \
                patterns.call("nil")
            return None if r is None else (r[0], patterns.tup(patterns.const(1), evs,
                                                               patterns.const(0)))
        monkeypatch.setattr(patterns.PatternNet, "side_rank", late)
    else:
        monkeypatch.setitem(inscriptions.NET_FUNCTIONS, fn, impl)
    assert differing(MODELLED) >= 1, mutant


def differing(cases: list) -> int:
    """How many of the pinned ``cases`` the net answers otherwise than the engine."""
    n = 0
    for pattern, stream, _ in cases:
        try:
            # (a mutant may loop: a net that has not finished by then differs)
            n += not compare(program(pattern), events(stream), max_steps=50_000).equal
        except Exception:  # (a mutant may break the net: that differs too)
            n += 1
    return n


@pytest.mark.parametrize(("pattern", "stream"), [
    # under one every an or of single events stays one report (the first written)
    ("every (o1=B(k > 0) or o2=B)", [("B", 1, 100), ("B", 0, 200)]),
    # every X or every Y of different types: one instance per event as before
    ("every o1=B or every o2=C", [("B", 1, 100), ("C", 0, 200), ("B", 0, 300)]),
    # an and beside an event at the end: the instance ends with the first to complete
    ("o0=A -> ((o1=B and o2=D) or o3=C)",
     [("A", 0, 100), ("B", 0, 200), ("C", 0, 300), ("D", 0, 400)]),
    ("every o0=A -> ((o1=B and o2=D) or o3=C)",
     [("A", 0, 100), ("B", 0, 200), ("A", 0, 250), ("D", 0, 300), ("C", 0, 400)]),
    # an or of single events after an event: the first written of those that fit
    ("o0=A -> (o1=B(k > 0) or o2=B or o3=C) -> o4=D",
     [("A", 0, 100), ("B", 1, 200), ("B", 0, 300), ("D", 0, 400)]),
])
def test_ors_the_net_models_agree_with_the_engine(pattern: str, stream: list) -> None:
    result = compare(program(pattern), events(stream))
    assert result.equal, (pattern, result.differences)
    assert any(result.engine.values()), "a case that matches"


@st.composite
def or_cases(draw):
    def pick(options):
        return draw(st.sampled_from(list(options)))

    return (random_or_pattern(pick), random_or_stream(pick, draw(st.integers(0, 10))),
            draw(st.integers(0, 2**16)))


@settings(max_examples=EXAMPLES_N, deadline=None, derandomize=DERANDOMIZE,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(or_cases())
def test_random_or_patterns_agree_or_are_refused(case) -> None:
    text, stream, seed = case
    try:
        prog = load_module(parse_epl(text, "t.epl"))
    except Exception:  # (the compiler refuses some: an or of sequences inside an and)
        return
    try:
        result = compare(prog, stream, seed=seed)
    except Untranslatable:
        return
    assert result.equal, "\n".join([text, repr(stream), *result.differences])


def test_random_or_patterns_are_not_all_refused() -> None:
    """Of 60 drawn or patterns nearly all the compiler takes translate (50 of its 51 since
    session 43's clock, 46 since session 42, 24 before: what is left is every (every X or
    every Y), the respawn policy, or every (…) -> …)."""
    translated = 0
    for s in range(60):
        text = random_or_pattern(seeded(s))
        try:
            translate(load_module(parse_epl(text, "t.epl")), [])
        except Exception:
            continue
        translated += 1
    assert translated >= 48


def test_or_nets_export_and_read_back() -> None:
    """The or's places and functions survive PNML (read back: the same complex events) and
    CPN Tools' file declares them in ML (settled, first_done, rev)."""
    from cepflow.petri.cpn import to_cpn

    text = OR_SCHEMA + "".join(
        f"@Name('P{j}') select * from pattern [{p}];\n" for j, p in enumerate([
            "every o1=B(k > 0) or every o2=B",
            "(o1=C -> o2=B) or (o3=A -> o4=B)",
            "o0=A -> (o3=C or (o1=B and o2=C)) -> o4=A"]))
    prog = load_module(parse_epl(text, "t.epl"))
    stream = events([("A", 0, 100), ("C", 0, 200), ("B", 1, 300), ("C", 0, 400),
                     ("A", 0, 500)])
    tr = translate(prog, stream)
    got = read_back(tr)
    assert all(got.values()), got
    result = compare(prog, stream)  # (three or patterns side by side, as the engine)
    assert result.equal, result.differences
    cpn = to_cpn(tr.net)
    for f in ("fun settled", "fun first_done", "fun rev", "fun bit"):
        assert f in cpn


def read_back(tr) -> dict:
    """The complex events of translation ``tr``'s net, which its PNML, read back, gives
    too."""
    from cepflow.petri.pnml import from_pnml, to_pnml
    from cepflow.petri.simulator import Simulator

    back = from_pnml(to_pnml(tr.net))
    a, b = Simulator(tr.net, seed=1), Simulator(back, seed=1)
    a.run()
    b.run()
    got = {p: a.marking[p] for p in tr.complex_places}
    assert got == {p: b.marking[p] for p in tr.complex_places}
    return got
