"""The ``cepflow`` command line: check, run, explain and graph pattern files."""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cepflow.automaton.dot import RenderError, render, to_dot, window_to_dot
from cepflow.cli.demo import demo_app
from cepflow.cli.options import (
    ACTIONS_HELP,
    HELP_OPTIONS,
    ContextName,
    EngineName,
    import_action_modules,
    need_spark,
    show_version,
)
from cepflow.compiler.program import Program
from cepflow.events.model import Event, SideChannel
from cepflow.inputs import merge, read_events, reorder
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.loader import diagnose, parse_path
from cepflow.outputs import write_rejected_jsonl
from cepflow.outputs.jsonl import dumps
from cepflow.runtime.engine import Engine
from cepflow.runtime.explain import format_stories, trace_run

app = typer.Typer(add_completion=False, no_args_is_help=True, context_settings=HELP_OPTIONS,
                  help="Complex event processing over live models and event streams.")
err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


@app.callback()
def _app(version: Annotated[bool, typer.Option(
        "--version", callback=show_version, is_eager=True,
        help="Print cepflow's version and exit")] = False) -> None:
    """Complex event processing over live models and event streams."""


def _load(path: Path, context: str | None) -> Program:
    try:
        module = parse_path(path)
    except PatternSyntaxError as e:
        for d in e.diagnostics:
            err.print(str(d), markup=False, highlight=False)
        raise typer.Exit(1) from None
    except OSError as e:
        err.print(f"{path}: {e.strerror}", markup=False)
        raise typer.Exit(2) from None
    diags, program = diagnose(module, context=None if context is None else str(context))
    for d in diags:
        err.print(str(d), markup=False, highlight=False)
    if program is None:
        raise typer.Exit(1)
    return program


@app.command()
def check(files: Annotated[list[Path], typer.Argument(
        help="Pattern files (.vepl, .cep; .epl = Esper EPL)")]) -> None:
    """Report every syntax, name and type error as FILE:LINE:COL: message."""
    failed = False
    for path in files:
        try:
            program = _load(path, None)
        except typer.Exit:
            failed = True
            continue
        windows = f"{len(program.windows)} window statement(s), " if program.windows else ""
        out.print(f"{path}: ok — {len(program.automata)} complex event pattern(s), {windows}"
                  f"{len(program.schemas)} event type(s), {len(program.rules)} rule(s)",
                  markup=False, highlight=False)
    if failed:
        raise typer.Exit(1)


def _events(inputs: list[Path], program: Program, side: SideChannel, lateness: float):
    streams = [reorder(read_events(p, program.schemas, side), lateness, side, source=str(p))
               for p in inputs]
    if len(streams) == 1:
        yield from streams[0]
        return
    for e in merge(*streams):
        e.seq = -1  # renumbered in merged order by the engine
        yield e


