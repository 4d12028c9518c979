"""Plots for report pages, drawn by matplotlib (its Agg backend: no display) and returned as SVG
text to inline with :meth:`cepflow.reports.Section.svg`, or written as PNG files."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure


def figure(width: float = 7.0, height: float = 3.2) -> tuple[Figure, Any]:
    """A figure with one axes (no pyplot: figures are independent of any global state)."""
    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.add_subplot()


def svg(fig: Figure) -> str:
    """The figure as SVG text (fonts as paths off: text stays text, the page stays small)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def png(fig: Figure, path: str | Path, dpi: int = 120) -> Path:
    path = Path(path)
    fig.savefig(path, format="png", dpi=dpi)
    return path


def histogram(values: Sequence[float], title: str, xlabel: str, bins: int | str = "auto"
              ) -> Figure:
    """A histogram of ``values`` (e.g. an event type's count per simulation run)."""
    fig, ax = figure()
    ax.hist(list(values), bins=bins, color="#1f6feb", edgecolor="white")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("runs")
    return fig


def steps(series: dict[str, tuple[Sequence[float], Sequence[float]]], title: str,
          xlabel: str, ylabel: str) -> Figure:
    """Cumulative counts over time, one step line per name (e.g. matches per pattern)."""
    fig, ax = figure()
    for name, (xs, ys) in series.items():
        ax.step(list(xs), list(ys), where="post", label=name)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if series:
        ax.legend(loc="upper left", fontsize=8)
    return fig
