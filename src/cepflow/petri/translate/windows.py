"""One subnet per data-window statement (seed 004 §III.B.2, Fig. 8, and §IV's Counter;
Esper's semantics as docs/windows.md gives them).

The window's contents are tokens of ``W.win`` — records ``(q, gq, t, n, g, a…, fields…)``: the
arrival number among the statement's accepted events (and within its group, for per-group
windows), time, event number, group key, aggregate arguments and the event's fields (004's
``DW_Ev``). Each group's aggregate state is a token of ``W.agg``
``(g, N, (c, s, lo, hi) per argument, fq)``: events in the window, per argument the count of
its non-null values, their sum, minimum and maximum (updated on arrival; when a departure takes
one away, found again among the group's records by P_HIGH transitions while the group is on
``W.refind``), and the group's first record of a batch. Transitions:

* ``W.enter`` takes an accepted event (``W.group`` first makes the state of a group not seen
  yet); a length window's ``W.push`` also pushes the oldest record out in the same update;
* ``W.leave`` ends a time window's oldest record when time reaches its ``t + Δ`` (before the
  events of that instant: tick stage 0), ``W.close`` closes a time batch at its boundary and
  ``W.enter.close`` a length batch at its n-th event;
* every update asks for rows (``W.req``): per group (Esper's fully aggregated queries — one
  row per group the update touched, and count-0 rows for groups only the previous batch had)
  or per event; ``W.row`` outputs them in the engine's order with the aggregates after the
  update, when ``having`` holds, and ``W.drop`` forgets groups with no event left.
"""

from __future__ import annotations

from cepflow.language import ast
from cepflow.language.walk import rewrite, strip_alias
from cepflow.petri.colours import ANY, BOOL, INT, ColourSet
from cepflow.petri.translate.net_builder import (
    BUSY,
    CLEAR,
    EMIT,
    KEY,
    LOWER,
    PARTS,
    PASS,
    START,
    STEP,
    TIME,
    Builder,
    Problem,
    and_,
    binop,
    call,
    const,
    name,
    not_,
    or_,
    tup,
)
from cepflow.windows.expressions import NOW, bind_current_timestamp, is_aggregate, is_star
from cepflow.windows.plan import compile_statement
from cepflow.windows.statement import WindowStatement

#: the local order of a batch's count-0 rows (after every group of the batch)
_AFTER = 1 << 40


def _null_eq(x: ast.Expr) -> ast.Expr:
    return binop("==", x, const(None))


