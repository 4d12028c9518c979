"""How a pattern set is split for Spark: which patterns run together, partitioned by which key.

Every event a pattern can use must carry the key in the same parameter for its type, so that
all events that can meet in one match land in one partition. A variable bound by *every* atom of
a pattern (``ForwardGesture(B)``: ``B``) is such a key under chronicle and unrestricted, where
partial matches of different key values never interact; ``partition by`` makes it one under
immediate and strict. Patterns that use each other's complex events (higher-order) run in one
group, keyed only if their keys agree. Anything else runs as one partition — with a warning
that says why — which gives the same result, only without parallelism.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from cepflow.automaton.model import Automaton
from cepflow.compiler.program import Program
from cepflow.language import ast


@dataclass
class Group:
    """Patterns that run in one engine per partition."""

    patterns: list[str]
    #: event type -> parameter index holding the key; None: the group runs as one partition
    key: dict[str, int] | None
    #: event types the group needs; None: every event (noise matters under immediate/strict)
    types: set[str] | None
    rules: list[ast.RuleDecl] = field(default_factory=list)
    reason: str = ""

    @property
    def partitioned(self) -> bool:
        return self.key is not None


def pattern_key(auto: Automaton) -> tuple[str, dict[str, int]] | None:
    """A variable every atom of the pattern binds, each event type at one parameter index."""
    if auto.partition_by:
        return auto.partition_by[0], dict(auto.partition_index)
    candidates: set[str] | None = None
    for pos in auto.positions:
        bound = {v for _, v in pos.binds}
        candidates = bound if candidates is None else candidates & bound
    for var in sorted(candidates or ()):
        mapping: dict[str, int] = {}
        ok = True
        for pos in auto.positions:
            idx = {i for i, v in pos.binds if v == var}
            i = min(idx)
            if mapping.setdefault(pos.type, i) != i or len(idx) != 1:
                ok = False
                break
        if ok:
            return var, mapping
    return None


class SparkUnsupported(ValueError):
    """A program the Spark pipeline cannot run (it says why and what to use instead)."""


def refuse_windows(program: Program) -> None:
    """Data-window statements are not run on Spark (yet): refuse rather than split them.

    **Decision** (docs/windows.md, "In the engine"): a time batch or a sliding window of a
    statement moves with the time of *every* event, and its rows feed patterns partitioned by
    other keys, so running a statement per Spark partition would change its output; until
    statements get their own keyed plan, programs with them run in-process only.
    """
    if program.windows:
        names = ", ".join(w.name for w in program.windows)
        raise SparkUnsupported(
            f"the Spark pipeline does not run data-window statements yet ({names}); "
            "run this program with the in-process engine (--engine local)")


def plan(program: Program) -> list[Group]:
    """Split ``program`` into groups (see the module docstring)."""
    refuse_windows(program)
    autos = {a.name: a for a in program.automata}
    # higher-order dependencies join patterns into one group (union-find)
    parent = {n: n for n in autos}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for a in program.automata:
        for t in a.alphabet:
            if t in autos:
                parent[find(t)] = find(a.name)
    members: dict[str, list[str]] = {}
    for a in program.automata:
        members.setdefault(find(a.name), []).append(a.name)

    groups: list[Group] = []
    for names in members.values():
        needs_all = [n for n in names if autos[n].context in ("immediate", "strict")
                     and not autos[n].partition_by]
        alphabet = set().union(*(autos[n].alphabet for n in names))
        if needs_all:
            groups.append(Group(names, None, None, reason=(
                f"{needs_all[0]} uses the {autos[needs_all[0]].context} context, where any "
                "event of the stream can be noise; declare 'partition by <key>' to run it per "
                "key")))
            continue
        # Esper: without a leading `every` (or with every-distinct) instances are global
        global_esper = [n for n in names if autos[n].context == "esper"
                        and (autos[n].start != "spawn" or autos[n].distinct)]
        if global_esper:
            a = autos[global_esper[0]]
            why = "every-distinct keeps one set of seen keys" if a.distinct else (
                f"its instances run one at a time over the whole stream ({a.start})")
            groups.append(Group(names, None, None, reason=f"{a.name}: {why}"))
            continue
        keys = {n: pattern_key(autos[n]) for n in names}
        missing = [n for n, k in keys.items() if k is None]
        if missing:
            groups.append(Group(names, None, alphabet, reason=(
                f"no variable of {missing[0]} is bound by all of its events at one parameter, "
                "so its events cannot be split by key")))
            continue
        mapping: dict[str, int] = {}
        conflict = ""
        for n in names:
            var, m = keys[n]  # type: ignore[misc]
            for t, i in m.items():
                if mapping.setdefault(t, i) != i:
                    conflict = f"{n} keys '{t}' on another parameter than a pattern it joins"
            # its own complex events carry the key at the position of the variable
            pidx = autos[n].params.index(var) if var in autos[n].params else None
            if any(n in autos[o].alphabet for o in names):
                if pidx is None:
                    conflict = f"{n} does not pass its key '{var}' on to the patterns using it"
                elif mapping.setdefault(n, pidx) != pidx:
                    conflict = f"{n} passes its key at another parameter than its users read"
        if conflict:
            groups.append(Group(names, None, alphabet, reason=conflict))
        else:
            groups.append(Group(names, mapping, alphabet))

    # rules go with the group that detects their trigger; a rule on atomic events with the
    # first group that reads (and keys) that type, or with a group of its own; a rule with
    # triggers in several groups is split so that no trigger fires it twice
    for rule in program.rules:
        refs_of: dict[int, list[ast.PatternRef]] = {}
        for ref in rule.on:
            home = next((gi for gi, g in enumerate(groups) if ref.name in g.patterns or (
                ref.name not in autos and (g.types is None or ref.name in g.types)
                and (g.key is None or ref.name in g.key))), None)
            if home is None:
                groups.append(Group([], None, {ref.name}, reason=(
                    f"rule {rule.name} reacts to '{ref.name}' events, which no keyed pattern "
                    "reads")))
                home = len(groups) - 1
            refs_of.setdefault(home, []).append(ref)
        for gi, refs in refs_of.items():
            groups[gi].rules.append(replace(rule, on=tuple(refs)))
    return groups


def subprogram(program: Program, group: Group) -> Program:
    """The part of ``program`` one group runs."""
    return Program(program.schemas, [a for a in program.automata if a.name in group.patterns],
                   list(group.rules), program.module, program.query_events)
