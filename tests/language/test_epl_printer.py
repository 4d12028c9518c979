"""The EPL printer: every module the EPL reader reads prints back as EPL that reads as the
same module (followed-by chains compared as chains: fol is associative)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.language.epl_printer import EplPrintError, _flat, duration, format_epl
from cepflow.language.parser import parse

ROOT = Path(__file__).resolve().parents[2]
EPL_FILES = sorted((ROOT / "examples").glob("*/*.epl"))


def same(a, b) -> bool:
    return [_flat(d) for d in a.decls] == [_flat(d) for d in b.decls]


@pytest.mark.parametrize("path", EPL_FILES, ids=lambda p: p.name)
def test_examples_print_back(path: Path) -> None:
    m = parse_epl(path.read_text(encoding="utf-8"), str(path))
    assert same(parse_epl(format_epl(m)), m)


def test_cepflow_syntax_esper_patterns_print_as_epl() -> None:
    m = parse((ROOT / "examples" / "motorbike" / "motorbike.vepl").read_text())
    text = format_epl(m)
    assert "from pattern [every a1 = Accident].win:time_batch(1 day)" in text
    assert same(parse_epl(text), m)


@pytest.mark.parametrize("body", [
    "d=T until timer:interval(7 sec)", "B until not B", "T until not U",
    "b=U -> ([2:] a=T(a.k = b.k) until timer:interval(1500 msec)) -> c=U",
    "a=T -> (T until not U) -> c=U", "a=T until every c=U",
    "every (a=T until timer:interval(3 sec))", "a=T until every timer:interval(2 sec)",
    "a=T until (every (timer:interval(6 sec) and not T))"])
def test_until_ending_at_a_timer_not_or_every_prints_back(body: str) -> None:
    """The until ends the reader now runs (compiler.esper ``until_timer``, ``until_not``,
    ``_until_end``) print back as themselves."""
    text = (SCHEMA + "create schema B(id string);\n"
            + f"insert into P select * from pattern [{body}];\n")
    m = parse_epl(text)
    assert same(parse_epl(format_epl(m)), m)


@pytest.mark.parametrize("src, what", [
    ("atomicEvent A(x: Integer)\ncomplexEvent P(x: Integer) { as A(x) }", "positional"),
    ("atomicEvent A\ncomplexEvent P { as (A -> A) holds-for 1 s }", "holds-for"),
    ("atomicEvent A\ncomplexEvent P { as A }\nrule r on P action x.y", "rule"),
    ("atomicEvent A\ncomplexEvent P { as A -> A context immediate }", "context"),
])
def test_what_epl_cannot_say_is_refused(src: str, what: str) -> None:
    with pytest.raises(EplPrintError, match=what):
        format_epl(parse(src))


def test_durations() -> None:
    assert [duration(x) for x in (3000, 86_400_000, 1500, 0.5, 60_000)] == [
        "3 sec", "1 day", "1500 msec", "0.5 msec", "1 min"]


# ---- random EPL that the reader takes prints back ----------------------------------------

SCHEMA = "create schema T(id string, k int, v double);\ncreate schema U(id string, k int);\n"


@st.composite
def epl_pattern(draw, depth: int = 0, tags: list | None = None) -> str:
    tags = [] if tags is None else tags
    leaf = depth >= 3 or draw(st.booleans())
    if leaf:
        tag = f"t{len(tags)}"
        tags.append(tag)
        conds = [f"{tag}.id = '{draw(st.sampled_from('AB'))}'"]
        if len(tags) > 1 and draw(st.booleans()):
            conds.append(f"{tag}.k = {tags[0]}.k")
        if draw(st.booleans()):
            conds.append(f"{tag}.v {draw(st.sampled_from(['>', '<=', '<>']))} "
                         f"{draw(st.integers(-5, 5))}")
        return f"{tag} = T({' and '.join(conds)})"
    kind = draw(st.sampled_from(["->", "or", "and", "every", "repeat", "guard", "distinct",
                                 "until", "max", "or not", "until timer"]))
    inner = epl_pattern(depth + 1, tags)
    if kind in ("->", "or", "and"):
        return f"({draw(inner)} {kind} {draw(inner)})"
    if kind == "max":  # Esper's followed-by maximum, the head under every or not; after
        # every the right side must be of another type (U) for the limit to be counted
        head = f"every {draw(inner)}" if draw(st.booleans()) else draw(inner)
        right = (f"u{len(tags)} = U(id = 'A')" if draw(st.booleans()) else draw(inner))
        return f"{head} -[{draw(st.integers(1, 3))}]> {right}"
    if kind == "or not":
        return f"({draw(inner)} or not {draw(inner)})"
    if kind == "every":
        return f"every ({draw(inner)})"
    if kind == "repeat":
        return f"[{draw(st.integers(1, 3))}] ({draw(inner)})"
    if kind == "until":  # (unbounded or not: select * then carries a[k] as many as taken)
        bounds = draw(st.sampled_from(["", "[1:] ", "[2:] ", "[:2] ", "[1:3] "]))
        return f"({bounds}({draw(inner)}) until ({draw(inner)}))"
    if kind == "until timer":  # (ended by an interval: the statement's start or after an event)
        bounds = draw(st.sampled_from(["", "[1:] ", "[2] "]))
        return f"({bounds}({draw(inner)}) until timer:interval({draw(st.integers(1, 9))} sec))"
    if kind == "distinct":
        body = draw(inner)
        return f"every-distinct({tags[0] if tags else 't0'}.k, 2 sec) ({body})"
    if draw(st.booleans()):  # (counted where around every on one event, or with 0)
        return (f"({draw(inner)}) where timer:withinmax({draw(st.integers(1, 9))} sec, "
                f"{draw(st.integers(0, 3))})")
    return f"({draw(inner)}) where timer:within({draw(st.integers(1, 9))} sec)"


@settings(max_examples=150, deadline=None)
@given(epl_pattern(), st.integers(0, 3), st.sampled_from(["t0.k as k", "*"]))
def test_random_epl_prints_back(body: str, prio: int, select: str) -> None:
    note = f"@Priority({prio}) " if prio else ""
    text = SCHEMA + f"{note}insert into P select {select} from pattern [{body}];\n"
    try:
        m = parse_epl(text)
    except PatternSyntaxError:
        return  # (forms the reader refuses: nothing to print)
    printed = format_epl(m)
    assert same(parse_epl(printed), m)
