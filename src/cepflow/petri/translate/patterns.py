"""One subnet per complex-event pattern (seed 004 §III.B.1), from the automaton the engine runs.

Every resting state ``q`` of the pattern's automaton (000 §5, Glushkov: one state per event
occurrence) becomes a place ``P.q<k>`` whose tokens are the *runs* of the pattern's instances
waiting there (the engine's threads), coloured
``(i, m, l, lt, evs, <zone starts>, <variables>)``: the instance, the number of the last event
that offered itself to the run (its mark), the number and time of the last event it took, the
events it took, when it entered each timed zone it is in, and the values it bound. Per state
and event type one *step* transition takes the event being processed (read from the pattern's
inbox place ``P.T``, 004's replicated event place) along every edge of the state whose
unification and filter it passes (the guard) and whose window it keeps (the arc conditions).
Around them:

* ``P.start.T`` begins an instance (004's ``next_A``); the start policy of ``every`` decides
  when: *spawn* (``every a = A -> …``) at every event that can begin one, *restart*
  (``every (…)``) and *once* (no ``every``) only when no instance is alive and none took the
  event — ``P.took`` and the ``P.busy`` transitions record that — and *once* only one
  instance (``P.done``, 004's ``out_seqn`` in Fig. 5.a: Esper's pattern without ``every`` is
  over when its instance matched or turned permanently false); ``every`` inside a pattern
  (``A -> every B``) forks: ``P.spawn`` makes each forked run an instance of its own;
* ``P.q<k>.not.T`` ends a run that meets an event its ``not`` forbids;
* ``P.q<k>.expire.z<j>`` ends a run whose ``timer:within`` deadline passed (and
  ``accept`` completes one at its deadline: ``A -> (timer:interval(Δ) and not B)``);
* completed runs go to ``P.final``; ``P.choose`` keeps the preferred of two runs of one
  instance, ``P.kill.q<k>`` ends the instance's other runs and ``P.dedupe.q<k>`` merges runs
  that coincide (only for automata whose instances can have several runs: ``or``, ``and``);
* ``P.emit`` outputs the complex event (``P`` — 004's complex-event place) in the engine's
  order (``P.pick`` / ``P.lower`` choose the instance whose output comes first) and queues it
  for the patterns and statements that read it.

Esper's semantics (docs/esper.md) are those of the engine's ``esper`` context. Under VEPL's
contexts (chronicle, immediate, strict: 000 §4.4) the oldest partial match that can take the
event takes it (``P.arm`` / ``P.offer`` / ``P.drop``), a step wins over a ``not``, a forbidden
event moves a run that may go on with the operand before the NOT to a restricted copy, and
under immediate and strict an event that contributes to nothing disposes of every partial
match (``P.noise``). Constructs outside what this module translates are reported
(:meth:`PatternNet.check`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from cepflow.automaton.automaton import (
    FINAL,
    INITIAL,
    SIDE_ANCHOR,
    SIDE_DONE,
    TIMER,
    Automaton,
    Edge,
    Position,
    alternative_states,
)
from cepflow.automaton.automaton import TRAP as TRAP_STATE
from cepflow.compiler.esper import EsperPlan, lower
from cepflow.language import ast
from cepflow.language.walk import rewrite
from cepflow.petri.colours import ANY, INT, UNIT, ColourSet, list_of
from cepflow.petri.translate.net_builder import (
    BUSY,
    CHOOSE,
    CLEAR,
    EMIT,
    EVS,
    KEY,
    KILL,
    LOWER,
    START,
    STEP,
    TIME,
    TPICK,
    TRAP,
    Builder,
    Problem,
    and_,
    binop,
    call,
    const,
    field_set,
    name,
    not_,
    or_,
    tup,
)

#: which operands of an or's product took each of its events (a bit mask per event)
TRACK = list_of("TRACK", INT)

#: "no instance" in P.oldest: larger than every instance number
NONE = 1 << 62


class PatternNet:
    """The subnet of one pattern: ``index`` orders it among the program's components (the
    engine's matcher order, which orders outputs at one instant)."""

    def __init__(self, b: Builder, auto: Automaton, index: int) -> None:
        self.b = b
        self.auto = auto
        self.index = index
        self.name = auto.name
        decl = next(d for d in b.program.module.decls
                    if isinstance(d, ast.ComplexEventDecl) and d.name == auto.name)
        self.decl = decl
        self.plan: EsperPlan | None = None
        self.select: tuple[tuple[str, ast.Expr], ...] | None = None
        if auto.context == "esper":
            lowered, self.plan = lower(decl, b.program.schemas)
            self.select = lowered.select
        self.edges: list[tuple[int, Edge]] = [
            (s, e) for s, m in auto.edges.items() for es in m.values() for e in es]
        self.states = sorted({s for s, _ in self.edges if s != INITIAL}
                             | {e.target for _, e in self.edges if e.target != FINAL})
        self.zone = {z.id: z for z in auto.zones}
        self.pos_zones = {p.id: p.zones for p in auto.positions}
        self.out_degree = {s: sum(len(es) for es in m.values()) for s, m in auto.edges.items()}
        # (states of an or's alternatives: no run stays there, runtime.compiled)
        self.alternatives = alternative_states(auto)
        #: the synthetic event type of the pattern's clock (no input event has it)
        self.clock_types = {auto.clock.type} if auto.clock is not None else set()

    # -- what is translated ---------------------------------------------------------------
    def check(self) -> list[Problem]:
        """Constructs this translation does not cover, located (never translated wrongly)."""
        a, out = self.auto, []

        def bad(construct: str, reason: str, loc: ast.Loc = None) -> None:
            out.append(Problem(a.name, construct, reason, loc or self.decl.loc))

        if a.context == "unrestricted":
            bad("context unrestricted", "a partial match that also skips every event it takes "
                "is not translated (chronicle, immediate, strict and esper are)")
            return out
        if a.clock is not None and (why := self._clock_refusal()):
            bad("a pattern that starts at the statement's start", why)
        if any(z.whole for z in a.zones) and (a.start not in ("once", "restart", "spawn")
                                              or a.respawn):
            bad("a guard around a pattern with every inside", "(EPL) a guard that ends every "
                f"instance a time after the statement's start under start policy '{a.start}'"
                " is not translated yet")
        for p in a.positions:
            if p.type == TIMER:
                bad("timer:interval in the middle of a pattern", "an interval whose end "
                    "begins the rest (A -> timer:interval(Δ) -> B) is not translated yet",
                    p.loc)
        if a.reports:
            bad("'X or not Y' after an event", "an instance that reports at once and goes on "
                "waiting for X (Esper's or with a not) is not translated yet")
        if a.limits:
            bad("-[n]> after every", "a followed-by that starts no right-hand side while n "
                "are under way (Esper's followed-by maximum) is not translated yet")
        for p in a.positions:
            if p.most is not None:
                bad("timer:withinmax counting results", "a guard that passes at most n "
                    "results of its every and ends it at the next is not translated yet",
                    p.loc)
        if a.partition_by:
            bad("partition by", "not translated yet")
        if a.start == "group":
            bad("every (…) -> …", "a group that restarts and begins an instance of the rest "
                "at each completion is not translated yet")
        loop = next((p for p in a.positions if p.loop_in), None)
        if loop is not None:
            bad("every (…) inside a pattern", "a group that each run restarts from where it "
                "began at each completion (A -> every (B -> C)) is not translated yet", loop.loc)
        for p in a.positions:
            if p.collect is not None:
                bad(f"tag '{p.collect.alias}' inside a repetition", "tags that collect arrays "
                    "are not translated yet", p.loc)
        if a.distinct and any(len(es) > 1 for es in a.edges.get(INITIAL, {}).values()):
            bad("every-distinct", "every-distinct over alternatives that begin with the same "
                "event type is not translated")
        self._check_ors(bad)
        maybe, sure = self._variables()
        for s, e in self.edges:
            for _, v in e.position.binds:
                if v in maybe[s] and v not in sure[s]:
                    bad(f"variable {v}", "it is bound on some paths into its state and "
                        "unified there: the translation needs it bound on all paths or none",
                        e.position.loc)
        return out

    def _clock_refusal(self) -> str | None:
        """Why the pattern's clock (a pattern that starts at the statement's start:
        compiler.esper's zero interval, a leading timer:interval) is not translated, or None
        when the net models it (:meth:`clock`)."""
        a = self.auto
        clock = a.clock
        assert clock is not None
        if clock.schedule is not None:
            return "timer:at at its start is not translated yet"
        if clock.forbids:
            return ("an interval at its start that an event ends early (timer:interval(Δ) "
                    "and not C) is not translated yet")
        if a.start not in ("once", "restart") or a.final or a.context != "esper":
            return (f"a clock under start policy '{a.start}'" + (" (every (G) and not N)"
                    if a.final else "") + " is not translated yet (once and every (…) are)")
        if any(e.target == FINAL for es in a.edges.get(INITIAL, {}).values() for e in es):
            return "a pattern that completes at its clock is not translated yet"
        if a.start == "restart" and any(z.whole or z.after for z in a.zones):
            return ("every (…) around a guarded pattern that starts at the statement's start, "
                    "under a guard at the top or after a step, is not translated yet")
        return None

    def _check_ors(self, bad: Callable[..., None]) -> None:
        """Esper's or where the engine follows EvalOrStateNode beyond what the net models (the
        net keeps the first-written of an or's single events, Position.alt): refused only
        where the answer can depend on it (docs/petri.md)."""
        each = next((p for p in self.auto.positions if p.each), None)
        if each is not None and (self.plan is None or self.plan.start != "spawn"
                                 or self.auto.distinct):
            bad("'every X or every Y' that one event can both fit", "an instance per every "
                "operand the event fits is translated where the pattern begins an instance "
                "at every event (spawn), without every-distinct", each.loc)
        # an or run beside whose alternatives complete both the pattern and a run that goes
        # on: the net ranks completions of each kind apart (P.side…final, P.side…q<k>)
        ends: dict[int, set[bool]] = {}
        for _, e in self.edges:
            side = e.position.side
            if side is not None and side[2] & SIDE_DONE:
                ends.setdefault(side[0], set()).add(e.target == FINAL)
        if any(len(kinds) > 1 for kinds in ends.values()):
            bad("an or of an and (or a guarded operand) that both ends the pattern and goes "
                "on", "its completions of the two kinds are not ranked against each other")

    def _variables(self) -> tuple[dict[int, set[str]], dict[int, set[str]]]:
        """Variables bound on some / every path into each state (FINAL: the completions)."""
        maybe: dict[int, set[str]] = {INITIAL: set()}
        changed = True
        while changed:
            changed = False
            for s, e in self.edges:
                new = maybe.get(s, set()) | {v for _, v in e.position.binds}
                old = maybe.setdefault(e.target, set())
                if not new <= old:
                    old |= new
                    changed = True
        for copy, src in self.auto.restricted.items():  # a copy binds what its state did
            maybe[copy] = maybe.setdefault(src, set())
        sure: dict[int, set[str]] = {s: set(v) for s, v in maybe.items()}
        sure[INITIAL] = set()
        changed = True
        while changed:
            changed = False
            for t in list(sure):
                if t == INITIAL or t in self.auto.restricted:
                    continue
                inc = [sure.get(s, set()) | {v for _, v in e.position.binds}
                       for s, e in self.edges if e.target == t]
                new = set.intersection(*inc) if inc else set()
                if new != sure[t]:
                    sure[t] = new
                    changed = True
            for copy, src in self.auto.restricted.items():
                sure[copy] = sure.get(src, set())
        return maybe, sure

    # -- building -------------------------------------------------------------------------
    def build(self) -> None:
        b, a = self.b, self.auto
        P = self.name
        self.page = P
        maybe, self.sure = self._variables()
        order: list[str] = []
        types: dict[str, ColourSet] = {}
        for pos in a.positions:
            if pos.type in self.clock_types:
                continue
            schema = b.schema(pos.type)
            for i, v in pos.binds:
                if v not in types:
                    order.append(v)
                    types[v] = field_set(schema.params[i].type)
                elif types[v] != field_set(schema.params[i].type):
                    types[v] = ANY
        self.var_order = order
        self.var_types = types
        self.vars = {s: [v for v in order if v in maybe.get(s, set())] for s in self.states}
        # (a run also completes when a window it waits in closes: a trailing not, or
        # timer:interval at the end)
        done = set(maybe.get(FINAL, set()))
        for z in a.zones:
            for s in z.timer_accept:
                done |= maybe.get(s, set())
        self.final_vars = [v for v in order if v in done]
        # variable names in the net: the program's own (a1.k), renamed if a field is so named
        read = {f for t in self.types_read() for f in b.schema(t).param_names}
        self.vn = {v: (v if v not in read else b.var(f"{v}_v")) for v in order}
        # Esper's or of longer operands (a product, Position.track): its runs carry the track,
        # which operands took each of the product's events (a bit mask per event), until the
        # step that completes an operand (Position.settle) keeps that operand's events only
        for _, e in self.edges:
            tr = e.position.track
            if tr is None or e.position.settle is not None or e.target == FINAL:
                continue
            if tr not in self.vn:
                self.vn[tr] = b.var("track" + tr.removeprefix("_or"))
                self.var_types[tr] = TRACK
            if tr not in self.vars[e.target]:
                self.vars[e.target].append(tr)
        self.sides()
        self.ctl = {k: b.var(k) for k in ("s", "n", "t", "kd", "key", "i", "m", "l", "lt",
                                            "evs", "x", "c", "d", "nts", "cand", "f", "st",
                                            "evs2", "i2", "m2", "l2", "lt2", "t2", "key2")}
        self.multi = any(len(es) > 1 for m in a.edges.values() for es in m.values()) or any(
            d > 1 for s, d in self.out_degree.items() if s != INITIAL) or any(
            p.every for p in a.positions)
        self.forking = any(p.every for p in a.positions)
        #: how instances begin: Esper's start policy, or a VEPL context (000 §4.4)
        self.esper = a.context == "esper"
        self.policy = self.plan.start if self.plan is not None else a.context
        self.single_instance = self.policy in ("restart", "once", "strict")
        net = b.net
        for s in self.states:
            net.place(self.place(s), self.thread_set(s), "state", P,
                      f"runs of {P} waiting in state q{s}")
        net.place(f"{P}.next", INT, "control", P, "the next instance number")
        net.mark(f"{P}.next", 1)
        self.final_set = b.colour_set(f"FIN_{P}", [
            ("i", INT), ("key", KEY), ("t", TIME), ("evs", EVS),
            *((v, self.var_types[v]) for v in self.final_vars)])
        net.place(f"{P}.final", self.final_set, "control", P, "completed runs")
        net.place(f"{P}.took", INT, "control", P,
                  "the last event that began an instance" + (
                      ", or that one took or was alive at" if self.single_instance else ""))
        net.mark(f"{P}.took", 0)
        if self.plan is not None and self.plan.start == "once":
            net.place(f"{P}.done", INT, "control", P, "1 once the pattern's one instance "
                      "began (no instance begins then: 004 Fig. 5.a's out_seqn)")
            net.mark(f"{P}.done", 0)
        if self.policy in ("immediate", "strict"):
            net.place(f"{P}.began", INT, "control", P, "the last event that began an instance")
            net.mark(f"{P}.began", 0)
        if a.distinct:
            self.key_set = b.colour_set(f"SEEN_{P}", [
                *((f"k{j}", ANY) for j in range(len(a.distinct))), ("t0", TIME)])
            net.place(f"{P}.seen", self.key_set, "control", P, "every-distinct keys seen")
        for t in self.types_read():
            self.b.subscribe(t, f"{P}.{t}", P)
        if not self.esper:
            self.oldest()
        for s in self.states:
            for t in sorted(a.edges.get(s, {})):
                self.step(s, t)
            for t in sorted(a.forbids.get(s, {})):
                self.trap(s, t)
        for t in sorted(a.edges.get(INITIAL, {})):
            if t not in self.clock_types:
                self.start(t)
        if a.clock is not None:
            self.clock()
        if self.policy in ("immediate", "strict"):
            self.noise()
        self.timers()
        if self.side_targets:
            self.side_quits()
        if self.multi:
            self.choose()
            for s in self.states:
                self.kill(s)
                self.dedupe(s)
        self.emit()

    def sides(self) -> None:
        """Esper's ors run as alternatives beside each other (Position.side: an or with an
        and or a guarded operand). The steps completing an alternative (SIDE_DONE) rank the
        run they make by when the filter that took the event started (runtime.compiled
        ``side_done``, Matcher._sides): at the alternative's start or with its and (fresh),
        ``(0, nil, k)``; else ``(1, its events latest first, k)`` — ``k`` the alternative. The
        rank is a hidden variable ``_side<g>`` of the runs where the alternatives complete
        (and of completed runs when the or ends the pattern): ``P.side.g<g>…`` keeps the
        lesser of two completions of one instance at one event, ``P.quit.g<g>…`` ends the
        instance's runs still in the or's other states (the or quits its alternatives)."""
        a = self.auto
        anchors = {p.id for p in a.positions if p.side and p.side[2] & SIDE_ANCHOR}
        #: (source, type, target) -> (or, alternative, fresh): as the engine keys them
        self.side_done: dict[tuple[int, str, int], tuple[int, int, bool]] = {
            (s, e.position.type, e.target): (side[0], side[1], s in anchors or e.position.fresh)
            for s, e in self.edges
            if (side := e.position.side) is not None and side[2] & SIDE_DONE}
        self.side_anchors = anchors
        self.side_states: dict[int, set[int]] = {}
        for p in a.positions:
            if p.side is not None:
                self.side_states.setdefault(p.side[0], set()).add(p.id)
        self.side_targets: dict[int, set[int]] = {}
        self.side_vars: set[str] = set()
        for (_, _, tgt), (g, _, _) in self.side_done.items():
            v = f"_side{g}"
            if v not in self.vn:
                self.vn[v] = self.b.var(f"rank{g}")
                self.var_types[v] = ANY
                self.side_vars.add(v)
            self.side_targets.setdefault(g, set()).add(tgt)
            if tgt == FINAL:
                if v not in self.final_vars:
                    self.final_vars.append(v)
            elif v not in self.vars[tgt]:
                self.vars[tgt].append(v)

    def side_rank(self, e: Edge, src: int) -> tuple[str, ast.Expr] | None:
        """The rank variable and value of the run a step completing an alternative makes."""
        side = self.side_done.get((src, e.position.type, e.target))
        if side is None:
            return None
        g, k, fresh = side
        evs = call("nil") if fresh or src == INITIAL else call("rev", name(self.ctl["evs"]))
        return f"_side{g}", tup(const(0 if fresh else 1), evs, const(k))

    def side_quits(self) -> None:
        """``P.side.g<g>.q<a>.q<b>`` (two runs of one instance completed the or's alternatives
        at one event: the lesser rank stays; ``final`` for completions of the pattern) and
        ``P.quit.g<g>.q<k>.q<d>`` (an instance that completed the or at this event ends its
        runs in the or's other states, but for one that entered the or with the event)."""
        b, c, P = self.b, self.ctl, self.name
        for g, targets in sorted(self.side_targets.items()):
            rank = f"_side{g}"
            done = sorted(t for t in targets if t != FINAL)
            for d1 in done:
                for d2 in done:
                    tn = f"{P}.side.g{g}.q{d1}.q{d2}"
                    one = self.thread_terms(d1)
                    two = self.other_run_terms(d2)
                    r1, r2 = self.term_of(d1, one, rank), self.term_of(d2, two, rank)
                    better = or_(binop("<", r1, r2), and_(binop("==", r1, r2), call(
                        "older", name(c["evs"]), call("nil"), name(c["evs2"]), call("nil"))))
                    b.net.transition(tn, and_(binop("==", name(c["l"]), name(c["l2"])),
                                              better), BUSY, P,
                                     f"two runs completed the or's alternatives: q{d1}'s "
                                     "reported first")
                    b.arc(self.place(d1), tn, "read", one)
                    b.arc(self.place(d2), tn, "in", two)
            if FINAL in targets:
                tn = f"{P}.side.g{g}.final"
                one = [name(c["i"]), name(c["key"]), name(c["t"]), name(c["evs"]),
                       *(name(self.vn[v]) for v in self.final_vars)]
                two = [name(c["i"]), name(c["key2"]), name(c["t2"]), name(c["evs2"]),
                       *(name(self.vn[v] + "_2") for v in self.final_vars)]
                r1, r2 = name(self.vn[rank]), name(self.vn[rank] + "_2")
                b.net.transition(tn, and_(binop("!=", r1, const(None)),
                                          binop("!=", r2, const(None)), binop("<", r1, r2)),
                                 BUSY, P, "two runs completed the or's alternatives: the "
                                 "one that reported first stays")
                b.arc(f"{P}.final", tn, "read", one)
                b.arc(f"{P}.final", tn, "in", two)
            for q in sorted(self.side_states.get(g, set()) - targets):
                if q not in self.states:
                    continue
                for d in done:
                    tn = f"{P}.quit.g{g}.q{q}.q{d}"
                    t = next(p.type for p in self.auto.positions if p.id == d)
                    entered = None
                    if q in self.side_anchors:  # (a run that entered the or with the event)
                        entered = binop("==", name(c["l"]), name(c["s"]))
                    b.net.transition(tn, and_(binop("==", name(c["l2"]), name(c["s"])),
                                              not_(entered) if entered is not None else None),
                                     BUSY, P, f"the or completed: its run in q{q} ends")
                    b.arc(self.inbox(t), tn, "read", self.inbox_terms(t))
                    b.arc(self.place(d), tn, "read", self.other_run_terms(d))
                    b.arc(self.place(q), tn, "in", self.thread_terms(q))

    def other_run_terms(self, s: int) -> list[ast.Expr]:
        """The input pattern of a second run of the same instance at ``s``: every part but
        the instance named apart (``…2``)."""
        c = self.ctl
        return [name(c["i"]), name(c["m2"]), name(c["l2"]), name(c["lt2"]), name(c["evs2"]),
                *(name(self.zvar(z) + "_2") for z in self.zones_of(s)),
                *(name(self.vn[v] + "_2") for v in self.vars[s])]

    def term_of(self, s: int, terms: list[ast.Expr], v: str) -> ast.Expr:
        """The term of variable ``v`` in a run pattern of state ``s``."""
        return terms[5 + len(self.zones_of(s)) + self.vars[s].index(v)]

    def types_read(self) -> list[str]:
        """The event types this pattern reads (its edges' and its nots'); under immediate
        and strict also every input event type, any of which may be noise to it."""
        a = self.auto
        out = ({t for m in a.edges.values() for t in m} | {
            t for m in a.forbids.values() for t in m}) - self.clock_types
        if a.context in ("immediate", "strict"):
            out |= self.b.input_types
        return sorted(out)

    # -- names and colours ----------------------------------------------------------------
    def place(self, s: int) -> str:
        return f"{self.name}.q{s}"

    def zones_of(self, s: int) -> tuple[int, ...]:
        s = self.auto.restricted.get(s, s)  # (a restricted copy is in its state's windows)
        return tuple(sorted(self.pos_zones.get(s, ())))

    def zvar(self, z: int) -> str:
        return self.b.var(f"z{z}")

    def thread_set(self, s: int) -> ColourSet:
        return self.b.colour_set(f"RUN_{self.name}_q{s}", [
            ("i", INT), ("m", INT), ("l", INT), ("lt", TIME), ("evs", EVS),
            *((f"z{z}", TIME) for z in self.zones_of(s)),
            *((v, self.var_types[v]) for v in self.vars[s])])

    def thread_terms(self, s: int, suffix: str = "") -> list[ast.Expr]:
        """The input pattern of a run at ``s`` (``suffix`` renames the control parts, for a
        second run of the same state)."""
        c = self.ctl
        head = [c["i"], c["m"], c["l"], c["lt"], c["evs"]]
        if suffix:
            head = [c["i"], c["m2"], c["l2"], c["lt2"], c["evs2"]]
        return [*(name(x) for x in head), *(name(self.zvar(z)) for z in self.zones_of(s)),
                *(name(self.vn[v]) for v in self.vars[s])]

    def inbox(self, t: str) -> str:
        return f"{self.name}.{t}"

    def inbox_terms(self, t: str) -> list[ast.Expr]:
        c = self.ctl
        return [name(c["s"]), name(c["n"]), name(c["t"]), name(c["kd"]), name(c["key"]),
                *(name(f) for f in self.b.schema(t).param_names)]

    # -- expressions ----------------------------------------------------------------------
    def expr(self, e: ast.Expr, pos_type: str | None, bound: Iterable[str]) -> ast.Expr:
        """A filter or select expression over the net's variables: a bare name is the event's
        field when ``pos_type`` has it (cepflow's evaluator reads fields first), else a
        pattern variable; a variable no run binds reads null; ``@ts`` is the match time."""
        fields = set(self.b.schema(pos_type).param_names) if pos_type else set()
        bound = set(bound)

        def fn(n: ast.Expr) -> ast.Expr | None:
            if not isinstance(n, ast.Name):
                return None
            if not n.path and n.name in fields:
                return ast.Name(n.name, (), n.loc)
            if not n.path and n.name == "@ts":
                return name(self.ctl["t"])
            v = ".".join((n.name, *n.path))
            if v in bound:
                return name(self.vn[v])
            return const(None)

        return rewrite(e, fn)

    def binds(self, pos: Position, src: int) -> tuple[list[ast.Expr], dict[str, ast.Expr]]:
        """Unification of ``pos`` with the event (Algorithm 1): the equalities to test and
        the values of the variables it binds anew."""
        fields = self.b.schema(pos.type).param_names
        tests: list[ast.Expr] = []
        new: dict[str, ast.Expr] = {}
        known = self.sure.get(src, set()) if src != INITIAL else set()
        for i, v in pos.binds:
            f = name(fields[i])
            if v in known:
                tests.append(binop("==", f, name(self.vn[v])))
            elif v in new:
                tests.append(binop("==", f, new[v]))
            else:
                new[v] = f
        return tests, new

    def passes(self, pos: Position, src: int) -> ast.Expr | None:
        """The event passes ``pos``'s unification and filter (None: always)."""
        tests, _ = self.binds(pos, src)
        bound = set(self.vars.get(src, [])) if src != INITIAL else set()
        flt = self.expr(pos.where, pos.type, bound) if pos.where is not None else None
        return and_(*tests, flt)

    def zone_ok(self, e: Edge, src: int) -> ast.Expr | None:
        """The timed zones the step leaves and crosses hold (runtime.matcher._zones; Esper's
        windows exclude their end: a span of exactly Δ breaks them)."""
        t, lt = name(self.ctl["t"]), name(self.ctl["lt"])
        have = set(self.zones_of(src)) if src != INITIAL else set()
        fails: list[ast.Expr] = []

        def exceeded(span: ast.Expr, z: int) -> ast.Expr:
            zone = self.zone[z]
            op = ">=" if zone.open_end else ">"
            return binop(op, span, const(zone.length))

        for z in e.exits:
            zone = self.zone[z]
            if z in have:
                inside_now = e.final and z in e.position.zones and z not in e.enters
                out = t if inside_now else lt
                span: ast.Expr = binop("-", out, self.zone_start(z))
            elif zone.whole:  # (entered at the statement's start, left now)
                span = binop("-", t, self.zone_start(z))
            else:  # entered and left at once: span 0
                span = const(0)
            if zone.kind == "holds_for":
                fails.append(binop("<", span, const(zone.length)))
            else:
                fails.append(exceeded(span, z))
        if e.target != FINAL:
            # (a whole zone is entered at the statement's start: checked as it is entered)
            entered = {z for z in e.enters if self.zone[z].whole}
            for z in sorted((have - set(e.exits)) | entered):
                zone = self.zone[z]
                if (z not in e.enters or zone.whole) and zone.kind == "within":
                    fails.append(exceeded(binop("-", t, self.zone_start(z)), z))
        if not fails:
            return None
        return not_(or_(*fails))

    def run_out(self, e: Edge, src: int, inst: ast.Expr, evs: ast.Expr
                ) -> list[ast.Expr]:
        """The colour of the run after ``e`` took the event (a run at ``e.target``)."""
        c = self.ctl
        tgt = e.target
        evs, vals = self.carry(e, src, evs, self.vars[tgt])
        head: list[ast.Expr] = [inst, name(c["s"]), name(c["s"]), name(c["t"]), evs]
        have = set(self.zones_of(src)) if src != INITIAL else set()
        for z in self.zones_of(tgt):
            head.append(self.zone_start(z) if self.zone[z].whole else name(c["t"])
                        if z in e.enters or z not in have else name(self.zvar(z)))
        return [*head, *vals]

    def zone_start(self, z: int) -> ast.Expr:
        """When a run entered zone ``z``: its own record, or for Esper's guard at the top of
        the pattern (Zone.whole) the statement's start, whatever event it entered with
        (Matcher._origin)."""
        if self.zone[z].whole:
            return const(float(self.b.start or 0))
        return name(self.zvar(z))

    def over(self, t: ast.Expr) -> ast.Expr | None:
        """Has Esper's guard at the top of the pattern ended by ``t`` (the shortest
        Zone.whole passed: Matcher.quit)? Then no instance begins and no clock starts."""
        whole = [z for z in self.auto.zones if z.whole]
        if not whole:
            return None
        zone = min(whole, key=lambda z: z.length)
        return binop(">=" if zone.open_end else ">", binop("-", t, self.zone_start(zone.id)),
                     const(zone.length))

    def final_out(self, e: Edge | None, src: int, inst: ast.Expr, key: ast.Expr,
                  time: ast.Expr, evs: ast.Expr) -> list[ast.Expr]:
        """A completed run: (i, key, t, evs, variables)."""
        if e is None:  # (a window closed: the run as it is)
            src_vars = set(self.vars.get(src, [])) if src != INITIAL else set()
            return [inst, key, time, evs, *(name(self.vn[v]) if v in src_vars else const(None)
                                            for v in self.final_vars)]
        evs, vals = self.carry(e, src, evs, self.final_vars)
        return [inst, key, time, evs, *vals]

    def carry(self, e: Edge, src: int, evs: ast.Expr, out_vars: list[str]
              ) -> tuple[ast.Expr, list[ast.Expr]]:
        """The events and the values of ``out_vars`` after ``e`` took the event from ``src``:
        what it binds anew, what the run had, null otherwise — and on a step of Esper's or
        product (Position.track) the track extended by the operands the step moves; on one
        that completes an operand (Position.settle) only that operand's events of the
        product, and the tags the other operands bound null (runtime.matcher._or_step)."""
        pos = e.position
        _, new = self.binds(pos, src)
        src_vars = set(self.vars.get(src, [])) if src != INITIAL else set()
        track: ast.Expr | None = None
        dropped: dict[str, ast.Expr] = {}
        if pos.track is not None:
            assert pos.conj is not None
            before = name(self.vn[pos.track]) if pos.track in src_vars else call("nil")
            track = call("append", before, const(sum(1 << i for i in pos.conj[1])))
            if pos.settle is not None:
                if pos.ties:  # several operands complete: the first to report wins
                    ops: ast.Expr = call("nil")
                    for i, _ in pos.ties:
                        ops = call("append", ops, const(i))
                    done: ast.Expr = call("first_done", track, ops)
                    for i, drop in pos.ties:
                        for v in drop:
                            is_i = binop("==", done, const(i))
                            dropped[v] = or_(dropped[v], is_i) if v in dropped else is_i
                else:
                    done = const(pos.settle[0])
                    dropped = {v: const(True) for v in pos.settle[1]}
                evs = call("settled", evs, track, done)
        ranked = self.side_rank(e, src)
        vals: list[ast.Expr] = []
        for v in out_vars:
            if v in self.side_vars:  # (a hidden rank: set where an alternative completes)
                vals.append(ranked[1] if ranked is not None and ranked[0] == v
                            else name(self.vn[v]) if v in src_vars else const(None))
                continue
            if v == pos.track and pos.settle is None and track is not None:
                vals.append(track)
                continue
            val = new[v] if v in new else name(self.vn[v]) if v in src_vars else const(None)
            gone = dropped.get(v)
            if gone is not None:
                val = const(None) if gone == const(True) else call("cond", gone, const(None),
                                                                     val)
            vals.append(val)
        return evs, vals

    def key_expr(self, parent: ast.Expr | None = None, inst: ast.Expr | None = None
                 ) -> ast.Expr:
        """The queue key of a completion: instance ``i``'s own (or ``inst``'s) is ordered at
        ``(i, 0)``, one of an instance that ``parent`` forked (Esper's inner every) at
        ``(parent, i)``: after the parent's own, as the engine outputs them."""
        c = self.ctl
        i = inst if inst is not None else name(c["i"])
        local = tup(i, const(0)) if parent is None else tup(parent, i)
        return call("qkey", name(c["kd"]), name(c["key"]), name(c["s"]), const(self.index),
                    local)

    def evs_after(self, base: ast.Expr) -> ast.Expr:
        c = self.ctl
        return call("append", base, tup(name(c["t"]), name(c["kd"]), name(c["n"])))

    def forbidden(self, s: int, t: str) -> ast.Expr | None:
        fbs = self.auto.forbids.get(s, {}).get(t, [])
        if not fbs:
            return None
        return or_(*(self.passes(f.position, s) or const(True) for f in fbs))

    # -- transitions ----------------------------------------------------------------------
    def moves(self, s: int, t: str, edges: list[Edge], tname: str, inst: ast.Expr,
              evs_base: ast.Expr) -> tuple[list[ast.Expr], dict[int, ast.Expr | None]]:
        """Guard parts and, per edge, the condition of its output arc for a step of the run
        at ``s`` (INITIAL: a start) by an event of type ``t`` (runtime.matcher._try_edges)."""
        b = self.b
        passes = [self.passes(e.position, s) for e in edges]
        zoks = [self.zone_ok(e, s) for e in edges]
        forks = [k for k, e in enumerate(edges) if e.position.every and s != INITIAL]
        if len(edges) == 1 and (s == INITIAL or self.out_degree[s] == 1 or not self.esper
                                or s in self.alternatives) \
                and edges[0].position.conj is None and not forks:
            return [p for p in [passes[0]] if p is not None], {0: zoks[0]}
        guard: list[ast.Expr] = []
        pv: list[ast.Expr] = []
        for k, p in enumerate(passes):
            v = b.var(f"p{k + 1}")
            guard.append(binop("==", name(v), p if p is not None else const(True)))
            pv.append(name(v))
        guard.append(or_(*pv))
        steps = [and_(pv[k], zoks[k]) or pv[k] for k in range(len(edges))]
        conds: dict[int, ast.Expr | None] = {}
        for k, e in enumerate(edges):
            sel: list[ast.Expr] = []
            if e.position.conj is not None:
                cid, moved = e.position.conj
                for k2, e2 in enumerate(edges):
                    if (e2.position.conj is not None and e2.position.conj[0] == cid
                            and moved < e2.position.conj[1]):
                        sel.append(not_(steps[k2]))
            if e.position.alt:  # (of an or's alternatives that fit, the one written first)
                lower = [steps[k2] for k2, e2 in enumerate(edges)
                         if e2.position.alt == e.position.alt and e2.position.id < e.position.id]
                if lower:
                    sel.append(not_(or_(*lower)))
            if e.position.until and not e.position.until_end:  # (an until's end that fits
                ends = [steps[k2] for k2, e2 in enumerate(edges)  # takes the event alone:
                        if e2.position.until == e.position.until  # Matcher._try_edges)
                        and e2.position.until_end]
                if ends:
                    sel.append(not_(or_(*ends)))
            conds[k] = and_(steps[k], *sel)
        if s != INITIAL and self.esper and s not in self.alternatives:
            # the run also stays (Esper's or: another operand still waits) when an edge of
            # the state did not fire, counting an and's unfired steps only when none of its
            # steps fired (runtime.matcher._others_wait)
            unfired: ast.Expr = binop("-", const(self.out_degree[s]), _sum(pv))
            conj_degree: dict[int, int] = {}
            for m in self.auto.edges.get(s, {}).values():
                for e in m:
                    if e.position.conj is not None:
                        conj_degree[e.position.conj[0]] = conj_degree.get(
                            e.position.conj[0], 0) + 1
            for cid, kc in sorted(conj_degree.items()):
                ks = [k for k, e in enumerate(edges) if e.position.conj is not None
                      and e.position.conj[0] == cid]
                if not ks:
                    continue
                any_c = or_(*(steps[k] for k in ks))
                unfired = binop("-", unfired, binop(
                    "*", any_c, binop("-", const(kc), _sum([steps[k] for k in ks]))))
            # (an inner every's source keeps waiting whenever it forked)
            conds[-1] = or_(*(steps[k] for k in forks), binop(">", unfired, const(0)))
        return guard, conds

    def step(self, s: int, t: str) -> None:
        """``P.q<k>.T``: the run at ``s`` takes the event of type ``t``."""
        b, c, P = self.b, self.ctl, self.name
        edges = self.auto.edges[s][t]
        tn = f"{self.place(s)}.{t}"
        guard, conds = self.moves(s, t, edges, tn, name(c["i"]), name(c["evs"]))
        # Esper: an event that ends the sub-pattern ends it even when it fits the step (the
        # not starts first); VEPL: the step wins, and only the oldest taker takes the event
        fb = self.forbidden(s, t) if self.esper else None
        oldest = None if self.esper else binop("==", name(c["i"]), name(c["c"]))
        g = and_(binop("<", name(c["m"]), name(c["s"])), not_(fb) if fb is not None else None,
                 oldest, *guard)
        labels = ", ".join(e.position.label for e in edges)
        b.net.transition(tn, g, STEP, P, f"a run in q{s} takes {labels}")
        b.arc(self.inbox(t), tn, "read", self.inbox_terms(t))
        b.arc(self.place(s), tn, "in", self.thread_terms(s))
        if not self.esper:
            b.arc(f"{P}.oldest", tn, "read", [name(c["s"]), name(c["c"])])
            self.offer(s, t, edges)
        evs = self.evs_after(name(c["evs"]))
        for k, e in enumerate(edges):
            if e.position.every:  # Esper's inner every: the step begins a new instance
                fid = s * 4096 + e.position.id
                # (the key is computed when the instance has its number: a placeholder here)
                body = (self.final_out(e, s, name(c["i"]), const(0), name(c["t"]), evs)
                        if e.target == FINAL else self.run_out(e, s, name(c["i"]), evs))[1:]
                # forks come out in the engine's order: by the forking instance, then the
                # forking run's events (older first: the order of its runs), then the edge
                b.arc(f"{P}.forks", tn, "out", [
                    tup(name(c["i"]), name(c["evs"]), const(e.position.id)), const(fid),
                    name(c["i"]), tup(*body)], conds.get(k))
                self.spawn(fid, e, t, len(body))
            elif e.target == FINAL:
                b.arc(f"{P}.final", tn, "out",
                      self.final_out(e, s, name(c["i"]), self.key_expr(), name(c["t"]), evs),
                      conds.get(k))
            else:
                b.arc(self.place(e.target), tn, "out", self.run_out(e, s, name(c["i"]), evs),
                      conds.get(k))
        if -1 in conds:  # the run also stays, marked as having seen this event
            terms = self.thread_terms(s)
            terms[1] = name(c["s"])
            b.arc(self.place(s), tn, "out", terms, conds[-1])
        if self.single_instance:
            b.arc(f"{P}.took", tn, "in", [name(c["x"])])
            b.arc(f"{P}.took", tn, "out", [name(c["s"])])

    def trap(self, s: int, t: str) -> None:
        """``P.q<k>.not.T[.j]``: an event a ``not`` of the run's state forbids ends the run
        (the trap; Esper: for good) or, when the operand before the NOT may go on (an
        iteration), moves it to the restricted copy of its state that may only go on with
        that operand (docs/semantics.md); of several nots the first that fires decides."""
        b, c, P = self.b, self.ctl, self.name
        fbs = self.auto.forbids[s][t]
        passes = [self.passes(f.position, s) or const(True) for f in fbs]
        for j, f in enumerate(fbs):
            tn = f"{self.place(s)}.not.{t}" + (f".{j + 1}" if len(fbs) > 1 else "")
            earlier = [not_(p) for p in passes[:j]]
            where = "the trap" if f.target == TRAP_STATE else f"q{f.target}"
            b.net.transition(tn, and_(binop("!=", name(c["l"]), name(c["s"])), passes[j],
                                      *earlier), TRAP, P,
                             f"a forbidden {t} moves a run in q{s} to {where}")
            b.arc(self.inbox(t), tn, "read", self.inbox_terms(t))
            b.arc(self.place(s), tn, "in", self.thread_terms(s))
            if f.target != TRAP_STATE:  # (a copy has its state's colours)
                b.arc(self.place(f.target), tn, "out", self.thread_terms(s))

    def spawn(self, fid: int, e: Edge, t: str, width: int) -> None:
        """``P.spawn.<f>``: a run forked by an inner every (``A -> every B``) becomes an
        instance of its own — numbered in the engine's order (the forking instance, then the
        state and edge: ``P.forks.pick/lower``) before a new instance may begin — or, when it
        completed the pattern, a match of its own."""
        b, c, P = self.b, self.ctl, self.name
        net = b.net
        fkey, run, parent = (name(b.var(x)) for x in ("fkey", "run", "parent"))
        if f"{P}.forks" not in net.places:
            net.place(f"{P}.forks", b.colour_set("FORK", [
                ("okey", ANY), ("f", INT), ("parent", INT), ("run", ANY)]), "control", P,
                "runs an inner every forked, waiting for their instance number")
            b.net.places[f"{P}.forks"].doc += " (in order: okey)"
            self.fork_order(fkey)
        tn = f"{P}.spawn.{fid}"
        inst = name(c["i"])
        net.transition(tn, None, BUSY, P, "a forked run becomes an instance of its own")
        b.arc(f"{P}.forks", tn, "in", [fkey, const(fid), parent, run])
        b.arc(f"{P}.forks.first", tn, "in", [fkey])
        b.arc(f"{P}.forks.idle", tn, "out", [call("unit")])
        b.arc(f"{P}.next", tn, "in", [inst])
        b.arc(f"{P}.next", tn, "out", [binop("+", inst, const(1))])
        parts = [call("nth", run, const(j)) for j in range(width)]
        if e.target == FINAL:  # a match of its own, output after its parent's
            b.arc(self.inbox(t), tn, "read", self.inbox_terms(t))
            parts[0] = self.key_expr(parent)
            b.arc(f"{P}.final", tn, "out", [inst, *parts])
        else:
            b.arc(self.place(e.target), tn, "out", [inst, *parts])

    def fork_order(self, fkey: ast.Expr) -> None:
        """``P.forks.pick/lower``: the forks of an event get their numbers smallest key
        first (the ordering of builder.ordered, over keys that are tuples)."""
        b, P = self.b, self.name
        net = b.net
        k2 = name(b.var("fkey2"))
        terms = [fkey, name(b.var("fid")), name(b.var("parent")), name(b.var("run"))]
        net.place(f"{P}.forks.idle", UNIT, "control", P, "no fork being numbered")
        net.mark(f"{P}.forks.idle", ())
        net.place(f"{P}.forks.first", ANY, "control", P, "the key of the next fork")
        pick = f"{P}.forks.pick"
        net.transition(pick, None, BUSY, P, "forks to number: start with any")
        b.arc(f"{P}.forks.idle", pick, "in", [call("unit")])
        b.arc(f"{P}.forks", pick, "read", terms)
        b.arc(f"{P}.forks.first", pick, "out", [fkey])
        lw = f"{P}.forks.lower"
        net.transition(lw, binop("<", fkey, k2), LOWER, P, "a fork that comes earlier")
        b.arc(f"{P}.forks.first", lw, "in", [k2])
        b.arc(f"{P}.forks.first", lw, "out", [fkey])
        b.arc(f"{P}.forks", lw, "read", terms)

    def oldest(self) -> None:
        """VEPL contexts (000 §4.4): the event goes to the *oldest* partial match that can
        take it. ``P.arm.T`` sets ``P.oldest`` to none for the event, ``P.offer`` (P_HIGH)
        lowers it to the instance of any run that can take it; only that instance's runs
        step, and ``P.drop`` ends those of its runs that could not (the partial match is the
        events it took); with no taker a new instance may begin."""
        b, c, P = self.b, self.ctl, self.name
        net = b.net
        net.place(f"{P}.oldest", b.colour_set("OLDEST", [("s", INT), ("c", INT)]), "control",
                  P, "the oldest instance that can take event s (none: a large number)")
        net.place(f"{P}.armed", INT, "control", P, "the last event the search was set up for")
        net.mark(f"{P}.armed", 0)
        for t in self.types_read():
            tn = f"{P}.arm.{t}"
            net.transition(tn, binop("<", name(c["x"]), name(c["s"])), LOWER, P,
                           "look for the oldest partial match that can take the event")
            b.arc(self.inbox(t), tn, "read", self.inbox_terms(t))
            b.arc(f"{P}.armed", tn, "in", [name(c["x"])])
            b.arc(f"{P}.armed", tn, "out", [name(c["s"])])
            b.arc(f"{P}.oldest", tn, "out", [name(c["s"]), const(NONE)])
        for st in self.states:
            tn = f"{P}.drop.q{st}"
            net.transition(tn, and_(binop("==", name(c["i"]), name(c["c"])),
                                    binop("<", name(c["m"]), name(c["s"]))), BUSY, P,
                           f"the taker's run in q{st} could not take the event: it ends")
            b.arc(f"{P}.oldest", tn, "read", [name(c["s"]), name(c["c"])])
            b.arc(self.place(st), tn, "in", self.thread_terms(st))
        tn = f"{P}.disarm"
        net.transition(tn, None, CLEAR, P, "done with the event")
        b.arc(f"{P}.oldest", tn, "in", [name(c["s"]), name(c["c"])])

    def offer(self, s: int, t: str, edges: list[Edge]) -> None:
        """``P.offer.q<k>.T``: a run that can take the event offers its instance as the
        oldest taker (runtime.matcher._find: some edge passes unification and filter)."""
        b, c, P = self.b, self.ctl, self.name
        tn = f"{P}.offer.q{s}.{t}"
        can = or_(*(self.passes(e.position, s) or const(True) for e in edges))
        c2 = name(b.var("c2"))
        b.net.transition(tn, and_(binop("<", name(c["m"]), name(c["s"])),
                                  binop("<", name(c["i"]), c2), can), LOWER, P,
                         f"a run in q{s} can take the event")
        b.arc(self.inbox(t), tn, "read", self.inbox_terms(t))
        b.arc(self.place(s), tn, "read", self.thread_terms(s))
        b.arc(f"{P}.oldest", tn, "in", [name(c["s"]), c2])
        b.arc(f"{P}.oldest", tn, "out", [name(c["s"]), name(c["i"])])

    def noise(self) -> None:
        """Immediate and strict (000 §4.4): an event that no partial match took and that
        began none is noise — every partial match of the pattern is disposed of."""
        b, c, P = self.b, self.ctl, self.name
        for st in self.states:
            tn = f"{P}.noise.q{st}"
            b.net.transition(tn, and_(binop("==", name(c["c"]), const(NONE)),
                                      binop("<", name(c["x"]), name(c["s"]))), KILL, P,
                             f"noise: the partial match in q{st} is disposed of")
            b.arc(f"{P}.oldest", tn, "read", [name(c["s"]), name(c["c"])])
            b.arc(f"{P}.began", tn, "read", [name(c["x"])])
            b.arc(self.place(st), tn, "in", self.thread_terms(st))

    def start(self, t: str) -> None:
        """``P.start.T``: a new instance begins with the event (when the start policy lets
        it); with several runs at once when alternatives begin alike."""
        b, c, P, a = self.b, self.ctl, self.name, self.auto
        edges = a.edges[INITIAL][t]
        tn = f"{P}.start.{t}"
        inst = name(c["i"])
        guard, conds = self.moves(INITIAL, t, edges, tn, inst, call("nil"))
        no_taker = None if self.esper else binop("==", name(c["c"]), const(NONE))
        over = self.over(name(c["t"]))
        b.net.transition(tn, and_(binop("<", name(c["x"]), name(c["s"])), no_taker,
                                  not_(over) if over is not None else None, *guard),
                         START, P, f"an instance of {P} begins ({self.policy})")
        b.arc(self.inbox(t), tn, "read", self.inbox_terms(t))
        if not self.esper:
            b.arc(f"{P}.oldest", tn, "read", [name(c["s"]), name(c["c"])])
        if self.policy in ("immediate", "strict"):
            y = name(b.var("y"))
            b.arc(f"{P}.began", tn, "in", [y])
            b.arc(f"{P}.began", tn, "out", [name(c["s"])])
        # Esper's every X or every Y that one event can both fit (Position.each): an instance
        # per operand the event fits, numbered in the operands' order (Matcher._start)
        insts = self.each_instances(edges, inst)
        b.arc(f"{P}.next", tn, "in", [inst])
        b.arc(f"{P}.next", tn, "out", [insts[None]])
        b.arc(f"{P}.took", tn, "in", [name(c["x"])])
        b.arc(f"{P}.took", tn, "out", [name(c["s"])])
        if self.plan is not None and self.plan.start == "once":  # (its one instance)
            b.arc(f"{P}.done", tn, "in", [const(0)])
            b.arc(f"{P}.done", tn, "out", [const(1)])
        if a.distinct and self.plan is not None and self.plan.start == "spawn":
            self.distinct_start(t, tn, edges[0])
        evs = self.evs_after(call("nil"))
        for k, e in enumerate(edges):
            ik = insts[k]
            if e.target == FINAL:
                b.arc(f"{P}.final", tn, "out",
                      self.final_out(e, INITIAL, ik, self.key_expr(inst=ik), name(c["t"]),
                                     evs), conds.get(k))
            else:
                b.arc(self.place(e.target), tn, "out", self.run_out(e, INITIAL, ik, evs),
                      conds.get(k))
        if self.single_instance:  # an instance alive (or the one that just took it) blocks
            for s in self.states:
                self.busy(s, t)

    def clock(self) -> None:
        """The pattern's clock (Automaton.clock, runtime.interval_clock): Esper starts the
        pattern at the statement's start, which compiler.esper writes as a leading
        ``timer:interval(Δ)`` (Δ = 0 for the EPL forms that start there: an or run as
        alternatives, a guard or a not at the start). ``P.clock`` holds the instant the
        interval under way ends — at first the statement's start (the first input event's
        time, the engine's start when none is given) plus Δ. ``P.clock.lower`` offers it to
        the search for the next instant; at that instant, in the pattern's stage and so before
        the events of the instant (Esper's timers come first), ``P.clock.fire`` begins an
        instance: a run at the target of every clock edge (an or's alternatives, each a run
        from the clock), nothing taken (the clock's event is no part of a match), every
        window it enters starting then. Under ``every (…)`` (restart) the next interval begins
        when the instance has ended: after each event the pattern reads, ``P.clock.alive``
        notes a run still waiting (after the kills of the event), and when none did
        ``P.clock.idle`` starts the interval at the event's time (``P.clock.off``: none under
        way) — IntervalClock._clock_idle."""
        b, c, P, a = self.b, self.ctl, self.name, self.auto
        clock = a.clock
        assert clock is not None
        net = b.net
        restart = a.start == "restart"
        due = name(b.var("due"))
        net.place(f"{P}.clock", TIME, "control", P,
                  "the instant the interval under way ends (the pattern's clock)")
        whole = [z for z in a.zones if z.whole]  # (a guard of 0 at the top: over at once)
        if b.start is not None and not (whole and min(whole, key=lambda z: z.length
                                                          ).exceeded(0)):
            net.mark(f"{P}.clock", b.start + clock.length)
        stage = b.stage(P)
        ln = f"{P}.clock.lower"
        net.transition(ln, binop("<", due, name(c["cand"])), LOWER, P,
                       "the clock's instant comes before the candidate instant")
        b.arc(f"{P}.clock", ln, "read", [due])
        b.time_lowering(ln, due)
        tick = b.tick_terms(self.ctl)
        fire = f"{P}.clock.fire"
        net.transition(fire, and_(binop("==", name(c["st"]), const(stage)),
                                  binop("==", due, name(c["d"]))), STEP, P,
                       f"the interval ended: an instance of {P} begins ({self.policy})")
        b.arc(f"{P}.clock", fire, "in", [due])
        b.tick_fired(fire, tick)
        inst = name(c["i"])
        b.arc(f"{P}.next", fire, "in", [inst])
        b.arc(f"{P}.next", fire, "out", [binop("+", inst, const(1))])
        for e in a.edges[INITIAL][clock.type]:
            tgt = e.target
            run: list[ast.Expr] = [inst, const(0), const(0), name(c["d"]), call("nil"),
                                   *(self.zone_start(z) if self.zone[z].whole else name(c["d"])
                                     for z in self.zones_of(tgt))]
            run += [call("nil") if self.var_types.get(v) is TRACK else const(None)
                    for v in self.vars[tgt]]
            b.arc(self.place(tgt), fire, "out", run)
        if not restart:
            return
        net.place(f"{P}.clock.off", UNIT, "control", P, "no interval under way")
        net.place(f"{P}.clock.seen", INT, "control", P,
                  "the last event after which a run of the instance was still waiting")
        net.mark(f"{P}.clock.seen", 0)
        b.arc(f"{P}.clock.off", fire, "out", [call("unit")])
        x = name(c["x"])
        for t in self.types_read():
            for s in self.states:
                tn = f"{P}.clock.alive.q{s}.{t}"
                net.transition(tn, binop("<", x, name(c["s"])), EMIT, P,
                               f"after the {t} event a run of {P} still waits in q{s}")
                b.arc(self.inbox(t), tn, "read", self.inbox_terms(t))
                b.arc(self.place(s), tn, "read", self.thread_terms(s))
                b.arc(f"{P}.clock.seen", tn, "in", [x])
                b.arc(f"{P}.clock.seen", tn, "out", [name(c["s"])])
            tn = f"{P}.clock.idle.{t}"
            over = self.over(name(c["t"]))
            net.transition(tn, and_(binop("<", x, name(c["s"])),
                                    not_(over) if over is not None else None), CLEAR, P,
                           f"after the {t} event no run of {P} waits: the next interval "
                           "begins")
            b.arc(self.inbox(t), tn, "read", self.inbox_terms(t))
            b.arc(f"{P}.clock.seen", tn, "read", [x])
            b.arc(f"{P}.clock.off", tn, "in", [call("unit")])
            b.arc(f"{P}.clock", tn, "out", [binop("+", name(c["t"]), const(clock.length))])
        if any(s in z.timer_accept or z.kind == "within" for z in a.zones
               for s in self.states if z.id in self.zones_of(s)):
            self.clock_after_deadlines(stage)

    def clock_after_deadlines(self, stage: int) -> None:
        """``every ((…) where timer:within(Δ))`` from the statement's start: an instance
        whose window closed has ended too, and the next interval begins at the deadline
        (Matcher.on_deadline's IntervalClock._clock_idle). At the pattern's stage, after its
        deadlines fired, ``P.clock.alive.q<k>.tick`` notes in ``P.clock.tseen`` the instant
        ``(n, d)`` (before input event n, at d) at which a run still waits; when none does,
        ``P.clock.idle.tick`` begins the interval at ``d``. A deadline that fires (expire,
        accept) clears the note: a later round at the same instant looks again."""
        b, c, P = self.b, self.ctl, self.name
        net = b.net
        clock = self.auto.clock
        assert clock is not None
        self.tick_idle = True
        net.place(f"{P}.clock.tseen", b.colour_set("TSEEN", [("n", INT), ("d", TIME)]),
                  "control", P, "the instant after whose deadlines a run still waited")
        net.mark(f"{P}.clock.tseen", (0, -1.0))
        tick = b.tick_terms(self.ctl)
        sn, sd = name(b.var("sn")), name(b.var("sd"))
        here = binop("==", name(c["st"]), const(stage))
        fresh = or_(binop("!=", sn, tick[0]), binop("!=", sd, name(c["d"])))
        for s in self.states:
            tn = f"{P}.clock.alive.q{s}.tick"
            net.transition(tn, and_(here, fresh), EMIT, P,
                           f"after the deadlines of this instant a run of {P} waits in q{s}")
            b.arc("stream.tick", tn, "read", tick)
            b.arc(self.place(s), tn, "read", self.thread_terms(s))
            b.arc(f"{P}.clock.tseen", tn, "in", [sn, sd])
            b.arc(f"{P}.clock.tseen", tn, "out", [tick[0], name(c["d"])])
        tn = f"{P}.clock.idle.tick"
        over = self.over(name(c["d"]))
        # (not once the input has ended: the engine's finish stops the clocks, then lets
        # time run out — host.stopped)
        running = binop("<=", tick[0], const(b.inputs))
        net.transition(tn, and_(here, fresh, running, not_(over) if over is not None else None),
                       CLEAR,
                       P, f"after the deadlines of this instant no run of {P} waits: the "
                       "next interval begins")
        b.arc("stream.tick", tn, "read", tick)
        b.arc(f"{P}.clock.tseen", tn, "read", [sn, sd])
        b.arc(f"{P}.clock.off", tn, "in", [call("unit")])
        b.arc(f"{P}.clock", tn, "out", [binop("+", name(c["d"]), const(clock.length))])

    def deadline_fired(self, tn: str) -> None:
        """A deadline fired (``tn``): under :meth:`clock_after_deadlines` the note that a
        run waited after this instant's deadlines is cleared."""
        if getattr(self, "tick_idle", False):
            sn, sd = name(self.b.var("sn")), name(self.b.var("sd"))
            self.b.arc(f"{self.name}.clock.tseen", tn, "in", [sn, sd])
            self.b.arc(f"{self.name}.clock.tseen", tn, "out", [const(0), const(-1.0)])

    def each_instances(self, edges: list[Edge], inst: ast.Expr
                       ) -> dict[int | None, ast.Expr]:
        """The instance each initial edge begins (by index; None: the next free number).
        One instance ``i``, unless the edges start the operands of Esper's ``every X or every
        Y`` (Position.each): then the operands the event fits begin one each, in the
        operands' order — operand g's is ``i`` plus the number of earlier ones that began (an
        operand begins when one of its edges passes: the guard's ``p<k>``, Matcher._begin)."""
        if not any(e.position.each for e in edges):
            return {None: binop("+", inst, const(1)), **{k: inst for k in range(len(edges))}}
        groups: dict[int, list[int]] = {}
        for k, e in enumerate(edges):
            groups.setdefault(e.position.each, []).append(k)
        out: dict[int | None, ast.Expr] = {}
        nxt: ast.Expr = inst
        for g in sorted(groups):
            for k in groups[g]:
                out[k] = nxt
            began = or_(*(name(self.b.var(f"p{k + 1}")) for k in groups[g]))
            nxt = binop("+", nxt, call("cond", began, const(1), const(0)))
        out[None] = nxt
        return out

    def busy(self, s: int, t: str) -> None:
        """``P.busy.q<k>.T``: a run alive at ``s`` keeps a restarting pattern from beginning
        another instance with this event."""
        b, c, P = self.b, self.ctl, self.name
        tn = f"{P}.busy.q{s}.{t}"
        b.net.transition(tn, binop("<", name(c["x"]), name(c["s"])), BUSY, P,
                         f"an instance of {P} is alive in q{s}")
        b.arc(self.inbox(t), tn, "read", self.inbox_terms(t))
        b.arc(self.place(s), tn, "read", self.thread_terms(s))
        b.arc(f"{P}.took", tn, "in", [name(c["x"])])
        b.arc(f"{P}.took", tn, "out", [name(c["s"])])

    def distinct_start(self, t: str, tn: str, edge: Edge) -> None:
        """every-distinct: the start's key values must not be in ``P.seen`` (within the
        expiry); a key seen longer ago than the expiry is forgotten first."""
        b, c, P = self.b, self.ctl, self.name
        assert self.plan is not None
        _, new = self.binds(edge.position, INITIAL)
        keys = [self.key_of(d, new) for d in self.plan.distinct]
        ks = [name(b.var(f"k{j}")) for j in range(len(keys))]
        t0 = name(b.var("t0"))
        expiry = self.plan.expiry
        # the start is refused when the keys were seen: the guard cannot look for a token's
        # absence, so a higher-priority transition marks the event as refused first
        if f"{P}.refused" not in b.net.places:  # (one for every type that begins one)
            b.net.place(f"{P}.refused", INT, "control", P, "the last event a seen key refused")
            b.net.mark(f"{P}.refused", 0)
        dup = f"{P}.seen.{t}"
        live = None if expiry is None else binop("<", binop("-", name(c["t"]), t0),
                                                 const(expiry))
        eqs = [binop("==", k, v) for k, v in zip(ks, keys, strict=True)]
        pas = self.passes(edge.position, INITIAL)
        b.net.transition(dup, and_(binop("<", name(c["x"]), name(c["s"])), pas, live, *eqs),
                         BUSY, P, "every-distinct: these key values were seen")
        b.arc(self.inbox(t), dup, "read", self.inbox_terms(t))
        b.arc(f"{P}.seen", dup, "read", [*ks, t0])
        b.arc(f"{P}.refused", dup, "in", [name(c["x"])])
        b.arc(f"{P}.refused", dup, "out", [name(c["s"])])
        net_t = b.net.transitions[tn]
        r = name(b.var("r"))
        net_t.guard = and_(binop("<", r, name(c["s"])), net_t.guard)
        b.arc(f"{P}.refused", tn, "read", [r])
        b.arc(f"{P}.seen", tn, "out", [*keys, name(c["t"])])
        if expiry is not None:
            fg = f"{P}.forget.{t}"
            b.net.transition(fg, binop(">=", binop("-", name(c["t"]), t0), const(expiry)),
                             BUSY, P, "every-distinct: a key seen longer ago than the expiry")
            b.arc(self.inbox(t), fg, "read", self.inbox_terms(t))
            b.arc(f"{P}.seen", fg, "in", [*ks, t0])

    def key_of(self, d: ast.Expr, new: dict[str, ast.Expr]) -> ast.Expr:
        """An every-distinct key expression over the start event's new bindings."""
        def fn(n: ast.Expr) -> ast.Expr | None:
            if isinstance(n, ast.Name):
                v = ".".join((n.name, *n.path))
                return new.get(v, const(None))
            return None
        return rewrite(d, fn)

    def timers(self) -> None:
        """Deadlines of ``timer:within`` windows: ``P.q<k>.expire.z<j>`` ends a run whose
        window closed, ``accept`` completes one waiting for its deadline (a trailing not),
        and ``P.q<k>.lower.z<j>`` offers the deadline to the search for the next instant."""
        b, c, P = self.b, self.ctl, self.name
        timed = []
        for s in self.states:
            for z in self.zones_of(s):
                zone = self.zone[z]
                if s in zone.timer_accept or (zone.kind == "within" and s not in zone.last):
                    timed.append((s, z))
        if not timed:
            return
        stage = b.stage(P)
        # one instance's deadlines at a time, smallest instance first, each followed by what
        # its outputs cause (the engine fires its timers one by one, each with its cascade)
        net = b.net
        net.place(f"{P}.tidle", UNIT, "control", P, "no instance's deadline being handled")
        net.mark(f"{P}.tidle", ())
        net.place(f"{P}.tfirst", INT, "control", P, "the instance whose deadlines fire now")
        done = f"{P}.tdone"
        net.transition(done, None, CLEAR, P, "the instance's deadlines are handled")
        b.arc(f"{P}.tfirst", done, "in", [name(c["c"])])
        b.arc(f"{P}.tidle", done, "out", [call("unit")])
        for s, z in timed:
            zone = self.zone[z]
            deadline = binop("+", name(self.zvar(z)), const(zone.length))
            # the next instant: a deadline earlier than the candidate lowers it
            ln = f"{self.place(s)}.lower.z{z}"
            b.net.transition(ln, binop("<", deadline, name(c["cand"])), LOWER, P,
                             f"the deadline of window z{z} comes before the candidate instant")
            b.arc(self.place(s), ln, "read", self.thread_terms(s))
            b.time_lowering(ln, deadline)
            tick = b.tick_terms(self.ctl)
            due = binop("==", deadline, name(c["d"]))
            if not zone.open_end:  # VEPL: the deadline is the last instant inside the window
                due = and_(due, binop("<", name(c["d"]), name(c["nts"])))
            stage_ok = binop("==", name(c["st"]), const(stage))
            pk = f"{self.place(s)}.due.z{z}"
            net.transition(pk, and_(stage_ok, due), TPICK, P,
                           f"window z{z} of a run in q{s} closes now: its instance is next")
            b.arc("stream.tick", pk, "read", tick)
            b.arc(self.place(s), pk, "read", self.thread_terms(s))
            b.arc(f"{P}.tidle", pk, "in", [call("unit")])
            b.arc(f"{P}.tfirst", pk, "out", [name(c["i"])])
            lw = f"{self.place(s)}.due.lower.z{z}"
            c2 = name(b.var("c2"))
            net.transition(lw, and_(stage_ok, due, binop("<", name(c["i"]), c2)), LOWER, P,
                           "an older instance's window closes now too")
            b.arc("stream.tick", lw, "read", tick)
            b.arc(self.place(s), lw, "read", self.thread_terms(s))
            b.arc(f"{P}.tfirst", lw, "in", [c2])
            b.arc(f"{P}.tfirst", lw, "out", [name(c["i"])])
            if s in zone.timer_accept:
                tn = f"{self.place(s)}.accept.z{z}"
                hold = self.other_zones_hold(s, z)
                b.net.transition(tn, and_(stage_ok, due), STEP, P,
                                 f"window z{z} closed with nothing forbidden: a match")
                b.arc(self.place(s), tn, "in", self.thread_terms(s))
                b.arc(f"{P}.tfirst", tn, "read", [name(c["i"])])
                b.tick_fired(tn, tick)
                key = tup(const(self.index), tup(name(c["i"]), const(0)),
                          const(-1), const(0), const(0))
                b.arc(f"{P}.final", tn, "out",
                      self.final_out(None, s, name(c["i"]), key, name(c["d"]), name(c["evs"])),
                      hold)
                self.deadline_fired(tn)
            else:
                tn = f"{self.place(s)}.expire.z{z}"
                b.net.transition(tn, and_(stage_ok, due), STEP, P,
                                 f"window z{z} closed: the run ends")
                b.arc(self.place(s), tn, "in", self.thread_terms(s))
                b.arc(f"{P}.tfirst", tn, "read", [name(c["i"])])
                b.tick_fired(tn, tick)
                self.deadline_fired(tn)

    def other_zones_hold(self, s: int, closing: int) -> ast.Expr | None:
        lt = name(self.ctl["lt"])
        fails = []
        for z in self.zones_of(s):
            if z == closing:
                continue
            zone = self.zone[z]
            fails.append(binop(">=" if zone.open_end else ">",
                               binop("-", lt, name(self.zvar(z))), const(zone.length)))
        return not_(or_(*fails)) if fails else None

    def binds_tuple(self, suffix: str) -> ast.Expr:
        """(name, value, …) of the completed run's variables, for the engine's tie-break."""
        items: list[ast.Expr] = []
        for v in self.final_vars:
            if v in self.auto.unused or v in self.side_vars:
                continue
            items += [const(v), name(self.vn[v] + suffix)]
        return tup(*items)

    def choose(self) -> None:
        """``P.choose``: of two completed runs of one instance, the preferred one stays
        (the older events first; runtime.matcher._age)."""
        b, c, P = self.b, self.ctl, self.name
        tn = f"{P}.choose"
        one = [name(c["i"]), name(c["key"]), name(c["t"]), name(c["evs"]),
               *(name(self.vn[v]) for v in self.final_vars)]
        two = [name(c["i"]), name(c["key2"]), name(c["t2"]), name(c["evs2"]),
               *(name(self.vn[v] + "_2") for v in self.final_vars)]
        better = call("older", name(c["evs"]), self.binds_tuple(""), name(c["evs2"]),
                      self.binds_tuple("_2"))
        same = and_(binop("==", name(c["evs"]), name(c["evs2"])),
                    binop("==", self.binds_tuple(""), self.binds_tuple("_2")))
        b.net.transition(tn, or_(better, same) if same is not None else better, CHOOSE, P,
                         "two runs of one instance completed: the preferred one stays")
        b.arc(f"{P}.final", tn, "in", one)
        b.arc(f"{P}.final", tn, "in", two)
        b.arc(f"{P}.final", tn, "out", one)

    def kill(self, s: int) -> None:
        """``P.kill.q<k>``: an instance that completed ends its other runs."""
        b, c, P = self.b, self.ctl, self.name
        tn = f"{P}.kill.q{s}"
        b.net.transition(tn, None, KILL, P, f"an instance completed: its run in q{s} ends")
        b.arc(self.place(s), tn, "in", self.thread_terms(s))
        b.arc(f"{P}.final", tn, "read", [name(c["i"]), name(c["key2"]), name(c["t2"]),
                                         name(c["evs2"]),
                                         *(name(self.vn[v] + "_2") for v in self.final_vars)])

    def dedupe(self, s: int) -> None:
        """``P.dedupe.q<k>``: two runs of one instance at one state with the same variables
        and windows have the same future; the one of older events stays."""
        b, c, P = self.b, self.ctl, self.name
        tn = f"{P}.dedupe.q{s}"
        one = self.thread_terms(s)
        two = self.thread_terms(s, suffix="2")
        b.net.transition(tn, or_(call("older", name(c["evs"]), call("nil"), name(c["evs2"]),
                                      call("nil")),
                                 binop("==", name(c["evs"]), name(c["evs2"]))), CHOOSE, P,
                         f"two runs of one instance coincide in q{s}")
        b.arc(self.place(s), tn, "in", one)
        b.arc(self.place(s), tn, "in", two)
        b.arc(self.place(s), tn, "out", one)

    def emit(self) -> None:
        """``P.emit``: a completed instance becomes the complex event ``P`` (004's output
        place), numbered in the engine's order, queued for its readers; spawn patterns emit
        the instances that completed at once in instance order (``P.pick`` / ``P.lower``)."""
        b, c, P, a = self.b, self.ctl, self.name, self.auto
        params = self.params_exprs()
        cand = [name(c["i"]), name(c["key"]), name(c["t"]), name(c["evs"]),
                *(name(self.vn[v]) for v in self.final_vars)]
        tn = f"{P}.emit"
        restart_distinct = bool(a.distinct) and self.plan is not None \
            and self.plan.start == "restart"
        ordered = not self.single_instance or self.forking  # (forks: several instances)
        guard = None
        if ordered:
            b.ordered(P, f"{P}.final", cand, name(c["key"]))
        if restart_distinct:
            assert self.plan is not None
            vals = {v: name(self.vn[v]) for v in self.final_vars}
            keys = [self.key_of(d, vals) for d in self.plan.distinct]
            ks = [name(b.var(f"k{j}")) for j in range(len(keys))]
            t0 = name(b.var("t0"))
            expiry = self.plan.expiry
            live = None if expiry is None else binop("<", binop("-", name(c["t"]), t0),
                                                     const(expiry))
            dn = f"{P}.drop"
            b.net.transition(dn, and_(live, *(binop("==", k, v)
                                              for k, v in zip(ks, keys, strict=True))),
                             KILL, P, "every-distinct: a match whose keys were seen is dropped")
            b.arc(f"{P}.final", dn, "in", cand)
            b.arc(f"{P}.seen", dn, "read", [*ks, t0])
            if expiry is not None:
                fg = f"{P}.forget"
                b.net.transition(fg, binop(">=", binop("-", name(c["t"]), t0),
                                           const(expiry)), CHOOSE, P,
                                 "every-distinct: a key seen longer ago than the expiry")
                b.arc(f"{P}.final", fg, "read", cand)
                b.arc(f"{P}.seen", fg, "in", [*ks, t0])
        b.net.transition(tn, guard, EMIT, P, f"a match of {P} is output")
        b.arc(f"{P}.final", tn, "in", cand)
        if ordered:
            b.in_order(P, tn, name(c["key"]))
        b.emit_output(tn, P, params, name(c["t"]), name(c["key"]),
                      call("numbers", name(c["evs"])), self.ctl)
        if restart_distinct:
            b.arc(f"{P}.seen", tn, "out", [*keys, name(c["t"])])

    def params_exprs(self) -> list[ast.Expr]:
        if self.select is not None:
            return [self.expr(e, None, self.final_vars) for _, e in self.select]
        return [self.expr(ast.Name(p), None, self.final_vars) for p in self.auto.params]


def _sum(xs: list[ast.Expr]) -> ast.Expr:
    out: ast.Expr = const(0)
    for x in xs:
        out = binop("+", out, x)
    return out


__all__ = ["PatternNet"]
