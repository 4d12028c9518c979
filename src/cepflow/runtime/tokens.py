"""Tokens and threads: the run-time state of partial matches (000 §5.1, Defs. 13-15).

A token is one partial match instance — the unit event processing contexts select and dispose.
It normally holds one thread (its position in the automaton, its parameter table, the events it
consumed and the entry timestamps of the timed zones it is in); when the automaton offers two
alternatives for the same event type the token follows each with its own thread.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from cepflow.events.event import Event


class Thread:
    """One path of a token through the automaton."""

    __slots__ = ("bindings", "events", "last", "state", "zstart")

    def __init__(
        self,
        state: int,
        bindings: dict[str, Any],
        events: list[Event],
        zstart: dict[int, float] | None,
        last: Event | None,
    ) -> None:
        self.state = state
        self.bindings = bindings
        self.events = events
        self.zstart = zstart
        self.last = last

    @property
    def last_ts(self) -> float:
        return self.last.ts if self.last is not None else float("-inf")


class Token:
    """A partial match: ``id`` grows with creation, so smaller means older (chronicle).
    ``mult``: how many identical instances it stands for (Esper's every around every,
    start policy "respawn": each of its results is reported ``mult`` times; else 1)."""

    __slots__ = ("created", "id", "mult", "part", "regs", "threads")

    def __init__(self, id: int, part: Any, created: float, threads: list[Thread],
                 mult: int = 1) -> None:
        self.id = id
        self.part = part
        self.created = created
        self.threads = threads
        self.mult = mult
        self.regs: list[tuple[int, Any]] = []

    def __repr__(self) -> str:
        states = ",".join(str(t.state) for t in self.threads)
        return f"Token({self.id}@{states})"


class PendingRows:
    """Partial matches a column kernel left as rows rather than tokens, oldest first, until
    something needs tokens (Matcher.materialize) — making and registering a token per partial
    match at every batch end, only for the next batch to take it apart, cost the chain kernel
    a third of its time with 100,000 keys. Per row: its token id and its events so far; a
    pair's rows (runtime.shapes.EsperPair) hold their one ``A`` event in ``events`` and no
    states, a chain's rows the list of events, their state and their key value (of variable
    ``var``). ``zone``: the window the partial matches entered at their first event."""

    __slots__ = ("events", "ids", "keys", "states", "var", "zone")

    def __init__(self, ids: list[int], events: list[Any], zone: int | None,
                 states: list[int] | None = None, keys: list[Any] | None = None,
                 var: str | None = "") -> None:
        self.ids, self.events, self.zone = ids, events, zone
        self.states, self.keys, self.var = states, keys, var

    def __len__(self) -> int:
        return len(self.ids)


class _Listed:
    """Live rows that a reader sees as :class:`PendingRows`: ``ids`` and ``events`` of all
    rows, oldest first, from ``_listed`` (made when read)."""

    __slots__ = ()

    def _listed(self) -> tuple[list[Any], ...]:
        raise NotImplementedError

    @property
    def ids(self) -> list[int]:
        return self._listed()[0]

    @property
    def events(self) -> list[Any]:
        return self._listed()[1]


class KeyedRows(_Listed):
    """A keyed chain's partial matches as rows while events arrive one at a time
    (Matcher._row_step, docs/architecture.md "Per event"): per state, per key value, the rows
    ``[token id, key, events]`` waiting there, oldest first (a list: rarely more than a few)
    — the buckets of the token path without a Token, a Thread and a bindings dict per partial
    match. To every reader it is the chain's :class:`PendingRows` (``ids``, ``events``,
    ``states``, ``keys``, ``var``, ``zone``: all rows, oldest first, listed when read), so the
    chain kernel, forks and :meth:`Matcher.materialize` take it as they take the kernel's rows;
    saved state writes it as the tokens it stands for (the token path's state).

    A chain in a window ``[Δ]`` (``zone``) keeps its rows ``[token id, key, events, state]``
    and each by its token id in ``alive``: the engine's timer of a partial match names its
    token id (:meth:`expire`), as the token path's does."""

    __slots__ = ("_flat", "alive", "n", "queues", "var", "zone")

    def __init__(self, states: Any, var: str | None, zone: int | None = None) -> None:
        #: state -> key value -> the rows waiting there, oldest first
        self.queues: dict[int, dict[Any, list[list[Any]]]] = {s: {} for s in states}
        self.var = var
        self.zone = zone
        #: in a window: token id -> its row (None: no window)
        self.alive: dict[int, list[Any]] | None = None if zone is None else {}
        self.n = 0
        #: the rows listed oldest first (ids, events, states, keys), made when read
        self._flat: tuple[list[Any], ...] | None = None

    @classmethod
    def of(cls, rows: PendingRows | None, states: Any, var: str | None,
           zone: int | None = None) -> KeyedRows:
        """The live form of a chain's pending rows (None: no row)."""
        out = cls(states, var, zone)
        if rows is not None:
            queues = out.queues
            alive = out.alive
            for tid, evs, state, key in zip(rows.ids, rows.events, rows.states or (),
                                            rows.keys or (), strict=True):
                row = [tid, key, evs] if alive is None else [tid, key, evs, state]
                q = queues[state].get(key)
                if q is None:
                    queues[state][key] = [row]
                else:
                    q.append(row)
                if alive is not None:
                    alive[tid] = row
            out.n = len(rows.ids)
        return out

    def start(self, state: int, tid: int, key: Any, e: Event) -> None:
        """A new row: partial match ``tid`` of key ``key``, which took ``e``, waits at
        ``state``."""
        alive = self.alive
        row = [tid, key, [e]] if alive is None else [tid, key, [e], state]
        q = self.queues[state].get(key)
        if q is None:
            self.queues[state][key] = [row]
        else:
            q.append(row)
        self.n += 1
        self._flat = None
        if alive is not None:
            alive[tid] = row

    def move(self, row: list[Any], q: list[list[Any]], state: int, target: int,
             key: Any) -> None:
        """``row``, taken off the front of queue ``q`` (at ``state``, of ``key``), waits at
        ``target`` now. Rows reach a state in age order: a stage's rows leave it oldest first
        (docs/architecture.md)."""
        if self.alive is not None:
            row[3] = target
        queues = self.queues
        to = queues[target]
        dest = to.get(key)
        if dest is not None:
            dest.append(row)
        elif q:
            to[key] = [row]
        else:  # (the emptied queue serves again)
            del queues[state][key]
            q.append(row)
            to[key] = q

    def dispose(self, key: Any = None, every: bool = True) -> None:
        """Drop every row (``every``) or those of ``key`` (a dict's look-up: the token path's
        ``tokens[part]`` of a pattern partitioned by its key) — noise under immediate and
        strict (Matcher._context_step); in a window their timers then fire idle."""
        queues = self.queues.values()
        alive = self.alive
        if every:
            for by_key in queues:
                by_key.clear()
            self.n = 0
            if alive:
                alive.clear()
        else:
            for by_key in queues:
                q = by_key.pop(key, None)
                if q is not None:
                    self.n -= len(q)
                    if alive is not None:
                        for row in q:
                            del alive[row[0]]
        self._flat = None

    def expire(self, tid: int) -> None:
        """The window of partial match ``tid`` has passed (its timer fired): it is gone, if
        it is still waiting (else the timer fires idle, as the token path's)."""
        row = self.alive.pop(tid, None)  # type: ignore[union-attr]
        if row is None:
            return
        by_key = self.queues[row[3]]
        q = by_key[row[1]]
        i = 0
        while q[i] is not row:  # (the oldest rows expire first: at the front)
            i += 1
        del q[i]
        if not q:
            del by_key[row[1]]
        self.n -= 1
        self._flat = None

    def _listed(self) -> tuple[list[Any], ...]:
        flat = self._flat
        if flat is None:
            rows = sorted(((r[0], s, r[1], r[2]) for s, by_key in self.queues.items()
                           for q in by_key.values() for r in q), key=itemgetter(0))
            flat = self._flat = ([r[0] for r in rows], [r[3] for r in rows],
                                 [r[1] for r in rows], [r[2] for r in rows])
        return flat

    @property
    def states(self) -> list[int]:
        return self._listed()[2]

    @property
    def keys(self) -> list[Any]:
        return self._listed()[3]

    def __len__(self) -> int:
        return self.n


class PairRows(_Listed):
    """A keyed pair's waiting instances as rows while events arrive one at a time
    (EsperSteps._pair_start, _pair_end; Esper's ``every a = A(f) -> b = B(g, a.k = b.k)``
    with ``g`` reading only its event): per key value, the rows ``[token id, A event]``
    oldest first — without a Token, a Thread and two dicts per instance, and the bucket
    bookkeeping. Their deadlines are in the matcher's queue (Matcher.deadlines) as a token's
    would be. To every reader it is the pair's :class:`PendingRows` (``ids``, ``events``:
    all rows, oldest first, listed when read; no ``states``), so Matcher.materialize, the
    kernels, saved state and forks take it as they take the kernel's rows; registered tokens
    of the pattern are always older than its rows."""

    __slots__ = ("_flat", "alive", "by_key", "zone")

    #: (PendingRows: a pair's rows hold their A event, no state and no key)
    states = None
    keys = None
    var = ""

    def __init__(self, zone: int | None) -> None:
        #: key value -> its rows, oldest first
        self.by_key: dict[Any, list[list[Any]]] = {}
        #: token id -> the key value its row waits on
        self.alive: dict[int, Any] = {}
        self.zone = zone
        self._flat: tuple[list[int], list[Any]] | None = None

    def start(self, tid: int, key: Any, e: Event) -> None:
        """A new instance ``tid`` began at ``e`` and waits on ``key``."""
        q = self.by_key.get(key)
        if q is None:
            self.by_key[key] = [[tid, e]]
        else:
            q.append([tid, e])
        self.alive[tid] = key
        self._flat = None

    def expire(self, tid: int) -> bool:
        """Instance ``tid``'s window has passed: it is gone if it waits still (True), else
        nothing (False: not a row of these)."""
        key = self.alive.pop(tid, _NONE)
        if key is _NONE:
            return False
        q = self.by_key[key]
        i = 0
        while q[i][0] != tid:  # (the oldest expire first: at the front)
            i += 1
        del q[i]
        if not q:
            del self.by_key[key]
        self._flat = None
        return True

    def _listed(self) -> tuple[list[int], list[Any]]:
        flat = self._flat
        if flat is None:
            rows = sorted((r for q in self.by_key.values() for r in q), key=itemgetter(0))
            flat = self._flat = ([r[0] for r in rows], [r[1] for r in rows])
        return flat

    def __len__(self) -> int:
        return len(self.alive)


_NONE = object()
