"""The ``cepflow`` command line: check, run, explain and graph pattern files.

Conventions (docs/formats.md, "Command line"): ``-o -`` writes the matches to standard output;
the output format follows the extension; a path that cannot be read or written and an option
out of range are one-line errors, reported before anything is read or written. Exit codes:
0 done; 1 the pattern file has errors; 2 an unusable option, input or output; 3 no event could
be processed; 4 more records were rejected than ``--max-rejects`` allows; 5 an expression or
rule action failed on some events (docs/semantics.md, "Evaluation errors"); 6 the run stopped
at ``--max-partial-matches``.
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path
from typing import Annotated, Any, TextIO

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
    DuplicateIds,
    DuplicateIdsOption,
    EngineName,
    MaxPartialMatchesOption,
    MissingFields,
    MissingFieldsOption,
    OnError,
    OnErrorOption,
    UnknownTypes,
    UnknownTypesOption,
    import_action_modules,
    need_spark,
    show_version,
)
from cepflow.cli.report import check_report_path, report, write_report
from cepflow.compiler.growth import warnings as growth_warnings
from cepflow.compiler.program import Program
from cepflow.events.model import Event, SideChannel
from cepflow.inputs import InputError, input_files, ordered_events
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.loader import diagnose, parse_path
from cepflow.outputs import OutputError, dumps, output_format, rejected_lines
from cepflow.outputs.files import check_writable
from cepflow.replay import Replayed, replay
from cepflow.reports.record import RunRecord
from cepflow.runtime.explain import format_stories, trace_run

app = typer.Typer(add_completion=False, no_args_is_help=True, context_settings=HELP_OPTIONS,
                  help="Complex event processing over live models and event streams.")
err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)

#: exit codes (module docstring)
EXIT_PATTERNS, EXIT_USAGE, EXIT_NOTHING_PROCESSED, EXIT_TOO_MANY_REJECTED = 1, 2, 3, 4
EXIT_EVALUATION_ERRORS, EXIT_PARTIAL_MATCH_LIMIT = 5, 6


@app.callback()
def _app(version: Annotated[bool, typer.Option(
        "--version", callback=show_version, is_eager=True,
        help="Print cepflow's version and exit")] = False) -> None:
    """Complex event processing over live models and event streams."""


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    """Print a one-line error; the Exit to raise."""
    err.print(message, markup=False, highlight=False)
    return typer.Exit(code)


def _load(path: Path, context: str | None) -> Program:
    try:
        module = parse_path(path)
    except PatternSyntaxError as e:
        for d in e.diagnostics:
            err.print(str(d), markup=False, highlight=False)
        raise typer.Exit(EXIT_PATTERNS) from None
    except OSError as e:
        raise _fail(f"{path}: {e.strerror}") from None
    diags, program = diagnose(module, context=None if context is None else str(context))
    for d in diags:
        err.print(str(d), markup=False, highlight=False)
    if program is None:
        raise typer.Exit(EXIT_PATTERNS)
    _check_context_conflicts(path, program, context)
    return program


def _check_context_conflicts(path: Path, program: Program, context: str | None) -> None:
    """``--context`` sets the context of every pattern that does not declare its own (the
    file's default included); a pattern that declares another one (Esper-style patterns have
    Esper's) is refused rather than silently left as it is."""
    if context is None:
        return
    own = [f"{a.name} ({a.context})" for a in program.automata if a.context != context]
    if own:
        raise _fail(f"{path}: --context {context} conflicts with the context pattern(s) "
                    f"{', '.join(own)} declare; leave out --context or make them agree")


def _check_lateness(lateness: float) -> None:
    if not lateness >= 0:  # (NaN too)
        raise _fail(f"--lateness must be 0 or more milliseconds, not {lateness:g}")


def _reader_options(unknown_types: UnknownTypes, missing_fields: MissingFields,
                    duplicate_ids: DuplicateIds) -> dict[str, Any]:
    return {"unknown_types": unknown_types.value,
            "strict_params": missing_fields is MissingFields.reject,
            "unique_ids": duplicate_ids is DuplicateIds.reject}


def _import_actions(specs: list[str] | None, ship: bool = False) -> list[Any]:
    """The ``--actions`` modules (trusted code, imported once the patterns checked:
    :func:`~cepflow.cli.options.import_action_modules`); with ``ship``, registered with
    Spark's pickler by value (actions run in the executors)."""
    modules = import_action_modules(specs)
    if ship:
        from pyspark import cloudpickle

        for module in modules:
            if module.__name__.startswith("cepflow_actions_"):
                cloudpickle.register_pickle_by_value(module)
    return modules


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
        _announce_growth(program)
        windows = f"{len(program.windows)} window statement(s), " if program.windows else ""
        out.print(f"{path}: ok — {len(program.automata)} complex event pattern(s), {windows}"
                  f"{len(program.schemas)} event type(s), {len(program.rules)} rule(s)",
                  markup=False, highlight=False)
    if failed:
        raise typer.Exit(EXIT_PATTERNS)


@app.command()
def run(
    patterns: Annotated[Path, typer.Argument(help="Pattern file")],
    input: Annotated[list[Path], typer.Option("--input", "-i", help="Event file(s) or folder")],
    output: Annotated[Path, typer.Option(
        "--output", "-o", help="Complex events: .jsonl, .csv or .parquet by the extension; "
                               "- for standard output (JSON Lines)")],
    engine: Annotated[EngineName, typer.Option(
        help="local (in-process engine) or spark (batch pipeline on Spark; needs the spark "
             "extra)")] = EngineName.local,
    master: Annotated[str | None, typer.Option(
        help="Spark master (default: embedded local[*])")] = None,
    context: Annotated[ContextName | None, typer.Option(
        help="The context of every pattern that does not declare one (a pattern that "
             "declares another is an error)")] = None,
    lateness: Annotated[float, typer.Option(help="Allowed lateness (ms) for reordering")] = 0,
    rejected: Annotated[Path | None, typer.Option(
        help="Where malformed and late records go (default OUTPUT.rejected.jsonl; with "
             "-o -, standard error)")] = None,
    max_rejects: Annotated[int | None, typer.Option(
        help="Exit with code 4 when more records than this are rejected")] = None,
    unknown_types: UnknownTypesOption = UnknownTypes.reject,
    missing_fields: MissingFieldsOption = MissingFields.reject,
    duplicate_ids: DuplicateIdsOption = DuplicateIds.reject,
    close_windows: Annotated[bool, typer.Option(
        help="At end of input, let open windows close (fires trailing-NOT timers)")] = False,
    progress: Annotated[bool, typer.Option(help="Show a progress bar")] = True,
    actions: Annotated[list[str] | None, typer.Option(help=ACTIONS_HELP)] = None,
    start: Annotated[float | None, typer.Option(
        help="The statements' start time (ms), where patterns that begin with "
             "timer:interval start (default: the first event's time)")] = None,
    report_path: Annotated[Path | None, typer.Option(
        "--report", help="Also write an HTML report of the run: summary, matches over time, "
                         "timeline, step-through of matches on their automata, rejected "
                         "records (local engine; the run is traced for it)")] = None,
    on_error: OnErrorOption = OnError.skip,
    max_partial_matches: MaxPartialMatchesOption = None,
) -> None:
    """Detect complex events in EVENTS and write one record per match."""
    _check_lateness(lateness)
    if engine == "spark":
        need_spark("--engine spark")
    if max_rejects is not None and max_rejects < 0:
        raise _fail(f"--max-rejects must be 0 or more, not {max_rejects}")
    if engine == "spark" and start is not None:
        raise _fail("--start applies to the local engine (on Spark the statements start at "
                    "the first event)")
    if engine == "spark" and len(input) != 1:
        raise _fail("--engine spark reads one file or folder; put the event files in one folder")
    if engine == "spark" and report_path is not None:
        raise _fail("--report applies to the local engine (the report traces every token)")
    try:
        fmt = output_format(output)
        input_files(input, SideChannel())
        check_writable(output, folder=engine == "spark" and fmt == "parquet")
        check_report_path(report_path)
    except (InputError, OutputError) as e:
        raise _fail(str(e)) from None
    program = _load(patterns, context)
    _import_actions(actions, ship=engine == "spark")
    _announce_growth(program)
    options = _reader_options(unknown_types, missing_fields, duplicate_ids)
    engine_options = {"on_error": str(on_error), "max_partial_matches": max_partial_matches}
    t0 = time.perf_counter()
    if engine == "spark":
        result = _run_spark(program, input[0], output, rejected, close_windows, master,
                            lateness, options, engine_options)
        title, extra = f"cepflow run --engine spark — {patterns}", {}
    else:
        record = None if report_path is None else RunRecord(program)
        result, extra = _run_local(program, input, output, rejected, close_windows, lateness,
                                   options, start, progress, record=record,
                                   engine_options=engine_options)
        title = f"cepflow run — {patterns}"
    elapsed = time.perf_counter() - t0
    _report(title, result, output, elapsed, extra)
    if report_path is not None and record is not None:
        write_report(report_path, record, result, title, input, elapsed)
    for kind, message in result.stopped:
        why = ("more partial matches than --max-partial-matches" if kind == "PartialMatchLimit"
               else "the first evaluation error (--on-error fail)")
        err.print(f"stopped at {why}: {message}", markup=False)
    if any(kind == "PartialMatchLimit" for kind, _ in result.stopped):
        raise typer.Exit(EXIT_PARTIAL_MATCH_LIMIT)
    if result.events == 0:
        raise _fail(f"no event could be processed ({result.rejected:,} record(s) rejected)",
                    EXIT_NOTHING_PROCESSED)
    if max_rejects is not None and result.rejected > max_rejects:
        raise _fail(f"{result.rejected:,} record(s) were rejected, more than --max-rejects "
                    f"{max_rejects:,}", EXIT_TOO_MANY_REJECTED)
    if result.errors:
        raise _fail(f"{result.errors:,} evaluation error(s): the events they failed on are in "
                    "the side file (kind error)", EXIT_EVALUATION_ERRORS)


def _announce_growth(program: Program) -> None:
    """Warn about the patterns whose partial matches can grow with the stream (no window
    bounds them: cepflow.compiler.growth)."""
    for d in growth_warnings(program.automata, program.module):
        err.print(str(d), markup=False, highlight=False)


def _run_local(program: Program, inputs: list[Path], output: Path, rejected: Path | None,
               close_windows: bool, lateness: float, options: dict[str, Any],
               start: float | None, show_progress: bool, record: RunRecord | None = None,
               stdout: TextIO | None = None, engine_options: dict[str, Any] | None = None
               ) -> tuple[Replayed, dict[str, str]]:
    """``cepflow run``: :func:`cepflow.replay.replay` with a progress bar and the process's
    memory (``record`` and ``stdout`` as for replay)."""
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    show = show_progress and sys.stderr.isatty()
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn(
            "{task.completed:,} events · {task.fields[matches]:,} matches"),
            TimeElapsedColumn(), console=err, disable=not show, transient=True) as bar:
        task = bar.add_task("detecting", total=None, matches=0)
        try:
            result = replay(inputs, program, output, rejected, close_windows=close_windows,
                            lateness=lateness, start=start, reader_options=options,
                            progress=lambda n, m: bar.update(task, completed=n, matches=m),
                            record=record, stdout=stdout, **(engine_options or {}))
        except (InputError, OutputError) as e:
            raise _fail(str(e)) from None
        except OSError as e:
            raise _fail(f"{e.filename}: {e.strerror}") from None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return result, {"peak memory (process RSS)":
                    f"{peak / 1024:,.1f} MiB (+{(peak - rss0) / 1024:,.1f} during run)"}


