"""An interpreter of Esper's pattern state tree, written from the definitions of its state nodes
(EvalFilterStateNode, EvalEveryStateNode with its spawn evaluator, EvalAndStateNode,
EvalOrStateNode, EvalFollowedByStateNode, EvalNotStateNode, EvalGuardStateNode with
TimerWithinGuard, EvalObserverStateNode with TimerIntervalObserver, EvalRootStateNode): the
oracle of the random-pattern conformance test (test_esper_random_patterns.py).

A pattern is a tuple:

* ``("atom", tag, type, filter)`` — an event of ``type`` passing ``FILTERS[filter]`` on its
  first field ``k``, or ``"k = oN.k"``: equal to the ``k`` of the event tag ``oN`` holds (false
  when ``oN`` is unbound: Esper's null); ``tag`` is ``oN`` (its ``v`` is selected) or None;
* ``("every", p)``, ``("not", p)``, ``("guard", ms, p)`` (``p where timer:within(ms msec)``),
  ``("interval", ms)`` (``timer:interval(ms msec)``);
* ``("and" | "or" | "->", [p, …])``;
* ``("until", lo, hi, p, q)`` — ``[lo:hi] p until q`` (EvalMatchUntilStateNode; ``lo`` /
  ``hi`` None where not written, ``q`` None for ``[n] p``: ``lo = hi = n``); the atoms of
  ``p`` carry no tag (a tag there is an array in Esper, ``o[k]`` in cepflow);
* ``("distinct", tag, p[, ms])`` — ``every-distinct(tag.k[, ms msec]) p``
  (EvalEveryDistinctStateNode; with ``ms``, EvalEveryDistinctStateExpireKeyNode: a key is
  seen for ``ms`` after the result that first reported it);
* ``("guardmax", ms, n, p)`` — ``p where timer:withinmax(ms msec, n)``
  (TimerWithinOrMaxCountGuard: the guard passes ``n`` results, the next ends it);
* ``("->", [p, …], [n | None, …])`` — ``p -[n]> q …`` (EvalFollowedByWithMaxStateNodeManaged:
  at most ``n`` right-hand sides of that arrow under way);
* ``("at", seconds)`` — ``timer:at(*, *, *, *, *, [s, …])`` (TimerAtObserver over a sorted
  tuple of seconds of the minute; ``()`` for ``*``): due at the first whole second of the
  schedule at least one second after its start truncated to the second, plus the start's
  milliseconds (ScheduleComputeHelper's computeNextOccurance).

The clock is Esper's external one stepped through each timer (cepflow's documented reading:
docs/conformance.md, "every timer:interval(Δ) under a clock that jumps"): a timer fires at its
own instant, before the events of that instant, and what it starts starts then. An event goes
to the filters active when it arrives, in the order they started — those of a ``not`` first
(cepflow's documented "the ending wins a tie"); a filter started while it is dispatched does
not see it.
"""

from __future__ import annotations

import heapq
from typing import Any

from cepflow.events.event import Event

#: the filters an atom may carry, over the event's first field ``k``
FILTERS = {"": lambda k: True, "k = 0": lambda k: k == 0, "k > 0": lambda k: k > 0}

Pattern = tuple
Binding = dict[str, int]


