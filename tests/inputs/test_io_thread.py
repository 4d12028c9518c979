"""Reading ahead and writing behind the engine on threads (cepflow.io_thread): the items and
batches in their order, errors where the caller would meet them, the reader's rejected records
handed over with their part, and a run that stops reporting only what it read."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from unittest import mock

import pyarrow as pa
import pytest

from cepflow.events.event import Rejected, SideChannel
from cepflow.inputs import batched
from cepflow.io_thread import SideHandover, WriteBehind, read_ahead
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.outputs.files import MatchFile
from cepflow.replay import replay


def _source(n: int, fail_at: int | None = None, log: list | None = None,
            side: SideChannel | None = None):
    """Items 0..n-1 made on whatever thread asks; a rejected record put down with each."""
    try:
        for i in range(n):
            if i == fail_at:
                raise ValueError(f"bad item {i}")
            if side is not None:
                side.malformed.append(Rejected("f", f"row {i}", "bad"))
            if log is not None:
                log.append((i, threading.current_thread().name))
            yield i
    finally:
        if log is not None:
            log.append(("closed", threading.current_thread().name))


def test_read_ahead_keeps_the_order_and_reads_on_a_thread() -> None:
    log: list = []
    assert list(read_ahead(_source(50, log=log))) == list(range(50))
    assert all(name.startswith("cepflow-read") for i, name in log if i != "closed")


def test_an_error_comes_out_where_the_item_would_have() -> None:
    got = []
    with pytest.raises(ValueError, match="bad item 3"):
        for x in read_ahead(_source(10, fail_at=3)):
            got.append(x)
    assert got == [0, 1, 2]


def test_closing_early_reads_at_most_one_part_more_and_closes_the_source() -> None:
    log: list = []
    it = read_ahead(_source(100, log=log))
    assert [next(it), next(it)] == [0, 1]
    it.close()
    made = [i for i, _ in log if i != "closed"]
    assert made in ([0, 1], [0, 1, 2])  # (the one read ahead, unless dropped before it began)
    assert log[-1][0] == "closed"


def test_rejected_records_are_handed_over_with_their_item() -> None:
    side = SideChannel()
    handover = SideHandover(side)
    seen = []
    it = read_ahead(_source(5, side=handover.reader), handover=handover)
    for x in it:
        # once the thread has read the next item, its record is down but not handed over
        deadline = time.monotonic() + 5
        while len(handover.reader.malformed) < x + 2 and time.monotonic() < deadline:
            time.sleep(0.001)
        seen.append([r.location for r in side.malformed])
        if x == 2:
            break
    it.close()
    assert seen == [["row 0"], ["row 0", "row 1"], ["row 0", "row 1", "row 2"]]
    assert len(handover.reader.malformed) == 4  # (row 3 was read, never handed over)
    assert len(side.malformed) == 3


def test_write_behind_writes_in_order(tmp_path: Path) -> None:
    out = tmp_path / "m.jsonl"
    schema = pa.schema([("pattern", pa.string()), ("ts", pa.int64()), ("params", pa.string()),
                        ("events", pa.list_(pa.string()))])
    with MatchFile(out) as file, WriteBehind(file) as w:
        for i in range(20):
            w.write(pa.record_batch([[f"P{i}"], [i], ["{}"], [[str(i)]]], schema=schema))
    assert [json.loads(line)["ts"] for line in out.read_text().splitlines()] == list(range(20))
    assert file.count == 20


def test_a_failed_write_is_raised_and_the_file_not_put_in_place(tmp_path: Path) -> None:
    out = tmp_path / "m.jsonl"
    file = MatchFile(out)
    with pytest.raises(OSError, match="disk full"), file, \
            mock.patch.object(file.writer, "write_batch", side_effect=OSError("disk full")), \
            WriteBehind(file) as w:
        w.write(pa.record_batch([[1]], names=["x"]))
    assert not out.exists()


def test_leaving_on_an_error_drops_what_waits(tmp_path: Path) -> None:
    started, release = threading.Event(), threading.Event()
    written: list[int] = []

    class Slow:
        count = 0

        def write(self, batch: pa.RecordBatch) -> None:
            started.set()
            release.wait(5)
            written.append(batch.num_rows)

    w = WriteBehind(Slow())  # type: ignore[arg-type]
    with pytest.raises(KeyError), w:
        w.write(pa.record_batch([[1]], names=["x"]))
        w.write(pa.record_batch([[1, 2]], names=["x"]))
        started.wait(5)
        threading.Timer(0.2, release.set).start()  # (the first ends while the run leaves)
        raise KeyError("the run failed")
    assert written == [1]  # (the write under way finished, the waiting one was dropped)


ESPER = """create schema A(k int, v double);
create schema B(k int, v double);
@Name('P')
insert into P
select a.k as k from pattern [every a=A -> b=B(b.k = a.k) where timer:within(100 msec)];
"""


def test_a_stopped_run_reports_only_what_it_read(tmp_path: Path) -> None:
    """The run stops in the first part (two partial matches, one allowed): the second part,
    which the thread may already have read, holds a bad record that must not be reported."""
    src = tmp_path / "in.jsonl"
    lines = [{"type": "A", "ts": 1, "k": 1, "v": 0.0}, {"type": "A", "ts": 2, "k": 2, "v": 0.0},
             {"type": "A", "ts": 3, "k": 3, "v": 0.0}, {"type": "B", "ts": 4, "k": "x", "v": 1.0},
             {"type": "B", "ts": 5, "k": 1, "v": 1.0}, {"type": "B", "ts": 6, "k": 2, "v": 1.0}]
    src.write_text("".join(json.dumps(r) + "\n" for r in lines))
    program = load_module(parse_epl(ESPER))
    runs = {}
    for threads in (False, True):
        out = tmp_path / f"out-{threads}.jsonl"
        with mock.patch.object(batched, "BLOCK_BYTES", 100):  # (a part of about two lines)
            run = replay([src], program, out, threads=threads, max_partial_matches=1)
        side = out.with_suffix(".rejected.jsonl")
        runs[threads] = (run.stopped, run.rejected, out.read_text(),
                         side.read_text() if side.exists() else "")
    assert runs[True] == runs[False]
    assert runs[False][0] and runs[False][1] == 0


def test_one_usable_core_runs_without_threads(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"type": "A", "ts": i, "k": 1, "v": 0.0}) + "\n"
                           + json.dumps({"type": "B", "ts": i, "k": 1, "v": 0.0}) + "\n"
                           for i in range(5)))
    program = load_module(parse_epl(ESPER))
    with mock.patch("cepflow.replay.usable_cores", return_value=1), \
            mock.patch("cepflow.io_thread.ThreadPoolExecutor",
                       side_effect=AssertionError("a thread with one core")):
        run = replay([src], program, tmp_path / "out.jsonl")
    assert run.complex_events == 5
    with mock.patch("cepflow.replay.usable_cores", return_value=2):
        assert replay([src], program, tmp_path / "out2.jsonl").complex_events == 5
    assert (tmp_path / "out.jsonl").read_text() == (tmp_path / "out2.jsonl").read_text()
