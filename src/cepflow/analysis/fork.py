"""Copying an engine's run-time state, fast, for the bounded search — and its fingerprint.

The search runs millions of candidate events, each on a copy of the engine at the state it
extends. Building an :class:`~cepflow.runtime.engine.Engine` compiles every window statement
and sets up every matcher (0.2 to 0.6 ms), and moving a state through
``save_state``/``restore_state`` costs as much again; :func:`fork` instead copies only the
run-time state and shares everything compiled.

**What is state.** :data:`ENGINE_STATE`, :data:`HOST_STATE`, :data:`MATCHER_STATE` and
:data:`RUNNER_STATE` name the attributes of the engine, of its host (runtime/host.py: clock,
numbering, timers …), of each matcher and of each window statement's runner that change while
events are processed; every other attribute is made once from the compiled
program and shared by the copies. The tests check that these lists name every attribute that
processing changes (``tests/analysis/test_fork.py``: a fork continued and the original
continued give the same complex events and the same saved state, on every example program;
and every attribute of the four classes is listed as state or as shared), so a new attribute
in the engine shows up as a failing test, not as a wrong search.

**How.** A structural copy with a memo (every object copied once, so the tokens indexed in two
places stay one token): containers and run-time objects are copied; events (never changed once
processed), functions and the compiled program are shared; bound methods are bound to the
copies (``engine._emit`` appends to the copy's list, a window statement's row builder numbers
rows with the copy's match counter).

**Copy on write.** A fork copies the engine's host (clock, numbering, timers) at once, but its
matchers and window runners only when the engine first calls into one to change it — most
candidate events reach some patterns and no window statement, and which ones is known only as
the event cascades. The engine's lists hold handles (:class:`_Lazy`) instead of the parts:
``process``, ``on_deadline``, ``start_clock``, ``advance_to`` and any other access go to the
engine's own copy, made at the first of them; the reads the engine makes at every step
(``count()``, ``pattern``, ``name``, ``slot``, ``statement``, ``window``) go to the part as it
is. Forking turns the parts of *both* engines into shared ones, so the engine forked from may go
on too (the search's last move from a state does): a part two engines share is never changed
again. The fingerprint of a shared runner is computed once (:func:`state_key`). The tests build
trees of forks, every engine and fork going on with random events, and compare each with a
fresh engine fed its events (``test_copy_on_write_forks_are_deep_copies``).

**Fingerprint.** :func:`state_key` is a digest of the same state with numbering removed — token
ids and held events' input numbers become their order, counters are left out, times are kept
— as analysis/fingerprint.py does from the saved state (the reference it is tested against).
"""

from __future__ import annotations

import copy
import gc
import hashlib
import io
import pickle
import types
import weakref
from collections import deque
from collections.abc import Callable, Iterable
from operator import attrgetter, itemgetter
from typing import Any

from cepflow.compiler.program import Program
from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.counters import Counters
from cepflow.runtime.engine import Engine
from cepflow.runtime.host import Host
from cepflow.runtime.matcher import Matcher
from cepflow.runtime.tokens import Thread, Token
from cepflow.windows.aggregates import Aggregation
from cepflow.windows.processor import PerEventRows, PerGroupRows
from cepflow.windows.runner import WindowRunner
from cepflow.windows.sliding import GroupLengthWindow, LengthWindow, TimeWindow
from cepflow.windows.tumbling import GroupLengthBatchWindow, LengthBatchWindow, TimeBatchWindow

#: engine attributes that processing changes (the rest is shared by forks)
ENGINE_STATE = frozenset({
    "host", "statement_start", "_emitted", "_emit", "matchers", "windows", "_window_subs",
    "_clocks", "noise", "subs_input", "subs_complex", "_chains", "_pairs", "_split", "errors",
    "_next_check", "_routes", "_derived", "_skipping", "_timer_ends", "_ending"})
#: attributes of the engine's host (runtime/host.py) that processing changes
HOST_STATE = frozenset({"engine", "time", "stopped", "counters", "timers", "trace", "stats",
                        "pending", "failures"})
#: matcher attributes that processing changes (a matcher holds only run state; what is
#: compiled is its ``pattern``, runtime/compiled.py)
MATCHER_STATE = frozenset({
    "host", "tokens", "buckets", "done", "seen", "_forked", "_forks", "deadlines", "skipped",
    "pending", "due", "completed",
    "clock_start", "slot", "reach_index", "rowless"})
