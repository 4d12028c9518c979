"""End-to-end pipeline benchmark: read → detect → write, in-process and on Spark.

Three ways to run the same compiled patterns over the same JSON Lines files:

* **local** — what ``cepflow run`` does: ``cepflow.replay.replay`` (the folder's files merged by
  time, lateness 0 → ``Engine(program).run`` + ``finish`` → the JSON Lines writer); in a forked
  child process, so its peak RSS is its own.
* **batch** — ``cepflow.spark.replay`` (one job) into a Parquet folder; Spark jobs included,
  session start not (reported separately).
* **stream** — ``cepflow.spark.streaming.stream_query(..., available_now=True,
  files_per_trigger=K)`` + ``awaitTermination()`` over the pre-written files; events/s over the
  whole run and per micro-batch (``query.recentProgress``).
* **floor** — no cepflow at all: Spark's own JSON reader → ``repartition`` by the key column →
  ``sortWithinPartitions("ts")`` → ``mapInArrow`` with a function that only counts the rows.
  The least any Spark pipeline that hands each key's time-ordered events to Python must do;
  no output is written; best of two runs. It puts the batch target in proportion on this
  machine.

Workloads, generated once per (pattern, events, keys) under ``benchmarks/results/data/`` as files
of ~250,000 events with ids and increasing modification times: **gesture** (the stream of
``examples/gesture/events.py`` with ``keys`` bodies, pattern ``examples/gesture/gesture.vepl``) and
**filter** (seeded random ``Reading(sensor, temp)`` events of ``keys`` sensors, pattern
``Overheat(s)``: two hot readings of one sensor within 10 s). Every Spark run must produce as
many complex events as the local run, or the benchmark aborts. ``--input-format parquet`` runs
every mode on the same events converted once to Parquet (one file per JSON Lines file; the floor
then uses Spark's Parquet reader).

    .venv/bin/python benchmarks/spark_pipeline.py            # 1M and 10M events, keys 64..100k
    .venv/bin/python benchmarks/spark_pipeline.py --quick    # a few minutes
    .venv/bin/python benchmarks/spark_pipeline.py --events 1000000 --keys 64,100000
    .venv/bin/python benchmarks/spark_pipeline.py --events 1000000 --keys 64 --input-format parquet
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import random
import shutil
import statistics
import sys
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from common import (
    ROOT,
    BenchmarkFailure,
    console,
    fmt_bytes,
    fmt_float,
    fmt_int,
    int_list,
    machine_line,
    make_table,
    metadata,
    peak_rss_kib,
    positive_int,
    run_isolated,
    write_json,
)
from rich.console import Console

from cepflow.compiler.program import Program, compile_module
from cepflow.language.parser import parse_file

# NB: pyspark and cepflow.spark are imported only in the Spark phase, after every local run:
# the local runs are forked from a driver that has no JVM, no py4j threads and no pyspark heap.

RESULTS = ROOT / "benchmarks" / "results"
DATA = RESULTS / "data"
OUT = DATA / "out"
DEFAULT_JSON = RESULTS / "spark_pipeline.json"

GESTURE_DIR = ROOT / "examples" / "gesture"
GESTURE_PATTERN = GESTURE_DIR / "gesture.vepl"
FILTER_PATTERN = DATA / "filter.vepl"
FILTER_SOURCE = """\
// written by benchmarks/spark_pipeline.py: a filter + within pattern over sensor readings
atomicEvent Reading(sensor: String, temp: Double)

