"""What the commands of the ``cepflow`` command line share: the consoles, the exit codes, the
one-line error, loading a pattern file with its diagnostics, the checks of common options, the
``--actions`` modules, and the local run with its progress bar (cepflow.cli.main and the commands
in their own modules import this; it imports none of them)."""

from __future__ import annotations

import resource
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from cepflow.cli.options import (
    DuplicateIds,
    MissingFields,
    UnknownTypes,
    import_action_modules,
    load_program,
)
from cepflow.compiler.growth import warnings as growth_warnings
from cepflow.compiler.program import Program
from cepflow.inputs import InputError
from cepflow.outputs import OutputError
from cepflow.replay import Replayed, replay

if TYPE_CHECKING:  # (the report's recorder is imported only by a run that writes one)
    from cepflow.reports.record import RunRecord

err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)

#: exit codes (listed in the docstring of cepflow.cli.main)
EXIT_PATTERNS, EXIT_USAGE, EXIT_NOTHING_PROCESSED, EXIT_TOO_MANY_REJECTED = 1, 2, 3, 4
EXIT_EVALUATION_ERRORS, EXIT_PARTIAL_MATCH_LIMIT = 5, 6


def fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    """Print a one-line error; the Exit to raise."""
    err.print(message, markup=False, highlight=False)
    return typer.Exit(code)


def load_patterns(path: Path, context: str | None) -> Program:
    """Check and compile one pattern file (``load_program``) and refuse ``--context``
    conflicts."""
    program = load_program([path], context)
    check_context_conflicts(path, program, context)
    return program


def check_context_conflicts(path: Path, program: Program, context: str | None) -> None:
    """``--context`` sets the context of every pattern that does not declare its own (the
    file's default included); a pattern that declares another one (Esper-style patterns have
    Esper's) is refused rather than silently left as it is."""
    if context is None:
        return
    own = [f"{a.name} ({a.context})" for a in program.automata if a.context != context]
    if own:
        raise fail(f"{path}: --context {context} conflicts with the context pattern(s) "
                    f"{', '.join(own)} declare; leave out --context or make them agree")


def check_lateness(lateness: float) -> None:
    if not lateness >= 0:  # (NaN too)
        raise fail(f"--lateness must be 0 or more milliseconds, not {lateness:g}")


def reader_options(unknown_types: UnknownTypes, missing_fields: MissingFields,
                    duplicate_ids: DuplicateIds) -> dict[str, Any]:
    return {"unknown_types": unknown_types.value,
            "strict_params": missing_fields is MissingFields.reject,
            "unique_ids": duplicate_ids is DuplicateIds.reject}


def import_actions(specs: list[str] | None, ship: bool = False) -> list[Any]:
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


def announce_growth(program: Program) -> None:
    """Warn about the patterns whose partial matches can grow with the stream (no window
    bounds them: cepflow.compiler.growth)."""
    for d in growth_warnings(program.automata, program.module):
        err.print(str(d), markup=False, highlight=False)


def run_local(program: Program, inputs: list[Path], output: Path, rejected: Path | None,
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
            raise fail(str(e)) from None
        except OSError as e:
            raise fail(f"{e.filename}: {e.strerror}") from None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return result, {"peak memory (process RSS)":
                    f"{peak / 1024:,.1f} MiB (+{(peak - rss0) / 1024:,.1f} during run)"}
