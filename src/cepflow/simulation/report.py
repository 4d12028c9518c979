"""The HTML report of ``cepflow simulate --report`` (a :class:`cepflow.reports.Page`): the
settings, Listing 31's statistics with Table 2's ratios, the properties with their intervals
and convergence plots, where the time went, and a histogram per event type whose count varies
(types with one count in every run are listed, not drawn, to keep the page small)."""

from __future__ import annotations

from pathlib import Path

from cepflow.reports import Page, charts
from cepflow.simulation.outcome import Outcome
from cepflow.simulation.plots import convergence_figure, count_histogram
from cepflow.timefmt import instant_text


def build(outcome: Outcome) -> Page:
    sim = outcome.simulation
    t = outcome.timing
    names = " + ".join(Path(p).name for p in outcome.patterns) or "patterns"
    page = Page(f"cepflow simulate — {names}",
                f"{len(outcome.results):,} runs of {sim.describe()}, seed "
                f"{sim.seed}, {outcome.engine} ({outcome.where}), "
                f"{outcome.wall_seconds:,.1f} s")
    settings = [
        ("patterns", ", ".join(outcome.patterns)),
        ("model", sim.model.path),
        ("runs", len(outcome.results)),
        ("a run", f"{sim.describe()} from {instant_text(sim.model.start_ms)}"),
        ("seed", str(sim.seed)),
        ("engine", f"{outcome.engine} ({outcome.where})"),
        ("wall time", f"{outcome.wall_seconds:,.2f} s ({t['runs_per_second']:,.1f} runs/s)"),
        ("generating events (summed over runs)",
         f"{t['generate_seconds']:,.2f} s ({t['generate_share']:.0%})"),
        ("detecting (summed over runs)",
         f"{t['detect_seconds']:,.2f} s ({t['detect_events_per_second']:,.0f} simple "
         "events/s)"),
    ]
    if outcome.rejected[1]:
        settings.append(("side channel", f"{outcome.rejected[1]:,} record(s) in "
                         f"{outcome.rejected[0]:,} run(s): expressions that failed, input a "
                         "window statement refused"))
    if outcome.precision is not None:
        settings.append(("sequential mode", f"until every interval's half-width ≤ "
                         f"{outcome.precision:g}: "
                         f"{'reached' if outcome.precision_reached else 'NOT reached'}"))
    page.section("Runs").table(("setting", "value"), settings)

    counts = page.section("Event counts")
    counts.text("Per event type, its count per run over the runs (seed 003 Listing 31: "
                "stats.csv), and for complex events their occurrences per simple event over "
                "all runs (Table 2). Duration is each run's wall time in seconds.")
    counts.table(("Event", "Min", "Max", "Median", "Mean", "Std.Dev", "per simple event"),
                 [(*s.row(), _ratio(outcome.ratios.get(s.name))) for s in outcome.summary],
                 numeric=range(1, 7))

    if outcome.estimates:
        props = page.section("Properties")
        props.text(f"The fraction of runs in which each property (a complex event type) "
                   f"occurred, with its {outcome.confidence:.0%} Wilson score interval.")
        props.table(("property", "runs", "occurred in", "probability", "low", "high", "±",
                     "per simple event"),
                    [(e.name, e.runs, e.hits, e.probability, e.low, e.high, e.half_width,
                      _ratio(e.ratio if e.simple_events else None))
                     for e in outcome.estimates], numeric=range(1, 8))
        for e in outcome.estimates:
            props.svg(charts.svg(convergence_figure(e.name, outcome.results,
                                                    outcome.confidence)),
                      f"{e.name}: estimate and interval against the number of runs")

    hist = page.section("Histograms")
    constant = []
    for name in sim.event_types:
        values = {r.counts.get(name, 0) for r in outcome.results}
        if len(values) <= 1:
            constant.append(f"{name} ({next(iter(values), 0):,})")
            continue
        hist.svg(charts.svg(count_histogram(name, outcome.results)))
    if constant:
        hist.text("The same count in every run: " + ", ".join(constant) + ".")
    return page


def _ratio(v: float | None) -> str:
    return "" if v is None else f"{v:.6g}"


def write_report(outcome: Outcome, path: str | Path) -> Path:
    return build(outcome).write(path)