#: window statement runner attributes that processing changes
RUNNER_STATE = frozenset({"window", "_fast", "_in_fast", "time", "_seq", "finished",
                          "_match_ids"})
#: what the four classes hold that is made once from the program (shared by forks)
ENGINE_SHARED = frozenset({"program", "side", "_evaluates", "_starts", "max_partial_matches",
                           "on_error", "_readers", "_timer_end_shapes", "reads_start"})
HOST_SHARED = frozenset({"rules", "actions", "max_cascade", "arity", "_plans", "acting"})
MATCHER_SHARED = frozenset({"pattern", "name"})
RUNNER_SHARED = frozenset({"statement", "plan", "output_schema", "columnar_min_batch",
                           "_inputs"})

_ATOMS = (int, float, str, bool, type(None), bytes, complex, range, types.FunctionType,
          type, Event)


def _reachable(roots: Iterable[Any]) -> dict[int, Any]:
    """Every object reachable from ``roots`` (by the garbage collector's references)."""
    seen: dict[int, Any] = {}
    stack = list(roots)
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, types.ModuleType | type):
            continue
        seen[id(o)] = o
        stack.extend(gc.get_referents(o))
    return seen


class Forker:
    """Forks of engines running one program (the shared part computed once)."""

    def __init__(self, program: Program, template: Engine) -> None:
        roots: list[Any] = [program]
        for m in template.matchers:
            roots.extend(v for k, v in vars(m).items() if k in MATCHER_SHARED)
        for r in template.windows:
            roots.extend(v for k, v in vars(r).items() if k in RUNNER_SHARED)
        roots.extend(v for k, v in vars(template).items() if k in ENGINE_SHARED)
        roots.extend(v for k, v in vars(template.host).items() if k in HOST_SHARED)
        self._roots = roots
        self._shared: dict[int, Any] | None = None
        #: where the engine's derived lists point (indices of matchers and runners)
        self._layout: tuple | None = None

    def shared(self) -> dict[int, Any]:
        """Everything compiled (reachable from the program and the shared attributes): what
        the structural copy (:meth:`_copy`) never copies; found at its first use (most
        programs never need it)."""
        if self._shared is None:
            self._shared = _reachable(self._roots)
        return self._shared

    def fork(self, engine: Engine) -> Engine:
        """A copy of ``engine`` that goes on independently (see the module docstring): its
        host copied, its matchers and runners shared with ``engine`` until either engine
        changes one (:class:`_Lazy`, copy on write)."""
        if self._layout is None:
            self._layout = _layout_of(engine)
        ms0, ws0 = engine.matchers, engine.windows
        if (ms0 and type(ms0[0]) is not _Lazy) or (ws0 and type(ws0[0]) is not _Lazy):
            self._adopt(engine)  # (its parts become shared: it goes on through handles too)
        else:
            for h in ms0:
                h.own = False  # (its own copies are now shared with the fork)
            for h in ws0:
                h.own = False
        new = object.__new__(Engine)
        d = dict(vars(engine))
        d["host"] = host = _host(engine.host, new)
        self._install(d, [_Lazy(h.part, host, self) for h in engine.matchers],
                      [_Lazy(h.part, host, self) for h in engine.windows], engine)
        d["_emitted"] = emitted = list(engine._emitted)
        d["_emit"] = emitted.append
        d["errors"] = list(engine.errors)
        object.__setattr__(new, "__dict__", d)
        new.index_routes()  # (over the fork's handles)
        return new

    def _adopt(self, engine: Engine) -> None:
        """Put handles (:class:`_Lazy`) in place of ``engine``'s own matchers and runners, so
        that what it shares with its forks stays unchanged when it goes on."""
        host = engine.host
        d = vars(engine)
        self._install(d, [_Lazy(m, host, self, own=True) for m in engine.matchers],
                      [_Lazy(r, host, self, own=True) for r in engine.windows], engine)
        for h in (*d["matchers"], *d["windows"]):
            h.own = False
        engine.index_routes()  # (its routes called its parts: now its handles)

    def _install(self, d: dict[str, Any], ms: list[Any], ws: list[Any], engine: Engine
                 ) -> None:
        """Fill an engine's attributes ``d`` with the matchers ``ms`` and runners ``ws`` and
        the lists the engine derives from them (in the layout of ``engine``'s)."""
        assert self._layout is not None
        noise, subs_input, subs_complex, clocks, window_subs = self._layout
        d["matchers"] = ms
        d["noise"] = [ms[i] for i in noise]
        d["subs_input"] = {t: [ms[i] for i in ix] for t, ix in subs_input.items()}
        d["subs_complex"] = {t: [ms[i] for i in ix] for t, ix in subs_complex.items()}
        d["_clocks"] = [ms[i] for i in clocks]
        d["windows"] = ws
        d["_window_subs"] = {t: [ws[i] for i in ix] for t, ix in window_subs.items()}
        # (the kernels' lists are the matchers, when the kernels apply)
        if engine._chains is not None:
            d["_chains"] = ms
        if engine._pairs is not None:
            d["_pairs"] = ms
        if engine._timer_ends is not None:
            d["_timer_ends"] = ms
        if engine._split is not None:
            d["_split"] = [ms[m.slot] for m in engine._split]
        d["_skipping"] = [ms[m.slot] for m in engine._skipping]

    def own(self, part: Any, host: Host) -> Any:
        """A copy of a matcher or runner ``part`` for the engine whose host is ``host``."""
        if type(part) is WindowRunner:
            return self._runner(part, host, {})
        return self._matcher(part, host, {})

    def _matcher(self, m: Matcher, host: Host, memo: dict[int, Any]) -> Matcher:
        new = object.__new__(type(m))
        memo[id(m)] = new
        d = dict(m.__dict__)
        d["host"] = host
        if m.tokens:
            toks: dict[int, Token] = {}
            d["tokens"] = {part: {i: _token(t, toks) for i, t in ts.items()}
                           for part, ts in m.tokens.items()}
            d["buckets"] = {s: {k: {i: toks.get(id(t)) or _token(t, toks)
                                    for i, t in b.items()} for k, b in bm.items()}
                            for s, bm in m.buckets.items()}
        else:
            d["tokens"] = {}
            d["buckets"] = ({s: {k: {} for k in bm} for s, bm in m.buckets.items()}
                            if m.buckets else {})
        d["seen"] = dict(m.seen) if m.seen else {}
        d["_forked"] = [_thread(th) for th in m._forked] if m._forked else []
        d["_forks"] = ({k: [_thread(th) for th in v] for k, v in m._forks.items()}
                       if m._forks else {})
        d["deadlines"] = deque(m.deadlines)
        d["skipped"] = deque(m.skipped)
        d["reach_index"] = {}  # (made again from the copy's own groups when needed)
        if m.pending is not None:
            d["pending"] = self._copy(m.pending, memo)
        object.__setattr__(new, "__dict__", d)
        return new

    def _runner(self, r: WindowRunner, host: Host, memo: dict[int, Any]) -> WindowRunner:
        new, d = _begin(r, memo)
        d["window"] = window = self._window(r.window, memo)
        proc = getattr(window, "proc", None)
        rows = getattr(proc, "rows", None)
        if isinstance(getattr(rows, "match_ids", None), types.MethodType):
            # the row builder numbers rows with the engine's counter: the copy's own
            rows = _shallow(rows)
            rows.match_ids = host.counters.next_match
            proc.rows = rows  # type: ignore[union-attr]
        if r._fast is not None:
            d["_fast"] = self._copy(r._fast, memo)
        mids = r._match_ids
        if isinstance(mids, types.MethodType) and isinstance(mids.__self__, Counters):
            d["_match_ids"] = host.counters.next_match
        object.__setattr__(new, "__dict__", d)
        return new

    def _window(self, w: Any, memo: dict[int, Any]) -> Any:
        """A window's object (window, processor, aggregation): its state attributes copied
        (:data:`WINDOW_STATE`), the rest shared."""
        state = WINDOW_STATE.get(type(w))
        if state is None:
            return self._copy(w, memo)
        new, d = _begin(w, memo)
        for k in state:
            v = d.get(k)
            if v is None or isinstance(v, _ATOMS):
                continue
            tv = type(v)
            if tv is dict:  # (groups, last, per-group windows: values one level down)
                d[k] = {a: _level(b) for a, b in v.items()}
            elif tv is list:
                d[k] = list(v)
            elif tv is deque:
                d[k] = deque(v, v.maxlen)
            else:
                d[k] = self._window(v, memo)
        object.__setattr__(new, "__dict__", d)
        return new

    # -- the structural copy of everything else ------------------------------------------
    def _copy(self, x: Any, memo: dict[int, Any]) -> Any:
        if isinstance(x, _ATOMS):
            return x
        i = id(x)
        got = memo.get(i)
        if got is not None:
            return got
        if i in self.shared():
            return x
        t = type(x)
        if t is dict:
            out: Any = {}
            memo[i] = out
            for k, v in x.items():
                out[k if isinstance(k, _ATOMS) else self._copy(k, memo)] = (
                    v if isinstance(v, _ATOMS) else self._copy(v, memo))
            return out
        if t is list or t is deque:
            out = [] if t is list else deque(maxlen=x.maxlen)
            memo[i] = out
            out.extend(v if isinstance(v, _ATOMS) else self._copy(v, memo) for v in x)
            return out
        if t is tuple:
            if all(isinstance(v, _ATOMS) for v in x):
                return x
            items = [self._copy(v, memo) for v in x]
            out = x if all(a is b for a, b in zip(items, x, strict=True)) else tuple(items)
            memo[i] = out
            return out
        if t is set or t is frozenset:
            out = t(self._copy(v, memo) for v in x)
            memo[i] = out
            return out
        if t is types.MethodType:
            out = types.MethodType(x.__func__, self._copy(x.__self__, memo))
            memo[i] = out
            return out
        if t is types.BuiltinMethodType:  # (a bound method of a list, dict …, or a builtin)
            owner = x.__self__
            if owner is None or isinstance(owner, types.ModuleType):
                return x
            out = getattr(self._copy(owner, memo), x.__name__)
            memo[i] = out
            return out
        d = getattr(x, "__dict__", None)
        state = WINDOW_STATE.get(t)
        if state is not None and d is not None:  # a window's object: copy what changes
            return self._window(x, memo)
        slots = [s for c in t.__mro__ for s in getattr(c, "__slots__", ())
                 if s not in ("__dict__", "__weakref__")]
        if d is None and not slots:
            return x  # a C object (itemgetter, a compiled pattern …): nothing to change
        out = t.__new__(t)
        memo[i] = out
        if d is not None:
            object.__setattr__(out, "__dict__",
                               {k: self._copy(v, memo) for k, v in d.items()})
        for s in slots:
            if hasattr(x, s):
                object.__setattr__(out, s, self._copy(getattr(x, s), memo))
        return out


