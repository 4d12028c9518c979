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

import sys
import time
from pathlib import Path
from typing import Annotated, Any

from cepflow.runtime.collector import gc_paused

with gc_paused():  # (as cepflow's own imports: docs/cli.md, "The process's start")
    import typer
    from rich.table import Table

    from cepflow.automaton.dot import RenderError, render, to_dot, window_to_dot
    from cepflow.cli.analyze import analyze
    from cepflow.cli.common import (
        EXIT_EVALUATION_ERRORS,
        EXIT_NOTHING_PROCESSED,
        EXIT_PARTIAL_MATCH_LIMIT,
        EXIT_PATTERNS,
        EXIT_TOO_MANY_REJECTED,
        announce_growth,
        check_lateness,
        err,
        fail,
        import_actions,
        load_patterns,
        out,
        reader_options,
        run_local,
    )
    from cepflow.cli.demo import demo_app
    from cepflow.cli.generate import generate_command
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
        need_spark,
        show_version,
    )
    from cepflow.cli.pandas_guard import skip_pandas_in_pyarrow
    from cepflow.cli.petri import petri
    from cepflow.cli.report_command import check_report_path, report, write_report
    from cepflow.cli.search_command import search
    from cepflow.cli.simulate import simulate_command
    from cepflow.compiler.program import Program
    from cepflow.events.event import Event, SideChannel
    from cepflow.inputs import InputError, input_files, ordered_events
    from cepflow.outputs import OutputError, dumps, output_format, rejected_lines
    from cepflow.outputs.files import check_writable
    from cepflow.replay import Replayed
    from cepflow.runtime.explain import format_stories, trace_run

#: the settings of the app (and of the one-command app :func:`main` runs: ``_command_app``)
_APP_SETTINGS: dict[str, Any] = {
    "add_completion": False, "no_args_is_help": True, "context_settings": HELP_OPTIONS,
    "help": "Complex event processing over live models and event streams."}
app = typer.Typer(**_APP_SETTINGS)


@app.callback()
def _app(version: Annotated[bool, typer.Option(
        "--version", callback=show_version, is_eager=True,
        help="Print cepflow's version and exit")] = False) -> None:
    """Complex event processing over live models and event streams."""


