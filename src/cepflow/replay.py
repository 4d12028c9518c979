"""Replay of event files on the in-process engine: files in, matches and rejected records out.

What ``cepflow run`` does; :func:`cepflow.spark.replay.replay` is the same job on Spark and
returns the same :class:`Replayed`. The input is read as every engine reads it
(:func:`cepflow.inputs.ordered_events`: a folder's files merged by time), the matches are
written in the format their extension names and the rejected records to the side file, both
in the one encoding of :mod:`cepflow.outputs.records` (docs/formats.md). A path that cannot be
read or written is refused before anything is read or written; the outputs are put in place
only when complete.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import pyarrow as pa

from cepflow.compiler.program import Program
from cepflow.events.event import Event, SideChannel
from cepflow.inputs import ordered_events
from cepflow.inputs.files import Paths
from cepflow.outputs.files import STDOUT, MatchFile, check_writable, output_format, write_side_file
from cepflow.outputs.records import REJECTED_SCHEMA, rejected_batch
from cepflow.runtime.engine import Engine, RunStopped

if TYPE_CHECKING:
    from cepflow.reports.record import RunRecord
    from cepflow.spark.partitioning import Group

#: the engine's progress is reported every this many events
PROGRESS_EVERY = 20_000


@dataclass
class Replayed:
    """What a replay read and wrote (in-process and on Spark alike)."""

    #: events processed (accepted, on time)
    events: int
    #: complex events written
    complex_events: int
    #: records written to the side file (or, without one, only listed in ``side``)
    rejected: int
    #: Spark's pattern groups (none in-process)
    groups: list[Group] = field(default_factory=list)
    #: rejected records by kind (``malformed``, ``late``)
    by_kind: dict[str, int] = field(default_factory=dict)
    #: complex events by pattern
    by_pattern: dict[str, int] = field(default_factory=dict)
    #: the rejected records (rows of :data:`~cepflow.outputs.records.REJECTED_SCHEMA`)
    side: pa.RecordBatch = field(default_factory=lambda: _no_rows())
    #: where the side file is, if one was written
    side_file: Path | None = None
    #: partial matches left at the end, by pattern (in-process only)
    partial_matches: dict[str, int] = field(default_factory=dict)
    #: rule firings (in-process only)
    rule_firings: int = 0
    #: events a window statement could not take (among the ``malformed``; in-process only)
    refused_by_windows: int = 0
    #: (rule, action) pairs whose action is not registered: such rules fire without effect
    missing_actions: list[tuple[str, str]] = field(default_factory=list)
    #: events an expression or rule action failed on (records of kind ``error``, among the
    #: rejected ones; docs/semantics.md, "Evaluation errors")
    errors: int = 0
    #: why engines stopped the run, one (kind, message) per engine: kind ``EvaluationFailed``
    #: (``on_error="fail"``) or ``PartialMatchLimit`` (``max_partial_matches``)
    stopped: list[tuple[str, str]] = field(default_factory=list)


def _no_rows() -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=REJECTED_SCHEMA)


def side_path(output: str | os.PathLike[str], rejected: str | os.PathLike[str] | None
              ) -> Path | None:
    """Where the side file goes: ``rejected``, else ``OUTPUT.rejected.jsonl`` next to the
    matches; None for matches on standard output without ``rejected`` (the records are then
    only in :attr:`Replayed.side`)."""
    if rejected is not None:
        return Path(rejected)
    if os.fspath(output) == STDOUT:
        return None
    return Path(output).with_suffix(".rejected.jsonl")


def replay(
    inputs: Paths,
    program: Program,
    output: str | os.PathLike[str],
    rejected: str | os.PathLike[str] | None = None,
    *,
    actions: Mapping[str, Callable[..., Any]] | None = None,
    close_windows: bool = False,
    lateness: float = 0,
    start: float | None = None,
    reader_options: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    stdout: TextIO | None = None,
    record: RunRecord | None = None,
    on_error: str = "skip",
    max_partial_matches: int | None = None,
) -> Replayed:
    """Complex events of ``program`` over ``inputs`` (files and folders of JSON Lines / CSV /
    Parquet events, in time order within ``lateness`` ms) written to ``output`` (``.jsonl``,
    ``.csv``, ``.parquet``, or ``-`` for ``stdout``), the rejected records to ``rejected``
    (:func:`side_path`). ``actions`` are the rule actions (default: the registered ones);
    ``start`` the statements' start (default: the first event's time); ``reader_options`` as
    for :func:`cepflow.inputs.read_events`; ``progress(events, matches)`` is called now and
    then. ``record`` (for ``run --report``) is shown the events, the tokens' moves (the engine
    traces into it, which turns the column kernels off) and the matches. ``on_error`` and
    ``max_partial_matches`` are the engine's (docs/semantics.md): an engine that stops the run
    has its matches written and the reason in :attr:`Replayed.stopped`. Raises
    :class:`~cepflow.inputs.InputError`,
    :class:`~cepflow.outputs.OutputError` or ValueError before reading anything when a path
    or an option is unusable."""
    output_format(output)
    side_file = side_path(output, rejected)
    if side_file is not None:
        check_writable(side_file)
    side = SideChannel()
    events = ordered_events(inputs, program.schemas, side, lateness=lateness,
                            **dict(reader_options or {}))
    engine = Engine(program, actions=actions, strict_actions=False, side=side, start=start,
                    trace=record if record is not None else False,
                    on_error=on_error, max_partial_matches=max_partial_matches)
    if record is not None:
        events = record.events(events)
    counted = _Counted(events, progress)
    noted = record.matches if record is not None else _as_is
    stopped: list[tuple[str, str]] = []
    with MatchFile(output, stdout=stdout) as out:
        try:
            out.write_matches(noted(counted.matches(engine.run(counted))))
            out.write_matches(noted(counted.matches(engine.finish(close_windows=close_windows))))
        except RunStopped as ex:  # (what the engine found until then is written)
            out.write_matches(noted(counted.matches(iter(ex.complex_events))))
            stopped.append((type(ex).__name__, str(ex)))
    if record is not None:
        record.finish(engine)
    rows = rejected_batch(side)
    if side_file is not None:
        write_side_file(rows, side_file)
    stats = engine.stats
    return Replayed(
        events=stats.events, complex_events=out.count, rejected=rows.num_rows,
        by_kind={k: n for k, n in (("malformed", len(side.malformed)),
                                   ("late", len(side.late)), ("error", len(side.errors))) if n},
        by_pattern=dict(sorted(stats.by_pattern.items())), side=rows,
        side_file=side_file if side_file is not None and rows.num_rows else None,
        partial_matches={n: k for n, k in engine.partial_matches().items() if k},
        rule_firings=stats.rule_firings, refused_by_windows=stats.rejected,
        missing_actions=engine.missing_actions(), errors=stats.errors, stopped=stopped)


def _as_is(found: Iterator[Any]) -> Iterator[Any]:
    return found


class _Counted:
    """The input events and the matches, counted on their way for the progress callback."""

    def __init__(self, events: Iterator[Event],
                 progress: Callable[[int, int], None] | None) -> None:
        self.events, self.progress = events, progress
        self.n_in = self.n_out = 0

    def __iter__(self) -> Iterator[Event]:
        if self.progress is None:
            yield from self.events
            return
        for e in self.events:
            self.n_in += 1
            if self.n_in % PROGRESS_EVERY == 0:
                self.progress(self.n_in, self.n_out)
            yield e

    def matches(self, found: Iterator[Any]) -> Iterator[Any]:
        for m in found:
            self.n_out += 1
            yield m