@app.command()
def run(
    patterns: Annotated[Path, typer.Argument(help="Pattern file")],
    input: Annotated[list[Path], typer.Option("--input", "-i", help="Event file(s) or folder")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Complex events (.jsonl)")],
    engine: Annotated[EngineName, typer.Option(
        help="local (in-process engine) or spark (batch pipeline on Spark; needs the spark "
             "extra)")] = EngineName.local,
    master: Annotated[str | None, typer.Option(
        help="Spark master (default: embedded local[*])")] = None,
    context: Annotated[ContextName | None, typer.Option(
        help="Override the default context")] = None,
    lateness: Annotated[float, typer.Option(help="Allowed lateness (ms) for reordering")] = 0,
    rejected: Annotated[Path | None, typer.Option(
        help="Where malformed and late records go (default OUTPUT.rejected.jsonl)")] = None,
    close_windows: Annotated[bool, typer.Option(
        help="At end of input, let open windows close (fires trailing-NOT timers)")] = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar")] = True,
    actions: Annotated[list[str] | None, typer.Option(help=ACTIONS_HELP)] = None,
    start: Annotated[float | None, typer.Option(
        help="The statements' start time (ms), where patterns that begin with "
             "timer:interval start (default: the first event's time)")] = None,
) -> None:
    """Detect complex events in EVENTS and write one JSON object per match."""
    if engine == "spark":
        need_spark("--engine spark")
    program = _load(patterns, context)
    action_modules = import_action_modules(actions)
    if engine == "spark":
        if start is not None:
            err.print("--start applies to the local engine (on Spark the statements start at "
                      "the first event)")
            raise typer.Exit(2)
        _run_spark(program, patterns, input, output, rejected, close_windows, master, lateness,
                   action_modules)
        return
    side = SideChannel()
    # input a window statement cannot take goes to the side channel too (Engine, side=)
    eng = Engine(program, strict_actions=False, side=side, start=start)
    for rule, name in eng.missing_actions():
        err.print(f"warning: rule {rule}: action '{name}' is not registered (use --actions); "
                  "its firings are counted only", markup=False)
    output.parent.mkdir(parents=True, exist_ok=True)
    n_in = n_out = 0
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    show = progress and sys.stderr.isatty()
    with output.open("w", encoding="utf-8") as fh, Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), TextColumn(
                "{task.completed:,} events · {task.fields[matches]:,} matches"),
            TimeElapsedColumn(), console=err, disable=not show, transient=True) as bar:
        task = bar.add_task("detecting", total=None, matches=0)
        def counted(events: Iterator[Event]) -> Iterator[Event]:
            nonlocal n_in
            for e in events:
                n_in += 1
                if n_in % 20000 == 0:
                    bar.update(task, completed=n_in, matches=n_out)
                yield e

        try:
            for ce in eng.run(counted(_events(input, program, side, lateness))):
                fh.write(dumps(ce.to_dict()) + "\n")
                n_out += 1
            for ce in eng.finish(close_windows=close_windows):
                fh.write(dumps(ce.to_dict()) + "\n")
                n_out += 1
        except OSError as ex:
            err.print(f"{ex.filename}: {ex.strerror}", markup=False)
            raise typer.Exit(2) from None
    elapsed = time.perf_counter() - t0
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rej_path = rejected or output.with_suffix(".rejected.jsonl")
    if len(side):
        write_rejected_jsonl(side, rej_path)
    table = Table(title=f"cepflow run — {patterns}", show_header=True)
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("events processed", f"{n_in:,}")
    table.add_row("malformed (side channel)", f"{len(side.malformed):,}")
    table.add_row("late (side channel)", f"{len(side.late):,}")
    if eng.stats.rejected:  # (counted among the malformed records above)
        table.add_row("refused by window statements (side channel)",
                      f"{eng.stats.rejected:,}")
    for name, k in sorted(eng.stats.by_pattern.items()):
        table.add_row(f"complex events {name}", f"{k:,}")
    for name, k in eng.partial_matches().items():
        if k:
            table.add_row(f"partial matches left {name}", f"{k:,}")
    if program.rules:
        table.add_row("rule firings", f"{eng.stats.rule_firings:,}")
    table.add_row("throughput", f"{n_in / elapsed:,.0f} events/s" if elapsed else "-")
    table.add_row("peak memory (process RSS)",
                  f"{peak_kib / 1024:,.1f} MiB (+{(peak_kib - rss0) / 1024:,.1f} during run)")
    err.print(table)
    if len(side):
        err.print(f"{len(side)} record(s) were not processed; see {rej_path}", markup=False)
    err.print(f"wrote {n_out:,} complex event(s) to {output}", markup=False)


def _run_spark(program: Program, patterns: Path, inputs: list[Path], output: Path,
               rejected: Path | None, close_windows: bool, master: str | None,
               lateness: float, action_modules: list) -> None:
    """``cepflow run --engine spark``: read, detect and write with the Spark batch pipeline."""
    import warnings

    from pyspark import cloudpickle

    from cepflow.runtime.actions import registered
    from cepflow.spark import (
        PartitionWarning,
        replay,
        spark_session,
    )
    from cepflow.spark.session import local_cores

    if len(inputs) != 1:
        err.print("--engine spark reads one file or folder; put the event files in one folder")
        raise typer.Exit(2)
    if lateness:
        err.print("note: the Spark batch pipeline orders each partition by timestamp (history "
                  "replay), so --lateness does not apply", markup=False)
    t0 = time.perf_counter()
    with err.status(f"starting Spark ({master or f'local[{local_cores()}]'})"):
        spark = spark_session(master)
    with warnings.catch_warnings(record=True) as caught, err.status("detecting on Spark"):
        warnings.simplefilter("always", PartitionWarning)
        for module in action_modules:  # actions run in the executors: ship them by value
            if module.__name__.startswith("cepflow_actions_"):
                cloudpickle.register_pickle_by_value(module)
        rej_path = rejected or output.with_suffix(".rejected.jsonl")
        run = replay(spark, inputs[0], program, output, rej_path, actions=registered(),
                     close_windows=close_windows)
        n_in, n_out, n_rej = run.events, run.complex_events, run.rejected
    for w in caught:
        err.print(f"warning: {w.message}", markup=False)
    elapsed = time.perf_counter() - t0
    table = Table(title=f"cepflow run --engine spark — {patterns}", show_header=True)
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("events processed", f"{n_in:,}")
    table.add_row("malformed (side channel)", f"{n_rej:,}")
    table.add_row("complex events", f"{n_out:,}")
    for gi, g in enumerate(run.groups):
        how = "by key" if g.partitioned else "one partition"
        table.add_row(f"group {gi}: {', '.join(g.patterns) or 'rules'}", how)
    table.add_row("wall time (incl. Spark start)", f"{elapsed:,.1f} s")
    err.print(table)
    if n_rej:
        err.print(f"{n_rej} record(s) were not processed; see {rej_path}", markup=False)
    err.print(f"wrote {n_out:,} complex event(s) to {output}", markup=False)


