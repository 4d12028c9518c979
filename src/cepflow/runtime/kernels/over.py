"""Patterns that are over: Esper's patterns that end for good, skipped by the per-event route
from then on (issue 21 item 2).

Most of Esper's patterns without ``every`` at their top — ``a = A``, ``a = A -> b = B``,
``a = A or b = B``, ``a = A and b = B``, ``[2] A until b = B``, ``a = A where
timer:within(Δ)`` … (start policy "once", compiler.esper) — and every pattern under Esper's
guard at its top, ``(every (a = A -> b = B)) where timer:within(Δ)`` (Zone.whole), have one
life: EvalRootStateNode's child reports once, or turns permanently false (its guard ended, a
``not`` ended it), and the pattern is quitted; no event after that starts or completes
anything. These were the most frequent forms the per-event route took over the random Esper
generator (tests/esper/test_esper_random_patterns.py: 1,668 of 3,000 drawn patterns per event,
of which ≈ 1,200 start "once"; benchmarks/pattern_shapes.py's ``once_*`` shapes), and the
per-event route kept stepping them through the token path after their end (``_find`` over no
token, per event): 440k events per CPU s for ``a = A -> b = B`` against the engine's 1.3M
floor.

A matcher is **over** (:func:`over`) when its pattern is Esper's, it cannot begin an instance
again — start policy "once" with its one instance begun (Matcher.done), or its top guard
quitted at the engine's time (Matcher.quit: monotone in time) — and nothing of it is under
way: no token, no rows left by a kernel, no inner-every forks, no respawns owed, no clock
interval, no pair deadlines. Its step would then change nothing (no token id, no match, no
timer), so the engine's input routes call :func:`_skip` in its place (:func:`skip_over`; the
routes keep one step per matcher, which Engine.replaying zips with the matchers). The engine
asks every :data:`EVERY` events of its per-event loops (Engine._detected, Engine._one_by_one)
and at the start of each batch (Engine.process_batch, Engine.process_columns: in the program
split the ended pattern's rows are then stepped through the no-op); the timers of an over
pattern still fire as before (they find no token).

**Decision:** only the input routes are patched — a pattern reading complex events keeps its
cascade step (rare, and the cascade's step tables are rebuilt by the split). A patched route
lasts until the engine's routes are indexed again (a fork of the engine: its matchers are
checked afresh); a saved state carries no mark (after a restore the pattern is checked again
at the next batch)."""

from __future__ import annotations

from typing import Any

from cepflow.runtime.matcher import Matcher

#: the per-event route asks whether a pattern ended every this many events
EVERY = 1024


def ending(engine: Any) -> list[Any]:
    """The matchers of ``engine`` that may end for good (see the module docstring): Esper's
    patterns of start policy "once" or with a guard at their top, that see only their own
    types (not noise), when no trace is kept (a trace records every step) and the matchers
    are the engine's own (not a fork's handles, cepflow.analysis.fork: reading their state
    would copy them)."""
    if engine.trace is not None or not all(type(m) is Matcher for m in engine.matchers):
        return []
    noise = {id(m) for m in engine.noise}
    return [m for m in engine.matchers
            if m.pattern.context.esper and id(m) not in noise and not m.pattern.partitioned
            and (m.pattern.auto.start == "once" or m.pattern.whole_zone is not None)]


def over(m: Any) -> bool:
    """Whether the matcher ``m`` (one of :func:`ending`'s) is over at the engine's time:
    it begins nothing again and nothing of it is under way."""
    if (m.pending is not None or m.due or m._forks or m._forked or m.clock_start is not None
            or m.deadlines or any(m.tokens.values())):
        return False
    if m.pattern.auto.start == "once" and m.done:
        return True
    return m.quit(m.host.time)


def skip_over(engine: Any) -> None:
    """Put :func:`_skip` in the input routes of the ending matchers that are now over, and
    take them off ``engine._ending``."""
    ended = [m for m in engine._ending if over(m)]
    if not ended:
        return
    gone = {id(m) for m in ended}
    engine._ending = [m for m in engine._ending if id(m) not in gone]
    routes = engine._routes
    for t in {t for m in ended for t in m.pattern.types}:
        route = routes.get(t)
        if route is None:
            continue
        n, steps, runners, triggers = route
        ms = engine.subs_input.get(t, engine.noise)
        routes[t] = (n, tuple(_skip if id(m) in gone else s
                              for m, s in zip(ms, steps, strict=True)), runners, triggers)


def _skip(e: Any, emit: Any) -> None:
    """The step of a pattern that is over: nothing."""