complexEvent Overheat(s: String) {
  as (Reading(s, _) where temp > 90 -> Reading(s, _) where temp > 95)[10 s]
}
"""
PATTERNS = ("gesture", "filter")
MODES = ("local", "batch", "stream", "floor")

DEFAULT_EVENTS = (1_000_000, 10_000_000)
DEFAULT_KEYS = (64, 1_000, 100_000)
QUICK_EVENTS = (500_000,)
QUICK_KEYS = (64, 10_000)
FILE_EVENTS = 250_000
FILES_PER_TRIGGER = 8  # 2,000,000 events per micro-batch: large, as streaming runs best
#: bump when the generated data changes, so cached inputs are regenerated
DATA_VERSION = 2
FILTER_SEED = 20261121
#: event time of the first reading, epoch ms (2023-11-14T22:13:20Z), as real sensors stamp
#: them. Not 0: the streaming pipeline silently drops events at or before 1970-01-01T00:00:00
#: in its first micro-batch (see the README), which would make stream and local differ.
FILTER_T0 = 1_700_000_000_000
TEMP_RANGE = (20.0, 100.0)

EVENTS_PER_CYCLE = 6  # gesture: 4 gesture events + 2 noise events per body and arm cycle
TARGETS = {"batch": 1_000_000, "stream": 250_000}  # events/s on local[2]
TARGET_MASTER = "local[2]"


# -- workloads --------------------------------------------------------------------------------
def load_program(pattern: str) -> Program:
    """The compiled patterns of a workload (the filter pattern file is written on demand)."""
    if pattern == "filter":
        FILTER_PATTERN.parent.mkdir(parents=True, exist_ok=True)
        if not FILTER_PATTERN.exists() or FILTER_PATTERN.read_text("utf-8") != FILTER_SOURCE:
            FILTER_PATTERN.write_text(FILTER_SOURCE, encoding="utf-8")
        return compile_module(parse_file(FILTER_PATTERN))
    return compile_module(parse_file(GESTURE_PATTERN))


def pattern_file(pattern: str) -> Path:
    return FILTER_PATTERN if pattern == "filter" else GESTURE_PATTERN


def gesture_lines(events: int, keys: int) -> tuple[Iterator[str], int, dict[str, Any]]:
    """JSON lines of ``gesture_events(keys, cycles, with_ids=True)``, as the example writes
    them; the count; what the stream should produce (one gesture per body and cycle)."""
    folder = str(GESTURE_DIR)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import events as gesture_module  # examples/gesture/events.py

    if Path(gesture_module.__file__ or "").resolve() != (GESTURE_DIR / "events.py").resolve():
        raise RuntimeError(f"'import events' found {gesture_module.__file__}, not the gesture "
                           "example")
    per_cycle = gesture_module.EVENTS_PER_CYCLE
    cycles = max(1, events // (per_cycle * keys))

    def lines() -> Iterator[str]:
        dumps = json.dumps
        for e in gesture_module.gesture_events(keys, cycles, with_ids=True):
            yield dumps({"type": e.type, "ts": e.ts, "id": e.id, "B": e.params[0]}) + "\n"

    return lines(), per_cycle * keys * cycles, {"cycles": cycles,
                                                "expected_complex_events": keys * cycles}


def filter_lines(events: int, keys: int) -> tuple[Iterator[str], int, dict[str, Any]]:
    """Readings of ``keys`` sensors (uniformly random sensor, temperature uniform in 20 to 100 °C
    with one decimal, seeded); timestamps increase so that each sensor reads about once a
    second: event ``i`` at ``FILTER_T0 + i * 1000 // keys`` ms."""
    lo, hi = TEMP_RANGE

    def lines() -> Iterator[str]:
        rng = random.Random(FILTER_SEED)
        pick, unif = rng.randrange, rng.uniform
        for i in range(events):
            yield (f'{{"type":"Reading","ts":{FILTER_T0 + i * 1000 // keys},"id":"r{i}",'
                   f'"sensor":"s{pick(keys)}","temp":{unif(lo, hi):.1f}}}\n')

    return lines(), events, {"seed": FILTER_SEED, "temp_range": list(TEMP_RANGE),
                             "ts": f"{FILTER_T0} + i * 1000 // keys ms"}


def case_folder(pattern: str, events: int, keys: int, file_events: int) -> Path:
    return DATA / f"{pattern}-e{events}-k{keys}-f{file_events}"


