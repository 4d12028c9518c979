"""A file job's reading and writing on a thread beside the engine (docs/architecture.md, "The
file job").

Most of what reading a part of a file and writing its matches costs runs in pyarrow's and
numpy's kernels and in file system calls, which let go of Python's interpreter lock: on a
machine with a second core it can run while the engine detects. :func:`read_ahead` reads the
next part while the engine works on this one; :class:`WriteBehind` writes a part's matches
while the engine works on the next. Both keep their order and bound what is queued (a part
read ahead, two batches of matches behind), and an error on the thread is raised in the
caller's thread at the point where the caller would have met it without the thread.

What runs on a thread touches only its own objects: the reader its files and a side channel of
its own, whose records reach the run's with the part they were read with
(:class:`SideHandover`); the writer its match file and the parts the engine is done with.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import pyarrow as pa

from cepflow.events.event import ComplexEvent, SideChannel
from cepflow.outputs.files import MatchFile
from cepflow.outputs.records import match_batches

T = TypeVar("T")

_END = object()


def usable_cores() -> int:
    """The cores this process may run on: with one, a thread beside the engine only takes
    turns with it."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # (no affinity on this system)
        return os.cpu_count() or 1


class _InOrder:
    """One worker thread running calls in the order they were submitted, with at most
    ``depth`` unfinished: submitting more first waits for the oldest. Without ``thread`` each
    call runs when it is submitted, on the caller's thread."""

    def __init__(self, name: str, depth: int, thread: bool = True) -> None:
        self.depth = depth
        self._pool = (ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"cepflow-{name}")
                      if thread else None)
        self._pending: deque[Future[Any]] = deque()

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._pool is None:
            fn(*args)
            return
        while len(self._pending) >= self.depth:
            self.oldest()
        self._pending.append(self._pool.submit(fn, *args))

    def oldest(self) -> Any:
        """The result of the oldest unfinished call (its exception raised here)."""
        return self._pending.popleft().result()

    def drain(self) -> None:
        """Wait for every call; the first failure is raised."""
        while self._pending:
            self.oldest()

    def stop(self) -> None:
        """Wait for what runs, drop what did not start, end the thread; failures are not
        raised (the caller is leaving on an error of its own, or has drained)."""
        for f in self._pending:
            f.cancel()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        self._pending.clear()


class SideHandover:
    """The rejected records of a reader running ahead, kept on a side channel of its own
    (:attr:`reader`) and handed to the run's side channel (:attr:`side`) with the part they
    were read with: what the run never takes (it stopped first) is not reported, as it would
    not have been read, and the run's side channel sees the records in the order it would
    without the thread."""

    def __init__(self, side: SideChannel) -> None:
        self.side, self.reader = side, SideChannel()
        self._given = (0, 0, 0)

    def mark(self) -> tuple[int, int, int]:
        """How many records of each kind the reader has put down (called on the thread)."""
        r = self.reader
        return len(r.malformed), len(r.late), len(r.errors)

    def deliver(self, mark: tuple[int, int, int]) -> None:
        """Hand over the records put down before ``mark``."""
        for kind, start, end in zip(("malformed", "late", "errors"), self._given, mark,
                                    strict=True):
            getattr(self.side, kind).extend(getattr(self.reader, kind)[start:end])
        self._given = mark


class _Raised:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def _step(items: Iterator[Any], handover: SideHandover | None) -> tuple[Any, Any]:
    """The next item (``_END`` at the end, ``_Raised`` for an exception), with the reader's
    side-channel mark after it."""
    try:
        item = next(items, _END)
    except BaseException as e:  # (raised in the caller, after the records read before it)
        item = _Raised(e)
    return item, handover.mark() if handover is not None else None


def read_ahead(items: Iterator[T], depth: int = 1,
               handover: SideHandover | None = None) -> Iterator[T]:
    """``items``, each produced on a worker thread up to ``depth`` items before the caller
    asks for it (module docstring), the records it rejects handed over with it
    (:class:`SideHandover`). An exception ``items`` raises comes out of the ``next`` that
    would have produced that item. Closing this iterator early waits for the item being read
    and closes ``items``."""
    worker = _InOrder("read", depth)
    try:
        for _ in range(depth):
            worker.submit(_step, items, handover)
        while True:
            item, mark = worker.oldest()
            if handover is not None:
                handover.deliver(mark)
            if isinstance(item, _Raised):
                raise item.error
            if item is _END:
                return
            worker.submit(_step, items, handover)
            yield item
    finally:
        worker.stop()
        close = getattr(items, "close", None)
        if close is not None:
            close()


class WriteBehind:
    """A :class:`~cepflow.outputs.files.MatchFile`'s writes done on a worker thread, in
    order, with at most ``depth`` batches waiting (module docstring); without ``thread``, on
    the caller's. Used as a context manager around the run: leaving it waits for the last
    write and raises a failed write's error; leaving on an error waits for the write under
    way and drops the rest."""

    def __init__(self, out: MatchFile, depth: int = 2, thread: bool = True) -> None:
        self.out = out
        self._worker = _InOrder("write", depth, thread)

    def write(self, batch: pa.RecordBatch) -> None:
        """Write rows of the match schema (on the thread)."""
        self._worker.submit(self.out.write, batch)

    def write_made(self, make: Callable[[], pa.RecordBatch]) -> None:
        """Write the rows ``make()`` returns, made on the thread too: ``make`` must read only
        what the caller no longer changes (a part's columns and its matches)."""
        self._worker.submit(_write_made, self.out, make)

    def write_matches(self, matches: Iterable[ComplexEvent]) -> None:
        """Write complex events: their rows are made here, then written on the thread."""
        for batch in match_batches(matches):
            self.write(batch)

    def __enter__(self) -> WriteBehind:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        try:
            if kind is None:
                self._worker.drain()
        finally:
            self._worker.stop()


def _write_made(out: MatchFile, make: Callable[[], pa.RecordBatch]) -> None:
    out.write(make())
