"""Helpers shared by the benchmark scripts of ``benchmarks/``.

Machine and repository metadata, peak-memory measurement, isolation of one measurement in a
forked child process (so that every measurement starts from its own peak-RSS baseline and heap),
number formatting, rich tables and JSON result files. Benchmarks import it as ``common``: the
directory of a script run as ``python benchmarks/x.py`` is the first entry of ``sys.path``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import multiprocessing
import os
import platform
import resource
import subprocess
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console, JustifyMethod
from rich.table import Table

#: the repository root (the parent of ``benchmarks/``)
ROOT = Path(__file__).resolve().parent.parent

T = TypeVar("T")


class BenchmarkFailure(Exception):
    """A measured run produced a wrong result: the benchmark aborts instead of reporting it."""


# -- machine and repository -------------------------------------------------------------------
def cpu_model() -> str:
    """The CPU model name from ``/proc/cpuinfo`` (Linux), else what :mod:`platform` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def usable_cores() -> int | None:
    """Cores this process may run on (CPU affinity), where the platform tells."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


def machine_info() -> dict[str, Any]:
    """CPU, cores, Python and OS of this machine, and its load when the benchmark started."""
    try:
        load: list[float] | None = [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "usable_cores": usable_cores(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "load_average": load,
    }


def _git(*args: str) -> str | None:
    try:
        res = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                             timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() if res.returncode == 0 else None


def git_info() -> dict[str, Any]:
    """The commit checked out (``git rev-parse HEAD``) and whether the work tree has changes.

    Read-only git commands; both values are ``None`` outside a git checkout.
    """
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain") if commit is not None else None
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def metadata(benchmark: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata block of a result file: what ran, when, where, on which commit."""
    return {
        "benchmark": benchmark,
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "command": [Path(sys.executable).name, *sys.argv],
        "options": dict(options),
        "git": git_info(),
        "machine": machine_info(),
    }


# -- memory and isolation ---------------------------------------------------------------------
def peak_rss_kib() -> int:
    """Peak resident set size of this process so far, in KiB (``getrusage`` ``ru_maxrss``)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak  # macOS reports bytes


def _child(conn: Any, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        conn.send(("ok", fn(*args)))
    except BenchmarkFailure as e:
        conn.send(("failure", str(e)))
    except BaseException:
        conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()


def run_isolated(fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn(*args)`` in a forked child process and return its (picklable) result.

    A forked child starts with a fresh peak-RSS counter and its own copy of the heap, so memory
    measured in it belongs to that measurement alone and earlier measurements leave no garbage
    behind. Without ``fork`` (not Linux/macOS) ``fn`` runs in this process. A
    :class:`BenchmarkFailure` in the child is raised again here with its message; any other
    exception becomes a :class:`RuntimeError` carrying the child's traceback.
    """
    if "fork" not in multiprocessing.get_all_start_methods():
        return fn(*args)
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, fn, args))
    proc.start()
    send.close()
    try:
        status, payload = recv.recv()
    except EOFError:
        proc.join()
        raise RuntimeError(f"benchmark child process died (exit code {proc.exitcode})") from None
    finally:
        recv.close()
    proc.join()
    if status == "ok":
        return payload
    if status == "failure":
        raise BenchmarkFailure(payload)
    raise RuntimeError(f"benchmark child process failed:\n{payload}")


# -- formatting and output --------------------------------------------------------------------
def fmt_int(n: float) -> str:
    """``1234567`` -> ``1,234,567``."""
    return f"{round(n):,}"


def fmt_float(x: float, digits: int = 2) -> str:
    """A float with thousands separators and ``digits`` decimals."""
    return f"{x:,.{digits}f}"


def fmt_bytes(n: float) -> str:
    """Bytes in the largest binary unit that keeps the number >= 1 (B, KiB, MiB, GiB)."""
    for unit in ("B", "KiB", "MiB"):
        if abs(n) < 1024:
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.2f} GiB"


def console(stderr: bool = False) -> Console:
    """A rich console; when output is not a terminal, wide enough for the result tables."""
    con = Console(stderr=stderr)
    if not con.is_terminal:
        con = Console(stderr=stderr, width=220)
    return con


def make_table(title: str, columns: Sequence[str | tuple[str, JustifyMethod]]) -> Table:
    """A rich table; a column is a header (right-justified) or ``(header, justify)``."""
    table = Table(title=title, header_style="bold", title_justify="left")
    for col in columns:
        if isinstance(col, str):
            table.add_column(col, justify="right")
        else:
            table.add_column(col[0], justify=col[1])
    return table


def write_json(path: str | Path, payload: Mapping[str, Any]) -> Path:
    """Write ``payload`` as indented JSON, creating the folder; returns the path written."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return p


def machine_line(machine: Mapping[str, Any]) -> str:
    """One rich-markup line describing the machine a run was measured on."""
    load = machine.get("load_average")
    return (f"[bold]Machine[/bold]: {machine['cpu']}, {machine['cores']} cores "
            f"({machine['usable_cores']} usable), {machine['implementation']} "
            f"{machine['python']}, {machine['platform']}"
            + (f"; load average at start {', '.join(map(str, load))}" if load else ""))


def positive_int(text: str) -> int:
    """An integer > 0; ``1_000_000`` and ``1,000,000`` are accepted."""
    try:
        n = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0: {text!r}")
    return n


def int_list(text: str) -> list[int]:
    """A comma-separated list of integers > 0, e.g. ``1,24,1000``."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("empty list")
    return [positive_int(t) for t in items]