#: the attributes of a window statement's objects that processing changes (by class; a class
#: not listed is copied whole, and the tests fail on it); everything else they hold (sizes,
#: slots, row builders, the statement) is configuration
WINDOW_STATE: dict[type, frozenset[str]] = {
    TimeWindow: frozenset({"items", "due", "proc"}),
    LengthWindow: frozenset({"items", "due", "proc"}),
    GroupLengthWindow: frozenset({"items", "due", "proc"}),
    TimeBatchWindow: frozenset({"reference", "k", "current", "previous", "due", "proc"}),
    LengthBatchWindow: frozenset({"current", "due", "proc"}),
    GroupLengthBatchWindow: frozenset({"current", "due", "proc"}),
    PerGroupRows: frozenset({"agg", "last"}),
    PerEventRows: frozenset({"agg", "batch", "batches"}),
    Aggregation: frozenset({"groups"}),
}


class _Lazy:
    """An engine's handle on one of its parts — a matcher or a window statement's runner —
    which it may share with other engines (copy on write). The calls that change a part go to
    the engine's own copy, made at the first of them: ``process``, ``on_deadline``,
    ``start_clock``, ``advance_to``, and anything else not read below. The reads the engine
    makes at every step — ``count()``, ``pattern``, ``name``, ``slot``, ``statement``,
    ``window`` (its ``due``) — go to the part as it is. So a part two engines share is never
    changed again: each writes through a copy of its own. (Which parts an event reaches is
    known only once it has cascaded; the handle finds out as it happens.)"""

    __slots__ = ("forker", "host", "own", "part")

    def __init__(self, part: Any, host: Host, forker: Forker, own: bool = False) -> None:
        self.part = part
        #: whether ``part`` is this engine's alone (a copy it made, or before its first fork)
        self.own = own
        self.host = host
        self.forker = forker

    def mine(self) -> Any:
        """The part, made this engine's own first."""
        if not self.own:
            self.part = self.forker.own(self.part, self.host)
            self.own = True
        return self.part

    # -- what changes a part (runtime/engine.py calls these) ------------------------------
    def process(self, *args: Any) -> Any:
        return self.mine().process(*args)

    def on_deadline(self, *args: Any) -> None:
        self.mine().on_deadline(*args)

    def advance_to(self, t: float) -> Any:
        return self.mine().advance_to(t)

    def start_clock(self, t: float) -> None:
        self.mine().start_clock(t)

    def step_for(self, t: str) -> Callable[..., None]:
        """The engine's step for an input event of type ``t`` (Engine.index_routes): the
        handle's :meth:`process`, which gives what the part's own step for ``t`` gives
        (Matcher.step_for) and makes the part this engine's first."""
        return self.process

    # -- what the engine reads at every step ----------------------------------------------
    def count(self) -> int:
        return self.part.count()

    pattern = property(attrgetter("part.pattern"))
    name = property(attrgetter("part.name"))
    slot = property(attrgetter("part.slot"))
    statement = property(attrgetter("part.statement"))
    window = property(attrgetter("part.window"))

    def __getattr__(self, name: str) -> Any:  # anything else: on the engine's own copy
        return getattr(self.mine(), name)

    # (setting an attribute of the part through the handle raises AttributeError: nothing
    # the engine does per event sets one)