@app.command()
def stream(
    patterns: Annotated[Path, typer.Argument(help="Pattern file")],
    source: Annotated[Path, typer.Option(help="Folder new event files arrive in")],
    sink: Annotated[Path, typer.Option(help="Output folder (matches/, rejected/)")],
    checkpoint: Annotated[Path, typer.Option(help="Checkpoint folder (restart from here)")],
    master: Annotated[str | None, typer.Option(
        help="Spark master (default: embedded local[*])")] = None,
    context: Annotated[ContextName | None, typer.Option(
        help="Override the default context")] = None,
    lateness: Annotated[float, typer.Option(help="Allowed lateness of the watermark (ms)")
                        ] = 0,
    files_per_trigger: Annotated[int | None, typer.Option(
        help="At most this many new files per micro-batch")] = None,
    once: Annotated[bool, typer.Option(
        help="Process what is there and stop (availableNow) instead of running on")] = False,
    actions: Annotated[list[str] | None, typer.Option(help=ACTIONS_HELP)] = None,
) -> None:
    """Detect complex events continuously in a folder of event files (Spark Structured
    Streaming); restarting with the same checkpoint neither loses nor duplicates output."""
    need_spark("cepflow stream")
    program = _load(patterns, context)
    action_modules = import_action_modules(actions)
    from pyspark import cloudpickle

    from cepflow.runtime.actions import registered
    from cepflow.spark import spark_session
    from cepflow.spark.streaming import stream_query

    for module in action_modules:
        if module.__name__.startswith("cepflow_actions_"):
            cloudpickle.register_pickle_by_value(module)
    if not source.is_dir():
        err.print(f"--source {source}: not a folder", markup=False)
        raise typer.Exit(2)
    with err.status("starting Spark"):
        spark = spark_session(master)
    query = stream_query(spark, program, source, sink, checkpoint, lateness_ms=lateness,
                         files_per_trigger=files_per_trigger, actions=registered(),
                         available_now=once)
    err.print(f"streaming {source} -> {sink} (checkpoint {checkpoint}); Ctrl-C to stop",
              markup=False)
    last = None
    try:
        while query.isActive:
            query.awaitTermination(2)
            p = query.lastProgress
            if p and p.get("batchId") != last:
                last = p.get("batchId")
                took = (p.get("durationMs") or {}).get("triggerExecution", 0)
                err.print(f"micro-batch {last} done in {took / 1000:,.1f} s", markup=False)
    except KeyboardInterrupt:
        err.print("stopping (the checkpoint keeps the progress)")
        query.stop()
    if query.exception() is not None:
        err.print(f"query failed: {query.exception()}", markup=False)
        raise typer.Exit(1)


@app.command()
def explain(
    patterns: Annotated[Path, typer.Argument(help="Pattern file")],
    input: Annotated[list[Path], typer.Option("--input", "-i", help="Event file(s)")],
    pattern: Annotated[str | None, typer.Option(help="Explain only this pattern")] = None,
    context: Annotated[ContextName | None, typer.Option(
        help="Override the default context")] = None,
    lateness: Annotated[float, typer.Option(help="Allowed lateness (ms)")] = 0,
    close_windows: Annotated[bool, typer.Option(help="Let open windows close at the end")
                             ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Show each token's path through the automaton and why partial matches died (times in
    ISO-8601 UTC for epoch milliseconds, else in ms)."""
    program = _load(patterns, context)
    if pattern is not None and pattern not in {a.name for a in program.automata}:
        err.print(f"no complex event pattern '{pattern}' in {patterns}", markup=False)
        raise typer.Exit(2)
    side = SideChannel()
    events: list[Event] = list(_events(input, program, side, lateness))
    stories, _ = trace_run(program, events, pattern, close_windows)
    if as_json:
        out.print_json(json.dumps([s.__dict__ for s in stories], default=str))
    else:
        out.print(format_stories(program, stories), markup=False, highlight=False, end="")
    for r in side.all():
        err.print(f"not processed: {r}", markup=False)


@app.command()
def graph(
    patterns: Annotated[Path, typer.Argument(help="Pattern file")],
    pattern: Annotated[str, typer.Argument(
        help="A complex event pattern or a window statement of the file")],
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help=".dot/.gv (DOT text), .svg, .png or .pdf (drawn by Graphviz)")
    ] = None,
) -> None:
    """Draw PATTERN: a pattern's automaton, or a window statement's dataflow (input stream,
    window, select/group by/having, output type). DOT on stdout, or the file of --output."""
    program = _load(patterns, None)
    windows = {w.name: w for w in program.windows}
    if pattern in windows:
        dot = window_to_dot(windows[pattern], program.schemas.get(pattern))
    else:
        try:
            dot = to_dot(program.automaton(pattern))
        except KeyError:
            names = ", ".join([a.name for a in program.automata] + list(windows))
            err.print(f"no complex event pattern or window statement '{pattern}' "
                      f"(have: {names})", markup=False)
            raise typer.Exit(2) from None
    if output is None:
        out.print(dot, markup=False, highlight=False, end="")
        return
    try:
        render(dot, output)
    except (RenderError, OSError) as e:
        err.print(str(e) if isinstance(e, RenderError) else f"{output}: {e.strerror}",
                  markup=False, highlight=False)
        raise typer.Exit(2) from None
    err.print(f"wrote {output}", markup=False)


app.add_typer(demo_app, name="demo")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