def text(p: Pattern) -> str:
    """The EPL text of ``p`` (every composite operand in parentheses)."""
    kind = p[0]
    if kind == "atom":
        _, tag, typ, f = p
        return f"{tag}={typ}({f})" if tag else f"{typ}({f})"
    if kind == "interval":
        return f"timer:interval({p[1]} msec)"
    if kind == "at":
        seconds = f"[{', '.join(map(str, p[1]))}]" if p[1] else "*"
        return f"timer:at(*, *, *, *, *, {seconds})"
    if kind in ("every", "not"):
        return f"{kind} {_operand(p[1])}"
    if kind == "guard":
        return f"{_operand(p[2])} where timer:within({p[1]} msec)"
    if kind == "until":
        _, lo, hi, sub, end = p
        if end is None:
            return f"[{lo}] {_operand(sub)}"
        bounds = "" if lo is None and hi is None else (
            f"[{'' if lo is None else lo}:{'' if hi is None else hi}] ")
        return f"{bounds}{_operand(sub)} until {_operand(end)}"
    if kind == "distinct":
        expiry = f", {p[3]} msec" if len(p) > 3 else ""
        return f"every-distinct({p[1]}.k{expiry}) {_operand(p[2])}"
    if kind == "guardmax":
        return f"{_operand(p[3])} where timer:withinmax({p[1]} msec, {p[2]})"
    if kind == "->" and len(p) > 2:
        out = _operand(p[1][0])
        for o, n in zip(p[1][1:], p[2], strict=True):
            out += f" -[{n}]> " if n is not None else " -> "
            out += _operand(o)
        return out
    return f" {kind} ".join(_operand(o) for o in p[1])


def _operand(p: Pattern) -> str:
    return text(p) if p[0] in ("atom", "interval", "at") else f"({text(p)})"


def tags(p: Pattern) -> list[str]:
    """The tags of ``p`` outside ``not``, in writing order."""
    if p[0] == "atom":
        return [p[1]] if p[1] else []
    if p[0] in ("not", "interval", "at"):
        return []
    if p[0] == "distinct":
        return tags(p[2])
    if p[0] in ("every", "guard", "guardmax"):
        return tags(p[-1])
    if p[0] == "until":
        return [] if p[4] is None else tags(p[4])
    return [t for o in p[1] for t in tags(o)]


class _Tree:
    """One statement's pattern: the filters in the order they started, the timers, the clock,
    the results."""

    def __init__(self) -> None:
        self.filters: list[_Filter] = []
        self.timers: list[tuple[float, int, Any]] = []
        self.seq = 0
        self.now = 0.0
        self.results: list[tuple[float, Binding]] = []
        self.events: list[Event] = []

    def schedule(self, at: float, node: Any) -> int:
        self.seq += 1
        heapq.heappush(self.timers, (at, self.seq, node))
        return self.seq


class _Node:
    is_not = False
    is_filter = False
    nonquitting = False  # isFilterChildNonQuitting: a filter under it stays active
    restarts = True  # not isObserverStateNodeNonRestarting

    def __init__(self, tree: _Tree, parent: Any, p: Pattern) -> None:
        self.tree, self.parent, self.p = tree, parent, p

    def start(self, begin: Binding) -> None:
        raise NotImplementedError

    def quit(self) -> None:
        raise NotImplementedError

    def true(self, b: Binding, node: _Node, quitted: bool) -> None:
        raise NotImplementedError

    def false(self, node: _Node, restartable: bool) -> None:
        raise NotImplementedError


def _new(tree: _Tree, parent: Any, p: Pattern) -> _Node:
    kinds = {"atom": _Filter, "every": _Every, "and": _And, "or": _Or, "->": _FollowedBy,
             "not": _Not, "guard": _Guard, "interval": _Interval, "until": _Until,
             "distinct": _Distinct, "guardmax": _GuardMax, "at": _At}
    return kinds[p[0]](tree, parent, p)


class _Filter(_Node):
    is_filter = True

    def start(self, begin: Binding) -> None:
        self.begin, self.started = begin, True
        self.tree.filters.append(self)

    def quit(self) -> None:
        self.started = False

    def match(self, e: Event, x: int) -> None:
        _, tag, typ, f = self.p
        if not self.started or e.type != typ or not self._passes(f, e):
            return
        b = {**self.begin, tag: x} if tag else dict(self.begin)
        quitted = not self.parent.nonquitting
        if quitted:
            self.started = False
        self.parent.true(b, self, quitted)


    def _passes(self, f: str, e: Event) -> bool:
        if f.startswith("k = o"):
            other = self.begin.get(f.removeprefix("k = ").removesuffix(".k"))
            return other is not None and self.tree.events[other].params[0] == e.params[0]
        return bool(FILTERS[f](e.params[0]))


