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
from contextlib import closing, nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import pyarrow as pa

from cepflow.compiler.program import Program
from cepflow.events.event import Event, Rejected, SideChannel
from cepflow.inputs import ordered_events
from cepflow.inputs.batched import Layout, Part, ordered_parts
from cepflow.inputs.files import Paths, input_files
from cepflow.io_thread import SideHandover, WriteBehind, read_ahead, usable_cores
from cepflow.outputs.files import STDOUT, MatchFile, check_writable, output_format, write_side_file
from cepflow.outputs.records import REJECTED_SCHEMA, rejected_batch
from cepflow.runtime.arrow_rows import ArrowRows, encode_match_table
from cepflow.runtime.engine import Engine, RunStopped
from cepflow.runtime.kernels import Declined
from cepflow.runtime.rows import ObjectMatches

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
    columns: bool = True,
    threads: bool | None = None,
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
    has its matches written and the reason in :attr:`Replayed.stopped`. The input is read
column-wise (:mod:`cepflow.inputs.batched`) unless ``columns`` is False or ``record`` is given:
then record by record (the reference route; the same outputs). With ``threads`` (by default
when the process may use more than one core) the parts are read ahead and the matches written
behind the engine on threads (:mod:`cepflow.io_thread`; the same outputs). Raises
    :class:`~cepflow.inputs.InputError`,
    :class:`~cepflow.outputs.OutputError` or ValueError before reading anything when a path
    or an option is unusable."""
    output_format(output)
    side_file = side_path(output, rejected)
    if side_file is not None:
        check_writable(side_file)
    side = SideChannel()
    layout = Layout.of(program.schemas)
    opts = dict(reader_options or {})
    by_columns = columns and record is None
    if threads is None:
        threads = usable_cores() > 1
    handover = SideHandover(side) if threads and by_columns else None
    parts = (ordered_parts(inputs, layout, handover.reader if handover else side,
                           lateness=lateness, **opts) if by_columns else None)
    if parts is not None and handover is not None:
        parts = read_ahead(parts, handover=handover)
    events = (iter(()) if by_columns else
              ordered_events(inputs, program.schemas, side, lateness=lateness, **opts))
    engine = Engine(program, actions=actions, strict_actions=False, side=side, start=start,
                    trace=record if record is not None else False,
                    on_error=on_error, max_partial_matches=max_partial_matches)
    if record is not None:
        events = record.events(events)
    counted = _Counted(events, progress)
    noted = record.matches if record is not None else _as_is
    stopped: list[tuple[str, str]] = []
    with (MatchFile(output, stdout=stdout) as file,
          closing(parts) if parts is not None else nullcontext(),
          WriteBehind(file, thread=threads) as out):
        try:
            if parts is not None:
                _run_parts(engine, parts, layout, out, counted)
            else:
                out.write_matches(noted(counted.matches(engine.run(counted))))
            out.write_matches(noted(counted.matches(engine.finish(close_windows=close_windows))))
        except RunStopped as ex:  # (what the engine found until then is written)
            out.write_matches(noted(counted.matches(iter(ex.complex_events))))
            stopped.append((type(ex).__name__, str(ex)))
    if record is not None:
        record.finish(engine)
    _in_input_order(side, input_files(inputs, SideChannel()))
    rows = rejected_batch(side)
    if side_file is not None:
        write_side_file(rows, side_file)
    stats = engine.stats
    return Replayed(
        events=stats.events, complex_events=file.count, rejected=rows.num_rows,
        by_kind={k: n for k, n in (("malformed", len(side.malformed)),
                                   ("late", len(side.late)), ("error", len(side.errors))) if n},
        by_pattern=dict(sorted(stats.by_pattern.items())), side=rows,
        side_file=side_file if side_file is not None and rows.num_rows else None,
        partial_matches={n: k for n, k in engine.partial_matches().items() if k},
        rule_firings=stats.rule_firings, refused_by_windows=stats.rejected,
        missing_actions=engine.missing_actions(), errors=stats.errors, stopped=stopped)


def _run_parts(engine: Engine, parts: Iterator[Part], layout: Layout, out: WriteBehind,
               counted: _Counted) -> None:
    """The column route of a replay: the input read column-wise
    (:mod:`cepflow.inputs.batched`). When the engine takes columns (:attr:`Engine.columnar`),
    a clean part goes through :meth:`Engine.process_columns` and its matches are written
    column-wise (:func:`~cepflow.runtime.arrow_rows.encode_match_table`); a part read by the
    record reader, or one the kernel gives back (:class:`Declined`), goes as events. Otherwise
    every part is made events for :meth:`Engine.run` (docs/architecture.md, "The file job")."""
    if not engine.columnar:
        events = (e for p in counted.parts(parts) for e in p.event_list(layout))
        out.write_matches(counted.matches(engine.run(events)))
        return
    for p in counted.parts(parts):
        if p.table is not None:
            rows = ArrowRows(p.batch(), layout.arities, layout.arity)
            try:
                table = engine.process_columns(rows)
            except Declined:
                pass
            else:
                counted.n_out += table.count
                if any(isinstance(b, ObjectMatches) for b in table.blocks):
                    # (matches made as objects are encoded one by one, holding the
                    # interpreter lock: here, not on the writer's thread, where they would
                    # only take turns with the engine)
                    out.write(encode_match_table(table, rows))
                else:  # (made on the writer's thread: the part's columns and matches are
                    # not changed once the engine has taken the part)
                    out.write_made(partial(encode_match_table, table, rows))
                continue
        out.write_matches(counted.matches(engine.run(p.event_list(layout))))


def _in_input_order(side: SideChannel, files: list[Path]) -> None:
    """Put the input's malformed and late records in input order: by file (in the order
    the input lists them, a folder's entries that are no event file first), then by place in
    the file; what a window statement refused follows the input's records (docs/formats.md,
    "The side file's order")."""
    rank = {os.fspath(f): i for i, f in enumerate(files)}

    def key(r: Rejected) -> int:
        return rank.get(r.source, -1 if r.location == "file" else len(rank))

    side.malformed.sort(key=key)
    side.late.sort(key=key)


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

    def parts(self, parts: Iterator[Part]) -> Iterator[Part]:
        """``parts``, their events counted for the progress callback."""
        for p in parts:
            self.n_in += len(p)
            if self.progress is not None:
                self.progress(self.n_in, self.n_out)
            yield p

    def matches(self, found: Iterator[Any]) -> Iterator[Any]:
        for m in found:
            self.n_out += 1
            yield m