def _part(x: Any) -> Any:
    """The matcher or runner behind a handle (or ``x``, not a handle)."""
    return x.part if type(x) is _Lazy else x


def _host(host: Host, engine: Engine) -> Host:
    """A copy of an engine's host for the fork ``engine``: clock, numbering, timers,
    statistics, trace, emitted events and failures copied; rules and actions shared."""
    new = object.__new__(type(host))
    d = dict(host.__dict__)
    d["engine"] = engine
    d["counters"] = _shallow(host.counters)
    d["timers"] = host.timers.copy()
    d["pending"] = deque(host.pending)
    d["failures"] = list(host.failures)
    d["stats"] = stats = _shallow(host.stats)
    stats.by_pattern = dict(stats.by_pattern)
    if host.trace is not None:
        d["trace"] = copy.deepcopy(host.trace)
    object.__setattr__(new, "__dict__", d)
    return new


def _thread(th: Thread) -> Thread:
    return Thread(th.state, dict(th.bindings), list(th.events),
                  None if th.zstart is None else dict(th.zstart), th.last)


def _token(t: Token, toks: dict[int, Token]) -> Token:
    new = Token(t.id, t.part, t.created, [_thread(th) for th in t.threads], t.mult)
    new.regs = list(t.regs)
    toks[id(t)] = new
    return new


