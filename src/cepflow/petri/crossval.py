"""Cross-validation: the net and the engine run the same program over the same stream and must
output the same complex events (issue 19.5).

:func:`compare` translates the program with the stream as the initial marking, runs the net to
its end with a seeded choice, runs the engine, and compares the tokens of every complex-event
place with the engine's matches, numbered alike (:func:`~cepflow.petri.translate.engine_tokens`:
number, time, parameter values, the numbers of the events that made each). Two executions
that share only the compiled program — the automata and statements — agree or the comparison
says where they differ.

:func:`random_program`, :func:`random_vepl` and :func:`random_stream` draw the programs and
streams the property tests (tests/petri/test_petri_crossval.py, hypothesis) and the long run
(scripts/petri_crossval.py) use — VEPL patterns under chronicle, immediate and strict with a
rule, and: Esper patterns over three event types with every in both placements and inside a
pattern (``A -> every B``), followed-by,
filters, correlations (unification and filters), ``or``, ``and``, ``and not``, repetition,
``timer:within``, a trailing ``timer:interval`` (with ``and not``), every-distinct, a second
pattern reading the first's output, and window statements; events with ties in time and
values that make filters both pass and fail.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cepflow.compiler.program import Program
from cepflow.events.event import ComplexEvent, Event
from cepflow.petri.translate import Token, engine_tokens, translate
from cepflow.runtime.engine import Engine

Pick = Callable[[Sequence[Any]], Any]


@dataclass
class Comparison:
    net: dict[str, list[Token]]
    engine: dict[str, list[Token]]
    steps: int = 0
    finished: bool = True
    differences: list[str] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not self.differences


def compare(program: Program, events: Sequence[Event], seed: int = 0,
            close_windows: bool = False, max_steps: int | None = None) -> Comparison:
    """Run ``program`` over ``events`` as a net and in the engine; compare their outputs."""
    evs = [Event(e.type, tuple(e.params), e.ts, e.id) for e in events]
    tr = translate(program, evs, close_windows=close_windows)
    sim = tr.simulator(seed=seed, record=False)
    steps = sim.run(max_steps)
    net = tr.complex_events(sim)
    fired: dict[str, list[Any]] = {r.name: [] for r in program.rules}
    # rules fire their actions; here each records the event it fired for
    actions = {r.action: (lambda act: fired[act.rule.name].append(act.event))
               for r in program.rules if r.action}
    eng = Engine(program, actions=actions, strict_actions=False)
    fed = [Event(e.type, tuple(e.params), e.ts, e.id) for e in events]
    matches = []
    for e in fed:
        matches += eng.process(e)
    matches += eng.finish(close_windows=close_windows)
    want = engine_tokens(fed, matches)
    out = Comparison(net, want, steps, tr.finished(sim))
    n = len(fed)
    got_rules = tr.rule_firings(sim)
    for r in program.rules:
        if not r.action:
            continue
        nums = sorted(n + ev.match_id if isinstance(ev, ComplexEvent) else ev.seq + 1
                      for ev in fired[r.name])
        if got_rules[r.name] != nums:
            out.differences.append(f"rule {r.name}: the net fired for {got_rules[r.name]}, "
                                   f"the engine for {nums}")
    if not out.finished:
        out.differences.append(f"the net stopped after {steps} steps before the end of input")
    for x in sorted(set(net) | set(want)):
        a, b = net.get(x, []), want.get(x, [])
        if a != b:
            only_net = [t for t in a if t not in b]
            only_eng = [t for t in b if t not in a]
            out.differences.append(f"{x}: net only {only_net}, engine only {only_eng}")
    return out


# -- random programs and streams ----------------------------------------------------------

SCHEMA = ("create schema A(k int, v int);\ncreate schema B(k int, v int);\n"
          "create schema C(k int, v int);\n")
TYPES = ("A", "B", "C")


def _atom(pick: Pick, alias: str, earlier: list[str], t: str | None = None) -> str:
    t = t or pick(TYPES)
    conds = []
    c = pick(["none", "v>", "v<", "k=", "v>prev", "k=prev", "k=prev", "v!="])
    if c == "v>":
        conds.append(f"{alias}.v > {pick([0, 1, 2])}")
    elif c == "v<":
        conds.append(f"{alias}.v < {pick([1, 2, 3])}")
    elif c == "v!=":
        conds.append(f"{alias}.v != {pick([0, 1])}")
    elif c == "k=":
        conds.append(f"{alias}.k = {pick([0, 1])}")
    elif c in ("v>prev", "k=prev") and earlier:
        other = pick(earlier)
        conds.append(f"{alias}.v > {other}.v" if c == "v>prev" else f"{alias}.k = {other}.k")
    return f"{alias} = {t}({' and '.join(conds)})" if conds else f"{alias} = {t}"


def _negated(pick: Pick, earlier: list[str]) -> str:
    t = pick(TYPES)
    if earlier and pick([True, False]):
        return f"not {t}(k = {pick(earlier)}.k)"
    return f"not {t}(v = {pick([0, 1, 2, 3])})"


def random_pattern(pick: Pick, name: str, tags: list[str], inner: str | None = None,
                   into: str | None = None) -> str:
    """One EPL statement ``insert into <name> … from pattern […]`` (``into``: another stream
    name, which several statements may share); ``inner``: a complex type it may read (its
    output has the select's fields k and v)."""
    steps: list[str] = []
    n = pick([1, 2, 2, 3])
    every = pick(["none", "spawn", "spawn", "restart", "distinct"] if n > 1
                 else ["none", "spawn", "distinct"])
    for i in range(n):
        alias = f"{name.lower()}{i}"
        earlier = [t for t in tags]
        form = pick(["atom", "atom", "atom", "or", "and", "andnot", "repeat", "fork"] if i
                    else ["atom", "atom", "or"] if inner is None else ["atom"])
        if form == "fork" and every in ("restart", "distinct"):
            form = "atom"
        t = inner if inner and i == 0 and pick([True, False]) else None
        if form == "atom":
            steps.append(_atom(pick, alias, earlier, t))
            tags.append(alias)
        elif form == "or":
            x, y = _atom(pick, alias, earlier), _atom(pick, alias + "b", earlier)
            steps.append(f"({x} or {y})")
        elif form == "and":
            x, y = _atom(pick, alias, earlier), _atom(pick, alias + "b", earlier)
            steps.append(f"({x} and {y})")
            tags += [alias, alias + "b"]
        elif form == "fork":  # Esper's inner every: each such event forks an instance
            steps.append(f"every {_atom(pick, alias, earlier, t)}")
            tags.append(alias)
        elif form == "andnot":
            steps.append(f"({_atom(pick, alias, earlier)} and {_negated(pick, earlier)})")
            tags.append(alias)
        else:
            steps.append(f"[2] {pick(TYPES)}")
    # a trailing interval after one event: completes when it passes (with nothing forbidden)
    tail = None
    if steps[-1].split(" = ")[0] in tags and pick([False, False, False, True]):
        t = steps[-1].split(" = ")[0]
        tail = pick(["timer:interval(1 sec)", f"(timer:interval(2 sec) and not "
                     f"{pick(TYPES)}(k = {t}.k))"])
        steps.append(tail)
    head = steps[0]
    # a window from the first event: the guard on what follows it (Esper starts it at that
    # event; a guard around the whole would start at the statement's start, which the net
    # does not translate)
    within = pick([None, None, 2, 3]) if (n > 1 and tail is None and " = " in head
                                          and not head.startswith(("(", "every"))) else None
    rest = " -> ".join(steps[1:])
    if within is not None:
        rest = f"({rest}) where timer:within({within} sec)"
    body = " -> ".join([head, rest]) if rest else head
    if every == "spawn":
        body = f"every {body}"
    elif every == "distinct" and tags and steps[0].startswith(tags[0] + " ="):
        body = f"every-distinct({tags[0]}.k) {body}"
    elif every == "restart":
        body = f"every ({body})"
    sel = ([f"{tags[0]}.k as k", f"{tags[-1]}.v as v"] if tags
           else ["current_timestamp() as at"])
    return (f"@Name('{name}')\ninsert into {into or name}\nselect {', '.join(sel)}\n"
            f"from pattern [{body}];\n")


def random_window(pick: Pick, name: str, source: str) -> str:
    """A window statement over ``source`` (fields k and v): a sliding or batch window by time
    or length (per group with ``std:groupwin``), aggregates, ``group by``, ``having``."""
    group = pick([None, "k"])
    kinds = ["win:time(2 sec)", "win:time(3 sec)", "win:length(2)", "win:length(3)",
             "win:time_batch(2 sec)", "win:length_batch(2)", "win:length_batch(3)"]
    if group:
        kinds += ["std:groupwin(k).win:length(2)", "std:groupwin(k).win:length_batch(2)"]
    kind = pick(kinds)
    aggs = ["count(*) as c", "sum(v) as s", "avg(v) as a", "min(v) as lo", "max(v) as hi",
            "count(v) as cv"]
    chosen = [pick(aggs)]
    extra = pick([None, *aggs])
    if extra is not None and extra not in chosen:
        chosen.append(extra)
    flt = pick(["", "", "(v > 0)", "(k != 1)"])
    sel = ", ".join(([pick(["k", "v"])] if pick([False, False, True]) else [])
                    + (["k"] if group and "k" not in chosen else []) + chosen)
    tail = f"\ngroup by {group}" if group else ""
    having = pick([None, None, "count(*) > 1", "sum(v) >= 2", "max(v) > 1"])
    if having:
        tail += f"\nhaving {having}"
    sel = sel.replace("k, k,", "k,")
    return (f"@Name('{name}')\ninsert into {name}\nselect {sel}\n"
            f"from {source}{flt}.{kind}{tail};\n")


def random_program(pick: Pick, windows: bool = True) -> str:
    """An EPL module: one or two patterns (the second may read the first's output) and
    possibly a window statement — over an input type, a pattern's output, or the stream ``S``
    two patterns insert into (the union of their types)."""
    text = SCHEMA
    shape = pick(["one", "two", "chain", "window"] if windows else ["one", "two", "chain"])
    source = pick([*TYPES, "P", "S"]) if shape == "window" else ""
    # (a pattern read by another component starts with a tagged event: it selects k and v)
    text += random_pattern(pick, "P", [], inner="" if shape == "chain" or source in "PS"
                           else None, into="S" if source == "S" else None)
    if source == "S":
        text += random_pattern(pick, "Q", [], inner="", into="S")
    if shape == "two":
        text += random_pattern(pick, "Q", [])
    elif shape == "chain":
        text += random_pattern(pick, "Q", [], inner="P")
    elif shape == "window":
        text += random_window(pick, "W", source)
        if pick([False, True]) and "as k" in text.split("@Name('W')")[1].split("from")[0] \
                and "as lo" not in text and "as hi" not in text and source != "S":
            text += ("@Name('Q')\ninsert into Q\nselect w.k as k\n"
                     "from pattern [every w = W -> x = A(x.k = w.k)];\n")
    return text


OR_SCHEMA = "".join(f"create schema {t}(k int, v int);\n" for t in "ABCD")


def random_or_pattern(pick: Pick) -> str:
    """An EPL module with one pattern around Esper's ``or`` (over A to D): operands that are
    single events, ands and sequences, ``every X or every Y``, after an event, followed by
    more, under every — the forms where Esper's or takes the operand that reports first and
    quits the others (the engine's Position.ties / side / settle / each): the net must agree
    or refuse them."""
    n = [0]

    def atom(t: str | None = None) -> str:
        n[0] += 1
        return f"o{n[0]}={t or pick('ABCD')}{pick(['', '', '(k > 0)', '(k = 0)'])}"

    def operand() -> str:
        form = pick(["atom", "atom", "and", "seq"])
        if form == "atom":
            return atom()
        return f"({atom()} {'and' if form == 'and' else '->'} {atom()})"

    if pick(["or", "or", "every"]) == "every":
        first = atom()  # (half the time both of one type: an instance per operand, each)
        body = f"(every {first} or every {atom(pick([first[3], None]))})"
    else:
        body = "(" + " or ".join(operand() for _ in range(pick([2, 2, 3]))) + ")"
    if pick([True, True, True, False, False]):
        body = f"o0=A -> {body}"
    if pick([True, True, False, False, False]):
        body = f"{body} -> {atom()}"
    wrap = pick([None, None, None, "group", "spawn"])
    if wrap == "group":
        body = f"every ({body})"
    elif wrap == "spawn":
        body = f"every {body}"
    return OR_SCHEMA + f"@Name('P') select * from pattern [{body}];\n"


def random_or_stream(pick: Pick, length: int) -> list[Event]:
    """``length`` events of types A to D, keys 0 and 1, steps of 0 to 200 ms (ties often)."""
    out, ts = [], 0
    for i in range(length):
        ts += pick([0, 100, 100, 200])
        out.append(Event(pick("ABCD"), (pick([0, 1]), i), ts))
    return out


VEPL_SCHEMA = ("atomicEvent A(k: Integer, v: Integer)\natomicEvent B(k: Integer, v: Integer)\n"
               "atomicEvent C(k: Integer, v: Integer)\n")


def _vepl_atom(pick: Pick, keyed: bool) -> str:
    t = pick(TYPES)
    k = "x" if keyed else "_"
    filt = pick(["", "", f" where v > {pick([0, 1, 2])}", f" where v < {pick([1, 2, 3])}"])
    return f"{t}({k}, _){filt}"


def random_vepl(pick: Pick) -> str:
    """A VEPL module (cepflow syntax, 000's algebra): one pattern under chronicle, immediate
    or strict over the same three event types — followed-by, ``OR``, ``AND``, ``{2}``,
    ``{+}``, ``NOT`` in a gap, a window or holds-for — and a rule on it."""
    keyed = pick([True, True, False])
    n = pick([1, 2, 2, 3])
    items: list[str] = []
    for i in range(n):
        form = pick(["atom", "atom", "or", "and", "mult", "plus"] if i else
                    ["atom", "atom", "or", "plus"])
        a = _vepl_atom(pick, keyed)
        if form == "or":
            a = f"({a} OR {_vepl_atom(pick, keyed)})"
        elif form == "and":
            a = f"({a} AND {_vepl_atom(pick, keyed)})"
        elif form == "mult":
            a = f"({a}){{2}}"
        elif form == "plus" and i < n - 1:
            a = f"({a}){{+}}"
        if i and pick([False, False, True]):
            items.append(f"NOT {pick(TYPES)}({'x' if keyed else '_'}, _)")
        items.append(a)
    body = " -> ".join(items)
    wrap = pick([None, None, "within", "holds"])
    if wrap == "within" or (n == 1 and wrap is None and pick([False, True])):
        tail = ""
        if pick([False, True, False]):
            tail = f" -> NOT {pick(TYPES)}({'x' if keyed else '_'}, _)"
        body = f"({body}{tail})[{pick([1000, 2000])}]"
    elif wrap == "holds" and n > 1:
        body = f"({body}) holds-for {pick([500, 1500])}"
    context = pick(["chronicle", "immediate", "strict"])
    params = "(x: Integer)" if keyed else ""
    return (VEPL_SCHEMA + f"complexEvent P{params} {{\n  as {body}\n  context {context}\n}}\n"
            "rule fired on P action record\n")


def random_stream(pick: Pick, length: int) -> list[Event]:
    """``length`` events of types A, B, C with small keys and values, time steps of 0 to 1.5 s
    (ties and events exactly on window deadlines happen often)."""
    out, ts = [], 0
    for _ in range(length):
        ts += pick([0, 500, 1000, 1000, 1500])
        out.append(Event(pick(TYPES), (pick([0, 1, 2]), pick([0, 1, 2, 3])), ts))
    return out


def seeded(seed: int) -> Pick:
    rng = random.Random(seed)
    return lambda options: options[rng.randrange(len(options))]
