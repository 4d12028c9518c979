"""``cepflow simulate``: Monte Carlo runs of a pattern set over generated events (seed 003
§V.B-D) — per-event statistics, property probabilities with confidence, the number of runs."""

from __future__ import annotations

import resource
import sys
import time
from contextlib import AbstractContextManager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cepflow.cli.generate import pick_seed, read_model, run_duration
from cepflow.cli.options import EngineName, load_program, need_spark, reading
from cepflow.simulation.properties import FORMULAS, required_runs, run_until_precise, z_value

if TYPE_CHECKING:  # (the runner is imported when the command runs, not at every start)
    from cepflow.simulation.monte_carlo import RunResult, Simulation
    from cepflow.simulation.outcome import Outcome

err = Console(stderr=True, soft_wrap=True)
if not err.is_terminal:  # a log or a pipe: tables as wide as they need, not 80 columns
    err.width = 160

Formula = StrEnum("Formula", [(f, f) for f in FORMULAS])


def _plan(confidence: float, precision: float | None, p: float, formula: str) -> int:
    if precision is None:
        err.print("--plan needs --precision D (and --confidence C, --p P)", markup=False)
        raise typer.Exit(2)
    return required_runs(confidence, precision, p, formula)


def simulate_command(
    patterns: Annotated[list[Path] | None, typer.Argument(
        metavar="PATTERNS...", help="Pattern files, read as one pattern set (an application "
                                    "and its properties; all .epl or none)")] = None,
    model_path: Annotated[Path | None, typer.Option(
        "--model", "-m", help="Model file (TOML) generating the simple events")] = None,
    runs: Annotated[int | None, typer.Option(
        "--runs", "-n", min=1, help="Number of runs (else from --precision, or sequential "
                                    "with --until-precision)")] = None,
    duration: Annotated[str | None, typer.Option(
        help="Simulated time per run: 1d, 16 d, 3600 s (default: the model's "
             "simulation.duration, unless --events is given)")] = None,
    events: Annotated[int | None, typer.Option(
        min=1, help="End each run after this many simple events (with --duration: "
                    "whichever comes first)")] = None,
    seed: Annotated[int | None, typer.Option(
        help="Random seed; run r uses (seed, r) (default: a fresh one, printed)")] = None,
    engine: Annotated[EngineName, typer.Option(
        help="local (one process per core) or spark (runs in the executors; needs the "
             "spark extra)")] = EngineName.local,
    master: Annotated[str | None, typer.Option(
        help="Spark master (default: embedded local[*])")] = None,
    workers: Annotated[int | None, typer.Option(
        min=1, help="Local processes (default: one per core)")] = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Statistics as CSV (Listing 31's shape); - for stdout")] = None,
    json_path: Annotated[Path | None, typer.Option(
        "--json", help="Every run's counts and times, the estimates, the settings (JSON)")
    ] = None,
    report: Annotated[Path | None, typer.Option(help="HTML report")] = None,
    plots: Annotated[Path | None, typer.Option(
        help="Folder for PNG plots: count-TYPE.png, property-NAME.png")] = None,
    count_by: Annotated[list[str] | None, typer.Option(
        "--count-by", help="Also count events of a type per value of its parameters: "
                           "TYPE.ATTR[,ATTR] (e.g. AirQualityLevel.station,grade; "
                           "repeatable); rows TYPE[ATTR=value,…]")] = None,
    prop: Annotated[list[str] | None, typer.Option(
        "--property", help="A complex event type whose probability of occurring in a run is "
                           "estimated (repeatable)")] = None,
    confidence: Annotated[float, typer.Option(
        min=0.5, max=0.999999, help="Confidence level of the intervals and of --precision")
    ] = 0.95,
    precision: Annotated[float | None, typer.Option(
        min=1e-6, max=0.5, help="Run n = ceil(z²·p·q/d²) runs for this precision d "
                                "(half-width)")] = None,
    p: Annotated[float, typer.Option(
        "--p", min=1e-6, max=1 - 1e-6, help="Expected proportion p for --precision (0.5: "
                                            "the most runs)")] = 0.5,
    formula: Annotated[Formula, typer.Option(
        help="exact: z exact, n rounded up; seed: z to two decimals, n rounded to the "
             "nearest, as 003 Table 3")] = Formula.exact,
    plan: Annotated[bool, typer.Option(
        "--plan", help="Print the number of runs --precision needs and exit")] = False,
    until_precision: Annotated[float | None, typer.Option(
        min=1e-6, max=0.5, help="Sequential mode: run batches until every --property's "
                                "interval has this half-width or less")] = None,
    batch: Annotated[int | None, typer.Option(
        min=1, help="Runs per batch in the sequential mode (default: 16 per process)")] = None,
    max_runs: Annotated[int, typer.Option(
        min=1, help="The sequential mode stops here if the precision is not reached")
    ] = 100_000,
    progress: Annotated[bool, typer.Option(help="Show a progress bar")] = True,
) -> None:
    """Run the patterns over many generated runs; report per-event statistics (Listing 31),
    property probabilities with confidence intervals and the runs they need."""
    if plan:
        n = _plan(confidence, precision, p, str(formula))
        z = z_value(confidence)
        shown = round(z, 2) if formula == "seed" else z
        typer.echo(n)
        err.print(f"runs for precision ±{precision:g} at {confidence:.4g} confidence with "
                  f"p = {p:g}: z = {shown:.4g}, n = z²·p·q/d² = {n:,} ({formula})",
                  markup=False, highlight=False)
        return
    if not patterns:
        err.print("give the pattern file(s) to simulate", markup=False)
        raise typer.Exit(2)
    if model_path is None:
        err.print("give --model MODEL (the TOML file generating the simple events)",
                  markup=False)
        raise typer.Exit(2)
    chosen = [name for name, v in (("--runs", runs), ("--precision", precision),
                                   ("--until-precision", until_precision)) if v is not None]
    if len(chosen) != 1:
        err.print("give one of --runs N, --precision D (n from the formula) or "
                  "--until-precision D (sequential)" + (
                      f", not {' and '.join(chosen)}" if chosen else ""), markup=False)
        raise typer.Exit(2)
    properties = list(dict.fromkeys(prop or []))
    if until_precision is not None and not properties:
        err.print("--until-precision needs at least one --property", markup=False)
        raise typer.Exit(2)
    if engine == "spark":
        need_spark("--engine spark")
    from cepflow.simulation.draws import GenerationError
    from cepflow.simulation.generator import check_size
    from cepflow.simulation.monte_carlo import Simulation, parse_count_by
    from cepflow.simulation.outcome import Outcome

    program = load_program(patterns)
    model = read_model(model_path)
    ms = run_duration(duration, model, events)
    try:
        groups = tuple(parse_count_by(x) for x in count_by or [])
        with reading(model_path):
            simulation = Simulation(program, model, ms, pick_seed(seed), events, groups)
    except ValueError as e:
        err.print(f"--count-by {e}", markup=False)
        raise typer.Exit(2) from None
    unknown = [x for x in properties if x not in simulation.complex]
    if unknown:
        err.print(f"--property {unknown[0]}: not a complex event of the patterns (they have: "
                  f"{', '.join(simulation.complex)})", markup=False)
        raise typer.Exit(2)
    total = runs if runs is not None else (
        required_runs(confidence, precision, p, str(formula)) if precision is not None else None)
    if total is not None and precision is not None:
        err.print(f"{total:,} runs for ±{precision:g} at {confidence:.4g} confidence "
                  f"(p = {p:g}, {formula})", markup=False, highlight=False)

    t_start = time.perf_counter()
    reached: bool | None = None
    try:
        if events is None:  # before forking workers or starting Spark
            check_size(model, ms)
        with _runner(simulation, engine, master, workers) as runner, _bar(
                progress, total) as advance:
            t0 = time.perf_counter()  # (processes forked, or Spark started)

            def run_batch(numbers: range) -> list[RunResult]:
                out = []
                for res in runner.map(list(numbers)):
                    out.append(res)
                    advance(1)
                return out

            if total is not None:
                results = run_batch(range(total))
            else:
                assert until_precision is not None
                size = batch or 16 * getattr(runner, "workers", 1)
                results, reached = run_until_precise(run_batch, properties, until_precision,
                                                     confidence, size, max_runs)
    except GenerationError as e:
        err.print(f"{model_path}: {e}", markup=False)
        raise typer.Exit(1) from None
    elapsed = time.perf_counter() - t0
    results.sort(key=lambda r: r.run)
    outcome = Outcome(simulation, results, elapsed, str(engine), runner.where,
                      properties, confidence, [str(x) for x in patterns],
                      until_precision, reached,
                      extra={"startup_seconds": t0 - t_start, **_memory(str(engine))})
    _print(outcome)
    _write(outcome, output, json_path, report, plots)
    if reached is False:
        err.print(f"the precision ±{until_precision:g} was not reached in {max_runs:,} runs "
                  "(--max-runs)", markup=False)
        raise typer.Exit(3)


def _runner(simulation: Simulation, engine: str, master: str | None, workers: int | None
            ) -> AbstractContextManager[Any]:
    if engine == "spark":
        from cepflow.spark.simulation import SparkRunner

        return SparkRunner(simulation, master)
    from cepflow.simulation.monte_carlo import LocalRunner

    return LocalRunner(simulation, workers)


class _NoBar:
    def __enter__(self) -> Any:
        return lambda n: None

    def __exit__(self, *exc: object) -> None:
        return None


class _Bar:
    """A rich progress bar over runs (on a terminal only)."""

    def __init__(self, total: int | None) -> None:
        self.progress = Progress(TextColumn("[bold]simulating"), BarColumn(),
                                 MofNCompleteColumn(), TextColumn("runs"), TimeElapsedColumn(),
                                 console=err, transient=True)
        self.task = self.progress.add_task("runs", total=total)

    def __enter__(self) -> Any:
        self.progress.start()
        return lambda n: self.progress.advance(self.task, n)

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()


def _bar(show: bool, total: int | None) -> AbstractContextManager[Any]:
    return _Bar(total) if show and sys.stderr.isatty() else _NoBar()


def _memory(engine: str) -> dict[str, Any]:
    """Peak resident memory of this process and (local runs) of the largest worker process;
    Spark's executors are not our children: their memory is Spark's to report."""
    peak = {"main": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    if engine == "local":
        peak["largest_worker"] = round(
            resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
    return {"peak_rss_mib": peak}


def _print(outcome: Outcome) -> None:
    sim = outcome.simulation
    t = outcome.timing
    table = Table(title=f"cepflow simulate — {len(outcome.results):,} runs of "
                        f"{sim.describe()}, seed {sim.seed}")
    for h in ("Event", "Min", "Max", "Median", "Mean", "Std.Dev", "ratio"):
        table.add_column(h, justify="left" if h == "Event" else "right", overflow="fold")
    for s in outcome.summary:
        ratio = outcome.ratios.get(s.name)
        table.add_row(*s.row(), "" if ratio is None else f"{ratio:.6g}")
    err.print(table)
    err.print("ratio: occurrences per simple event over all runs (Table 2); Duration: each "
              "run's wall time (s)", markup=False)
    if outcome.estimates:
        props = Table(title=f"properties ({outcome.confidence:.4g} Wilson score intervals)")
        for h in ("property", "occurred in", "probability", "interval", "±"):
            props.add_column(h, justify="left" if h == "property" else "right",
                             overflow="fold")
        for e in outcome.estimates:
            props.add_row(e.name, f"{e.hits:,} of {e.runs:,}", f"{e.probability:.6g}",
                          f"[{e.low:.6g}, {e.high:.6g}]", f"{e.half_width:.3g}")
        err.print(props)
    runs_with, records = outcome.rejected
    if records:
        err.print(f"warning: in {runs_with:,} run(s) the engine put {records:,} record(s) on its "
                  "side channel (expressions that failed, input a window statement refused); "
                  "runs.json has them per run", markup=False)
    mem = outcome.extra.get("peak_rss_mib", {})
    worker = (f", {mem['largest_worker']:,} MiB in the largest worker"
              if "largest_worker" in mem else "")
    err.print(f"{outcome.engine} ({outcome.where}): {outcome.wall_seconds:,.2f} s wall for the "
              f"runs ({t['runs_per_second']:,.1f} runs/s) after "
              f"{outcome.extra.get('startup_seconds', 0):,.2f} s starting "
              f"{'Spark' if outcome.engine == 'spark' else 'processes'}; generating "
              f"{t['generate_share']:.0%} and detecting {1 - t['generate_share']:.0%} of the "
              f"runs' time ({t['detect_events_per_second']:,.0f} simple events/s detected); "
              f"peak memory {mem.get('main', 0):,} MiB here{worker}",
              markup=False, highlight=False)


def _write(outcome: Outcome, output: Path | None, json_path: Path | None,
           report: Path | None, plots: Path | None) -> None:
    from cepflow.simulation.stats import stats_csv

    try:
        if output is not None:
            text = stats_csv(outcome.summary)
            if str(output) == "-":
                sys.stdout.write(text)
            else:
                output.parent.mkdir(parents=True, exist_ok=True)
                output.write_text(text, encoding="utf-8")
                err.print(f"wrote {output}", markup=False)
        from cepflow.simulation.report import write_report

        for path, write in ((json_path, outcome.write_runs_json),
                            (report, lambda where: write_report(outcome, where))):
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                write(path)
                err.print(f"wrote {path}", markup=False)
        if plots is not None:
            from cepflow.simulation.plots import write_pngs

            files = write_pngs(plots, outcome.simulation.event_types, outcome.properties,
                               outcome.results, outcome.confidence)
            err.print(f"wrote {len(files)} plot(s) to {plots}", markup=False)
    except OSError as e:
        err.print(f"{e.filename}: {e.strerror}", markup=False)
        raise typer.Exit(2) from None

