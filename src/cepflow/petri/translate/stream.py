"""The stream subnet: event capture, time, dispatch and the queue of complex events
(docs/petri.md, "The stream").

* **Event capture** (004 §III.A): a place per input event type, named as the type, whose tokens
  are the input events ``(n, t, fields…)`` — their number in the stream (from 1) and time
  first, as 004 colours them (timestamps in colours, not timed tokens: 003 §VI, 004 §III.A).
* **Time.** ``stream.next`` holds the number of the next input event (004's ``in_seqn``).
  ``stream.peek.T`` reads its time ``nts``; before the event, every timer due at or before
  ``nts`` fires in time order (Esper's timers come before the events of their instant,
  docs/esper.md): the candidate instant in ``stream.time`` starts at ``nts`` and each timed
  component's ``lower`` transitions lower it to an earlier deadline (P_HIGH); then
  ``stream.tick`` visits the components' stages at that instant — stage 0 every window
  statement, then each pattern with timers — and ``stream.again`` looks for the next instant
  when some timer fired. When none fired at ``nts``, ``stream.read.T`` dispatches the event.
  At the end of the input ``stream.end`` stops, or with ``close_windows`` lets time run out.
* **Dispatch.** An event goes to its readers one after another — the patterns that read its
  type, then the statements, in the engine's order — through their inbox places; each
  reader's ``pass`` transition (below every processing level) hands it on. An event carries
  its dispatch number ``s``, which orders everything that happens.
* **The queue.** Complex events a component outputs go to ``queue.X``, keyed as the engine
  delivers them (each output of an input event or a timer is a root; a root's consequences
  come before the next root, breadth first — ``qkey``); ``queue.pick/lower/pop`` dispatch the
  smallest key when nothing else is going on, before the stream goes on.
"""

from __future__ import annotations

from cepflow.events.event import Event
from cepflow.petri.colours import BOOL, INT, UNIT
from cepflow.petri.translate.net_builder import (
    CONTROL,
    KEY,
    LOWER,
    PASS,
    POP,
    TIME,
    Builder,
    and_,
    binop,
    call,
    const,
    name,
    not_,
    tup,
)

PAGE = "stream"


def build_stream(b: Builder, events: list[Event], close_windows: bool) -> None:
    """The stream subnet for ``events`` (in stream order), after every component subscribed."""
    net = b.net
    v = {k: b.var(k) for k in ("n", "nts", "cand", "d", "f", "st", "s", "key", "tt", "dn")}
    n, nts, cand, d, f, st = (name(v[k]) for k in ("n", "nts", "cand", "d", "f", "st"))
    s, tt = name(v["s"]), name(v["tt"])
    time_set = b.colour_set("TIMECTL", [("n", INT), ("nts", TIME), ("cand", TIME)])
    tick_set = b.colour_set("TICK", [("n", INT), ("nts", TIME), ("d", TIME), ("f", BOOL),
                                     ("st", INT)])
    net.place("stream.next", INT, "control", PAGE, "the number of the next input event")
    net.mark("stream.next", 1)
    net.place("stream.time", time_set, "control", PAGE,
              "before event n at nts: the earliest instant a timer is due (candidate)")
    net.place("stream.tick", tick_set, "control", PAGE,
              "time is at instant d: timers of stage st fire (f: some fired)")
    net.place("stream.busy", INT, "control", PAGE, "input event n is being processed")
    net.place("stream.stop", INT, "control", PAGE, "the input has ended")
    net.place("stream.s", INT, "control", PAGE, "the next dispatch number")
    net.mark("stream.s", 1)
    net.place("stream.dn", INT, "control", PAGE, "the number of the next complex event")
    net.mark("stream.dn", len(events) + 1)
    # event capture places, marked with the input
    types = sorted({e.type for e in events} | {t for t in b.inboxes
                                               if t not in b.complex_places})
    for t in types:
        b.net.place(t, b.colour_set(f"EV_{t}", [("n", INT), ("t", TIME),
                                                *b.event_fields(t)]),
                    "event", PAGE, f"the input events of type {t}")
    for k, e in enumerate(events, start=1):
        net.mark(e.type, (k, e.ts, *e.params))
    last = max(b.stages.values(), default=-1) + 1  # the stage after every component's
    for t in types:
        fields = [name(x) for x in b.schema(t).param_names]
        pk = f"stream.peek.{t}"
        net.transition(pk, None, CONTROL, PAGE, f"the next input event is a {t}: its time")
        b.arc("stream.next", pk, "in", [n])
        b.arc(t, pk, "read", [n, tt, *fields])
        b.arc("stream.time", pk, "out", [n, tt, tt])
        rd = f"stream.read.{t}"
        net.transition(rd, and_(binop("==", st, const(last)), not_(f),
                                binop("==", d, nts)), CONTROL, PAGE,
                       f"no timer is due before it: the {t} event goes to its readers")
        b.arc("stream.tick", rd, "in", [n, nts, d, f, st])
        b.arc(t, rd, "in", [n, nts, *fields])
        b.arc("stream.busy", rd, "out", [n])
        b.activate(rd, t, n)
        inboxes = b.inboxes.get(t, [])
        if inboxes:
            b.arc("stream.s", rd, "in", [s])
            b.arc("stream.s", rd, "out", [binop("+", s, const(1))])
            b.arc(inboxes[0], rd, "out", [s, n, nts, const(0), tup(*[const(0)] * 5), *fields])
    end = "stream.end"
    net.transition(end, binop(">", n, const(len(events))), CONTROL, PAGE,
                   "the input has ended" + (": time runs out" if close_windows else ""))
    b.arc("stream.next", end, "in", [n])
    if close_windows:
        b.arc("stream.time", end, "out", [n, call("inf"), call("inf")])
    else:
        b.arc("stream.stop", end, "out", [n])
    net.transition("stream.instant", None, CONTROL, PAGE, "time reaches the candidate instant")
    b.arc("stream.time", "stream.instant", "in", [n, nts, cand])
    b.arc("stream.tick", "stream.instant", "out", [n, nts, cand, const(False), const(0)])
    net.transition("stream.advance", binop("<", st, const(last)), CONTROL, PAGE,
                   "the next component's timers at this instant")
    b.arc("stream.tick", "stream.advance", "in", [n, nts, d, f, st])
    b.arc("stream.tick", "stream.advance", "out", [n, nts, d, f, binop("+", st, const(1))])
    net.transition("stream.again", and_(binop("==", st, const(last)), f), CONTROL, PAGE,
                   "a timer fired: look for the next instant again")
    b.arc("stream.tick", "stream.again", "in", [n, nts, d, f, st])
    b.arc("stream.time", "stream.again", "out", [n, nts, nts])
    net.transition("stream.halt", and_(binop("==", st, const(last)), not_(f),
                                       binop("==", d, call("inf"))), CONTROL, PAGE,
                   "time has run out")
    b.arc("stream.tick", "stream.halt", "in", [n, nts, d, f, st])
    b.arc("stream.stop", "stream.halt", "out", [n])
    net.transition("stream.done", None, CONTROL, PAGE,
                   "the event and all it caused are processed: the next one")
    b.arc("stream.busy", "stream.done", "in", [n])
    b.arc("stream.next", "stream.done", "out", [binop("+", n, const(1))])
    _passes(b)
    _queues(b, v)
    _rules(b)