class _Interval(_Node):
    def start(self, begin: Binding) -> None:
        self.begin, self.slot = begin, None
        if self.p[1] <= 0:
            self.parent.true(begin, self, True)
        else:
            self.slot = self.tree.schedule(self.tree.now + self.p[1], self)

    def fire(self) -> None:
        self.slot = None
        self.parent.true(self.begin, self, True)

    def quit(self) -> None:
        self.slot = None


class _At(_Interval):
    """TimerAtObserver: one schedule instant after its start (``("at", seconds)``)."""

    def start(self, begin: Binding) -> None:
        self.begin = begin
        self.slot = self.tree.schedule(next_at(self.p[1], self.tree.now), self)


def next_at(seconds: tuple[int, ...], now: float) -> float:
    """The instant ``timer:at(*, *, *, *, *, seconds)`` started at ``now`` fires."""
    whole, ms = divmod(now, 1000)
    t = whole + 1
    while seconds and t % 60 not in seconds:
        t += 1
    return t * 1000 + ms


class _SpawnEvaluator:
    """EvalEveryStateSpawnEvaluator: catches a child that turns true or false while it starts
    (a ``not``), which every then quits."""
    nonquitting = True
    is_not = False

    def __init__(self) -> None:
        self.seen = False

    def true(self, b: Binding, node: _Node, quitted: bool) -> None:
        self.seen = True

    def false(self, node: _Node, restartable: bool) -> None:
        self.seen = True


def _spawned(every: Any, p: Pattern) -> _Node | None:
    """A child of ``p`` an every node starts from its begin state under a spawn evaluator:
    None when it turned true or false as it started (then quit), else the child, reporting to
    ``every`` from now on."""
    spawn = _SpawnEvaluator()
    child = _new(every.tree, spawn, p)
    child.start(every.begin)
    if spawn.seen:
        child.quit()
        return None
    child.parent = every
    return child


class _Every(_Node):
    nonquitting = True

    def start(self, begin: Binding) -> None:
        self.begin = dict(begin)
        self.spawned: list[_Node] = []
        spawn = _SpawnEvaluator()
        child = _new(self.tree, spawn, self.p[1])
        self.spawned.append(child)
        child.start(self.begin)
        if spawn.seen:
            child.quit()
        else:
            child.parent = self

    def _spawn(self) -> None:
        child = _spawned(self, self.p[1])
        if child is not None:
            self.spawned.append(child)

    def false(self, node: _Node, restartable: bool) -> None:
        node.quit()
        if node in self.spawned:
            self.spawned.remove(node)
        if not restartable:
            self.parent.false(self, False)
            return
        self._spawn()

    def true(self, b: Binding, node: _Node, quitted: bool) -> None:
        if quitted and node in self.spawned:
            self.spawned.remove(node)
        if not (node.is_filter or not node.restarts):
            self._spawn()
        self.parent.true(b, self, False)

    def quit(self) -> None:
        for c in self.spawned:
            c.quit()


