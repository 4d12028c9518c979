"""Which patterns hold partial matches that grow with the stream (docs/semantics.md,
"Resources: partial matches").

A partial match rests in an automaton state until an event moves it on. It ends when it
completes, when a NOT traps it, when its window expires (``within``: the engine's timer), or
when its context disposes it. Whether the number held at once is bounded depends on both:

* **window** — every state a partial match can rest in lies in a ``within`` window (or a
  trailing NOT's window, which completes it at the deadline): each lives at most that long, so
  the number held is bounded by the rate of the stream, not its length. Nothing to announce.
* **the next event decides** — a state whose partial matches are made by events of type ``T``
  and that every ``T`` event moves on or ends (its steps' and NOTs' conditions on ``T`` cover
  every value, and none unifies with a bound variable — Esper's "consecutive" idiom
  ``every a = T(c) -> (b = T(c) and not T(not c))``): the event that could start another
  partial match there ends the one waiting, so at most the few made by one event wait there.
  (A NOT gap ended by another type is no such bound: that event may never come.)
* **chronicle** and **unrestricted** — every event that can start a partial match and that no
  waiting one takes starts one (unrestricted: every such event), and only a match ends it: an
  ``A(x) -> B(x)`` over a stream of ``A`` events holds one per ``A``, keyed or not.
* **esper** — ``every`` at the start spawns an instance per start event, an ``every`` inside
  the pattern forks one per event it takes; without either (``every (A -> B)``, or no
  ``every``) there is one instance at a time.
* **immediate** and **strict** — an event that contributes to no partial match disposes all
  of them, and strict holds one at a time: bounded, unless the pattern is partitioned
  (``partition by k``): then each value of ``k`` keeps its own, disposed only by noise of that
  value, so they grow with the number of distinct values.

:func:`growth` gives the reason for a pattern whose partial matches can grow, :func:`warnings`
the located warnings ``cepflow check`` and ``cepflow run`` print.
"""

from __future__ import annotations

from cepflow.automaton.automaton import FINAL, TRAP, Automaton
from cepflow.automaton.context import Context
from cepflow.compiler.conditions import any_of, negation, satisfiable
from cepflow.language import ast
from cepflow.language.diagnostics import Diagnostic


def resting_states(auto: Automaton) -> set[int]:
    """The states a partial match can rest in: targets of steps that do not complete the
    pattern, and the restricted copies a NOT leads to."""
    out = {e.target for m in auto.edges.values() for es in m.values() for e in es
           if not e.final and e.target != FINAL}
    out |= {f.target for m in auto.forbids.values() for fs in m.values() for f in fs
            if f.target not in (TRAP, FINAL)}
    return out


def _windowed(auto: Automaton, state: int) -> bool:
    """Whether a partial match resting in ``state`` is in a window that ends it in time."""
    zones = {p.id: p.zones for p in auto.positions}
    timed = {z.id for z in auto.zones if z.kind == "within" or z.timer_accept}
    return any(z in timed for z in zones.get(auto.restricted.get(state, state), ()))


def _decided(auto: Automaton, state: int) -> bool:
    """Whether the next event of the type that makes partial matches rest in ``state`` moves
    every one of them on or ends it (module docstring, "the next event decides")."""
    made = {e.position.type for m in auto.edges.values() for es in m.values() for e in es
            if e.target == state}
    if len(made) != 1 or state in auto.restricted:
        return False
    (t,) = made
    bound = {v for m in auto.edges.values() for es in m.values() for e in es
             for _, v in e.position.binds}
    conds = []
    for e in auto.edges.get(state, {}).get(t, ()):
        if any(v in bound and _bound_before(auto, state, v) for _, v in e.position.binds):
            return False  # a step that unifies: events of other keys pass it by
        conds.append(e.position.where)
    for f in auto.forbids.get(state, {}).get(t, ()):
        if f.position.binds:
            return False
        conds.append(f.position.where)
    # (a null field neither moves nor ends one; streams carry values)
    return bool(conds) and not satisfiable(negation(any_of(conds)), nulls=False)


def _bound_before(auto: Automaton, state: int, var: str) -> bool:
    """Whether ``var`` is bound on some path into ``state`` (a later step naming it unifies)."""
    preds: dict[int, list] = {}
    for m in auto.edges.values():
        for es in m.values():
            for e in es:
                preds.setdefault(e.target, []).append(e)
    seen, stack = {state}, [state]
    while stack:
        for e in preds.get(stack.pop(), ()):
            if any(v == var for _, v in e.position.binds):
                return True
            if e.source not in seen:
                seen.add(e.source)
                stack.append(e.source)
    return False


def growth(auto: Automaton) -> str | None:
    """Why the partial matches of ``auto`` can grow with the stream (module docstring), or
    None when a window, the next event or the context bounds them."""
    # (Esper's -[n]> after every: at most n runs wait in its states, Automaton.limits)
    limited = {s for _, states in auto.limits for s in states}
    open_states = [s for s in sorted(resting_states(auto))
                   if not _windowed(auto, s) and not _decided(auto, s) and s not in limited]
    if not open_states:
        return None
    labels = {p.id: p.label for p in auto.positions}
    waiting = labels.get(auto.restricted.get(open_states[0], open_states[0]), "?")
    after = f"a partial match waiting after {waiting} is held until it completes"
    ctx = auto.context
    if ctx in (Context.CHRONICLE, Context.UNRESTRICTED):
        start = ("every event that can start one starts one" if ctx.follows_every_run else
                 "every event that can start one and that no waiting one takes starts one")
        return f"under {ctx}, {start}, and {after}"
    if ctx.esper:
        if auto.start == "spawn":
            return f"every at its start spawns an instance per event, and {after}"
        if auto.start == "group":
            return (f"every (…) at its start begins an instance of the rest each time its "
                    f"group completes, and {after}")
        if auto.start == "respawn":
            return ("every (…) around every starts fresh instances at each result (counted "
                    "on one partial match, but the results each event reports multiply, as "
                    f"Esper's), an every inside it forks one per event it takes, and {after}")
        if any(p.every for p in auto.positions):
            return f"an every inside it forks an instance per event it takes, and {after}"
        return None
    if auto.partition_by:
        keys = ", ".join(auto.partition_by)
        return (f"under {ctx} partitioned by {keys}, each value of {keys} keeps its own, "
                f"disposed only by noise of that value: they grow with the number of values")
    return None


def warnings(automata: list[Automaton], module: ast.Module) -> list[Diagnostic]:
    """A located warning per pattern whose partial matches can grow with the stream."""
    where = {d.name: d.loc for d in module.decls if isinstance(d, ast.ComplexEventDecl)}
    out = []
    for auto in automata:
        why = growth(auto)
        if why is None:
            continue
        line, col = where.get(auto.name) or (1, 1)
        out.append(Diagnostic(module.source, line, col, (
            f"pattern {auto.name}: its partial matches can grow with the stream, as no window "
            f"bounds them ({why}); bound them with a window (`(…)[10 min]`, "
            "`where timer:within(…)`) or cap them with --max-partial-matches"), "warning"))
    return out