def _rules(b: Builder) -> None:
    """004 §III's actions: a transition per rule, firing once per event that triggers it
    (its type is one the rule is on); ``R.fired`` keeps the numbers of those events. The
    action itself — a Python callable — is not run by the net."""
    n = name(b.var("n"))
    for rule in b.program.rules:
        page = f"rule {rule.name}"
        b.net.place(f"{rule.name}.todo", INT, "control", page,
                    f"events that trigger rule {rule.name}")
        b.net.place(f"{rule.name}.fired", INT, "action", page,
                    f"the events rule {rule.name} fired for (action "
                    f"{rule.action or rule.opaque_action or 'none'})")
        tn = rule.name
        b.net.transition(tn, None, PASS, page, f"rule {rule.name} fires its action")
        b.arc(f"{rule.name}.todo", tn, "in", [n])
        b.arc(f"{rule.name}.fired", tn, "out", [n])


def _passes(b: Builder) -> None:
    """Each reader hands the event on to the next one (below every processing level)."""
    for t, inboxes in b.inboxes.items():
        terms = [name(b.var(x)) for x in ("s", "n", "t", "kd", "key")] + [
            name(x) for x in b.schema(t).param_names]
        for k, ib in enumerate(inboxes):
            tn = f"{ib}.pass"
            nxt = inboxes[k + 1] if k + 1 < len(inboxes) else None
            page = b.net.places[ib].page
            b.net.transition(tn, None, PASS, page,
                             f"done with the event: on to {nxt}" if nxt else "done with the event")
            b.arc(ib, tn, "in", terms)
            if ib in b.pass_also:
                b.arc(b.pass_also[ib], tn, "in", terms)
            if nxt is not None:
                b.arc(nxt, tn, "out", terms)


def _queues(b: Builder, v: dict[str, str]) -> None:
    """The queue of complex events waiting to be dispatched, smallest key first."""
    if not b.queues:
        return
    net = b.net
    net.place("stream.qidle", UNIT, "control", PAGE, "no queued event being chosen")
    net.mark("stream.qidle", ())
    net.place("stream.qcand", KEY, "control", PAGE, "the smallest key seen so far")
    s, key, k2, dn = (name(b.var(x)) for x in ("s", "key", "key2", "dn"))
    t = name(b.var("t"))
    for x, q in b.queues.items():
        params = [name(p) for p in b.schema(x).param_names]
        item = [key, dn, t, *params]
        pk = f"queue.pick.{x}"
        net.transition(pk, None, POP, PAGE, f"a queued {x}: start looking for the smallest key")
        b.arc("stream.qidle", pk, "in", [call("unit")])
        b.arc(q, pk, "read", item)
        b.arc("stream.qcand", pk, "out", [key])
        lw = f"queue.lower.{x}"
        net.transition(lw, binop("<", key, k2), LOWER, PAGE, f"a queued {x} with a smaller key")
        b.arc("stream.qcand", lw, "in", [k2])
        b.arc(q, lw, "read", item)
        b.arc("stream.qcand", lw, "out", [key])
        pp = f"queue.pop.{x}"
        net.transition(pp, None, POP, PAGE, f"the {x} with the smallest key goes to its readers")
        b.arc("stream.qcand", pp, "in", [key])
        b.arc(q, pp, "in", item)
        b.arc("stream.s", pp, "in", [s])
        b.arc("stream.s", pp, "out", [binop("+", s, const(1))])
        b.arc("stream.qidle", pp, "out", [call("unit")])
        b.arc(b.inboxes[x][0], pp, "out", [s, dn, t, const(1), key, *params])
