"""End to end: ``cepflow run`` as a user runs it (a file in, matches out, the whole process)
beside ``Engine.run`` over the same events already in memory, per workload and input format,
and beside a baseline checkout's ``cepflow run`` (issue 21, "How it must be shown").

Workloads (the issue's): the pair pattern ``every a=A -> b=B(b.key = a.key) where
timer:within(10 sec)`` and the three-event sequence ``every a=A -> (b=B(b.key=a.key) ->
c=C(c.key=a.key)) where timer:within(10 sec)`` over N events (whole-second timestamps, 1,000
events a second, 16 keys, types A/B/C at 0.3/0.3/0.4, seeded); gesture (examples/gesture, 24
bodies); the motorbike set (examples/motorbike/motorbike.epl, all its statements, events of its
simulation model); temperature (examples/temperature/temperature.vepl, its model's events);
alerts (examples/temperature/alerts.vepl — Warning and Critical, Esper's consecutive chains —
over the same events).
Each is written once as JSON Lines, CSV and Parquet.

Per workload and format: ``cepflow run PATTERNS -i FILE -o OUT.jsonl`` as a subprocess —
wall time and the child's CPU time (``getrusage(RUSAGE_CHILDREN)``), best and median of
``--repeat`` runs — and the same command of the baseline (``--baseline DIR``: a checkout with
its own ``.venv``); its match file must be byte for byte the same. ``Engine.run`` over the events
read beforehand (one forked child per workload; CPU time of the loop). The load average is
recorded before every measurement: the machine is shared, CPU time is the figure to compare.
Before the runs, the bytecode of each measured venv's cepflow is written (``compileall``), as
an installed cepflow has it (see ``compile_bytecode``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
from common import (
    ROOT,
    BenchmarkFailure,
    console,
    machine_line,
    make_table,
    metadata,
    positive_int,
    run_isolated,
    write_json,
)

DEFAULT_EVENTS = 1_000_000
QUICK_EVENTS = 100_000
SEED = 20261126
FORMATS = ("parquet", "csv", "jsonl")
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "end_to_end.json"
#: the issue's targets for `cepflow run`, events per second of the whole process
TARGETS = {"parquet": 1_000_000, "csv": 500_000, "jsonl": 500_000}
TARGETED = ("pair", "sequence", "gesture")

SCHEMA = ("create schema A(key int);\ncreate schema B(key int);\ncreate schema C(key int);\n")
PAIR = SCHEMA + ("@Name('Pair')\ninsert into Pair\nselect a.key as key\nfrom pattern [every a=A "
                 "-> b=B(b.key = a.key) where timer:within(10 sec)];\n")
SEQUENCE = SCHEMA + ("@Name('Sequence')\ninsert into Sequence\nselect a.key as key\nfrom "
                     "pattern [every a=A -> (b=B(b.key=a.key) -> c=C(c.key=a.key)) "
                     "where timer:within(10 sec)];\n")


# -- data -------------------------------------------------------------------------------------
def abc_table(n: int) -> pa.Table:
    """The issue's stream: whole-second timestamps (1,000 events a second), 16 keys, A/B/C at
    0.3/0.3/0.4."""
    rng = np.random.default_rng(SEED)
    types = np.array(["A", "B", "C"])[rng.choice(3, size=n, p=[0.3, 0.3, 0.4])]
    return pa.table({"type": types, "ts": (np.arange(n, dtype=np.int64) // 1000) * 1000,
                     "key": rng.integers(0, 16, size=n)})


def gesture_table(n: int, bodies: int = 24) -> pa.Table:
    sys.path.insert(0, str(ROOT))
    from examples.gesture.events import EVENTS_PER_CYCLE, gesture_events

    cycles = max(1, n // (EVENTS_PER_CYCLE * bodies))
    evs = list(gesture_events(bodies, cycles))
    return pa.table({"type": [e.type for e in evs], "ts": [e.ts for e in evs],
                     "B": [e.params[0] for e in evs]})


def model_table(model: Path, n: int, tmp: Path) -> pa.Table:
    """``cepflow generate MODEL --events N`` (the example's simulation model)."""
    out = tmp / f"{model.parent.name}.parquet"
    subprocess.run([str(Path(sys.executable).parent / "cepflow"), "generate", str(model),
                    "--duration", "100000 d", "--events", str(n), "--seed", str(SEED),
                    "-o", str(out)], check=True, capture_output=True)
    return pq.read_table(out)


def write_formats(table: pa.Table, stem: Path) -> dict[str, Path]:
    """The table as Parquet, CSV and JSON Lines files."""
    from cepflow.outputs.encoding import json_texts

    paths = {f: stem.with_suffix(f".{f}") for f in FORMATS}
    pq.write_table(table, paths["parquet"])
    pcsv.write_csv(table, paths["csv"],
                   pcsv.WriteOptions(quoting_style="needed"))
    parts: list[Any] = []
    for i, name in enumerate(table.column_names):
        col = table.column(name).combine_chunks()
        parts += [("{" if i == 0 else ",") + f'"{name}":', json_texts(col, ascii_only=False)]
    import pyarrow.compute as pc

    lines = pc.binary_join_element_wise(*parts, "}", "")
    with open(paths["jsonl"], "w", encoding="utf-8") as f:
        for chunk in range(0, len(lines), 100_000):
            f.write("\n".join(lines[chunk:chunk + 100_000].to_pylist()) + "\n")
    return paths


# -- measurements -----------------------------------------------------------------------------
#: run in a small fresh interpreter between this process and the command: a child's peak RSS
#: (``ru_maxrss``) counts the memory of the process it was forked from, so the command must
#: be forked from a small process, not from this one holding the tables (a few MiB counted)
_MEASURE = """
import json, os, subprocess, sys, time
t0 = time.perf_counter()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, ru = os.wait4(p.pid, 0)
print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": ru.ru_utime + ru.ru_stime,
                  "peak_rss_mib": ru.ru_maxrss / 1024, "rc": os.waitstatus_to_exitcode(status)}))
"""


def timed_command(cmd: list[str]) -> dict[str, float]:
    """Wall time, CPU time (user + system) and peak resident memory of one command, the
    child's own (``os.wait4`` in a small interpreter that starts it: see _MEASURE)."""
    load = os.getloadavg()[0]
    with tempfile.TemporaryFile() as err:
        # (standard error is no terminal: no progress bar)
        done = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], stdout=subprocess.PIPE,
                              stderr=err, text=True, check=False)
        got = json.loads(done.stdout) if done.returncode == 0 else {"rc": done.returncode}
        if got["rc"] not in (0, 3):
            err.seek(0)
            text = err.read().decode("utf-8", "replace").strip()[-2000:]
            raise BenchmarkFailure(f"{' '.join(cmd)} exited with {got['rc']}: {text}")
    return {"wall_s": got["wall_s"], "cpu_s": got["cpu_s"], "load": load,
            "peak_rss_mib": got["peak_rss_mib"]}


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def compile_bytecode(venv: Path) -> str:
    """Write the bytecode of the venv's cepflow modules, as ``pip install`` (not editable) does
    at install; returns the package's directory. Without it a process that may not write
    bytecode (``PYTHONDONTWRITEBYTECODE``, set on some machines) compiles every cepflow module
    at each start (≈ 0.2 s of CPU) while numpy's and pyarrow's come precompiled: the start
    measured would be no installed user's."""
    python = str(venv / "bin" / "python")
    where = subprocess.run([python, "-c", "import cepflow, os; "
                            "print(os.path.dirname(cepflow.__file__))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run([python, "-m", "compileall", "-q", "-j", "0", where],
                   stdout=subprocess.DEVNULL, check=True)
    return where


def run_command(venv: Path, patterns: Path, events: Path, out: Path, repeat: int
                ) -> dict[str, Any]:
    """``cepflow run`` ``repeat`` times: the runs, best and median, the output's digest."""
    cmd = [str(venv / "bin" / "cepflow"), "run", str(patterns), "-i", str(events), "-o",
           str(out)]
    runs = [timed_command(cmd) for _ in range(repeat)]
    with open(out, "rb") as f:
        lines = sum(1 for _ in f)
    return {"runs": runs, "matches": lines, "sha256": digest(out), **summary(runs)}


def summary(runs: list[dict[str, float]]) -> dict[str, float]:
    return {"best_wall_s": min(r["wall_s"] for r in runs),
            "median_wall_s": statistics.median(r["wall_s"] for r in runs),
            "best_cpu_s": min(r["cpu_s"] for r in runs),
            "median_cpu_s": statistics.median(r["cpu_s"] for r in runs),
            "load": max(r["load"] for r in runs),
            **({"peak_rss_mib": max(r["peak_rss_mib"] for r in runs)}
               if all("peak_rss_mib" in r for r in runs) else {})}


def engine_run(patterns: str, events_file: str, repeat: int) -> dict[str, Any]:
    """``Engine.run`` over the events read beforehand (in a forked child): CPU time."""
    from cepflow.inputs import read_events
    from cepflow.loader import load
    from cepflow.runtime.engine import Engine

    program = load(Path(patterns))
    runs = []
    count = 0
    for _ in range(repeat):
        events = list(read_events(events_file, program.schemas))
        load_avg = os.getloadavg()[0]
        engine = Engine(program, strict_actions=False)
        t0, c0 = time.perf_counter(), time.process_time()
        count = sum(1 for _ in engine.run(events)) + len(engine.finish())
        runs.append({"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                     "load": load_avg})
    return {"runs": runs, "matches": count, "events": len(events), **summary(runs)}


# -- the benchmark ----------------------------------------------------------------------------
def workloads(n: int, tmp: Path) -> dict[str, tuple[Path, Callable[[], pa.Table]]]:
    pair, seq = tmp / "pair.epl", tmp / "sequence.epl"
    pair.write_text(PAIR)
    seq.write_text(SEQUENCE)
    ex = ROOT / "examples"
    return {
        "pair": (pair, lambda: abc_table(n)),
        "sequence": (seq, lambda: abc_table(n)),
        "gesture": (ex / "gesture" / "gesture.vepl", lambda: gesture_table(n)),
        "motorbike": (ex / "motorbike" / "motorbike.epl",
                      lambda: model_table(ex / "motorbike" / "model.toml", n, tmp)),
        "temperature": (ex / "temperature" / "temperature.vepl",
                        lambda: model_table(ex / "temperature" / "model.toml", n, tmp)),
        "alerts": (ex / "temperature" / "alerts.vepl",
                   lambda: model_table(ex / "temperature" / "model.toml", n, tmp)),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="cepflow run end to end, per workload and format.")
    ap.add_argument("--events", type=positive_int, default=None,
                    help=f"events per workload (default {DEFAULT_EVENTS:,}; --quick "
                    f"{QUICK_EVENTS:,})")
    ap.add_argument("--quick", action="store_true", help="a smaller run")
    ap.add_argument("--repeat", type=positive_int, default=3,
                    help="runs per measurement: best and median (default 3)")
    ap.add_argument("--workloads", default=",".join(("pair", "sequence", "gesture", "motorbike",
                                                      "temperature", "alerts")))
    ap.add_argument("--formats", default=",".join(FORMATS))
    ap.add_argument("--baseline", type=Path, default=None,
                    help="a checkout of the baseline commit with its own .venv: its "
                    "`cepflow run` is measured beside this one's")
    ap.add_argument("--baseline-from", type=Path, default=None,
                    help="the baseline's figures from an earlier result file of this script "
                    "run with --venv BASELINE/.venv (its `run` entries)")
    ap.add_argument("--venv", type=Path, default=None,
                    help="measure the `cepflow run` of this virtual environment (default: "
                    "the one running the script)")
    ap.add_argument("--no-engine", action="store_true", help="skip Engine.run")
    ap.add_argument("--from-json", type=Path, default=None,
                    help="measure nothing: the table of an earlier result file (with "
                    "--baseline-from: beside that baseline)")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = ap.parse_args(argv)
    if args.events is None:
        args.events = QUICK_EVENTS if args.quick else DEFAULT_EVENTS
    return args


def rate(n: int, seconds: float) -> str:
    return f"{n / seconds / 1000:,.0f}k" if seconds > 0 else "-"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    con, log = console(), console(stderr=True)
    venv = args.venv or Path(sys.executable).parent.parent
    earlier: dict[tuple[str, str], Any] = {}
    if args.baseline_from is not None:
        import json

        old = json.loads(args.baseline_from.read_text())
        if args.from_json is None and old["options"]["events"] != args.events:
            log.print(f"[bold red]{args.baseline_from} has {old['options']['events']:,} events "
                      f"a workload, not {args.events:,}[/bold red]")
            return 2
        earlier = {(r["workload"], r["format"]): r["run"] for r in old["rows"]}
    names = args.workloads.split(",")
    formats = args.formats.split(",")
    rows: list[dict[str, Any]] = []
    if args.from_json is not None:
        import json

        done = json.loads(args.from_json.read_text())
        args.events, args.repeat = done["options"]["events"], done["options"]["repeat"]
        for row in done["rows"]:
            base = earlier.get((row["workload"], row["format"]))
            if base is not None:
                if base["sha256"] != row["run"]["sha256"]:
                    log.print(f"[bold red]{row['workload']}/{row['format']}: the match files "
                              "differ from the baseline's[/bold red]")
                    return 1
                row["baseline"] = base
            rows.append(row)
        show(con, rows, args)
        meta = metadata("end_to_end", {**done["options"], "from_json": str(args.from_json),
                                       "baseline": str(args.baseline_from)})
        path = write_json(args.json, {**meta, "measured": done["date"],
                                      "machine_measured": done["machine"],
                                      "targets": TARGETS, "rows": rows})
        con.print(f"[dim]written {path}[/dim]")
        return 0
    compiled = [compile_bytecode(v) for v in
                (venv, *([args.baseline / ".venv"] if args.baseline is not None else []))]
    with tempfile.TemporaryDirectory(prefix="cepflow-e2e-") as tmpdir:
        tmp = Path(tmpdir)
        loads = workloads(args.events, tmp)
        for name in names:
            patterns, make = loads[name]
            table = make()
            files = write_formats(table, tmp / name)
            n = table.num_rows
            engine = None
            if not args.no_engine:
                log.print(f"[dim]{name}: Engine.run over {n:,} events ...[/dim]")
                engine = run_isolated(engine_run, str(patterns), str(files["parquet"]),
                                      args.repeat)
            for fmt in formats:
                log.print(f"[dim]{name} / {fmt}: cepflow run ...[/dim]")
                row: dict[str, Any] = {"workload": name, "format": fmt, "events": n,
                                       "file_bytes": files[fmt].stat().st_size}
                try:
                    row["run"] = run_command(venv, patterns, files[fmt],
                                             tmp / f"{name}-{fmt}-new.jsonl", args.repeat)
                    if (name, fmt) in earlier:
                        row["baseline"] = earlier[name, fmt]
                    elif args.baseline is not None:
                        row["baseline"] = run_command(args.baseline / ".venv", patterns,
                                                      files[fmt],
                                                      tmp / f"{name}-{fmt}-base.jsonl",
                                                      args.repeat)
                    if "baseline" in row and row["baseline"]["sha256"] != row["run"]["sha256"]:
                        raise BenchmarkFailure(
                            f"{name}/{fmt}: the match files differ from the baseline's "
                            f"({row['run']['matches']} vs {row['baseline']['matches']} "
                            "lines)")
                except BenchmarkFailure as e:
                    log.print(f"[bold red]ABORTED[/bold red]: {e}")
                    return 1
                if engine is not None:
                    row["engine_run"] = engine
                rows.append(row)
                log.print(f"[dim]    {rate(n, row['run']['best_wall_s'])} ev/s wall, "
                          f"{rate(n, row['run']['best_cpu_s'])} ev/s CPU[/dim]")
    show(con, rows, args)
    meta = metadata("end_to_end", {"events": args.events, "repeat": args.repeat,
                                   "quick": args.quick, "venv": str(venv),
                                   "baseline": str(args.baseline_from or args.baseline),
                                   "bytecode_compiled": compiled})
    path = write_json(args.json, {**meta, "targets": TARGETS, "rows": rows})
    con.print(f"[dim]written {path}[/dim]")
    return 0


def show(con: Any, rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    cols = ["workload", "format", "events", "matches", "run wall best/med", "run CPU best/med",
            "ev/s (CPU)", "peak RSS"]
    baseline = any("baseline" in r for r in rows)
    if baseline:
        cols += ["baseline CPU best/med", "baseline ev/s (CPU)", "speed-up (CPU)"]
    cols += ["Engine.run CPU", "Engine.run ev/s", "target", "load"]
    table = make_table(f"cepflow run end to end ({args.events:,} events per workload; best of "
                       f"{args.repeat}, CPU = the child's user+system time)", cols)
    for r in rows:
        n, run = r["events"], r["run"]
        cells = [r["workload"], r["format"], f"{n:,}", f"{run['matches']:,}",
                 f"{run['best_wall_s']:.2f} / {run['median_wall_s']:.2f} s",
                 f"{run['best_cpu_s']:.2f} / {run['median_cpu_s']:.2f} s",
                 rate(n, run["best_cpu_s"]),
                 f"{run['peak_rss_mib']:,.0f} MiB" if "peak_rss_mib" in run else "-"]
        if baseline:
            b = r["baseline"]
            cells += [f"{b['best_cpu_s']:.2f} / {b['median_cpu_s']:.2f} s",
                      rate(n, b["best_cpu_s"]), f"{b['best_cpu_s'] / run['best_cpu_s']:.1f}x"]
        e = r.get("engine_run")
        cells += [f"{e['best_cpu_s']:.2f} s" if e else "-",
                  rate(e["events"], e["best_cpu_s"]) if e else "-"]
        target = TARGETS[r["format"]] if r["workload"] in TARGETED else None
        if target is None:
            cells.append("-")
        else:
            got = n / run["best_wall_s"]
            cells.append(f"{'met' if got >= target else 'missed'} "
                         f"({got / target:.0%} of {target / 1000:,.0f}k wall)")
        cells.append(f"{run['load']:.2f}")
        table.add_row(*cells)
    con.print(table)
    con.print(machine_line(metadata("end_to_end", {})["machine"]))


if __name__ == "__main__":
    sys.exit(main())
