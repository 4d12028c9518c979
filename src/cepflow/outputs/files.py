"""A run's output files: the matches in the format their extension names, and the side file.

Each is written to a hidden file next to it and renamed into place when complete
(:class:`MatchFile`, :func:`write_side_file`): a run that fails leaves neither a partial nor an
empty file behind (an earlier run's file stays as it was), and a run that rejects nothing
removes the side file an earlier run left, so the side file always belongs to the matches next
to it. ``-`` is standard output (JSON Lines).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa

from cepflow.events.event import ComplexEvent, Rejected, SideChannel
from cepflow.outputs.csvfile import CsvWriter
from cepflow.outputs.jsonl import JsonLinesWriter
from cepflow.outputs.parquet import ParquetWriter
from cepflow.outputs.records import match_batches, rejected_batch, rejected_lines

#: output file suffix → format (``.json`` is JSON Lines, as for inputs)
FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".csv": "csv",
           ".parquet": "parquet", ".pq": "parquet"}
#: the output path that means standard output
STDOUT = "-"


class OutputError(ValueError):
    """An output that cannot be written (its format, a folder in the way, no permission);
    the message is one line naming the path."""


def output_format(path: str | os.PathLike[str]) -> str:
    """The format of an output path by its suffix (``jsonl``, ``csv``, ``parquet``;
    standard output is JSON Lines), or OutputError."""
    if os.fspath(path) == STDOUT:
        return "jsonl"
    suffix = Path(path).suffix.lower()
    fmt = FORMATS.get(suffix)
    if fmt is None:
        what = f"'{suffix}'" if suffix else "without an extension"
        raise OutputError(f"{path}: unsupported output format {what} (use "
                          f"{', '.join(sorted(FORMATS))}, or - for standard output)")
    return fmt


def _staging(path: Path) -> tuple[Path, Any]:
    """A new hidden file next to ``path`` (its folder made if missing), opened for binary
    writing; OutputError when that is not possible."""
    if path.is_dir():
        raise OutputError(f"{path}: is a folder, not a file")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return tmp, open(tmp, "wb")  # (closed by the owner)
    except OSError as e:
        raise OutputError(f"{path}: cannot write: {e.strerror}") from None


class MatchFile:
    """The match output of a run: rows of :data:`~cepflow.outputs.records.MATCH_SCHEMA` in,
    the file in its format out, put in place by :meth:`commit` (or dropped by
    :meth:`discard`); used as a context manager it commits unless an exception is raised."""

    def __init__(self, path: str | os.PathLike[str], stdout: TextIO | None = None) -> None:
        self.format = output_format(path)
        self.count = 0
        self.target: Path | None = None if os.fspath(path) == STDOUT else Path(path)
        self._tmp: Path | None = None
        self._file: Any = None
        if self.target is None:
            self.writer: Any = JsonLinesWriter(stdout or sys.stdout)
            return
        self._tmp, raw = _staging(self.target)
        if self.format == "parquet":
            self._file, self.writer = raw, ParquetWriter(raw)
            return
        self._file = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
        self.writer = (CsvWriter if self.format == "csv" else JsonLinesWriter)(self._file)

    def write(self, batch: pa.RecordBatch) -> None:
        """Write rows of the match schema."""
        self.writer.write_batch(batch)
        self.count += batch.num_rows

    def write_matches(self, matches: Iterable[ComplexEvent]) -> None:
        """Write complex events (in chunks: memory stays bounded)."""
        for batch in match_batches(matches):
            self.write(batch)

    def commit(self) -> None:
        """Finish the file and put it in place of ``path``."""
        self.writer.close()
        if self._tmp is not None and self.target is not None:
            self._file.close()
            os.replace(self._tmp, self.target)
            self._tmp = None

    def discard(self) -> None:
        """Drop what was written (``path`` stays as it was)."""
        if self._tmp is not None:
            for close in (self.writer.close, self._file.close):
                # (what failed the run may fail here too: the file goes anyway)
                with contextlib.suppress(OSError, ValueError, pa.ArrowException):
                    close()
            self._tmp.unlink(missing_ok=True)
            self._tmp = None

    def __enter__(self) -> MatchFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()


def check_writable(path: str | os.PathLike[str], *, folder: bool = False) -> None:
    """OutputError unless a file (with ``folder``: a folder, as Spark writes Parquet) could be
    written at ``path`` — checked by making, then removing, a hidden file next to it: an
    output is checked before a run."""
    if os.fspath(path) == STDOUT:
        return
    target = Path(path)
    tmp, raw = _staging(target.with_name(f".{target.name}.probe") if folder else target)
    raw.close()
    tmp.unlink(missing_ok=True)


def write_side_file(rows: pa.RecordBatch | SideChannel | Iterable[tuple[str, Rejected]],
                    path: str | os.PathLike[str]) -> int:
    """Rejected records (rows of :data:`~cepflow.outputs.records.REJECTED_SCHEMA`, a side
    channel or (kind, record) pairs) as JSON Lines at ``path``; with none, a file an earlier
    run left there is removed. Returns the number written."""
    batch = rows if isinstance(rows, pa.RecordBatch) else rejected_batch(rows)
    target = Path(path)
    if not batch.num_rows:
        if target.is_file():
            target.unlink()
        return 0
    tmp, raw = _staging(target)
    try:
        with raw:
            raw.write(("\n".join(rejected_lines(batch).to_pylist()) + "\n").encode("utf-8"))
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return batch.num_rows