class _Distinct(_Node):
    """EvalEveryDistinctStateNode: as every, each spawned child with the keys its
    predecessors reported (a child that turned false spawns one with none). With an expiry
    (EvalEveryDistinctStateExpireKeyNode) each key holds the instant it stops being seen (its
    first result's time + the expiry: a key seen again keeps it); at a result the node's
    keys are cleaned in the order they were added, up to the first not yet expired."""
    nonquitting = True

    def start(self, begin: Binding) -> None:
        self.begin = dict(begin)
        self.keys: dict[int, tuple[_Node, dict]] = {}
        self._spawn({})

    def _spawn(self, keys: dict) -> None:
        child = _spawned(self, self.p[2])
        if child is not None:
            self.keys[id(child)] = (child, keys)

    def false(self, node: _Node, restartable: bool) -> None:
        node.quit()
        self.keys.pop(id(node), None)
        self._spawn({})

    def true(self, b: Binding, node: _Node, quitted: bool) -> None:
        x = b.get(self.p[1])
        key = None if x is None else self.tree.events[x].params[0]
        seen = False
        entry = self.keys.get(id(node))
        if entry is not None:
            keys = entry[1]
            for k, until in list(keys.items()):
                if self.tree.now < until:
                    break
                del keys[k]
            seen = key in keys
            if not seen:
                keys[key] = self.tree.now + self.p[3] if len(self.p) > 3 else _INF
        if quitted:
            self.keys.pop(id(node), None)
        if not node.is_filter:
            self._spawn({} if entry is None else dict(entry[1]))
        if not seen:
            self.parent.true(b, self, False)

    def quit(self) -> None:
        for child, _ in list(self.keys.values()):
            child.quit()


_INF = float("inf")


class _Until(_Node):
    """EvalMatchUntilStateNode: the until child starts first, then the repeated one; each
    result of the repeated one counts (a filter under it stays started), and it restarts
    from the begin state while the upper bound allows; the until child's result ends it —
    false below the lower bound. ``[n] p``: true at the n-th result."""
    nonquitting = True

    def start(self, begin: Binding) -> None:
        _, self.lo, self.hi, sub, end = self.p
        self.begin, self.count = begin, 0
        self.matcher: _Node | None = _new(self.tree, self, sub)
        self.until: _Node | None = None if end is None else _new(self.tree, self, end)
        if self.until is not None:
            self.until.start(begin)
        if self.matcher is not None:
            self.matcher.start(begin)

    def true(self, b: Binding, node: _Node, quitted: bool) -> None:
        repeated = node is self.matcher
        if repeated:
            self.count += 1
        if quitted:
            if repeated:
                self.matcher = None
            else:
                self.until = None
        if not repeated:
            self.quit()
            if self.lo is not None and self.count < self.lo:
                self.parent.false(self, True)
            else:
                self.parent.true(b, self, True)
            return
        if self.lo is not None and self.lo == self.hi and self.count == self.lo:
            self.quit()
            self.parent.true(b, self, True)
            return
        again = self.hi is None or self.hi > self.count
        if self.matcher is None and again:
            self.matcher = _new(self.tree, self, self.p[3])
            self.matcher.start(self.begin)
        elif self.matcher is not None and not again:
            self.matcher.quit()
            self.matcher = None

    def false(self, node: _Node, restartable: bool) -> None:
        # (the other child is left as it is: the parent quits this node, or not)
        if node is self.matcher:
            self.matcher = None
        else:
            self.until = None
        node.quit()
        self.parent.false(self, True)

    def quit(self) -> None:
        for c in (self.matcher, self.until):
            if c is not None:
                c.quit()
        self.matcher = self.until = None


class _And(_Node):
    def start(self, begin: Binding) -> None:
        ops = self.p[1]
        self.active: list[_Node | None] = [_new(self.tree, self, o) for o in ops]
        self.events: list[list[Binding]] | None = [[] for _ in ops]
        for c in list(self.active):
            if c is not None:
                c.start(begin)

    def _index(self, node: _Node) -> int | None:
        return next((i for i, c in enumerate(self.active) if c is node), None)

    def true(self, b: Binding, node: _Node, quitted: bool) -> None:
        i = self._index(node)
        if quitted and i is not None:
            self.active[i] = None
        if self.events is None or i is None:
            return
        events = self.events
        if any(not events[j] for j in range(len(events)) if j != i):
            events[i].append(b)
            return
        others_quit = all(c is None for j, c in enumerate(self.active) if j != i)
        has_active = any(c is not None for c in self.active)
        if not others_quit:
            events[i].append(b)
        results = [b]
        for j in range(len(events)):
            if j != i:  # (MatchedEventMapImpl.merge: the other child's bindings written over)
                results = [{**r, **o} for r in results for o in events[j]]
        done = not has_active or all(c is None or c.is_not for c in self.active)
        if done:
            self._quit_all()
        for r in results:
            self.parent.true(r, self, done)

    def false(self, node: _Node, restartable: bool) -> None:
        i = self._index(node)
        if i is not None:
            self.active[i] = None
            if self.events is not None:
                self.events[i] = []
        self._quit_all()
        self.parent.false(self, restartable)

    def _quit_all(self) -> None:
        for c in self.active:
            if c is not None:
                c.quit()
        self.active = [None] * len(self.active)
        self.events = None

    def quit(self) -> None:
        if self.events is None:
            return
        self._quit_all()


