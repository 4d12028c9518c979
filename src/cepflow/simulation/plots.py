"""Plots of a simulation (matplotlib through :mod:`cepflow.reports.charts`): per event type the
histogram of its counts over the runs, per property its estimate and Wilson interval against
the number of runs. As PNG files (``cepflow simulate --plots DIR``) or SVG for the report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from cepflow.reports import charts
from cepflow.simulation.monte_carlo import RunResult
from cepflow.simulation.properties import convergence


def count_histogram(name: str, results: Sequence[RunResult]) -> Figure:
    """The histogram of ``name``'s count per run; one bar per count when they span few
    values."""
    values = [r.counts.get(name, 0) for r in results]
    low, high = (min(values), max(values)) if values else (0, 0)
    bins: int | str | np.ndarray = (np.arange(low, high + 2) - 0.5) if high - low <= 60 else "auto"
    fig = charts.histogram(values, f"{name}: count per run ({len(values):,} runs)",
                           f"{name} events in a run", bins=bins)  # type: ignore[arg-type]
    fig.axes[0].xaxis.set_major_locator(MaxNLocator(integer=True))
    return fig


def convergence_figure(name: str, results: Sequence[RunResult], confidence: float) -> Figure:
    """The estimated probability of property ``name`` and its interval after 1, 2, … runs."""
    ns, ps, lows, highs = convergence(name, results, confidence)
    fig, ax = charts.figure()
    ax.fill_between(ns, lows, highs, color="#1f6feb", alpha=0.2, linewidth=0,
                    label=f"{confidence:.0%} Wilson interval")
    ax.plot(ns, ps, color="#1f6feb", label="runs in which it occurred / runs")
    ax.set_title(f"{name}: estimated probability of occurring in a run")
    ax.set_xlabel("runs")
    ax.set_ylabel("probability")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(loc="best", fontsize=8)
    return fig


def write_pngs(folder: str | Path, event_types: Sequence[str], properties: Sequence[str],
               results: Sequence[RunResult], confidence: float) -> list[Path]:
    """``count-TYPE.png`` for every event type and ``property-NAME.png`` for every property."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = [charts.png(count_histogram(t, results), folder / f"count-{t}.png")
           for t in event_types]
    out += [charts.png(convergence_figure(p, results, confidence), folder / f"property-{p}.png")
            for p in properties]
    return out
