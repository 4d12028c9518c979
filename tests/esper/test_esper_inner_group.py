"""Esper's ``every`` on a group of events inside a pattern: ``A -> every (B -> C)`` (docs/esper.md,
"`every` on a group inside a pattern").

EvalEveryStateNode starts its child (here the followed-by ``B -> C``) with the begin state it
was given (the tags before it) and, each time the child turns true, starts a new one from that
same begin state and passes the result on; the followed-by ``B -> C`` quits ``B``'s filter at
its first ``B`` — so per instance of ``A`` one group is under way at a time, each completion
is a result (and, with more pattern after it, begins a run of that rest), and the next group
begins after the event that completed the last one (a filter started while an event is
dispatched does not see it). The cases below are derived by hand from those nodes; the
property runs a family of such patterns against tests/esper/esper_tree.py, an interpreter of
the state nodes, per event and in batches cut anywhere with a save / restore between."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st
from tests.esper.esper_tree import FILTERS, text
from tests.esper.test_esper_random_patterns import SCHEMAS, answers_as_esper, program, times

import cepflow
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.petri.translate import Untranslatable, translate

# (events: (type, k, ts); the v of each is its index; a match lists the tags' v in order)
ABC = "a.v as a, b.v as b, c.v as c"


def test_each_group_restarts_after_it_completes() -> None:
    # A0 B1 B2 C3 B4 C5 C6: the group B -> C takes B1 (B2 is not seen: B's filter quit),
    # completes at C3 and restarts after it: B4 C5 is the second; C6 finds no B
    events = [("A", 0, 0), ("B", 0, 100), ("B", 0, 200), ("C", 0, 300), ("B", 0, 400),
              ("C", 0, 500), ("C", 0, 600)]
    assert times("a=A -> every (b=B -> c=C)", events, ABC) == [(300, (0, 1, 3)), (500, (0, 4, 5))]


def test_the_restart_does_not_see_the_event_that_completed_the_group() -> None:
    # every (b=B -> c=B): B0 B1 complete the first; the second starts after B1, so B1 is not
    # its b: B2 B3 complete it
    events = [("A", 0, 0), ("B", 0, 100), ("B", 0, 200), ("B", 0, 300), ("B", 0, 400)]
    assert times("a=A -> every (b=B -> c=B)", events, ABC) == [(200, (0, 1, 2)), (400, (0, 3, 4))]


def test_each_instance_of_the_start_has_its_own_group() -> None:
    # every a=A: A0 and A2 are two instances; B1 C3 completes A0's group only (A2's began
    # after B1), B4 C5 both (each instance's group restarted after C3 / waited since A2)
    events = [("A", 0, 0), ("B", 0, 100), ("A", 0, 200), ("C", 0, 300), ("B", 0, 400),
              ("C", 0, 500)]
    assert times("every a=A -> every (b=B -> c=C)", events, ABC) == [
        (300, (0, 1, 3)), (500, (0, 4, 5)), (500, (2, 4, 5))]


def test_each_completion_begins_a_run_of_what_follows() -> None:
    # every (b=B -> c=C) -> d=D: two completions wait for D; D5 ends both (each a followed-by
    # whose D filter quits at its D), D6 none
    events = [("A", 0, 0), ("B", 0, 100), ("C", 0, 200), ("B", 0, 300), ("C", 0, 400),
              ("D", 0, 500), ("D", 0, 600)]
    assert times("a=A -> every (b=B -> c=C) -> d=D", events, ABC + ", d.v as d") == [
        (500, (0, 1, 2, 5)), (500, (0, 3, 4, 5))]


def test_the_group_keeps_the_tags_before_it_and_forgets_its_own() -> None:
    # b=B(k = a.k) -> c=C(k = b.k): the restart begins from a's tags only, so a B of another
    # key than the first group's can begin the second… only if it has a's key
    events = [("A", 1, 0), ("B", 1, 100), ("C", 1, 200), ("B", 2, 300), ("B", 1, 400),
              ("C", 2, 500), ("C", 1, 600)]
    assert times("a=A -> every (b=B(k = a.k) -> c=C(k = b.k))", events, ABC) == [
        (200, (0, 1, 2)), (600, (0, 4, 6))]


def test_a_guard_around_the_whole_pattern_ends_the_groups() -> None:
    # (a=A -> every (b=B -> c=C)) where timer:within(1 sec), from the statement's start: the
    # guard ends it all at 1000 — the group under way then (B at 900) never completes
    events = [("A", 0, 0), ("B", 0, 100), ("C", 0, 200), ("B", 0, 900), ("C", 0, 1100)]
    assert times("(a=A -> every (b=B -> c=C)) where timer:within(1 sec)", events, ABC) == [
        (200, (0, 1, 2))]


@pytest.mark.parametrize("pattern", [
    "a=A -> every (b=B -> c=C) -> (d=D where timer:within(1 sec))",  # a guard per completion
    "a=A -> (every (b=B -> c=C) and not D)",
    "(a=A -> every (b=B -> c=C)) or d=D",
    "a=A -> every (b=B and c=C)",
    "a=A -> every (b=B -> (c=C and not D))",
    "a=A -> every ((b=B -> c=C) where timer:within(1 sec))",
    "every (a=A -> every (b=B -> c=C))",
])
def test_forms_it_does_not_take_are_refused(pattern: str) -> None:
    with pytest.raises(PatternSyntaxError):
        program_text(pattern)


def test_the_petri_net_refuses_it() -> None:
    with pytest.raises(Untranslatable) as info:
        translate(program_text("a=A -> every (b=B -> c=C)"))
    assert "every (…) inside a pattern" in str(info.value)


def program_text(pattern: str) -> cepflow.Program:
    return cepflow.load_module(parse_epl(
        SCHEMAS + f"@Name('P') select * from pattern [{pattern}];", "g.epl"))


# ---- against the state tree ------------------------------------------------------------------

def _atom(r: random.Random, seen: list[str], made: list[str], tagged: bool = True) -> tuple:
    """An event, tagged ``o<n>`` when ``tagged``, its filter perhaps reading one of the last
    two tags of ``seen`` (the tags before it: not another operand's of an and / or, which
    Esper starts from the same begin state)."""
    tag = None
    if tagged:
        tag = f"o{len(made) + 1}"
        made.append(tag)
    f = r.choice(sorted(FILTERS) + [f"k = {t}.k" for t in seen[-2:]])
    return ("atom", tag, r.choice("ABCD"), f)


def looped(r: random.Random) -> tuple:
    """``H -> every (G) [-> R]``: a head of events, an or or an and of two (or every on its
    first event, or a group of its own), a group of two or three events (some untagged),
    possibly an event or an ``and not`` after it, possibly a guard around it all."""
    made: list[str] = []
    head = []
    for _ in range(r.randint(1, 2)):
        k = r.random()
        if k < 0.6:
            head.append(_atom(r, list(made), made))
        elif k < 0.9:
            before = list(made)
            head.append((r.choice(["or", "and"]), [_atom(r, before, made),
                                                   _atom(r, before, made)]))
        else:
            head.append(("every", ("->", [_atom(r, list(made), made),
                                          _atom(r, list(made), made)])))
    if head[0][0] == "atom" and r.random() < 0.5:
        head[0] = ("every", head[0])
    group = [_atom(r, list(made), made, r.random() < 0.8) for _ in range(r.randint(2, 3))]
    items = [*head, ("every", ("->", group))]
    k = r.random()
    if k < 0.3:
        items.append(_atom(r, list(made), made))
    elif k < 0.45:
        before = list(made)
        items.append(("and", [_atom(r, before, made), ("not", _atom(r, before, made, False))]))
    p = ("->", items)
    return ("guard", 900, p) if r.random() < 0.1 else p


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 12), st.integers(0, 3))
def test_random_inner_groups_answer_as_esper(seed: int, cut: int, restore_at: int) -> None:
    r = random.Random(seed)
    p = looped(r)
    note(text(p))
    try:
        prog = program(p)
    except PatternSyntaxError as e:  # (a guard after the group: see the refusals above)
        assert "a guard on what follows every" in str(e) or "is not bound" in str(e)
        return
    answers_as_esper(p, prog, r, 8, [cut], restore_at)


def _compiles(p: tuple) -> bool:
    try:
        program(p)
    except PatternSyntaxError:
        return False
    return True


def test_the_random_groups_mostly_run() -> None:
    """The property above is not vacuous: most drawn patterns compile."""
    assert sum(_compiles(looped(random.Random(seed))) for seed in range(200)) >= 150