def _level(v: Any) -> Any:
    """A copy of a window's per-group value: a list of aggregate state (numbers, records, a
    min/max deque), a deque or list of records, a record or a number."""
    t = type(v)
    if t is list:
        return [deque(x, x.maxlen) if type(x) is deque else x for x in v]
    if t is deque:
        return deque(v, v.maxlen)
    if t is dict:
        return {a: _level(b) for a, b in v.items()}
    return v  # a record (a tuple of values and an event), a number


def _begin(x: Any, memo: dict[int, Any]) -> tuple[Any, dict[str, Any]]:
    """A new, empty object of ``x``'s class (recorded in ``memo``) and a copy of ``x``'s
    attributes to fill it with (``object.__setattr__(new, "__dict__", d)`` when done)."""
    new = object.__new__(type(x))
    memo[id(x)] = new
    return new, dict(vars(x))


def _shallow(x: Any) -> Any:
    """A new object of ``x``'s class with a copy of its attributes (also frozen dataclasses)."""
    new = object.__new__(type(x))
    object.__setattr__(new, "__dict__", dict(vars(x)))
    return new


def _layout_of(engine: Engine) -> tuple:
    """The engine's derived lists as indices into its matchers and runners."""
    mi = {id(m): i for i, m in enumerate(engine.matchers)}
    wi = {id(r): i for i, r in enumerate(engine.windows)}
    return ([mi[id(m)] for m in engine.noise],
            {t: [mi[id(m)] for m in v] for t, v in engine.subs_input.items()},
            {t: [mi[id(m)] for m in v] for t, v in engine.subs_complex.items()},
            [mi[id(m)] for m in engine._clocks],
            {t: [wi[id(r)] for r in v] for t, v in engine._window_subs.items()})


# ---------------------------------------------------------------- fingerprint