class WindowNet:
    """The subnet of one window statement; ``index`` orders it among the components."""

    def __init__(self, b: Builder, statement: WindowStatement, index: int) -> None:
        self.b = b
        self.statement = statement
        self.index = index
        self.name = statement.name
        self.plan = compile_statement(statement, b.program.schemas, b.program.functions)
        self.spec = statement.window

    def check(self) -> list[Problem]:
        return []

    # -- expressions ----------------------------------------------------------------------
    def prep(self, e: ast.Expr) -> ast.Expr:
        return bind_current_timestamp(strip_alias(e, self.statement.alias))

    def over(self, e: ast.Expr, fields: dict[str, ast.Expr], aggs: dict[int, ast.Expr] | None,
             now: ast.Expr | None) -> ast.Expr:
        """``e`` with the event's fields, aggregates and the row time as net variables."""
        slot_of = {(s.func, s.arg): k for k, s in enumerate(self.plan.slots)}

        def fn(n: ast.Expr) -> ast.Expr | None:
            if aggs is not None and is_aggregate(n):
                assert isinstance(n, ast.Call)
                arg = None if not n.args or is_star(n.args[0]) else n.args[0]
                return aggs[slot_of[(n.func, arg)]]
            if isinstance(n, ast.Name):
                if n.name == NOW and now is not None:
                    return now
                if not n.path and n.name in fields:
                    return fields[n.name]
                return const(None)
            return None

        return rewrite(e, fn)

    # -- building -------------------------------------------------------------------------
    def build(self) -> None:
        b, W, st = self.b, self.name, self.statement
        self.page = W
        net = b.net
        t_in = st.input_type
        self.fields = list(b.schema(t_in).param_names)
        self.fsets = self.union_fields()
        self.v = {k: b.var(k) for k in ("s", "n", "t", "kd", "key", "x", "q", "h", "c",
                                         "nts", "cand", "d", "f", "st", "now", "parts",
                                         "okey", "empty", "posted", "all", "cg", "cur",
                                         "prev", "r", "k", "cnt", "nx", "cid")}
        for t in st.input_types:
            b.subscribe(t, f"{W}.{t}", W)
        if len(st.input_types) == 1:
            self.inbox = f"{W}.{t_in}"
        else:
            self.union_inbox()
        self.args = list(self.plan.args)
        funcs: list[set[str]] = [set() for _ in self.args]
        for sl in self.plan.slots:
            if sl.arg is not None:
                funcs[sl.arg_index].add(sl.func)
        self.funcs = funcs
        # records, group states, row requests
        self.rec_set = b.colour_set(f"REC_{W}", [
            ("q", INT), ("gq", INT), ("t", TIME), ("n", INT), ("g", ANY),
            *((f"a{j}", ANY) for j in range(len(self.args))), *self.fsets])
        agg_fields: list[tuple[str, object]] = [("g", ANY), ("N", INT)]
        for j, fs in enumerate(funcs):
            agg_fields.append((f"c{j}", INT))
            if fs & {"sum", "avg"}:
                agg_fields.append((f"s{j}", ANY))
            if "min" in fs:
                agg_fields.append((f"lo{j}", ANY))
            if "max" in fs:
                agg_fields.append((f"hi{j}", ANY))
        agg_fields.append(("fq", INT))
        self.agg_names = [n for n, _ in agg_fields]
        self.agg_set = b.colour_set(f"AGG_{W}", agg_fields)  # type: ignore[arg-type]
        self.req_set = b.colour_set(f"REQ_{W}", [
            ("okey", KEY), ("g", ANY), ("now", TIME), ("parts", PARTS), ("empty", BOOL),
            *self.fsets])
        net.place(f"{W}.win", self.rec_set, "window", W, f"the events in {W}'s window")
        net.place(f"{W}.agg", self.agg_set, "window", W, "each group's aggregates")
        net.place(f"{W}.req", self.req_set, "control", W, "rows to output")
        net.place(f"{W}.q", INT, "control", W, "the next record's arrival number")
        net.mark(f"{W}.q", 1)
        net.place(f"{W}.took", INT, "control", W, "the last event the statement took")
        net.mark(f"{W}.took", 0)
        kind = self.spec.kind
        if kind in ("time", "length") and not self.spec.per_group:
            net.place(f"{W}.head", INT, "control", W, "the arrival number of the oldest record")
            net.mark(f"{W}.head", 1)
        self.group()
        if kind == "time":
            self.sliding_time()
        elif kind == "length":
            self.sliding_length()
        else:
            self.batch()
        self.minmax()
        self.rows()

    def union_fields(self) -> list[tuple[str, ColourSet]]:
        """The fields of the statement's input: of its one type, or of a union's types — a
        field whose colour set differs among them is ``ANY``."""
        sets = [self.b.event_fields(t) for t in self.statement.input_types]
        return [(f, cs if all(o[k][1] == cs for o in sets) else ANY)
                for k, (f, cs) in enumerate(sets[0])]

    def union_inbox(self) -> None:
        """A statement over a union of types (``from g = A | B``; in EPL several statements
        inserting into one stream): each type's inbox ``W.T`` is copied once into ``W.in``,
        which the statement's transitions read, by ``W.join.T`` (P_HIGH; ``W.joined``: the
        last event copied); ``W.T.pass`` takes the copy back when it hands the event on."""
        b, W, v = self.b, self.name, self.v
        self.inbox = f"{W}.in"
        b.net.place(self.inbox, b.colour_set(f"IN_{W}", [
            ("s", INT), ("n", INT), ("t", TIME), ("kd", INT), ("key", KEY), *self.fsets]),
            "inbox", W, f"the event of {' | '.join(self.statement.input_types)} {W} is "
            "processing")
        b.net.place(f"{W}.joined", INT, "control", W, "the last event copied into the union")
        b.net.mark(f"{W}.joined", 0)
        terms = self.inbox_terms()
        for t in self.statement.input_types:
            tn = f"{W}.join.{t}"
            b.net.transition(tn, binop("<", name(v["x"]), name(v["s"])), LOWER, W,
                             f"a {t} event joins the union {W} reads")
            b.arc(f"{W}.{t}", tn, "read", terms)
            b.arc(f"{W}.joined", tn, "in", [name(v["x"])])
            b.arc(f"{W}.joined", tn, "out", [name(v["s"])])
            b.arc(self.inbox, tn, "out", terms)
            b.pass_also[f"{W}.{t}"] = self.inbox

    # -- terms ----------------------------------------------------------------------------
    def inbox_terms(self) -> list[ast.Expr]:
        v = self.v
        return [name(v["s"]), name(v["n"]), name(v["t"]), name(v["kd"]), name(v["key"]),
                *(name(f) for f in self.fields)]

    def rec_terms(self, p: str = "r") -> list[ast.Expr]:
        return [name(f"{p}.{x}") for x in ("q", "gq", "t", "n", "g")] + [
            name(f"{p}.a{j}") for j in range(len(self.args))] + [
            name(f"{p}.e.{f}") for f in self.fields]

    def agg_terms(self, p: str = "g") -> list[ast.Expr]:
        return [name(f"{p}.{x}") for x in self.agg_names]

    def ev_fields(self) -> dict[str, ast.Expr]:
        return {f: name(f) for f in self.fields}

    def key_of(self) -> ast.Expr:
        """The group key of the event being processed (() without group by)."""
        gs = [self.over(g, self.ev_fields(), None, None) for g in self.plan.group_exprs]
        return call("nil") if not gs else gs[0] if len(gs) == 1 else tup(*gs)

    def args_of(self) -> list[ast.Expr]:
        return [self.over(a, self.ev_fields(), None, None) for a in self.args]

    def accepted(self) -> ast.Expr | None:
        """The statement's filter on the event (applied before the window)."""
        v = self.v
        base = binop("<", name(v["x"]), name(v["s"]))
        if self.statement.filter is None:
            return base
        return and_(base, self.over(self.prep(self.statement.filter), self.ev_fields(), None,
                                     None))

    # -- aggregate updates ------------------------------------------------------------------
    def entered(self, p: str, g: ast.Expr, vals: list[ast.Expr], q: ast.Expr
                ) -> dict[str, ast.Expr]:
        """The state ``p`` of group ``g`` after an event with argument values ``vals``
        entered."""
        out = {"g": g, "N": binop("+", name(f"{p}.N"), const(1)),
               "fq": call("cond", binop("==", name(f"{p}.N"), const(0)), q, name(f"{p}.fq"))}
        for j, fs in enumerate(self.funcs):
            v = vals[j]
            out[f"c{j}"] = binop("+", name(f"{p}.c{j}"),
                                 call("cond", _null_eq(v), const(0), const(1)))
            if fs & {"sum", "avg"}:
                out[f"s{j}"] = call("cond", _null_eq(v), name(f"{p}.s{j}"),
                                    binop("+", name(f"{p}.s{j}"), v))
            for fn, m, op in (("min", "lo", "<"), ("max", "hi", ">")):
                if fn in fs:  # the engine's running extreme: v when it is smaller (larger)
                    cur = name(f"{p}.{m}{j}")
                    out[f"{m}{j}"] = call("cond", and_(not_(_null_eq(v)), or_(
                        _null_eq(cur), binop(op, v, cur))), v, cur)
        return out

    def left(self, st: dict[str, ast.Expr], vals: list[ast.Expr]) -> dict[str, ast.Expr]:
        """The state ``st`` after a record with argument values ``vals`` left (a float sum
        is reset to exactly 0 when no value is left, as the engine does)."""
        out = dict(st)
        out["N"] = binop("-", st["N"], const(1))
        for j, fs in enumerate(self.funcs):
            v = vals[j]
            cnt = binop("-", st[f"c{j}"], call("cond", _null_eq(v), const(0), const(1)))
            out[f"c{j}"] = cnt
            if fs & {"sum", "avg"}:
                out[f"s{j}"] = call("cond", _null_eq(v), st[f"s{j}"],
                                    call("cond", binop(">", cnt, const(0)),
                                         binop("-", st[f"s{j}"], v), const(0)))
            for m in ("lo", "hi"):
                if f"{m}{j}" in st:  # the extreme left: found again among what stays
                    out[f"{m}{j}"] = call("cond", and_(not_(_null_eq(v)),
                                                       binop("==", v, st[f"{m}{j}"])),
                                          const(None), st[f"{m}{j}"])
        return out

    def refind(self, tn: str, g: ast.Expr, st: dict[str, ast.Expr], vals: list[ast.Expr]
               ) -> None:
        """A departure from group ``g`` (state ``st`` before it) that takes the group's
        minimum or maximum away puts ``g`` on ``W.refind``: the extreme is found again among
        the records that stay (``W.min<j>`` / ``W.max<j>``)."""
        gone = [and_(not_(_null_eq(vals[j])), binop("==", vals[j], st[f"{m}{j}"]))
                for j in range(len(self.args)) for m in ("lo", "hi") if f"{m}{j}" in st]
        if gone:
            self.b.arc(f"{self.name}.refind", tn, "out", [g], or_(*gone))

    def state_terms(self, st: dict[str, ast.Expr]) -> list[ast.Expr]:
        return [st[x] for x in self.agg_names]

    def named_state(self, p: str) -> dict[str, ast.Expr]:
        return {x: name(f"{p}.{x}") for x in self.agg_names}

    def assign(self, prefix: str, st: dict[str, ast.Expr]) -> tuple[list[ast.Expr],
                                                                   dict[str, ast.Expr]]:
        """Guard assignments naming an intermediate state (so the next update reads it)."""
        guard = [binop("==", name(f"{prefix}.{x}"), e) for x, e in st.items()]
        return guard, {x: name(f"{prefix}.{x}") for x in st}

    # -- transitions --------------------------------------------------------------------------
    def group(self) -> None:
        """``W.group``: the state of a group with no event in the window yet."""
        b, W, v = self.b, self.name, self.v
        tn = f"{W}.group"
        b.net.transition(tn, self.accepted(), BUSY, W, "a group not seen yet: its state")
        b.arc(self.inbox, tn, "read", self.inbox_terms())
        b.arc(f"{W}.took", tn, "read", [name(v["x"])])
        fresh = {"g": self.key_of(), "N": const(0), "fq": const(0)}
        for j, fs in enumerate(self.funcs):
            fresh[f"c{j}"] = const(0)
            if fs & {"sum", "avg"}:
                fresh[f"s{j}"] = const(0)
            if "min" in fs:
                fresh[f"lo{j}"] = const(None)
            if "max" in fs:
                fresh[f"hi{j}"] = const(None)
        b.arc(f"{W}.agg", tn, "out", self.state_terms(fresh))
        if self.spec.per_group and self.spec.kind in ("length", "length_batch"):
            b.arc(f"{W}.len", tn, "out", [self.key_of(), const(0), const(1), const(1)])

    def enter(self, tn: str, guard: ast.Expr | None, doc: str, gq: ast.Expr | None = None
              ) -> dict[str, ast.Expr]:
        """The arcs every arrival has: the event is taken once, becomes a record, and its
        group's state is updated (returned: the new state)."""
        b, W, v = self.b, self.name, self.v
        b.net.transition(tn, and_(self.accepted(), guard), STEP, W, doc)
        b.arc(self.inbox, tn, "read", self.inbox_terms())
        b.arc(f"{W}.took", tn, "in", [name(v["x"])])
        b.arc(f"{W}.took", tn, "out", [name(v["s"])])
        q = name(v["q"])
        b.arc(f"{W}.q", tn, "in", [q])
        b.arc(f"{W}.q", tn, "out", [binop("+", q, const(1))])
        args = self.args_of()
        b.arc(f"{W}.win", tn, "out", [q, gq if gq is not None else const(0), name(v["t"]),
                                      name(v["n"]), self.key_of(), *args,
                                      *(name(f) for f in self.fields)])
        b.arc(f"{W}.agg", tn, "in", [self.key_of(), *self.agg_terms()[1:]])
        return self.entered("g", self.key_of(), args, q)

    def request(self, tn: str, local: ast.Expr, key: ast.Expr, now: ast.Expr,
                parts: ast.Expr, fields: list[ast.Expr], empty: bool = False,
                mult: ast.Expr | None = None) -> None:
        """A row to output, ordered by the engine's key of what caused it."""
        v = self.v
        okey = call("qkey", name(v["kd"]), name(v["key"]), name(v["s"]), const(self.index),
                    local)
        self.b.arc(f"{self.name}.req", tn, "out",
                   [okey, key, now, parts, const(empty), *fields], mult)

    def arrival_request(self, tn: str) -> None:
        v = self.v
        self.request(tn, const(0), self.key_of(), name(v["t"]), tup(name(v["n"])),
                     [name(f) for f in self.fields])

    def sliding_time(self) -> None:
        """Time window: each event a row at arrival; at ``t + Δ`` the oldest records leave
        (all of one instant in one update: rows per group they touched)."""
        b, W, v, size = self.b, self.name, self.v, self.spec.size
        st = self.enter(f"{W}.enter", None, "an event enters the window")
        b.arc(f"{W}.agg", f"{W}.enter", "out", self.state_terms(st))
        self.arrival_request(f"{W}.enter")
        # time passes: the oldest record leaves at its deadline
        h = name(v["h"])
        deadline = binop("+", name("r.t"), const(size))
        lw = f"{W}.lower"
        b.net.transition(lw, and_(binop("==", name("r.q"), h),
                                  binop("<", deadline, name(v["cand"]))), LOWER, W,
                         "the oldest record's deadline comes before the candidate instant")
        b.arc(f"{W}.head", lw, "read", [h])
        b.arc(f"{W}.win", lw, "read", self.rec_terms())
        b.time_lowering(lw, deadline)
        lv = f"{W}.leave"
        tick = b.tick_terms()
        b.net.transition(lv, and_(binop("==", name(v["st"]), const(b.stage("@windows"))),
                                  binop("==", deadline, name(v["d"])),
                                  binop("==", name("r.q"), h)), STEP, W,
                         "time reached the oldest record's deadline: it leaves")
        b.tick_fired(lv, tick)
        b.arc(f"{W}.head", lv, "in", [h])
        b.arc(f"{W}.head", lv, "out", [binop("+", h, const(1))])
        b.arc(f"{W}.win", lv, "in", self.rec_terms())
        b.arc(f"{W}.agg", lv, "in", [name("r.g"), *self.agg_terms()[1:]])
        args_rec = [name(f"r.a{j}") for j in range(len(self.args))]
        gone = self.left(self.named_state("g"), args_rec)
        gone["g"] = name("r.g")
        b.arc(f"{W}.agg", lv, "out", self.state_terms(gone))
        self.refind(lv, name("r.g"), self.named_state("g"), args_rec)
        if self.plan.mode == "group":
            self.touches(lv)

    def touches(self, lv: str) -> None:
        """Leaving records touch their groups: one row per group, the representative the
        group's first record that left (``W.touch``, merged per group, then requested)."""
        b, W, v = self.b, self.name, self.v
        touch = b.colour_set(f"TOUCH_{W}", [("q", INT), ("g", ANY), ("now", TIME),
                                            *self.fsets])
        b.net.place(f"{W}.touch", touch, "control", W, "groups the leaving records touched")
        b.arc(f"{W}.touch", lv, "out", [name("r.q"), name("r.g"), name(v["d"]),
                                        *(name(f"r.e.{f}") for f in self.fields)])
        one = [name("a.q"), name("a.g"), name("a.now"), *(name(f"a.e.{f}") for f in self.fields)]
        two = [name("b.q"), name("a.g"), name("a.now"), *(name(f"b.e.{f}") for f in self.fields)]
        mg = f"{W}.merge"
        b.net.transition(mg, binop("<", name("a.q"), name("b.q")), STEP, W,
                         "a group touched twice: its first leaving record represents it")
        b.arc(f"{W}.touch", mg, "in", one)
        b.arc(f"{W}.touch", mg, "in", two)
        b.arc(f"{W}.touch", mg, "out", one)
        rq = f"{W}.touched"
        b.net.transition(rq, None, START, W, "a touched group: its row")
        b.arc(f"{W}.touch", rq, "in", one)
        self.b.arc(f"{W}.req", rq, "out", [
            tup(const(self.index), name("a.q"), const(-1), const(0), const(0)), name("a.g"),
            name("a.now"), call("nil"), const(False), *(name(f"a.e.{f}") for f in self.fields)])

    def sliding_length(self) -> None:
        """Length window: the event enters; when the window held ``n`` records the oldest
        (of its group, per group) leaves in the same update."""
        b, W, v, n = self.b, self.name, self.v, int(self.spec.size)
        per_group = self.spec.per_group
        h, cnt, nx = name(v["h"]), name(v["cnt"]), name(v["nx"])
        self.length_place("per group: records held, the oldest's and the next's number in "
                          "the group", "records held")
        args_rec = [name(f"r.a{j}") for j in range(len(self.args))]

        def counter(tn: str, full: bool) -> None:
            if per_group:
                b.arc(f"{W}.len", tn, "in", [self.key_of(), cnt, h, nx])
                b.arc(f"{W}.len", tn, "out", [
                    self.key_of(), cnt if full else binop("+", cnt, const(1)),
                    binop("+", h, const(1)) if full else h, binop("+", nx, const(1))])
            else:
                b.arc(f"{W}.len", tn, "in", [cnt])
                b.arc(f"{W}.len", tn, "out", [cnt if full else binop("+", cnt, const(1))])
                if full:
                    b.arc(f"{W}.head", tn, "in", [h])
                    b.arc(f"{W}.head", tn, "out", [binop("+", h, const(1))])

        gq = nx if per_group else None
        tn = f"{W}.enter"
        st = self.enter(tn, binop("<", cnt, const(n)), "an event enters the window", gq)
        b.arc(f"{W}.agg", tn, "out", self.state_terms(st))
        counter(tn, False)
        self.arrival_request(tn)
        oldest = (binop("==", name("r.gq"), h) if per_group else binop("==", name("r.q"), h))
        # the oldest record is of the same group: one state, entered then left
        tn = f"{W}.push"
        guard, named = self.assign("e", st)
        st2 = self.left(named, args_rec)
        self.enter(tn, and_(binop(">=", cnt, const(n)), oldest,
                            binop("==", name("r.g"), self.key_of()), *guard),
                   "an event enters a full window: its group's oldest record leaves", gq)
        b.arc(f"{W}.win", tn, "in", self.rec_terms())
        b.arc(f"{W}.agg", tn, "out", self.state_terms(st2))
        self.refind(tn, self.key_of(), named, args_rec)
        counter(tn, True)
        self.arrival_request(tn)
        if per_group:
            return
        # the oldest record is of another group: two states change, two rows per group
        tn = f"{W}.push.other"
        self.enter(tn, and_(binop(">=", cnt, const(n)), oldest,
                            binop("!=", name("r.g"), self.key_of())),
                   "an event enters a full window: another group's oldest record leaves", gq)
        b.arc(f"{W}.agg", tn, "out", self.state_terms(st))
        b.arc(f"{W}.win", tn, "in", self.rec_terms())
        b.arc(f"{W}.agg", tn, "in", [name("r.g"), *self.agg_terms("h")[1:]])
        gone = self.left(self.named_state("h"), args_rec)
        gone["g"] = name("r.g")
        b.arc(f"{W}.agg", tn, "out", self.state_terms(gone))
        self.refind(tn, name("r.g"), self.named_state("h"), args_rec)
        counter(tn, True)
        self.arrival_request(tn)
        if self.plan.mode == "group":
            self.request(tn, const(1), name("r.g"), name(v["t"]), tup(name(v["n"])),
                         [name(f"r.e.{f}") for f in self.fields])

    def length_place(self, per_group_doc: str, doc: str) -> None:
        """``W.len``: how many records a length window (batch) holds, per group or in all."""
        b, W = self.b, self.name
        if self.spec.per_group:
            b.net.place(f"{W}.len", b.colour_set(f"LEN_{W}", [
                ("g", ANY), ("cnt", INT), ("head", INT), ("next", INT)]), "control", W,
                per_group_doc)
        else:
            b.net.place(f"{W}.len", INT, "control", W, doc)
            b.net.mark(f"{W}.len", 0)

    def batch(self) -> None:
        """Batch windows: events join the batch silently; at the boundary (time batch) or
        the n-th event (length batch, per group with ``per_group``) the batch closes: its
        rows, then the next batch starts empty."""
        b, W, v = self.b, self.name, self.v
        kind, size = self.spec.kind, self.spec.size
        close_set = b.colour_set(f"CLOSE_{W}", [
            ("cid", INT), ("all", BOOL), ("g", ANY), ("now", TIME), ("parts", PARTS),
            ("kd", INT), ("key", KEY), ("s", INT), ("posted", BOOL)])
        b.net.place(f"{W}.closing", close_set, "control", W, "a batch being closed")
        b.net.place(f"{W}.ncl", INT, "control", W, "the number of the next close")
        b.net.mark(f"{W}.ncl", 1)
        cid = name(v["cid"])
        cg = [cid, name(v["all"]), name(v["cg"]), name(v["now"]), name(v["parts"]),
              name(v["kd"]), name(v["key"]), name(v["s"]), name(v["posted"])]
        prev_set = b.colour_set(f"PREV_{W}", [("cid", INT), ("g", ANY), ("q", INT),
                                              *self.fsets])
        if not self.spec.per_group:
            b.net.place(f"{W}.prev", prev_set, "control", W,
                        "the groups of the batch closed by close number cid (count-0 rows "
                        "at the next close when they have no event then)")

        def numbered(tn: str) -> None:
            b.arc(f"{W}.ncl", tn, "in", [cid])
            b.arc(f"{W}.ncl", tn, "out", [binop("+", cid, const(1))])
        cur, prev, r, k = (name(v[x]) for x in ("cur", "prev", "r", "k"))
        if kind == "time_batch":
            ref = self.spec.reference_point
            b.net.place(f"{W}.tb", b.colour_set(f"TB_{W}", [
                ("r", TIME), ("k", INT), ("cur", INT), ("prev", INT)]), "control", W,
                "reference point, the next boundary's index (-1: none), events in this batch "
                "and in the previous one")
            b.net.mark(f"{W}.tb", (ref, -1, 0, 0))
            tn = f"{W}.enter"
            st = self.enter(tn, None, "an event joins the batch")
            b.arc(f"{W}.agg", tn, "out", self.state_terms(st))
            r2 = name(b.var("r2"))
            ref2 = call("cond", and_(binop("==", cur, const(0)), _null_eq(r)), name(v["t"]), r)
            b.net.transitions[tn].guard = and_(b.net.transitions[tn].guard,
                                               binop("==", r2, ref2))
            b.arc(f"{W}.tb", tn, "in", [r, k, cur, prev])
            b.arc(f"{W}.tb", tn, "out", [
                r2, call("cond", and_(binop("==", cur, const(0)), binop("<", k, const(0))),
                         call("bindex", r2, const(size), name(v["t"])), k),
                binop("+", cur, const(1)), prev])
            boundary = binop("+", r, binop("*", k, const(size)))
            lw = f"{W}.lower"
            b.net.transition(lw, and_(binop(">=", k, const(0)),
                                      binop("<", boundary, name(v["cand"]))), LOWER, W,
                             "the batch's boundary comes before the candidate instant")
            b.arc(f"{W}.tb", lw, "read", [r, k, cur, prev])
            b.time_lowering(lw, boundary)
            cl = f"{W}.close"
            tick = b.tick_terms()
            b.net.transition(cl, and_(binop("==", name(v["st"]), const(b.stage("@windows"))),
                                      binop(">=", k, const(0)),
                                      binop("==", boundary, name(v["d"]))), STEP, W,
                             "time reached the batch's boundary: it closes")
            b.tick_fired(cl, tick)
            posted = or_(binop(">", cur, const(0)), binop(">", prev, const(0)))
            b.arc(f"{W}.tb", cl, "in", [r, k, cur, prev])
            b.arc(f"{W}.tb", cl, "out", [r, call("cond", posted, binop("+", k, const(1)),
                                                 const(-1)), const(0), cur])
            numbered(cl)
            b.arc(f"{W}.closing", cl, "out", [
                cid, const(True), const(None), name(v["d"]), call("nil"), const(0),
                tup(*[const(0)] * 5), const(0), posted])
        else:
            n = int(self.spec.size)
            per_group = self.spec.per_group
            self.length_place("per group: events in its batch", "events in the batch")
            cnt, h, nx = name(v["cnt"]), name(v["h"]), name(v["nx"])
            for full in (False, True):
                tn = f"{W}.enter.close" if full else f"{W}.enter"
                cond = binop("==" if full else "<", binop("+", cnt, const(1)), const(n))
                st = self.enter(tn, cond, "the batch's n-th event: it closes" if full
                                else "an event joins the batch")
                b.arc(f"{W}.agg", tn, "out", self.state_terms(st))
                new = const(0) if full else binop("+", cnt, const(1))
                if per_group:  # (a closing group's count goes with its state: W.group)
                    b.arc(f"{W}.len", tn, "in", [self.key_of(), cnt, h, nx])
                    if not full:
                        b.arc(f"{W}.len", tn, "out", [self.key_of(), new, h, nx])
                else:
                    b.arc(f"{W}.len", tn, "in", [cnt])
                    b.arc(f"{W}.len", tn, "out", [new])
                if full:
                    numbered(tn)
                    b.arc(f"{W}.closing", tn, "out", [
                        cid, const(not per_group), self.key_of(), name(v["t"]),
                        tup(name(v["n"])), name(v["kd"]), name(v["key"]), name(v["s"]),
                        const(True)])
        self.close_batch(cg)

    def close_batch(self, cg: list[ast.Expr]) -> None:
        """What a closing batch outputs and forgets (docs/windows.md, "Query kinds")."""
        b, W, v = self.b, self.name, self.v
        mine = or_(name(v["all"]), binop("==", name(v["cg"]), name("r.g")))
        mine_g = or_(name(v["all"]), binop("==", name(v["cg"]), name("g.g")))
        posted = name(v["posted"])
        local = name("r.q")
        if self.plan.mode == "group":
            # one row per group of the batch, its first record representing it
            tn = f"{W}.batchrow"
            # (each group once: its first record is marked as asked for, gq -1)
            b.net.transition(tn, and_(posted, mine_g, binop("==", name("r.q"), name("g.fq")),
                                      binop(">=", name("r.gq"), const(0))), START, W,
                             "a group of the closing batch: its row")
            b.arc(f"{W}.closing", tn, "read", cg)
            b.arc(f"{W}.agg", tn, "read", self.agg_terms())
            b.arc(f"{W}.win", tn, "in", self.rec_terms())
            b.arc(f"{W}.win", tn, "out", [*self.rec_terms()[:1], const(-1),
                                          *self.rec_terms()[2:]])
            self.closing_request(tn, local, name("r.g"), [name(f"r.e.{f}") for f in self.fields])
            if not self.spec.per_group:
                b.arc(f"{W}.prev", tn, "out", [name(v["cid"]), name("r.g"), name("r.q"),
                                               *(name(f"r.e.{f}") for f in self.fields)])
                # the previous batch's groups: gone if still there, else a count-0 row
                pterms = [name("p.cid"), name("p.g"), name("p.q"),
                          *(name(f"p.e.{f}") for f in self.fields)]
                before = binop("<", name("p.cid"), name(v["cid"]))
                pc = f"{W}.prev.kept"
                b.net.transition(pc, and_(posted, before), BUSY, W,
                                 "a previous group has events now")
                b.arc(f"{W}.closing", pc, "read", cg)
                b.arc(f"{W}.prev", pc, "in", pterms)
                b.arc(f"{W}.agg", pc, "read", [name("p.g"), *self.agg_terms()[1:]])
                po = f"{W}.prev.gone"
                b.net.transition(po, and_(posted, before), START, W,
                                 "a previous group has no event now: its count-0 row")
                b.arc(f"{W}.closing", po, "read", cg)
                b.arc(f"{W}.prev", po, "in", pterms)
                self.closing_request(po, binop("+", name("p.q"), const(_AFTER)), name("p.g"),
                                     [name(f"p.e.{f}") for f in self.fields], empty=True)
        else:
            tn = f"{W}.batchrow"
            b.net.transition(tn, and_(posted, mine, binop(">=", name("r.gq"), const(0))),
                             START, W, "an event of the closing batch: its row")
            b.arc(f"{W}.closing", tn, "read", cg)
            b.arc(f"{W}.win", tn, "in", self.rec_terms())
            b.arc(f"{W}.win", tn, "out", [*self.rec_terms()[:1], const(-1),
                                          *self.rec_terms()[2:]])
            self.closing_request(tn, local, name("r.g"), [name(f"r.e.{f}") for f in self.fields])
        # then the batch is forgotten
        ca = f"{W}.clear.agg"
        b.net.transition(ca, mine_g, CLEAR, W, "the closed batch's aggregates are forgotten")
        b.arc(f"{W}.closing", ca, "read", cg)
        b.arc(f"{W}.agg", ca, "in", self.agg_terms())
        cr = f"{W}.clear.win"
        b.net.transition(cr, mine, CLEAR, W, "the closed batch's events are forgotten")
        b.arc(f"{W}.closing", cr, "read", cg)
        b.arc(f"{W}.win", cr, "in", self.rec_terms())
        dn = f"{W}.closed"
        b.net.transition(dn, None, PASS, W, "the batch is closed")
        b.arc(f"{W}.closing", dn, "in", cg)

    def closing_request(self, tn: str, local: ast.Expr, key: ast.Expr,
                        fields: list[ast.Expr], empty: bool = False) -> None:
        v = self.v
        okey = call("qkey", name(v["kd"]), name(v["key"]), name(v["s"]), const(self.index),
                    local)
        self.b.arc(f"{self.name}.req", tn, "out",
                   [okey, key, name(v["now"]), name(v["parts"]), const(empty), *fields])

    def minmax(self) -> None:
        """A sliding window's minimum (maximum) that left is found again: while its group is
        on ``W.refind``, ``W.min<j>`` / ``W.max<j>`` (P_HIGH) lower (raise) it to any smaller
        (larger) value a record of the group holds; then ``W.refound`` takes the group off.
        (Arrivals keep the extremes themselves, and a batch is cleared as a whole: a batch
        window needs neither.)"""
        b, W = self.b, self.name
        if self.spec.kind not in ("time", "length") or not any(
                fs & {"min", "max"} for fs in self.funcs):
            return
        b.net.place(f"{W}.refind", ANY, "control", W,
                    "groups whose minimum or maximum left: found again among what stays")
        for j, fs in enumerate(self.funcs):
            for fn, op, slot in (("min", "<", f"lo{j}"), ("max", ">", f"hi{j}")):
                if fn not in fs:
                    continue
                tn = f"{W}.{fn}{j}"
                a = name(f"r.a{j}")
                cur = name(f"g.{slot}")
                b.net.transition(tn, and_(not_(_null_eq(a)),
                                          or_(_null_eq(cur), binop(op, a, cur))),
                                 LOWER, W, "a record holds a " + (
                                     "smaller" if fn == "min" else "larger") + " value")
                b.arc(f"{W}.refind", tn, "read", [name("r.g")])
                b.arc(f"{W}.win", tn, "read", self.rec_terms())
                terms = self.agg_terms()
                terms[0] = name("r.g")
                b.arc(f"{W}.agg", tn, "in", terms)
                out = list(terms)
                out[self.agg_names.index(slot)] = a
                b.arc(f"{W}.agg", tn, "out", out)
        tn = f"{W}.refound"
        b.net.transition(tn, None, STEP, W, "the group's extremes are found again")
        b.arc(f"{W}.refind", tn, "in", [name("r.g")])

    def rows(self) -> None:
        """``W.row``: the rows asked for, in order, with the aggregates after the update."""
        b, W, v = self.b, self.name, self.v
        req = [name(v["okey"]), name("g.g"), name(v["now"]), name(v["parts"]),
               name(v["empty"]), *(name(f"p.e.{f}") for f in self.fields)]
        b.ordered(f"{W}.rows", f"{W}.req", req, name(v["okey"]))
        pf = {f: name(f"p.e.{f}") for f in self.fields}
        for empty in (False, True):
            tn = f"{W}.row" + (".empty" if empty else "")
            aggs = self.aggregate_values(None if empty else "g")
            select = [self.over(self.prep(it.expr), pf, aggs, name(v["now"]))
                      for it in self.statement.select]
            having = (self.over(self.prep(self.statement.having), pf, aggs, name(v["now"]))
                      if self.statement.having is not None else None)
            hv = name(b.var("h_ok"))
            guard = and_(binop("==", name(v["empty"]), const(empty)),
                         binop("==", hv, call("cond", having, const(1), const(0)))
                         if having is not None else None)
            b.net.transition(tn, guard, EMIT, W,
                             "a row of a group with no event" if empty else "an output row")
            b.arc(f"{W}.req", tn, "in", req)
            b.in_order(f"{W}.rows", tn, name(v["okey"]))
            if not empty:
                b.arc(f"{W}.agg", tn, "read", self.agg_terms())
            if having is None:
                b.emit_output(tn, W, select, name(v["now"]), name(v["okey"]), name(v["parts"]))
            else:
                self.emit_if(tn, select, hv)
        if self.spec.kind in ("time", "length"):
            dr = f"{W}.drop"
            b.net.transition(dr, binop("==", name("g.N"), const(0)), CLEAR, W,
                             "a group with no event left is forgotten")
            b.arc(f"{W}.agg", dr, "in", self.agg_terms())

    def emit_if(self, tn: str, select: list[ast.Expr], ok: ast.Expr) -> None:
        """emit_output, when ``having`` holds (``ok`` is 1, else 0 and nothing is output)."""
        b, v, W = self.b, self.v, self.name
        dn = name(b.var("dn"))
        b.arc("stream.dn", tn, "in", [dn])
        b.arc("stream.dn", tn, "out", [binop("+", dn, ok)])
        b.arc(W, tn, "out", [dn, name(v["now"]), *select, name(v["parts"])], ok)
        if b.readers.get(W):
            b.arc(b.queues[W], tn, "out", [name(v["okey"]), dn, name(v["now"]), *select], ok)
        b.activate(tn, W, dn, ok)

    def aggregate_values(self, p: str | None) -> dict[int, ast.Expr]:
        """Each aggregate slot's value from group state ``p`` (None: a group with no event:
        count 0, every other aggregate null)."""
        out: dict[int, ast.Expr] = {}
        for k, sl in enumerate(self.plan.slots):
            if p is None:
                out[k] = const(0) if sl.func == "count" else const(None)
                continue
            j = sl.arg_index
            if sl.arg is None:
                out[k] = name(f"{p}.N")
            elif sl.func == "count":
                out[k] = name(f"{p}.c{j}")
            elif sl.func == "sum":
                out[k] = call("cond", binop(">", name(f"{p}.c{j}"), const(0)),
                              name(f"{p}.s{j}"), const(None))
            elif sl.func == "avg":
                out[k] = call("cond", binop(">", name(f"{p}.c{j}"), const(0)),
                              binop("/", name(f"{p}.s{j}"), name(f"{p}.c{j}")), const(None))
            else:
                out[k] = name(f"{p}.{'lo' if sl.func == 'min' else 'hi'}{j}")
        return out


__all__ = ["WindowNet"]
