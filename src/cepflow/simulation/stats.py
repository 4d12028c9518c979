"""Per-event statistics over runs, in the shape of seed 003 Listing 31.

``stats.csv`` has the header ``Event,Min,Max,Median,Mean,Std.Dev``, one row per event type
(simple types first, then complex ones) and a last row ``Duration`` with the runs' wall times
in seconds. Numbers are written as C's ``%g`` with six significant digits, as Listing 31 is
(``4207.64``, ``0.269531``). The standard deviation is the sample one (divisor n - 1); with a
single run it is 0. The median of an even number of runs is the mean of the two middle ones.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cepflow.simulation.monte_carlo import RunResult

HEADER = ("Event", "Min", "Max", "Median", "Mean", "Std.Dev")


@dataclass(frozen=True)
class Summary:
    """The statistics of one row: an event type's counts (or the durations) over the runs."""

    name: str
    min: float
    max: float
    median: float
    mean: float
    std: float

    @classmethod
    def of(cls, name: str, values: Sequence[float]) -> Summary:
        if not values:
            nan = math.nan
            return cls(name, nan, nan, nan, nan, nan)
        std = statistics.stdev(values) if len(values) > 1 else 0.0
        return cls(name, min(values), max(values), statistics.median(values),
                   statistics.fmean(values), std)

    def row(self) -> tuple[str, ...]:
        return (self.name, *(number(v) for v in (self.min, self.max, self.median, self.mean,
                                                  self.std)))


def number(v: float) -> str:
    """Six significant digits, as C's ``%g`` (Listing 31's format)."""
    return f"{v:.6g}"


def summarise(event_types: Sequence[str], results: Sequence[RunResult]) -> list[Summary]:
    """One row per event type, then ``Duration`` (wall seconds per run)."""
    rows = [Summary.of(t, [r.counts.get(t, 0) for r in results]) for t in event_types]
    rows.append(Summary.of("Duration", [r.seconds for r in results]))
    return rows


def stats_csv(rows: Sequence[Summary]) -> str:
    """The text of ``stats.csv``."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(HEADER)
    for r in rows:
        w.writerow(r.row())
    return buf.getvalue()


def write_stats_csv(rows: Sequence[Summary], path: str | Path) -> Path:
    path = Path(path)
    path.write_text(stats_csv(rows), encoding="utf-8")
    return path
