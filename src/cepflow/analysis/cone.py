"""The cone of a target: the patterns and window statements whose events can reach it.

Whether an input sequence makes the engine emit the target depends only on the target's
pattern (or statement) and on what feeds it, transitively: a pattern or statement outside the
cone reads nothing the cone produces its input from, and what it produces never reaches the
cone. The engine reaches its parts only through the events it dispatches to them, and the only
things they share are the clock and the numbering (ids that no condition reads; the relative
order of the cone's own ids is kept) — so the cone's program, run alone on the same input, emits
the same target events at the same steps (``tests/analysis/test_cone.py`` checks it on random
sequences). Rule actions could emit events of any type: a program whose rules have registered
actions has no smaller cone (the search runs no action, docs/analysis.md).

The bounded search uses it for the last level of a search (analysis/bounded_search.py): those
states are not extended, so only whether the target is emitted matters, and the cone's engine
is all that needs to be copied and run.
"""

from __future__ import annotations

import dataclasses

from cepflow.compiler.program import Program
from cepflow.runtime.engine import Engine


def cone_program(program: Program, target: str, engine: Engine) -> Program | None:
    """``program`` with only the patterns and statements from which ``target`` can be
    reached (in their order), or None when that is all of them. ``engine`` runs ``program``:
    what each pattern reads is taken from it (``matcher.pattern.types``, the types the engine
    dispatches on) and from the statements' ``input_types``."""
    if any(r.action is not None and r.action in engine.actions for r in program.rules):
        return None
    reads: dict[str, set[str]] = {}  # (a type several patterns produce: what any reads)
    for name, types in [*((m.name, m.pattern.types) for m in engine.matchers),
                        *((r.statement.name, r.statement.input_types) for r in engine.windows)]:
        reads.setdefault(name, set()).update(types)
    keep = {target}
    todo = [target]
    while todo:  # (producers are named after their output type)
        for t in reads.get(todo.pop(), ()):
            if t in reads and t not in keep:
                keep.add(t)
                todo.append(t)
    if len(keep) == len(reads):  # (every producer feeds the target)
        return None
    return dataclasses.replace(
        program, automata=[a for a in program.automata if a.name in keep],
        windows=[w for w in program.windows if w.name in keep])