class _Or(_Node):
    def start(self, begin: Binding) -> None:
        self.kids: list[_Node | None] = [_new(self.tree, self, o) for o in self.p[1]]
        self.quitted = False
        for c in list(self.kids):
            assert c is not None
            c.start(begin)
            if self.quitted:
                break

    def true(self, b: Binding, node: _Node, quitted: bool) -> None:
        if quitted:
            self.kids = [None if c is node else c for c in self.kids]
            self._quit_all()
        self.parent.true(b, self, quitted)

    def false(self, node: _Node, restartable: bool) -> None:
        self.kids = [None if c is node else c for c in self.kids]
        if all(c is None for c in self.kids):
            self.parent.false(self, True)

    def _quit_all(self) -> None:
        for c in self.kids:
            if c is not None:
                c.quit()
        self.kids = [None] * len(self.kids)
        self.quitted = True

    def quit(self) -> None:
        self._quit_all()


class _FollowedBy(_Node):
    def start(self, begin: Binding) -> None:
        self.nodes: dict[int, tuple[_Node, int]] = {}
        self.most = self.p[2] if len(self.p) > 2 else None  # (-[n]>: per arrow, n or None)
        self.active = [0] * (len(self.p[1]) - 1)  # (per arrow, its right sides under way)
        self._add(0, begin)

    def _gone(self, i: int) -> None:
        """Child ``i`` ended: one right side of arrow ``i - 1`` less under way."""
        if i > 0:
            self.active[i - 1] -= 1

    def _add(self, i: int, b: Binding) -> None:
        child = _new(self.tree, self, self.p[1][i])
        self.nodes[id(child)] = (child, i)
        child.start(b)

    def true(self, b: Binding, node: _Node, quitted: bool) -> None:
        entry = self.nodes.get(id(node))
        if quitted and self.nodes.pop(id(node), None) is not None:
            self._gone(entry[1])  # type: ignore[index]
        if entry is None:
            return
        i = entry[1]
        if i == len(self.p[1]) - 1:
            done = not self.nodes
            self.parent.true(b, self, done)
        elif self.most is None or self.most[i] is None or self.active[i] < self.most[i]:
            self.active[i] += 1
            self._add(i + 1, b)

    def false(self, node: _Node, restartable: bool) -> None:
        node.quit()
        entry = self.nodes.pop(id(node), None)
        if entry is not None:
            self._gone(entry[1])
        if not self.nodes:
            self.parent.false(self, True)
            self._quit_all()

    def _quit_all(self) -> None:
        for child, _ in list(self.nodes.values()):
            child.quit()
        self.nodes = {}

    def quit(self) -> None:
        self._quit_all()


class _Not(_Node):
    is_not = True

    def start(self, begin: Binding) -> None:
        self.child: _Node | None = _new(self.tree, self, self.p[1])
        self.child.start(begin)
        self.parent.true(begin, self, False)

    def true(self, b: Binding, node: _Node, quitted: bool) -> None:
        if quitted:
            self.child = None
            self.parent.false(self, True)

    def false(self, node: _Node, restartable: bool) -> None:
        """A sub-expression that turned false leaves the not true."""

    def quit(self) -> None:
        if self.child is not None:
            self.child.quit()