def _freeze(x: Any) -> Any:
    """A hashable picture of a window statement's state ``x`` (its records' events as type,
    parameters and time; the configuration left out)."""
    if isinstance(x, int | float | str | bool | type(None)):
        return x
    if isinstance(x, Event):
        return (x.type, x.params, x.ts)
    if isinstance(x, tuple | list | deque):
        return tuple(_freeze(v) for v in x)
    if isinstance(x, dict):
        return tuple(sorted(((_freeze(k), _freeze(v)) for k, v in x.items()), key=repr))
    if isinstance(x, set | frozenset):
        return tuple(sorted((_freeze(v) for v in x), key=repr))
    state = WINDOW_STATE.get(type(x))
    d = getattr(x, "__dict__", None)
    if state is not None and d is not None:
        return (type(x).__name__,
                tuple((k, _freeze(d[k])) for k in sorted(state) if k in d))
    return repr(x)  # (nothing else is expected in a window's state)


def _event(e: Event, rank: dict[int, int]) -> tuple:
    if isinstance(e, ComplexEvent):  # (what later steps read: analysis/fingerprint.py)
        return (e.type, tuple(e.params), e.ts)
    return (e.type, tuple(e.params), e.ts, rank.get(e.seq, -1))


_first = itemgetter(0)
#: a matcher's part of :func:`state_key` when it holds nothing
_IDLE = ((), False, (), None, ())
#: the pictures of the runners handles share (never changed again: :class:`_Lazy`)
_PICTURES: weakref.WeakKeyDictionary[WindowRunner, tuple] = weakref.WeakKeyDictionary()


def _picture(r: Any) -> tuple:
    """A window statement's part of :func:`state_key`; computed once for a runner engines
    share."""
    if type(r) is _Lazy and not r.own:
        got = _PICTURES.get(r.part)
        if got is None:
            got = _PICTURES[r.part] = _picture(r.part)
        return got
    r = _part(r)
    return (r.time, r.finished, _freeze(r.window))


def state_key(engine: Engine) -> bytes:
    """A 16-byte digest of the engine's run-time state without numbering (see the module
    docstring). The input numbers of the events partial matches hold become their order; a
    window statement's records keep their own numbers (its accepted events, in order)."""
    matchers = [_part(m) for m in engine.matchers]
    # (partial matches held as rows count as the tokens they stand for: Matcher.row_tokens)
    held = [sorted([*(t for part in m.tokens.values() for t in part.values()),
                    *m.row_tokens()], key=lambda t: t.id) for m in matchers]
    seqs = sorted({e.seq for toks in held for t in toks for th in t.threads for e in th.events
                   if not isinstance(e, ComplexEvent)})
    rank = {s: i for i, s in enumerate(seqs)}
    pats = []
    for m, toks in zip(matchers, held, strict=True):
        if not (toks or m.done or m.seen or m.deadlines or m.skipped
                or m.clock_start is not None):
            pats.append(_IDLE)
            continue
        age = {t.id: i for i, t in enumerate(toks)}
        pats.append((
            tuple((t.part, t.created, t.mult,
                   tuple((th.state, _items(th.bindings),
                          tuple(sorted((th.zstart or {}).items())),
                          tuple(_event(e, rank) for e in th.events)) for th in t.threads))
                  for t in toks),
            m.done, tuple(sorted(m.seen.items(), key=repr)), m.clock_start,
            tuple((d, age.get(tid, -1), z, s) for d, tid, z, s in m.deadlines),
            tuple(m.skipped)))
    wins = tuple(_picture(r) for r in engine.windows)
    return hashlib.blake2b(_bytes((engine.time, engine.statement_start if engine.reads_start
                                    else None, engine.stopped, tuple(pats), wins)),
                           digest_size=16).digest()


def _items(d: dict) -> tuple:
    """A dict's items in a canonical order: by key (bindings are keyed by variable names)."""
    try:
        return tuple(sorted(d.items(), key=_first))
    except TypeError:  # (keys of several types)
        return tuple(sorted(d.items(), key=repr))


def _bytes(x: tuple) -> bytes:
    """The bytes to hash for a picture of numbers, strings and tuples: pickled without its
    memo, so they depend on the values only, never on which objects are shared (and five times
    quicker than ``repr``, which spells every float out); ``repr`` for what does not pickle.
    (Only hashed: nothing is ever unpickled.)"""
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, 5)
    pickler.fast = True
    try:
        pickler.dump(x)
    except (pickle.PicklingError, TypeError, AttributeError):
        return repr(x).encode()
    return buf.getvalue()