def _run_spark(program: Program, source: Path, output: Path, rejected: Path | None,
               close_windows: bool, master: str | None, lateness: float,
               options: dict[str, Any], engine_options: dict[str, Any]) -> Replayed:
    """``cepflow run --engine spark``: :func:`cepflow.spark.replay.replay`."""
    import warnings

    from cepflow.runtime.actions import registered
    from cepflow.spark import PartitionWarning, spark_session
    from cepflow.spark.replay import replay as spark_replay
    from cepflow.spark.session import local_cores

    if lateness:
        err.print("note: the Spark batch pipeline orders each partition by timestamp (history "
                  "replay), so --lateness does not apply", markup=False)
    with err.status(f"starting Spark ({master or f'local[{local_cores()}]'})"):
        spark = spark_session(master)
    with warnings.catch_warnings(record=True) as caught, err.status("detecting on Spark"):
        warnings.simplefilter("always", PartitionWarning)
        try:
            result = spark_replay(spark, source, program, output, rejected,
                                  actions=registered(), close_windows=close_windows,
                                  reader_options=options, **engine_options)
        except (InputError, OutputError) as e:
            raise _fail(str(e)) from None
    for w in caught:
        err.print(f"warning: {w.message}", markup=False)
    return result


def _report(title: str, result: Replayed, output: Path, elapsed: float,
            extra: dict[str, str]) -> None:
    """The run's summary on standard error (and the rejected records there, when they have
    no side file)."""
    for rule, name in result.missing_actions:
        err.print(f"warning: rule {rule}: action '{name}' is not registered (use --actions); "
                  "its firings were counted only", markup=False)
    if result.rejected and result.side_file is None:
        for line in rejected_lines(result.side).to_pylist():
            err.print(line, markup=False, highlight=False, soft_wrap=True)
    table = Table(title=title, show_header=True)
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("events processed", f"{result.events:,}")
    for kind in ("malformed", "late", *sorted(set(result.by_kind) - {"malformed", "late"})):
        table.add_row(f"{kind} (side file)", f"{result.by_kind.get(kind, 0):,}")
    if result.refused_by_windows:  # (counted among the malformed records above)
        table.add_row("refused by window statements (side file)",
                      f"{result.refused_by_windows:,}")
    for name, k in result.by_pattern.items():
        table.add_row(f"complex events {name}", f"{k:,}")
    if not result.by_pattern:
        table.add_row("complex events", f"{result.complex_events:,}")
    for name, k in result.partial_matches.items():
        table.add_row(f"partial matches left {name}", f"{k:,}")
    if result.rule_firings:
        table.add_row("rule firings", f"{result.rule_firings:,}")
    for gi, g in enumerate(result.groups):
        how = "by key" if g.partitioned else "one partition"
        table.add_row(f"group {gi}: {', '.join(g.patterns) or 'rules'}", how)
    table.add_row("throughput", f"{result.events / elapsed:,.0f} events/s" if elapsed else "-")
    table.add_row("wall time", f"{elapsed:,.1f} s")
    for what, value in extra.items():
        table.add_row(what, value)
    err.print(table)
    if result.side_file is not None:
        err.print(f"{result.rejected:,} record(s) were not processed; see {result.side_file}",
                  markup=False)
    where = "standard output" if str(output) == "-" else str(output)
    err.print(f"wrote {result.complex_events:,} complex event(s) to {where}", markup=False)