def generate(pattern: str, events: int, keys: int, file_events: int) -> dict[str, Any]:
    """Write the workload's files (once; reused while the manifest matches). Files are written
    to a staging folder and renamed in, modification times one second apart in name order —
    the streaming file source takes the oldest first."""
    base = case_folder(pattern, events, keys, file_events)
    manifest_path = base / "manifest.json"
    want = {"version": DATA_VERSION, "pattern": pattern, "events_requested": events,
            "keys": keys, "file_events": file_events}
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text("utf-8"))
        if all(manifest.get(k) == v for k, v in want.items()) and all(
                (base / "files" / f["name"]).exists() for f in manifest["files"]):
            manifest["generated_seconds"] = 0.0
            manifest["reused"] = True
            return manifest
    shutil.rmtree(base, ignore_errors=True)
    staging, files_dir = base / "staging", base / "files"
    staging.mkdir(parents=True)
    files_dir.mkdir()
    t0 = time.perf_counter()
    make = gesture_lines if pattern == "gesture" else filter_lines
    lines, total, extra = make(events, keys)
    files: list[dict[str, Any]] = []
    stamp = time.time() - 10 - (total // file_events + 1)
    while True:
        chunk = list(islice(lines, file_events))
        if not chunk:
            break
        name = f"part-{len(files):05d}.jsonl"
        tmp = staging / name
        with tmp.open("w", encoding="utf-8", newline="\n") as fh:
            fh.writelines(chunk)
        os.utime(tmp, (stamp + len(files), stamp + len(files)))
        tmp.rename(files_dir / name)
        files.append({"name": name, "events": len(chunk)})
    staging.rmdir()
    written = sum(f["events"] for f in files)
    if written != total:
        raise BenchmarkFailure(f"{pattern}: wrote {written:,} events, expected {total:,}")
    manifest = {**want, "events": total, **extra, "files": files,
                "bytes": sum((files_dir / f["name"]).stat().st_size for f in files)}
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return {**manifest, "generated_seconds": time.perf_counter() - t0, "reused": False}


def input_files(pattern: str, events: int, keys: int, file_events: int, fmt: str) -> Path:
    """The folder of the workload's input files in ``fmt``: the generated JSON Lines, or the
    same events as Parquet (one file per JSON Lines file, same names and modification times
    but the suffix; written once, from the JSON Lines with the workload's column types)."""
    base = case_folder(pattern, events, keys, file_events)
    jsonl = base / "files"
    if fmt == "jsonl":
        return jsonl
    import pyarrow as pa
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    target = base / "files-parquet"
    sources = sorted(jsonl.glob("*.jsonl"))
    done = target / "_COMPLETE"
    if done.exists() and done.read_text("utf-8") == str(len(sources)):
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    types = {"string": pa.string(), "long": pa.int64(), "double": pa.float64()}
    schema = pa.schema([(name, types[kind]) for name, kind in
                        (c.split() for c in FLOOR_SCHEMA[pattern][0].split(", "))])
    for src in sources:
        table = pj.read_json(src, parse_options=pj.ParseOptions(explicit_schema=schema))
        out = target / (src.stem + ".parquet")
        pq.write_table(table, out)
        stamp = src.stat().st_mtime
        os.utime(out, (stamp, stamp))
    done.write_text(str(len(sources)), "utf-8")
    return target


# -- memory of this process and its descendants -----------------------------------------------
def _status_kib(pid: int | str, field: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def reset_peak(pid: int | str = "self") -> bool:
    """Reset a process's peak RSS (VmHWM, and so ``ru_maxrss``) to its current RSS: writing
    5 to ``/proc/PID/clear_refs`` (Linux ≥ 4.0). False if not possible."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def descendants(root: int) -> dict[int, str]:
    """Live descendants of ``root`` (pid → kind: jvm, python or other), from ``/proc``."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="utf-8", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: dict[int, str] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        exe = os.path.basename(argv[0].decode(errors="replace")) if argv and argv[0] else ""
        found[pid] = ("jvm" if exe == "java" else
                      "python" if exe.startswith("python") else "other")
        todo.extend(children.get(pid, []))
    return found


class ProcessPeaks:
    """Peak RSS over one measurement of the driver (this process: ``ru_maxrss`` after a reset)
    and of its descendants — in ``local[N]`` the JVM (Spark driver and executor in one) and the
    Python workers the executor starts. Peaks are reset at the start where the kernel lets us,
    and each descendant's VmHWM is sampled every ``interval`` s (a worker that exits between
    two samples keeps the peak of its last sample)."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self.me = os.getpid()
        self.peaks: dict[int, tuple[str, int]] = {}
        self.reset_ok = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        for pid, kind in descendants(self.me).items():
            hwm = _status_kib(pid, "VmHWM")
            if hwm is not None:
                old = self.peaks.get(pid, (kind, 0))[1]
                self.peaks[pid] = (kind, max(old, hwm))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def start(self) -> ProcessPeaks:
        gc.collect()
        self.reset_ok = reset_peak()
        for pid in descendants(self.me):
            self.reset_ok = reset_peak(pid) and self.reset_ok
        self._sample()
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample()
        driver = peak_rss_kib()
        jvm = [kib for kind, kib in self.peaks.values() if kind == "jvm"]
        py = [kib for kind, kib in self.peaks.values() if kind == "python"]
        return {
            "driver_peak_rss_kib": driver,
            "driver_peak_is_per_run": self.reset_ok,
            "jvm_peak_rss_kib": max(jvm) if jvm else None,
            "python_workers": {"processes": len(py), "max_peak_rss_kib": max(py, default=0),
                               "sum_peak_rss_kib": sum(py)},
            "peaks_reset": self.reset_ok,
        }


# -- local: what `cepflow run` does, in a forked child ----------------------------------------
def measure_local(pattern: str, files: str, out_file: str) -> dict[str, Any]:
    """``cepflow.replay.replay`` (read the folder merged by time → Engine.run + finish → the
    JSON Lines writer), timed end to end (runs in a forked child: its peak RSS is this run's)."""
    from cepflow.replay import replay

    program = load_program(pattern)
    gc.collect()
    reset_peak()
    rss_start = peak_rss_kib()
    t0 = time.perf_counter()
    run = replay(files, program, out_file)  # (the gesture rule's action is unregistered)
    seconds = time.perf_counter() - t0
    if run.rejected:
        first = run.side.to_pylist()[0]
        raise BenchmarkFailure(f"local {pattern}: {run.rejected:,} records not processed "
                               f"(first: {first})")
    return {"seconds": seconds, "events": run.events, "complex_events": run.complex_events,
            "by_pattern": run.by_pattern,
            "driver_peak_rss_kib": peak_rss_kib(), "driver_start_rss_kib": rss_start,
            "jvm_peak_rss_kib": None, "python_workers": None, "peaks_reset": True}


# -- Spark batch and streaming (in this process, one session) ---------------------------------
def measure_batch(spark: Any, program: Program, files: Path, out_dir: Path) -> dict[str, Any]:
    """cepflow.spark.replay into a Parquet folder, as ``cepflow run --engine spark``: one
    Spark job (matches, rejected records and counts)."""
    from cepflow.spark import PartitionWarning, replay

    shutil.rmtree(out_dir, ignore_errors=True)
    peaks = ProcessPeaks().start()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PartitionWarning)
        t0 = time.perf_counter()
        run = replay(spark, files, program, out_dir, out_dir.with_suffix(".rejected.jsonl"))
        seconds = time.perf_counter() - t0
    mem = peaks.stop()
    return {"seconds": seconds, "events": run.events, "rejected": run.rejected,
            "complex_events": run.complex_events,
            "warnings": [str(w.message) for w in caught], **mem}


#: floor mode: the JSON schema and the key column of each workload (as the generators write them)
FLOOR_SCHEMA = {"gesture": ("type string, ts long, id string, B string", "B"),
                "filter": ("type string, ts long, id string, sensor string, temp double",
                           "sensor")}


def _count_rows(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    n = 0
    for b in batches:
        n += b.num_rows
    yield pa.RecordBatch.from_pydict({"n": [n]})


def measure_floor(spark: Any, pattern: str, files: Path, fmt: str = "jsonl") -> dict[str, Any]:
    """Spark alone: read → shuffle by key → sort by time → Arrow to Python (counted). Best of
    two runs: the first also warms up the JIT for Spark's JSON reader, which the session's
    warm-up query does not use (a favour the other modes do not get: a floor, not a rival)."""
    schema, key = FLOOR_SCHEMA[pattern]
    parts = int(spark.conf.get("spark.sql.shuffle.partitions"))
    peaks = ProcessPeaks().start()
    best, n = float("inf"), 0
    for _ in range(2):
        t0 = time.perf_counter()
        reader = spark.read.schema(schema)
        rows = reader.json(str(files)) if fmt == "jsonl" else reader.parquet(str(files))
        df = (rows.repartition(parts, key)
              .sortWithinPartitions("ts"))
        n = sum(r["n"] for r in df.mapInArrow(_count_rows, "n long").collect())
        best = min(best, time.perf_counter() - t0)
    return {"seconds": best, "events": n, "rejected": 0, "complex_events": 0, **peaks.stop()}


def _batch_files(checkpoint: Path) -> dict[int, list[str]]:
    """Micro-batch id → names of the files it read, from the file source's checkpoint log."""
    out: dict[int, list[str]] = {}
    log = checkpoint / "sources" / "0"
    if not log.is_dir():
        return out
    for entry in log.iterdir():
        if not entry.name.isdigit():
            continue
        names = []
        for line in entry.read_text("utf-8").splitlines()[1:]:
            try:
                names.append(Path(json.loads(line)["path"]).name)
            except (ValueError, KeyError):
                continue
        out[int(entry.name)] = names
    return out


def measure_stream(spark: Any, program: Program, files: Path, work: Path,
                   file_counts: dict[str, int], files_per_trigger: int) -> dict[str, Any]:
    """stream_query(available_now=True, files_per_trigger=K) + awaitTermination()."""
    from cepflow.spark.streaming import read_sink, stream_query

    shutil.rmtree(work, ignore_errors=True)
    sink, checkpoint = work / "sink", work / "checkpoint"
    work.mkdir(parents=True)
    peaks = ProcessPeaks().start()
    t0 = time.perf_counter()
    query = stream_query(spark, program, files, sink, checkpoint, available_now=True,
                         files_per_trigger=files_per_trigger)
    query.awaitTermination()
    seconds = time.perf_counter() - t0
    mem = peaks.stop()
    if query.exception() is not None:
        raise BenchmarkFailure(f"streaming query failed: {query.exception()}")
    progress = [json.loads(p.json) if hasattr(p, "json") else dict(p)
                for p in query.recentProgress]
    by_batch = _batch_files(checkpoint)
    batches = []
    for p in progress:
        bid = p.get("batchId")
        names = by_batch.get(bid, [])
        events = sum(file_counts.get(n, 0) for n in names)
        took = (p.get("durationMs") or {}).get("triggerExecution", 0) / 1000
        batches.append({"batch_id": bid, "files": len(names), "events": events,
                        "seconds": took, "events_per_s": events / took if took else None,
                        "duration_ms": p.get("durationMs")})
    matches, rejected = read_sink(spark, sink)
    n_out = matches.count()
    n_rej = rejected.count()
    events_in = sum(b["events"] for b in batches)
    return {"seconds": seconds, "events": events_in, "rejected": n_rej,
            "complex_events": n_out, "micro_batches": batches,
            "files_per_trigger": files_per_trigger, **mem}


def micro_summary(batches: list[dict[str, Any]]) -> dict[str, Any]:
    """First micro-batch apart (start-up), the later ones with data as median/min/max."""
    data = [b for b in batches if b["events"]]
    later = [b["events_per_s"] for b in data[1:] if b["events_per_s"]]
    return {
        "batches": len(batches), "with_data": len(data),
        "first_seconds": data[0]["seconds"] if data else None,
        "first_events_per_s": data[0]["events_per_s"] if data else None,
        "later_median_events_per_s": statistics.median(later) if later else None,
        "later_min_events_per_s": min(later) if later else None,
        "later_max_events_per_s": max(later) if later else None,
        "no_data_seconds": sum(b["seconds"] for b in batches if not b["events"]),
    }


def warm_up(spark: Any) -> float:
    """One tiny batch run (the first query and the first Python workers of the session)."""
    from cepflow.spark import detect_prepared, read_events, write_matches

    program = load_program("gesture")
    out = OUT / "warm-up"
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    write_matches(detect_prepared(read_events(spark, GESTURE_DIR / "events.jsonl", program),
                                  program), out)
    seconds = time.perf_counter() - t0
    spark.catalog.clearCache()
    shutil.rmtree(out, ignore_errors=True)
    return seconds


# -- results ----------------------------------------------------------------------------------
def target_of(row: dict[str, Any]) -> dict[str, Any] | None:
    goal = TARGETS.get(row["mode"])
    if goal is None:
        return None
    rate = row["events_per_s"]
    return {"events_per_s": goal, "met": rate >= goal, "fraction": rate / goal}


def target_text(t: dict[str, Any] | None) -> str:
    if t is None:
        return "—"
    if t["met"]:
        return f"[green]met[/green] {t['fraction']:.2f}x"
    return f"[red]missed[/red] {t['fraction']:.1%} (needs {1 / t['fraction']:.1f}x)"


def mode_label(row: dict[str, Any]) -> str:
    """The mode, and for a repeated run which figure the row is (first run or the warm best)."""
    warm = row.get("warm_of")
    if warm:
        return f"{row['mode']} warm (best of {warm})"
    return f"{row['mode']} 1st" if row.get("repeated") else row["mode"]


def kib(n: int | None) -> str:
    return "—" if n is None else fmt_bytes(n * 1024)


def print_results(con: Console, rows: list[dict[str, Any]], spark_info: dict[str, Any] | None,
                  machine: dict[str, Any], fmt: str = "jsonl") -> None:
    table = make_table(
        f"cepflow end to end: read ({fmt} files) → detect → write (events/s over the whole run)",
        [("pattern", "left"), "events", "keys", ("mode", "left"), "seconds", "events/s",
         "complex events", ("target", "left"), "driver peak RSS", "JVM peak RSS",
         "Python workers peak RSS"])
    for r in rows:
        w = r.get("python_workers")
        workers = ("—" if not w else
                   f"{w['processes']}: max {kib(w['max_peak_rss_kib'])}, "
                   f"sum {kib(w['sum_peak_rss_kib'])}")
        table.add_row(r["pattern"], fmt_int(r["events"]), fmt_int(r["keys"]), mode_label(r),
                      fmt_float(r["seconds"], 2), fmt_int(r["events_per_s"]),
                      fmt_int(r["complex_events"]), target_text(r["target"]),
                      kib(r["driver_peak_rss_kib"]), kib(r["jvm_peak_rss_kib"]), workers)
    con.print(table)
    con.print(
        "local = read_events → reorder(0) → Engine.run → write_jsonl in a forked child (its "
        "own peak RSS; the child starts with the parent's pages). batch = cepflow.spark.replay "
        "(one job: parse → shuffle by key → sort → engines → Parquet matches; counts and "
        "rejected records through an accumulator), Spark jobs included, session start and "
        "warm-up not. stream = stream_query(availableNow, maxFilesPerTrigger) → "
        "awaitTermination, query start included. floor = Spark alone (its "
        f"{'JSON' if fmt == 'jsonl' else 'Parquet'} reader → "
        "repartition by key → sortWithinPartitions(ts) → mapInArrow counting rows; no cepflow, "
        "no output; best of 2). Spark peaks: the driver (this Python "
        "process, peak reset per run via /proc/self/clear_refs), the JVM (Spark driver and "
        "executor in local mode) and the Python worker processes of the executor (sum "
        "over-counts pages they share after fork); sampled from /proc every 0.25 s.",
        style="dim", markup=False)
    streams = [r for r in rows if r["mode"] == "stream"]  # the first and the warm best
    if streams:
        st = make_table("Streaming micro-batches (events/s = events of the batch's files ÷ "
                        "triggerExecution)",
                        [("pattern", "left"), "events", "keys", "batches (with data)",
                         "events/batch", "1st batch s", "1st batch ev/s",
                         "later ev/s median", "later ev/s min..max", "no-data batches s",
                         "whole run ev/s"])
        for r in streams:
            m = r["micro_summary"]
            data = [b for b in r["micro_batches"] if b["events"]]
            per = statistics.median(b["events"] for b in data) if data else 0
            opt = (lambda x: "—" if x is None else fmt_int(x))  # noqa: E731
            st.add_row(r["pattern"] + (" (warm)" if r.get("warm_of") else ""),
                       fmt_int(r["events"]), fmt_int(r["keys"]),
                       f"{m['batches']} ({m['with_data']})", fmt_int(per),
                       "—" if m["first_seconds"] is None else fmt_float(m["first_seconds"], 2),
                       opt(m["first_events_per_s"]), opt(m["later_median_events_per_s"]),
                       "—" if m["later_min_events_per_s"] is None else
                       f"{fmt_int(m['later_min_events_per_s'])}.."
                       f"{fmt_int(m['later_max_events_per_s'])}",
                       fmt_float(m["no_data_seconds"], 2), fmt_int(r["events_per_s"]))
        con.print(st)
    for (mode, goal), warm in itertools.product(TARGETS.items(), (False, True)):
        rs = [r for r in rows if r["mode"] == mode and bool(r.get("warm_of")) == warm]
        if not rs:
            continue
        met = [r for r in rs if r["target"]["met"]]
        worst = min(rs, key=lambda r: r["events_per_s"])
        best = max(rs, key=lambda r: r["events_per_s"])
        verdict = ("[green]MET[/green] in every run" if len(met) == len(rs) else
                   f"[red]MISSED[/red] in {len(rs) - len(met)} of {len(rs)} runs")
        con.print(f"[bold]Target[/bold] Spark {mode}"
                  + (" (warm: best repeated run)" if warm else
                     " (first run)" if rs[0].get("repeated") else "")
                  + f" ≥ {goal:,} events/s on {TARGET_MASTER}: "
                  f"{verdict}; best {fmt_int(best['events_per_s'])} ({best['pattern']}, "
                  f"{best['keys']:,} keys, {best['target']['fraction']:.1%} of target), worst "
                  f"{fmt_int(worst['events_per_s'])} ({worst['pattern']}, {worst['keys']:,} "
                  f"keys, {worst['target']['fraction']:.1%}"
                  + ("" if worst["target"]["met"] else
                     f"; needs {1 / worst['target']['fraction']:.1f}x") + ")")
    for r in rows:
        if r["mode"] != "floor":
            continue
        same = [x for x in rows if x["pattern"] == r["pattern"] and x["mode"] != "floor"
                and x["events"] == r["events"] and x["keys"] == r["keys"]]
        got = ", ".join(f"{mode_label(x)} {x['events_per_s'] / r['events_per_s']:.0%}"
                        for x in same if x["mode"] in ("batch", "stream"))
        con.print(f"[bold]Floor[/bold] {r['pattern']}, {r['events']:,} events, {r['keys']:,} "
                  f"keys: Spark alone (read → shuffle → sort → Arrow to Python, no output) "
                  f"{fmt_int(r['events_per_s'])} events/s, "
                  + ("[red]below[/red]" if r["events_per_s"] < TARGETS["batch"] else "above")
                  + f" the batch target of {TARGETS['batch']:,}"
                  + (f"; cepflow as a share of it: {got}" if got else ""))
    if spark_info:
        con.print(
            f"[bold]Spark[/bold]: master {spark_info['master']} (default parallelism "
            f"{spark_info['default_parallelism']}"
            + (f" = {TARGET_MASTER}" if spark_info["as_target"]
               and spark_info["master"] != TARGET_MASTER else "")
            + ", shuffle partitions "
            f"{spark_info['shuffle_partitions']}), pyspark {spark_info['version']}; session "
            f"start {spark_info['session_start_seconds']:.1f} s, warm-up query "
            f"{spark_info['warm_up_seconds']:.1f} s (not in the rows)"
            + ("" if spark_info["as_target"] else
               f" — NOT {TARGET_MASTER}, for which the targets are stated"))
    con.print(machine_line(machine))


# -- command line -----------------------------------------------------------------------------


def choice_list(choices: Sequence[str]) -> Any:
    def parse(text: str) -> list[str]:
        items = [t.strip() for t in text.split(",") if t.strip()]
        bad = [t for t in items if t not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(choices)}")
        return list(dict.fromkeys(items))
    return parse


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="End-to-end throughput of cepflow: in-process, Spark batch, Spark "
        "Structured Streaming.")
    ap.add_argument("--events", type=int_list, default=None,
                    help="comma-separated event counts (default "
                    f"{','.join(map(str, DEFAULT_EVENTS))}; --quick: "
                    f"{','.join(map(str, QUICK_EVENTS))})")
    ap.add_argument("--keys", type=int_list, default=None,
                    help="comma-separated key counts: bodies / sensors (default "
                    f"{','.join(map(str, DEFAULT_KEYS))}; --quick: "
                    f"{','.join(map(str, QUICK_KEYS))})")
    ap.add_argument("--patterns", type=choice_list(PATTERNS), default=list(PATTERNS),
                    help="gesture,filter (default both)")
    ap.add_argument("--modes", type=choice_list(MODES), default=list(MODES),
                    help="local,batch,stream,floor (default all; the local run is always made, "
                    "as the reference the Spark results are checked against; floor is Spark "
                    "alone, no cepflow)")
    ap.add_argument("--quick", action="store_true", help="a run of a few minutes")
    ap.add_argument("--file-events", type=positive_int, default=FILE_EVENTS,
                    help=f"events per input file (default {FILE_EVENTS:,})")
    ap.add_argument("--files-per-trigger", type=positive_int, default=None,
                    help=f"files per streaming micro-batch (default {FILES_PER_TRIGGER}; "
                    "--quick: 1)")
    ap.add_argument("--repeat", type=positive_int, default=1,
                    help="runs of each batch and stream case (default 1); with 2 or more the "
                    "first run and the best of the others (a warm JVM) are both reported")
    ap.add_argument("--input-format", choices=("jsonl", "parquet"), default="jsonl",
                    help="format of the input files (default jsonl; parquet: the same events "
                    "converted once, one Parquet file per JSON Lines file)")
    ap.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON,
                    help=f"result file (default {DEFAULT_JSON.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    if args.events is None:
        args.events = list(QUICK_EVENTS if args.quick else DEFAULT_EVENTS)
    if args.keys is None:
        args.keys = list(QUICK_KEYS if args.quick else DEFAULT_KEYS)
    if args.files_per_trigger is None:
        args.files_per_trigger = 1 if args.quick else FILES_PER_TRIGGER
    return args


def measure_mode(spark: Any, mode: str, program: Program, case: tuple[str, int, int],
                 m: dict[str, Any], ref: dict[str, Any], files: Path, args: argparse.Namespace,
                 log: Console, run: int) -> dict[str, Any]:
    """One Spark run of ``mode`` over a case, checked against the local run (aborts on a
    difference)."""
    pattern, _, k = case
    log.print(f"[dim]    {pattern}, {m['events']:,} events, {k:,} keys: {mode}"
              + (f" (run {run + 1})" if run else "") + " ...[/dim]")
    work = OUT / f"{files.parent.name}-{mode}"
    if mode == "batch":
        raw = measure_batch(spark, program, files, work)
    elif mode == "floor":
        raw = measure_floor(spark, pattern, files, args.input_format)
    else:
        suffix = "" if args.input_format == "jsonl" else ".parquet"
        counts = {(Path(f["name"]).stem + suffix if suffix else f["name"]): f["events"]
                  for f in m["files"]}
        raw = measure_stream(spark, program, files, work, counts, args.files_per_trigger)
        raw["micro_summary"] = micro_summary(raw["micro_batches"])
    shutil.rmtree(work, ignore_errors=True)
    problems = []
    if mode != "floor" and raw["complex_events"] != ref["complex_events"]:
        problems.append(f"{raw['complex_events']:,} complex events, the local engine found "
                        f"{ref['complex_events']:,}")
    if raw["events"] != m["events"]:
        problems.append(f"{raw['events']:,} events read, the input has {m['events']:,}")
    if raw["rejected"]:
        problems.append(f"{raw['rejected']:,} records rejected")
    if problems:
        raise BenchmarkFailure(f"Spark {mode}, {pattern}, {m['events']:,} events, {k:,} keys: "
                               + "; ".join(problems))
    rate = raw["events"] / raw["seconds"]
    log.print(f"[dim]    {mode}: {raw['seconds']:.2f} s, {rate:,.0f} ev/s"
              + ("" if mode == "floor" else
                 f", {raw['complex_events']:,} complex events (= local)") + "[/dim]")
    return raw


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    con, log = console(), console(stderr=True)
    meta = metadata("spark_pipeline", {
        "events": args.events, "keys": args.keys, "patterns": args.patterns,
        "modes": args.modes, "quick": args.quick, "file_events": args.file_events,
        "files_per_trigger": args.files_per_trigger, "master": args.master,
        "input_format": args.input_format, "repeat": args.repeat,
    })
    cases = [(p, n, k) for p in args.patterns for n in args.events for k in args.keys]
    manifests: dict[tuple[str, int, int], dict[str, Any]] = {}
    locals_: dict[tuple[str, int, int], dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    OUT.mkdir(parents=True, exist_ok=True)

    def add_row(case: tuple[str, int, int], mode: str, raw: dict[str, Any]) -> dict[str, Any]:
        pattern, requested, keys = case
        row = {"pattern": pattern, "pattern_file": str(pattern_file(pattern).relative_to(ROOT)),
               "events_requested": requested, "keys": keys, "mode": mode, **raw}
        row["events_per_s"] = row["events"] / row["seconds"]
        row["complex_per_s"] = row["complex_events"] / row["seconds"]
        row["target"] = target_of(row)
        rows.append(row)
        return row

    try:
        # 1. inputs, then every local run (forked, before pyspark is imported)
        for i, case in enumerate(cases, 1):
            pattern, n, k = case
            log.print(f"[dim][{i}/{len(cases)}] {pattern}, {n:,} events, {k:,} keys: "
                      "inputs ...[/dim]")
            m = run_isolated(generate, pattern, n, k, args.file_events)
            manifests[case] = m
            log.print(f"[dim]    {m['events']:,} events in {len(m['files'])} file(s), "
                      f"{fmt_bytes(m['bytes'])}"
                      + (" (reused)" if m["reused"] else
                         f", generated in {m['generated_seconds']:.1f} s") + "[/dim]")
            files = input_files(pattern, n, k, args.file_events, args.input_format)
            out_file = OUT / f"{files.parent.name}-local.jsonl"
            raw = run_isolated(measure_local, pattern, str(files), str(out_file))
            out_file.unlink(missing_ok=True)
            if raw["events"] != m["events"]:
                raise BenchmarkFailure(f"local {case}: read {raw['events']:,} events, the "
                                       f"input has {m['events']:,}")
            expected = m.get("expected_complex_events")
            if expected is not None and raw["complex_events"] != expected:
                raise BenchmarkFailure(f"local {case}: {raw['complex_events']:,} complex "
                                       f"events, the gesture stream has {expected:,}")
            locals_[case] = raw
            if "local" in args.modes:
                row = add_row(case, "local", raw)
                log.print(f"[dim]    local: {row['seconds']:.2f} s, "
                          f"{row['events_per_s']:,.0f} ev/s, {row['complex_events']:,} "
                          "complex events[/dim]")
        # 2. Spark, one session, in this process
        spark_info: dict[str, Any] | None = None
        spark_modes = [mo for mo in args.modes if mo != "local"]
        if spark_modes:
            import pyspark

            from cepflow.spark import spark_session

            log.print(f"[dim]starting Spark ({args.master}) ...[/dim]")
            t0 = time.perf_counter()
            spark = spark_session(args.master)
            started = time.perf_counter() - t0
            # a streaming run of 10M events in 250k files has 40+ progress entries
            spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "10000")
            warm = warm_up(spark)
            sc = spark.sparkContext
            spark_info = {"master": sc.master, "default_parallelism": sc.defaultParallelism,
                          "shuffle_partitions": spark.conf.get("spark.sql.shuffle.partitions"),
                          "version": pyspark.__version__, "session_start_seconds": started,
                          "warm_up_seconds": warm}
            # local[*] on a 2-core machine is local[2]
            spark_info["as_target"] = (sc.master == TARGET_MASTER or (
                sc.master == "local[*]" and sc.defaultParallelism == 2))
            log.print(f"[dim]    session {started:.1f} s, warm-up {warm:.1f} s[/dim]")
            try:
                for case in cases:
                    pattern, n, k = case
                    m = manifests[case]
                    ref = locals_[case]
                    files = input_files(pattern, n, k, args.file_events, args.input_format)
                    program = load_program(pattern)
                    for mode in spark_modes:
                        runs = 1 if mode == "floor" else args.repeat
                        results = [measure_mode(spark, mode, program, case, m, ref, files, args,
                                                log, run) for run in range(runs)]
                        first = add_row(case, mode, results[0])
                        if runs > 1:
                            first["repeated"] = True
                            warm = min(results[1:], key=lambda r: r["seconds"])
                            add_row(case, mode, {**warm, "warm_of": runs - 1,
                                                 "runs_seconds": [r["seconds"]
                                                                  for r in results]})
            finally:
                spark.stop()
    except BenchmarkFailure as e:
        log.print(f"[bold red]ABORTED[/bold red]: {e}", markup=True)
        return 1
    order = {mo: i for i, mo in enumerate(MODES)}
    rows.sort(key=lambda r: (PATTERNS.index(r["pattern"]), r["events_requested"], r["keys"],
                             order[r["mode"]], bool(r.get("warm_of"))))
    con.print()
    print_results(con, rows, spark_info, meta["machine"], args.input_format)
    path = write_json(args.json, {
        **meta, "targets": {"master": TARGET_MASTER, **{f"{k}_events_per_s": v
                                                         for k, v in TARGETS.items()}},
        "spark": spark_info,
        "inputs": [{k: v for k, v in m.items() if k != "files"} | {"files": len(m["files"])}
                   for m in manifests.values()],
        "rows": rows,
    })
    con.print(f"[dim]Results written to {path}[/dim]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
