"""How a pattern set is split for Spark: which patterns run together, partitioned by which key.

Every event a pattern can use must carry the key in the same parameter for its type, so that
all events that can meet in one match land in one partition. A variable bound by *every* atom of
a pattern (``ForwardGesture(B)``: ``B``) is such a key under chronicle and unrestricted, where
partial matches of different key values never interact; ``partition by`` makes it one under
immediate and strict. Patterns that use each other's complex events (higher-order) run in one
group, keyed only if their keys agree. Anything else runs as one partition — with a warning
that says why — which gives the same result, only without parallelism.

Data-window statements join the group of the pattern or statement that produces their input
and of every pattern or statement that reads their rows. Such a group is keyed only when each
statement keeps its groups apart (:func:`_window_spans_keys`) and the keys agree as for
patterns. Window updates depend on the time of events, not on which events moved the clock
(at one instant the engine orders window updates, events and pattern deadlines the same way
whether or not an event arrives then), and every partition advances to the input's last
timestamp at the end (docs/spark.md, "Window statements").
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from cepflow.automaton.automaton import Automaton
from cepflow.compiler.program import Program
from cepflow.inputs.columnar import slot_columns
from cepflow.language import ast
from cepflow.windows.plan import compile_statement
from cepflow.windows.statement import ESPER_NAMES, WindowStatement


@dataclass
class Group:
    """Patterns and window statements that run in one engine per partition."""

    #: the complex events the group detects: pattern and window statement names
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


#: window kinds whose contents time changes (expiries, batch boundaries)
TIMED_WINDOWS = ("time", "time_batch")


def _window_spans_keys(stmt: WindowStatement) -> str | None:
    """Why one window of ``stmt`` must see the events of every key (None: it is per group).

    **Decision** (docs/spark.md, "Window statements"): a statement is split by key only when
    each of its groups lives in one partition and nothing about a group depends on events of
    other groups: a sliding ``#time`` window with ``group by`` (per-group aggregates, expiry
    at each event's ts + Δ), ``#groupwin`` length windows, and a ``#time_batch`` with a
    reference point and ``group by`` (boundaries fixed at r + kΔ; the rows of a close are those
    of the groups in this or the previous batch). Without a reference point the first event of
    the whole stream fixes every boundary; ``#length`` / ``#length_batch`` count the events of
    all keys together; without ``group by`` there is one group."""
    spec = stmt.window
    if not stmt.group_by:
        return "without group by it aggregates the events of every key together"
    if spec.kind in ("length", "length_batch") and not spec.per_group:
        return (f"{ESPER_NAMES[spec.kind]}({int(spec.size)}) counts the events of every key "
                "together (use per group / #groupwin to count per key)")
    if spec.kind == "time_batch" and spec.reference_point is None:
        return ("its batches start at the first event of the whole stream (no reference "
                "point)")
    return None


def _keyed_windows(wins: list[WindowStatement], program: Program, names: list[str],
                   mapping: dict[str, int]) -> str:
    """Extend the group's key ``mapping`` by its statements (input type at a group-by field;
    output type at the select item of that field when the group reads it). Returns why the
    group cannot be keyed, or ""."""
    autos = {a.name: a for a in program.automata if a.name in names}
    readers = ({t for a in autos.values() for t in a.alphabet}
               | {t for w in wins for t in w.input_types})
    for w in wins:
        if w.more_inputs:
            return f"window statement {w.name} reads several event types as one stream"
        why = _window_spans_keys(w)
        if why:
            return f"window statement {w.name}: {why}"
        plan_ = compile_statement(w, program.schemas, program.functions)
        fields = [plan_.fields[g.name] for g in plan_.group_exprs
                  if isinstance(g, ast.Name) and not g.path and g.name in plan_.fields]
        if not fields:
            return f"window statement {w.name} groups by no field of {w.input_type}"
        want = mapping.get(w.input_type)
        idx = want if want in fields else fields[0]
        if mapping.setdefault(w.input_type, idx) != idx:
            return (f"window statement {w.name} groups {w.input_type} by another parameter than "
                    "the patterns it joins key it on")
        if w.name in readers:
            out = [i for i, (kind, arg) in enumerate(plan_.items)
                   if kind == "field" and arg == idx]
            if not out:
                field_ = next(f for f, i in plan_.fields.items() if i == idx)
                return (f"window statement {w.name} does not pass its key '{field_}' on to "
                        "the patterns and statements using it (select it)")
            if mapping.setdefault(w.name, out[0]) != out[0]:
                return (f"window statement {w.name} passes its key at another parameter than "
                        "its users read")
    return ""


def plan(program: Program) -> list[Group]:
    """Split ``program`` into groups (see the module docstring)."""
    autos = {a.name: a for a in program.automata}
    stmts = {w.name: w for w in program.windows}
    # higher-order dependencies join patterns and window statements into one group
    # (union-find): a pattern with the producers of its events, a statement with the producer
    # of its input
    parent = {n: n for n in [*autos, *stmts]}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for a in program.automata:
        for t in a.alphabet:
            if t in parent:
                parent[find(t)] = find(a.name)
    for w in program.windows:
        for t in w.input_types:
            if t in parent:
                parent[find(t)] = find(w.name)
    members: dict[str, list[str]] = {}
    for n in parent:
        members.setdefault(find(n), []).append(n)

    groups = [_group(names, program) for names in members.values()]

    # rules go with the group that detects their trigger; a rule on atomic events with the
    # first group that reads (and keys) that type, or with a group of its own; a rule with
    # triggers in several groups is split so that no trigger fires it twice
    for rule in program.rules:
        refs_of: dict[int, list[ast.PatternRef]] = {}
        for ref in rule.on:
            home = next((gi for gi, g in enumerate(groups) if ref.name in g.patterns or (
                ref.name not in parent and (g.types is None or ref.name in g.types)
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


def _group(names: list[str], program: Program) -> Group:
    """The group of ``names`` (patterns and window statements that read each other): keyed
    if every member can be, else one partition."""
    group = _pattern_group(names, program)
    wins = [w for w in program.windows if w.name in names]
    if not wins:
        return group
    if group.types is not None:
        group.types |= {t for w in wins for t in w.input_types}
    if group.partitioned:
        assert group.key is not None
        why = _keyed_windows(wins, program, names, group.key)
        if not why:
            return group
        group.reason = why
    group.key = None
    return group


def _pattern_group(names: list[str], program: Program) -> Group:
    """The group as its patterns decide it (key, event types, or why one partition)."""
    autos = {a.name: a for a in program.automata}
    pats = [n for n in names if n in autos]
    inputs = {t for w in program.windows if w.name in names for t in w.input_types}
    needs_all = [n for n in pats if autos[n].context.disposes_on_noise
                 and not autos[n].partition_by]
    alphabet = set().union(*(autos[n].alphabet for n in pats))
    if needs_all:
        return Group(names, None, None, reason=(
            f"{needs_all[0]} uses the {autos[needs_all[0]].context} context, where any "
            "event of the stream can be noise; declare 'partition by <key>' to run it per "
            "key"))
    # a pattern that starts with timer:interval begins at the statement's start: the first
    # event of the whole stream (docs/esper.md), so its engine must see every event; so does
    # Esper's guard at the top of a pattern end it (Zone.whole)
    clocked = [n for n in pats if autos[n].clock is not None]
    if clocked:
        return Group(names, None, None, reason=(
            f"{clocked[0]} starts with timer:interval: its intervals begin at the statement's "
            "start, the first event of the whole stream"))
    whole = [n for n in pats if any(z.whole for z in autos[n].zones)]
    if whole:
        return Group(names, None, None, reason=(
            f"{whole[0]} is guarded as a whole: its guard ends it a time after the statement's "
            "start, the first event of the whole stream"))
    # Esper: without a leading `every` (or with every-distinct) instances are global
    global_esper = [n for n in pats if autos[n].context.esper
                    and (autos[n].start != "spawn" or autos[n].distinct)]
    if global_esper:
        a = autos[global_esper[0]]
        why = "every-distinct keeps one set of seen keys" if a.distinct else (
            f"its instances run one at a time over the whole stream ({a.start})")
        return Group(names, None, None, reason=f"{a.name}: {why}")
    keys = {n: pattern_key(autos[n]) for n in pats}
    missing = [n for n, k in keys.items() if k is None]
    if missing:
        return Group(names, None, alphabet, reason=(
            f"no variable of {missing[0]} is bound by all of its events at one parameter, "
            "so its events cannot be split by key"))
    mapping: dict[str, int] = {}
    conflict = ""
    for n in pats:
        var, m = keys[n]  # type: ignore[misc]
        for t, i in m.items():
            if mapping.setdefault(t, i) != i:
                conflict = f"{n} keys '{t}' on another parameter than a pattern it joins"
        # its own complex events carry the key at the position of the variable
        pidx = autos[n].params.index(var) if var in autos[n].params else None
        if any(n in autos[o].alphabet for o in pats) or n in inputs:
            if pidx is None:
                conflict = f"{n} does not pass its key '{var}' on to the patterns using it"
            elif mapping.setdefault(n, pidx) != pidx:
                conflict = f"{n} passes its key at another parameter than its users read"
    if conflict:
        return Group(names, None, alphabet, reason=conflict)
    return Group(names, mapping, alphabet)


def subprogram(program: Program, group: Group) -> Program:
    """The part of ``program`` one group runs (its patterns, window statements and rules)."""
    return Program(program.schemas, [a for a in program.automata if a.name in group.patterns],
                   list(group.rules), program.module, program.query_events,
                   [w for w in program.windows if w.name in group.patterns], program.functions)


def fillable_columns(program: Program, groups: list[Group], arity: int) -> set[str]:
    """The optional event columns of the layout that events the ``groups`` read can fill —
    ids, integer time and their parameter slots — known before any file is read (the
    columns that must travel when no summary of the input says which hold values)."""
    if not groups:
        return set()
    return {"tsi", "id_s", "id_i", *slot_columns(program.schemas, read_types(groups), arity)}


def read_types(groups: list[Group]) -> set[str] | None:
    """The event types the ``groups`` read (None: every type)."""
    reads: set[str] | None = set()
    for g in groups:
        reads = None if reads is None or g.types is None else reads | g.types
    return reads
