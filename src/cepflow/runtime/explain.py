"""Explanations of matches: each token's path through the automaton, which events moved it,
and why partial matches died (trap, window expired, noise under immediate/strict)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cepflow.automaton.automaton import FINAL, INITIAL, Automaton
from cepflow.compiler.program import Program
from cepflow.events.event import Event
from cepflow.runtime.engine import Engine
from cepflow.timefmt import instant_text


@dataclass
class TokenStory:
    """Everything that happened to one token (one partial match instance)."""

    pattern: str
    token: int
    steps: list[dict[str, Any]] = field(default_factory=list)
    outcome: str = "partial"  # match | trap | disposed | partial
    reason: str = ""
    state: str = ""
    #: the match's id (ComplexEvent.match_id) when the outcome is a match
    match_id: int | None = None


def _state(auto: Automaton, s: int) -> str:
    if s == FINAL:
        return "f"
    if s == INITIAL:
        return "q0"
    copied = auto.restricted.get(s)  # a restricted copy (Forbid.target)
    for p in auto.positions:
        if p.id == (s if copied is None else copied):
            seen = "" if copied is None else f", NOT seen: copy of q{copied}"
            return f"q{s}(after {p.label}{seen})"
    return f"q{s}"


def trace_run(program: Program, events: Iterable[Event], pattern: str | None = None,
              close_windows: bool = False) -> tuple[list[TokenStory], Engine]:
    """Run with tracing on; one story per token of ``pattern`` (or of every pattern)."""
    eng = Engine(program, trace=True, strict_actions=False)
    for e in events:
        eng.process(e)
    eng.finish(close_windows=close_windows)
    assert eng.trace is not None
    autos = {a.name: a for a in program.automata}
    stories: dict[tuple[str, int], TokenStory] = {}
    for ent in eng.trace.entries:
        name = ent["pattern"]
        if pattern is not None and name != pattern:
            continue
        key = (name, ent["token"])
        st = stories.setdefault(key, TokenStory(name, ent["token"]))
        st.steps.append(ent)
        kind = ent["kind"]
        if kind == "match":
            st.outcome, st.match_id = "match", ent.get("match")
        elif kind == "trap":
            st.outcome, st.reason = "trap", ent.get("reason") or ""
        elif kind == "dispose":
            st.outcome, st.reason = "disposed", ent.get("reason") or ""
        elif kind == "clock":  # a pattern's leading timer:interval (token -2)
            st.outcome = "clock"
    alive = {(m.name, t.id): t for m in eng.matchers for t in m.all_tokens()}
    for key, st in stories.items():
        tok = alive.get(key)
        if tok is not None and st.outcome == "partial":
            st.state = ", ".join(_state(autos[key[0]], th.state) for th in tok.threads)
    return sorted(stories.values(), key=lambda s: (s.pattern, s.token)), eng


def format_stories(program: Program, stories: list[TokenStory]) -> str:
    """Human-readable explanation, one block per token; times as :mod:`cepflow.timefmt`
    writes them (ISO-8601 UTC for epoch milliseconds, else ``N ms``)."""
    autos = {a.name: a for a in program.automata}
    out: list[str] = []
    current = None
    for st in stories:
        auto = autos[st.pattern]
        if st.pattern != current:
            current = st.pattern
            counts = {k: sum(1 for s in stories if s.pattern == current and s.outcome == k)
                      for k in ("match", "trap", "disposed", "partial")}
            out.append(f"pattern {auto.name} ({auto.context}): {auto.pattern_text}")
            out.append("  " + ", ".join(f"{v} {k}" for k, v in counts.items()))
        out.append(f"  token {st.token}: {st.outcome}"
                   + (f" — {st.reason}" if st.reason else "")
                   + (f" — waiting in {st.state}" if st.state else ""))
        for ent in st.steps:
            kind = ent["kind"]
            ev = ent.get("event")
            when = f"@{instant_text(ent['ts'])}"
            if kind == "start":
                tos = ", ".join(_state(auto, s) for s in ent["to"])
                out.append(f"    {when} event {ev}: q0 -> {tos}")
            elif kind == "step":
                tos = ", ".join(_state(auto, s) for s in ent["to"]) or "x (trap)"
                why = f"  [{ent['reason']}]" if ent.get("reason") else ""
                src = f"event {ev}" if ev is not None else "time"
                out.append(f"    {when} {src}: {_state(auto, ent['frm'])} -> {tos}{why}")
            elif kind == "match":
                out.append(f"    {when} MATCH events={ent['events']} bindings={ent['bindings']}")
            elif kind == "trap":
                src = f"event {ev}" if ev is not None else "time"
                out.append(f"    {when} {src}: -> x (trap): {ent.get('reason')}")
            elif kind == "dispose":
                out.append(f"    {when} event {ev}: disposed: {ent.get('reason')}")
            elif kind == "clock":
                src = f"event {ev}: " if ev is not None else ""
                out.append(f"    {when} clock: {src}{ent.get('reason')}")
    return "\n".join(out) + ("\n" if out else "")