@app.command()
def stream(
    patterns: Annotated[Path, typer.Argument(help="Pattern file")],
    source: Annotated[Path, typer.Option(help="Folder new event files arrive in")],
    sink: Annotated[Path, typer.Option(help="Output folder (matches/, rejected/)")],
    checkpoint: Annotated[Path, typer.Option(help="Checkpoint folder (restart from here)")],
    master: Annotated[str | None, typer.Option(
        help="Spark master (default: embedded local[*])")] = None,
    context: Annotated[ContextName | None, typer.Option(
        help="The context of every pattern that does not declare one (a pattern that "
             "declares another is an error)")] = None,
    lateness: Annotated[float, typer.Option(help="Allowed lateness of the watermark (ms)")
                        ] = 0,
    unknown_types: UnknownTypesOption = UnknownTypes.reject,
    missing_fields: MissingFieldsOption = MissingFields.reject,
    duplicate_ids: DuplicateIdsOption = DuplicateIds.reject,
    files_per_trigger: Annotated[int | None, typer.Option(
        help="At most this many new files per micro-batch")] = None,
    once: Annotated[bool, typer.Option(
        help="Process what is there and stop (availableNow) instead of running on")] = False,
    actions: Annotated[list[str] | None, typer.Option(help=ACTIONS_HELP)] = None,
    on_error: OnErrorOption = OnError.skip,
    max_partial_matches: MaxPartialMatchesOption = None,
) -> None:
    """Detect complex events continuously in a folder of event files (Spark Structured
    Streaming); restarting with the same checkpoint neither loses nor duplicates output. An
    engine that stops (``--on-error fail``, ``--max-partial-matches``) stops the query before
    its micro-batch is committed."""
    need_spark("cepflow stream")
    _check_lateness(lateness)
    if not source.is_dir():
        raise _fail(f"--source {source}: not a folder")
    for folder, name in ((sink, "--sink"), (checkpoint, "--checkpoint")):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise _fail(f"{name} {folder}: {e.strerror}") from None
    program = _load(patterns, context)
    _import_actions(actions, ship=True)
    _announce_growth(program)
    from cepflow.runtime.actions import registered
    from cepflow.spark import spark_session
    from cepflow.spark.streaming import stream_query

    with err.status("starting Spark"):
        spark = spark_session(master)
    query = stream_query(spark, program, source, sink, checkpoint, lateness_ms=lateness,
                         files_per_trigger=files_per_trigger, actions=registered(),
                         available_now=once,
                         reader_options=_reader_options(unknown_types, missing_fields,
                                                        duplicate_ids),
                         on_error=str(on_error), max_partial_matches=max_partial_matches)
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
        raise _fail(f"query failed: {query.exception()}", 1)