class _Guard(_Node):
    def start(self, begin: Binding) -> None:
        self.slot: int | None = None
        self.child: _Node | None = _new(self.tree, self, self.p[2])
        self.child.start(begin)
        # (TimerWithinGuard.startGuard: also when the child quit while it started, whose
        # stopGuard found no timer yet)
        self.slot = self.tree.schedule(self.tree.now + self.p[1], self)

    def true(self, b: Binding, node: _Node, quitted: bool) -> None:
        gone = self.child is None
        if quitted:
            self.child = None
            self.slot = None  # stopGuard
        if not gone:
            self.parent.true(b, self, quitted)

    def false(self, node: _Node, restartable: bool) -> None:
        # (EvalGuardStateNode leaves its timer scheduled here, and its later guardQuit turns it
        # false again: under every that starts a second instance, each such leak one more.
        # cepflow does not copy that; the guard's timer stops with its child)
        self.child = None
        self.slot = None
        self.parent.false(self, True)

    def fire(self) -> None:
        self.slot = None
        if self.child is not None:
            self.child.quit()
        self.child = None
        self.parent.false(self, True)

    def quit(self) -> None:
        if self.child is None:
            return
        self.child.quit()
        self.slot = None
        self.child = None


class _GuardMax(_Guard):
    """EvalGuardStateNode with TimerWithinOrMaxCountGuard: each result of the child is
    inspected — the first ``n`` pass, the next ends the guard (guardQuit: the child quits,
    the guard is false), as its timer does."""

    def start(self, begin: Binding) -> None:
        self.count = 0
        self.slot = None
        self.child = _new(self.tree, self, self.p[3])
        self.child.start(begin)
        self.count = 0  # (startGuard, after the child started: what it reported is not counted)
        self.slot = self.tree.schedule(self.tree.now + self.p[1], self)

    def true(self, b: Binding, node: _Node, quitted: bool) -> None:
        gone = self.child is None
        if quitted:
            self.child = None
            self.slot = None
        if gone:
            return
        self.count += 1
        if self.count > self.p[2]:
            self.fire()
            return
        self.parent.true(b, self, quitted)


class _Root:
    nonquitting = False
    is_not = False

    def __init__(self, tree: _Tree) -> None:
        self.tree = tree
        self.top: _Node | None = None

    def true(self, b: Binding, node: _Node, quitted: bool) -> None:
        if quitted:
            self.top = None
        self.tree.results.append((self.tree.now, b))

    def false(self, node: _Node, restartable: bool) -> None:
        if self.top is not None:
            self.top.quit()
            self.top = None


def _due(tree: _Tree, until: float) -> None:
    """Fire the timers due by ``until`` (inclusive), each at its own instant."""
    while tree.timers and tree.timers[0][0] <= until:
        at, slot, node = heapq.heappop(tree.timers)
        if node.slot != slot:
            continue  # stopped (or stopped and started again)
        tree.now = at
        node.fire()


def evaluate(p: Pattern, events: list[Event], end: float) -> list[tuple[float, tuple]]:
    """Esper's matches of ``p`` started at 0 over ``events`` with the clock moved to ``end``
    after them: (time, the tags' event indexes in :func:`tags` order, None where unbound)."""
    tree = _Tree()
    tree.events = events
    root = _Root(tree)
    root.top = _new(tree, root, p)
    root.top.start({})
    names = tags(p)
    for x, e in enumerate(events):
        _due(tree, e.ts)
        tree.now = e.ts
        active = [f for f in tree.filters if f.started]
        tree.filters = list(active)
        active.sort(key=lambda f: not f.parent.is_not)
        for f in active:
            f.match(e, x)
    _due(tree, end)
    return [(t, tuple(b.get(n) for n in names)) for t, b in tree.results]