@app.command()
def check(files: Annotated[list[Path], typer.Argument(
        help="Pattern files (.vepl, .cep; .epl = Esper EPL)")]) -> None:
    """Report every syntax, name and type error as FILE:LINE:COL: message."""
    failed = False
    for path in files:
        try:
            program = load_patterns(path, None)
        except typer.Exit:
            failed = True
            continue
        announce_growth(program)
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
    check_lateness(lateness)
    if engine == "spark":
        need_spark("--engine spark")
    if max_rejects is not None and max_rejects < 0:
        raise fail(f"--max-rejects must be 0 or more, not {max_rejects}")
    if engine == "spark" and start is not None:
        raise fail("--start applies to the local engine (on Spark the statements start at "
                    "the first event)")
    if engine == "spark" and len(input) != 1:
        raise fail("--engine spark reads one file or folder; put the event files in one folder")
    if engine == "spark" and report_path is not None:
        raise fail("--report applies to the local engine (the report traces every token)")
    try:
        fmt = output_format(output)
        input_files(input, SideChannel())
        check_writable(output, folder=engine == "spark" and fmt == "parquet")
        check_report_path(report_path)
    except (InputError, OutputError) as e:
        raise fail(str(e)) from None
    program = load_patterns(patterns, context)
    import_actions(actions, ship=engine == "spark")
    announce_growth(program)
    options = reader_options(unknown_types, missing_fields, duplicate_ids)
    engine_options = {"on_error": str(on_error), "max_partial_matches": max_partial_matches}
    t0 = time.perf_counter()
    if engine == "spark":
        result = _run_spark(program, input[0], output, rejected, close_windows, master,
                            lateness, options, engine_options)
        title, extra = f"cepflow run --engine spark — {patterns}", {}
    else:
        if not actions:
            skip_pandas_in_pyarrow()
        record = None
        if report_path is not None:
            from cepflow.reports.record import RunRecord

            record = RunRecord(program)
        result, extra = run_local(program, input, output, rejected, close_windows, lateness,
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
        raise fail(f"no event could be processed ({result.rejected:,} record(s) rejected)",
                    EXIT_NOTHING_PROCESSED)
    if max_rejects is not None and result.rejected > max_rejects:
        raise fail(f"{result.rejected:,} record(s) were rejected, more than --max-rejects "
                    f"{max_rejects:,}", EXIT_TOO_MANY_REJECTED)
    if result.errors:
        raise fail(f"{result.errors:,} evaluation error(s): the events they failed on are in "
                    "the side file (kind error)", EXIT_EVALUATION_ERRORS)


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
            raise fail(str(e)) from None
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
    check_lateness(lateness)
    if not source.is_dir():
        raise fail(f"--source {source}: not a folder")
    for folder, name in ((sink, "--sink"), (checkpoint, "--checkpoint")):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise fail(f"{name} {folder}: {e.strerror}") from None
    program = load_patterns(patterns, context)
    import_actions(actions, ship=True)
    announce_growth(program)
    from cepflow.runtime.actions import registered
    from cepflow.spark import spark_session
    from cepflow.spark.streaming import stream_query

    with err.status("starting Spark"):
        spark = spark_session(master)
    query = stream_query(spark, program, source, sink, checkpoint, lateness_ms=lateness,
                         files_per_trigger=files_per_trigger, actions=registered(),
                         available_now=once,
                         reader_options=reader_options(unknown_types, missing_fields,
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
        raise fail(f"query failed: {query.exception()}", 1)


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
    check_lateness(lateness)
    program = load_patterns(patterns, context)
    if pattern is not None and pattern not in {a.name for a in program.automata}:
        raise fail(f"no complex event pattern '{pattern}' in {patterns}")
    side = SideChannel()
    try:
        events: list[Event] = list(ordered_events(
            input, program.schemas, side, lateness=lateness,
            **reader_options(unknown_types, missing_fields, duplicate_ids)))
    except InputError as e:
        raise fail(str(e)) from None
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
    program = load_patterns(patterns, None)
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
app.command()(petri)
app.command()(analyze)
app.command()(search)
app.add_typer(demo_app, name="demo")
app.command("generate")(generate_command)
app.command("simulate")(simulate_command)


def main() -> None:
    """The ``cepflow`` console script: the command (``_command_app``), then
    :func:`exit_promptly`."""
    try:
        _command_app(sys.argv[1:])()
    except SystemExit as e:
        exit_promptly(e.code)
        raise


def _command_app(args: list[str]) -> typer.Typer:
    """The app with only the command ``args`` name (and the app's own options), or the whole
    app when they name none (``--help``, ``--version``, a misspelt command: the whole app
    answers).

    Typer builds every registered command's parameters (reading each function's signature and
    annotations) before it runs one: a few hundredths of a second of each start spent on the
    commands not run. The one-command app has the same settings, callback and command, so its
    parsing, help, errors and exit codes are the command's under the whole app."""
    if not args or args[0].startswith("-"):
        return app
    commands = [c for c in app.registered_commands
                if (c.name or typer.main.get_command_name(c.callback.__name__)) == args[0]]
    groups = [g for g in app.registered_groups if g.name == args[0]]
    if len(commands) + len(groups) != 1:
        return app
    one = typer.Typer(**_APP_SETTINGS)
    one.registered_callback = app.registered_callback
    one.registered_commands, one.registered_groups = commands, groups
    return one


def exit_promptly(code: object) -> None:
    """End the process with exit ``code`` without Python's teardown, when nothing but freeing
    memory is left of it; else return (the caller raises ``SystemExit`` as usual).

    Python's own exit frees every module's objects one by one — after a run, about a tenth of a
    second of CPU, a fifth of a short command's (docs/cli.md, "The process's start"), for memory
    the operating system takes back at once anyway. So: the ``atexit`` functions run (Spark's
    stop among them), standard output and error are flushed, and ``os._exit`` ends the process
    — only when the code is a number (or None) and no other thread is alive (Python's exit
    would wait for it); otherwise, and when flushing fails (a closed pipe: Python reports that
    its own way), it returns and Python exits as it always does. Every file cepflow writes is
    closed by the code that wrote it before the command returns; nothing relies on a finalizer
    at exit."""
    import atexit
    import os
    import threading

    if code is not None and not isinstance(code, int):
        return
    if threading.active_count() > 1:
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code or 0)


if __name__ == "__main__":
    main()
