"""Batch (tumbling) windows: ``#time_batch(Δ[, reference point])`` and ``#length_batch(n)``.

Events join the current batch silently; when the batch closes the processor outputs it and
the next batch starts empty (Esper's viewreference, "Time batch window", "Length batch window"):

* time batch — the batch closes at the reference point ``r + k·Δ``: ``r`` is the given
  reference point, or the first event's timestamp. Time reaching a boundary (a later event, or
  ``advance_to``) closes the batch before events of that instant enter, so a batch is
  ``[b - Δ, b)``. A close is posted if this batch or the previous one held events; after a
  close that posts nothing, no boundary is scheduled until the next event, which schedules the
  next boundary ``r + k·Δ`` after its own timestamp (Esper's ``TimeBatchView``);
* length batch — the batch closes when its ``n``-th event arrives (in the same update);
  per group with ``per_group``.

At the end of input an incomplete batch is not output (Esper outputs a batch only when its
time is up), unless ``finish(flush_batches=True)``: then a time batch closes at its boundary
and a length batch at the current time.
"""

from __future__ import annotations

import math
from typing import Any

from cepflow.windows.base import WindowView
from cepflow.windows.held import EVENT, KEY, TS, Record
from cepflow.windows.processor import Processor, Rows


class TimeBatchWindow(WindowView):
    """``#time_batch(size[, reference_point])``."""

    def __init__(self, size: float, proc: Processor, reference_point: float | None = None
                 ) -> None:
        self.size = size
        self.proc = proc
        self.reference = reference_point
        #: index k of the scheduled boundary reference + k * size (None: none scheduled)
        self.k: int | None = None
        self.current = 0
        self.previous = 0

    def boundary(self) -> float:
        assert self.k is not None and self.reference is not None
        return self.reference + self.k * self.size

    def _set_k(self, k: int | None) -> None:
        self.k = k
        self.due = float("inf") if k is None else self.boundary()

    def _schedule_after(self, t: float) -> None:
        assert self.reference is not None
        k = math.floor((t - self.reference) / self.size) + 1
        while self.reference + (k - 1) * self.size > t:  # guard against rounding
            k -= 1
        while self.reference + k * self.size <= t:
            k += 1
        self._set_k(k)

    def insert(self, rec: Record) -> Rows:
        self.proc.add(rec)  # first: it rejects values it cannot take
        if self.current == 0:
            if self.reference is None:
                self.reference = rec[TS]
            if self.k is None:
                self._schedule_after(rec[TS])
        self.current += 1
        return []

    def _close(self) -> Rows:
        """Close the batch at the scheduled boundary."""
        now = self.boundary()
        posted = self.current > 0 or self.previous > 0
        out = self.proc.flush(now, None) if posted else []
        self._set_k(self.k + 1 if posted else None)  # type: ignore[operator]
        self.previous, self.current = self.current, 0
        return out

    def advance(self, t: float) -> Rows:
        out: Rows = []
        while self.k is not None and self.boundary() <= t:
            out.extend(self._close())
        return out

    def finish(self, now: float, flush_batches: bool) -> Rows:
        if flush_batches and self.current > 0:
            out = self._close()
            self._set_k(None)
            return out
        return []

    def __len__(self) -> int:
        return self.current


class LengthBatchWindow(WindowView):
    """``#length_batch(n)``."""

    def __init__(self, n: int, proc: Processor) -> None:
        self.n = n
        self.proc = proc
        self.current = 0

    def insert(self, rec: Record) -> Rows:
        self.proc.add(rec)
        self.current += 1
        if self.current < self.n:
            return []
        self.current = 0
        return self.proc.flush(rec[TS], rec[EVENT])

    def finish(self, now: float, flush_batches: bool) -> Rows:
        if flush_batches and self.current > 0:
            self.current = 0
            return self.proc.flush(now, None)
        return []

    def __len__(self) -> int:
        return self.current


class GroupLengthBatchWindow(WindowView):
    """``#groupwin(<group by>)#length_batch(n)``: a batch of ``n`` events per group."""

    def __init__(self, n: int, proc: Processor) -> None:
        self.n = n
        self.proc = proc
        #: events in each group's current batch, groups in the order their batch started
        self.current: dict[Any, int] = {}

    def insert(self, rec: Record) -> Rows:
        key = rec[KEY]
        self.proc.add(rec)
        c = self.current.get(key, 0) + 1
        if c < self.n:
            self.current[key] = c
            return []
        self.current.pop(key, None)
        return self.proc.flush(rec[TS], rec[EVENT], key)

    def finish(self, now: float, flush_batches: bool) -> Rows:
        if not flush_batches:
            return []
        out: Rows = []
        for key in list(self.current):
            del self.current[key]
            out.extend(self.proc.flush(now, None, key))
        return out

    def __len__(self) -> int:
        return sum(self.current.values())