@app.command()
def explain(
    patterns: Annotated[Path, typer.Argument(help="Pattern file")],
    input: Annotated[list[Path], typer.Option("--input", "-i", help="Event file(s) or folder")],
    pattern: Annotated[str | None, typer.Option(help="Explain only this pattern")] = None,
    context: Annotated[ContextName | None, typer.Option(
        help="The context of every pattern that does not declare one (a pattern that "
             "declares another is an error)")] = None,
    lateness: Annotated[float, typer.Option(help="Allowed lateness (ms)")] = 0,
    unknown_types: UnknownTypesOption = UnknownTypes.reject,
    missing_fields: MissingFieldsOption = MissingFields.reject,
    duplicate_ids: DuplicateIdsOption = DuplicateIds.reject,
    close_windows: Annotated[bool, typer.Option(help="Let open windows close at the end")
                             ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output")] = False,
) -> None:
    """Show each token's path through the automaton and why partial matches died (times in
    ISO-8601 UTC for epoch milliseconds, else in ms)."""
    _check_lateness(lateness)
    program = _load(patterns, context)
    if pattern is not None and pattern not in {a.name for a in program.automata}:
        raise _fail(f"no complex event pattern '{pattern}' in {patterns}")
    side = SideChannel()
    try:
        events: list[Event] = list(ordered_events(
            input, program.schemas, side, lateness=lateness,
            **_reader_options(unknown_types, missing_fields, duplicate_ids)))
    except InputError as e:
        raise _fail(str(e)) from None
    stories, _ = trace_run(program, events, pattern, close_windows)
    if as_json:
        out.print_json(dumps([s.__dict__ for s in stories]))
    else:
        out.print(format_stories(program, stories), markup=False, highlight=False, end="")
    for kind, r in side.items():
        err.print(f"not processed ({kind}): {r}", markup=False)


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


app.command()(report)
app.add_typer(demo_app, name="demo")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
