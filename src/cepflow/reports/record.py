"""What a run keeps for its report (``cepflow run --report``, docs/reports.md "The run report").

A :class:`RunRecord` watches one run of the engine: the input events as they are read, the
engine's trace (it is the engine's :class:`~cepflow.runtime.matcher.Trace`, so the run keeps
only what the report shows) and the complex events as they are written. Its memory and the
page stay bounded whatever the input's size:

* every event adds its time and its *lane* (the key the patterns correlate events on, or its
  type) to two compact arrays — 12 bytes an event — from which the timeline's density bins are
  counted at the end; the events themselves are kept only up to :attr:`Limits.events`;
* per pattern, at most :attr:`Limits.matches` matches are kept, with their token's story,
  chosen uniformly over the whole run (a seeded reservoir sample, so a report is the same every
  time); every match's time is counted for the chart;
* per pattern, at most :attr:`Limits.partials` partial matches that died and as many that were
  left at the end keep their stories; a token's story is held only while it is alive or kept.
"""

from __future__ import annotations

import random
import re
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from cepflow.automaton.automaton import Automaton
from cepflow.compiler.program import Program
from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.explain import TokenStory
from cepflow.runtime.host import Trace
from cepflow.runtime.interval_clock import CLOCK_TOKEN


@dataclass(frozen=True)
class Limits:
    """How much of a run a report shows (docs/reports.md says why these numbers)."""

    #: every event is on the page when the input has at most this many; beyond, the timeline
    #: shows density bins and the events of the matches and partial matches shown
    events: int = 20_000
    #: matches shown (with their step-through) per pattern or window statement
    matches: int = 500
    #: partial matches shown per pattern: this many that died, and this many left at the end
    partials: int = 100
    #: lanes of the timeline (the busiest; the others are folded into one)
    lanes: int = 40
    #: distinct keys tracked as lanes during the run (later keys go to the folded lane)
    keys_tracked: int = 10_000
    #: density bins over the whole run
    bins: int = 1_000
    #: rejected records listed per reason
    rejected: int = 20


class Reservoir:
    """A uniform sample of at most ``size`` items of a stream (Vitter's algorithm R) with a
    seeded generator; :meth:`offer` says whether the item was kept and which one it evicted."""

    def __init__(self, size: int, seed: int = 0) -> None:
        self.size, self.seen = size, 0
        self.items: list[Any] = []
        self._rng = random.Random(seed)

    def offer(self, item: Any) -> tuple[bool, Any]:
        self.seen += 1
        if len(self.items) < self.size:
            self.items.append(item)
            return True, None
        j = self._rng.randrange(self.seen)
        if j < self.size:
            evicted, self.items[j] = self.items[j], item
            return True, evicted
        return False, None


def lane_keys(program: Program) -> dict[str, tuple[int, str]]:
    """Per event type, the parameter (index, name) its lane is keyed on: the one the patterns
    partition or correlate that type's events by (their partition and unification keys, and
    every parameter binding such a key's variable); types without one get a lane of their own."""
    keys: dict[str, tuple[int, str]] = {}
    schemas = program.schemas

    def note(t: str, i: int) -> None:
        schema = schemas.get(t)
        if t not in keys and schema is not None and i < len(schema.params):
            keys[t] = (i, schema.params[i].name)

    for auto in program.automata:
        for t, i in auto.partition_index.items():
            note(t, i)
        key_vars = {var for by_type in auto.key_index.values() for _, var in by_type.values()}
        for by_type in auto.key_index.values():
            for t, (i, _) in by_type.items():
                note(t, i)
        for pos in auto.positions:
            for i, var in pos.binds:
                if var in key_vars:
                    note(pos.type, i)
    return keys


