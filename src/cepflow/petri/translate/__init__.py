"""From a compiled pattern set to one PCPN that runs it (seed 004 §III), built from the same
program the engine runs — so the net is a second, independent execution of every pattern.

:func:`translate` makes the net for a program and an input stream: the stream subnet
(:mod:`.stream`: event capture places, time, dispatch, the queue of complex events), one subnet
per pattern (:mod:`.patterns`) and per window statement (:mod:`.windows`), and a place per
complex event type whose tokens are the complex events (004's output places). Constructs the
translation does not cover raise :class:`Untranslatable` with every one of them located
(statement, line, column, construct); nothing is translated wrongly. docs/petri.md gives the
rule of each construct, with its picture.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cepflow.compiler.program import Program
from cepflow.events.event import ComplexEvent, Event
from cepflow.petri.colours import INT
from cepflow.petri.net import Net
from cepflow.petri.simulator import Simulator
from cepflow.petri.translate.net_builder import KEY, TIME, Builder, Problem, Untranslatable
from cepflow.petri.translate.patterns import PatternNet
from cepflow.petri.translate.stream import PAGE, build_stream
from cepflow.petri.translate.windows import WindowNet

#: a complex event as the net holds it: (number, time, parameter values, part numbers)
Token = tuple[int, float, tuple[Any, ...], tuple[int, ...]]


@dataclass
class Translation:
    """A translated pattern set: the net (with the input as its initial marking) and where
    its complex events are."""

    net: Net
    program: Program
    events: list[Event]
    #: complex event type -> its place
    complex_places: dict[str, str]

    def simulator(self, seed: int | None = 0, choice: str = "random", record: bool = True,
                  check_types: bool = True) -> Simulator:
        return Simulator(self.net, seed=seed, choice=choice, record=record,
                         check_types=check_types)

    def complex_events(self, sim: Simulator) -> dict[str, list[Token]]:
        """The tokens of every complex-event place, by type, in number order."""
        out: dict[str, list[Token]] = {}
        for x, p in self.complex_places.items():
            toks = []
            for c in sim.marking[p].elements():
                toks.append((c[0], c[1], tuple(c[2:-1]), tuple(c[-1])))
            out[x] = sorted(toks)
        return out

    def rule_firings(self, sim: Simulator) -> dict[str, list[int]]:
        """Per rule, the numbers of the events it fired for (its ``R.fired`` place)."""
        return {r.name: sorted(sim.marking[f"{r.name}.fired"].elements())
                for r in self.program.rules}

    def finished(self, sim: Simulator) -> bool:
        """Has the net processed the whole input (a token on ``stream.stop``)?"""
        return bool(sim.marking["stream.stop"])


def engine_tokens(events: list[Event], matches: Iterable[ComplexEvent]
                  ) -> dict[str, list[Token]]:
    """The engine's complex events as the net numbers them: input events by their position
    in the stream (from 1), complex events after them in detection order."""
    n = len(events)
    out: dict[str, list[Token]] = {}
    for ce in matches:
        parts = tuple(n + p.match_id if isinstance(p, ComplexEvent) else p.seq + 1
                      for p in ce.parts)
        out.setdefault(ce.type, []).append((n + ce.match_id, ce.ts, tuple(ce.params), parts))
    return {k: sorted(v) for k, v in out.items()}


def translate(program: Program, events: Iterable[Event] = (), close_windows: bool = False,
              source: str = "") -> Translation:
    """The PCPN of ``program`` with ``events`` (time-ordered) as its initial marking.
    ``close_windows``: at the end of the input time runs out (the engine's
    ``finish(close_windows=True)``)."""
    evs = list(events)
    b = Builder(program, Net(source or "cepflow"), start=evs[0].ts if evs else None,
                inputs=len(evs))
    for t in program.schemas.values():
        b.field_names |= set(t.param_names)
    b.taken = set(b.field_names)
    for a in program.automata:
        b.taken |= {v for p in a.positions for _, v in p.binds}
    complex_names = {a.name for a in program.automata} | {w.name for w in program.windows}
    b.input_types = ({e.type for e in evs} | {
        t for t in program.schemas if t not in complex_names}) - complex_names
    patterns = [PatternNet(b, a, i) for i, a in enumerate(program.automata)]
    windows = [WindowNet(b, w, len(patterns) + i) for i, w in enumerate(program.windows)]
    problems: list[Problem] = []
    for p in patterns:
        problems += p.check()
    for w in windows:
        problems += w.check()
    complex_types = {a.name for a in program.automata} | {w.name for w in program.windows}
    for e in evs:
        if e.type in complex_types:
            problems.append(Problem(e.type, f"input event of type {e.type}",
                                    "an input event of a complex event type is not translated",
                                    None))
            break
    if problems:
        raise Untranslatable([_sourced(p, source) for p in problems])
    for p in patterns:
        for t in p.types_read():
            b.readers.setdefault(t, []).append(p.name)
    for w in windows:
        for t in w.statement.input_types:
            b.readers.setdefault(t, []).append(w.name)
    b.stage("@windows")
    for x in [*(a.name for a in program.automata), *(w.name for w in program.windows)]:
        b.complex_places[x] = x
        b.net.place(x, b.complex_set(x), "complex", x, f"the complex events {x}")
        if b.readers.get(x):
            q = b.queues[x] = f"queue.{x}"
            b.net.place(q, b.colour_set(f"Q_{x}", [("key", KEY), ("n", INT), ("t", TIME),
                                                   *b.event_fields(x)]),
                        "queue", PAGE, f"{x} events waiting to be dispatched")
    for p in patterns:
        p.build()
    for w in windows:
        w.build()
    build_stream(b, evs, close_windows)
    b.net.separate_variables()
    b.net.check()
    return Translation(b.net, program, evs, dict(b.complex_places))


def _sourced(p: Problem, source: str) -> Problem:
    return Problem(p.statement, p.construct, p.reason, p.loc, source)


__all__ = ["Problem", "Translation", "Untranslatable", "engine_tokens", "translate"]