class RunRecord(Trace):
    """The part of a run its report shows (module docstring). Give it to
    :func:`cepflow.replay.replay` as ``record``: the run then traces its tokens into it."""

    def __init__(self, program: Program, limits: Limits | None = None) -> None:
        super().__init__()
        self.program = program
        self.limits = limits or Limits()
        self.autos: dict[str, Automaton] = {a.name: a for a in program.automata}
        self.keys = lane_keys(program)
        #: lane key -> lane number; labels and per-lane counts in that order
        self.lanes: dict[tuple[str, Any], int] = {}
        self.lane_labels: list[str] = []
        self.lane_events: list[int] = []
        #: the folded lane (keys past keys_tracked), made when first needed
        self._folded: int | None = None
        self.ts = array("d")
        self.lane_of = array("l")
        #: the first events (all of them when the input has at most Limits.events)
        self.first_events: list[Event] = []
        self._current: Event | None = None
        self._live: dict[tuple[str, int], TokenStory] = {}
        self._matches: dict[str, Reservoir] = {}
        self._died: dict[str, Reservoir] = {}
        #: kept matches by match id: their story, and their complex event once written
        self._kept: dict[int, TokenStory] = {}
        self.complex: dict[int, ComplexEvent] = {}
        #: window statements' rows kept (they have no automaton, no story)
        self._rows: dict[str, Reservoir] = {}
        #: every complex event's time, by pattern or statement
        self.match_ts: dict[str, array] = {}
        #: partial matches that died, by (pattern, outcome, reason)
        self.died_reasons: dict[tuple[str, str, str], int] = {}
        self.left: list[TokenStory] = []
        self.partial_counts: dict[str, int] = {}

    # -- the input --------------------------------------------------------------------------
    def lane(self, e: Event) -> int:
        """The lane number of an input event (a new lane for a key not seen yet)."""
        key = self.keys.get(e.type)
        if key is None:
            k: tuple[str, Any] = ("type", e.type)
        else:
            value = e.params[key[0]] if key[0] < len(e.params) else None
            k = ("key", value if value is None or isinstance(value, str | int | float | bool)
                 else repr(value))
        n = self.lanes.get(k)
        if n is None:
            if len(self.lanes) >= self.limits.keys_tracked:
                if self._folded is None:
                    self._folded = self._new_lane(("folded", None), "other keys")
                return self._folded
            label = e.type if key is None else f"{key[1]} = {k[1]}"
            n = self._new_lane(k, label)
        return n

    def _new_lane(self, k: tuple[str, Any], label: str) -> int:
        n = self.lanes[k] = len(self.lane_labels)
        self.lane_labels.append(label)
        self.lane_events.append(0)
        return n

    def events(self, events: Iterable[Event]) -> Iterator[Event]:
        """``events`` passed on unchanged, each noted (time, lane, the first ones whole)."""
        ts, lane_of, counts, first = self.ts, self.lane_of, self.lane_events, self.first_events
        keep = self.limits.events + 1  # one more: then the input is known to be larger
        for e in events:
            n = self.lane(e)
            ts.append(e.ts)
            lane_of.append(n)
            counts[n] += 1
            if len(first) < keep:
                first.append(e)
            self._current = e
            yield e
        self._current = None

    # -- the trace --------------------------------------------------------------------------
    def add(self, **kw: Any) -> None:
        """One trace entry (see :class:`~cepflow.runtime.matcher.Trace`): kept in its
        token's story while the token lives, then in the samples or dropped."""
        token = kw["token"]
        if token == CLOCK_TOKEN:  # a pattern's leading timer: no token, no story
            return
        name = kw["pattern"]
        key = (name, token)
        story = self._live.get(key)
        if story is None:
            story = self._live[key] = TokenStory(name, token)
        cur = self._current
        ref = kw.get("event")
        if cur is not None and ref is not None and ref == cur.ref and cur.ts == kw["ts"]:
            kw["event_type"] = cur.type
            kw["event_params"] = cur.params
        story.steps.append(kw)
        kind = kw["kind"]
        if kind == "match":
            del self._live[key]
            story.outcome, story.match_id = "match", kw.get("match")
            kept, evicted = self._sample(self._matches, name, self.limits.matches, story)
            if kept and story.match_id is not None:
                self._kept[story.match_id] = story
            if evicted is not None and evicted.match_id is not None:
                self._kept.pop(evicted.match_id, None)
                self.complex.pop(evicted.match_id, None)
        elif kind in ("trap", "dispose"):
            del self._live[key]
            story.outcome = "trap" if kind == "trap" else "disposed"
            story.reason = kw.get("reason") or ""
            why = (name, story.outcome, story.reason)  # (a pattern's reasons are few)
            self.died_reasons[why] = self.died_reasons.get(why, 0) + 1
            self._sample(self._died, name, self.limits.partials, story)

    @staticmethod
    def _sample(pools: dict[str, Reservoir], name: str, size: int, item: Any
                ) -> tuple[bool, Any]:
        pool = pools.get(name)
        if pool is None:
            # (seeded by the name: the same run gives the same report)
            pool = pools[name] = Reservoir(size, seed=sum(map(ord, name)))
        return pool.offer(item)

    # -- the output -------------------------------------------------------------------------
    def matches(self, found: Iterable[ComplexEvent]) -> Iterator[ComplexEvent]:
        """The complex events passed on unchanged; the kept ones and every time noted."""
        for ce in found:
            times = self.match_ts.get(ce.type)
            if times is None:
                times = self.match_ts[ce.type] = array("d")
            times.append(ce.ts)
            if ce.type in self.autos:
                if ce.match_id in self._kept:
                    self.complex[ce.match_id] = ce
            else:
                # (a window statement's rows have no story: the reservoir keeps them)
                self._sample(self._rows, ce.type, self.limits.matches, ce)
            yield ce

    def finish(self, engine: Any) -> None:
        """At the end of the run: the partial matches left, from the engine's tokens."""
        alive = {(m.name, t.id) for m in engine.matchers for t in m.all_tokens()}
        self.partial_counts = {n: k for n, k in engine.partial_matches().items() if k}
        left: dict[str, list[TokenStory]] = {}
        for key, story in self._live.items():
            if key in alive:
                left.setdefault(key[0], []).append(story)
        self._live = {}
        cap = self.limits.partials
        self.left = []
        for stories in left.values():
            stories.sort(key=lambda s: s.token)
            step = max(1, len(stories) // cap) if len(stories) > cap else 1
            self.left.extend(stories[::step][:cap])

    # -- what the report reads ----------------------------------------------------------------
    @property
    def event_count(self) -> int:
        return len(self.ts)

    @property
    def complete(self) -> bool:
        """Whether every input event is kept (the input had at most Limits.events)."""
        return len(self.first_events) <= self.limits.events

    def kept_matches(self) -> list[tuple[ComplexEvent, TokenStory | None]]:
        """The matches shown, oldest first, each with its story (None for a window row)."""
        out: list[tuple[ComplexEvent, TokenStory | None]] = [
            (ce, self._kept.get(mid)) for mid, ce in self.complex.items()]
        out += [(ce, None) for pool in self._rows.values() for ce in pool.items]
        out.sort(key=lambda m: (m[0].ts, m[0].match_id))
        return out

    def died(self) -> list[TokenStory]:
        return sorted((s for pool in self._died.values() for s in pool.items),
                      key=lambda s: (s.pattern, s.token))


def reason_class(reason: str) -> str:
    """A reason with its quoted values and numbers left out, so that like reasons count
    together (``expected Integer, got '…'``)."""
    return re.sub(r"\b\d+(\.\d+)?\b", "N", re.sub(r"'[^']*'", "'…'", reason))
