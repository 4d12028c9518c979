"""``cepflow report PATTERNS -i EVENTS -o report.html`` and ``cepflow run … --report FILE``:
the HTML report of a local run (cepflow.reports.run; docs/reports.md, "The run report")."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cepflow.cli.common import (
    EXIT_NOTHING_PROCESSED,
    check_lateness,
    err,
    fail,
    import_actions,
    load_patterns,
    reader_options,
    run_local,
)
from cepflow.cli.options import (
    ACTIONS_HELP,
    CloseWindowsOption,
    ContextOption,
    DuplicateIds,
    DuplicateIdsOption,
    InputsOption,
    MissingFields,
    MissingFieldsOption,
    StartOption,
    UnknownTypes,
    UnknownTypesOption,
)
from cepflow.events.event import SideChannel
from cepflow.inputs import InputError, input_files
from cepflow.outputs import OutputError
from cepflow.outputs.files import STDOUT, check_writable
from cepflow.replay import Replayed

if TYPE_CHECKING:  # (imported by the command that writes a report, not by every start)
    from cepflow.reports.record import RunRecord


def check_report_path(path: Path | None) -> None:
    """OutputError unless the report could be written at ``path`` (checked before the run)."""
    if path is not None:
        check_writable(path)


def write_report(path: Path, record: RunRecord, result: Replayed, title: str,
                 inputs: Sequence[Path], elapsed: float) -> None:
    """Build the page of the run ``record`` watched and write it (``-`` for standard output)."""
    from cepflow.reports.run import run_page  # (matplotlib: loaded only for a report)

    t0 = time.perf_counter()
    page = run_page(record, result, title, inputs, elapsed)
    if os.fspath(path) == STDOUT:
        sys.stdout.write(page.html())
        return
    page.write(path)
    err.print(f"wrote the report {path} ({path.stat().st_size / 1e6:,.1f} MB in "
              f"{time.perf_counter() - t0:,.1f} s)", markup=False, highlight=False)


def report(
    patterns: Annotated[Path, typer.Argument(help="Pattern file")],
    input: InputsOption,
    output: Annotated[Path, typer.Option(
        "--output", "-o", help="The report (HTML); - for standard output")],
    context: ContextOption = None,
    lateness: Annotated[float, typer.Option(help="Allowed lateness (ms) for reordering")] = 0,
    unknown_types: UnknownTypesOption = UnknownTypes.reject,
    missing_fields: MissingFieldsOption = MissingFields.reject,
    duplicate_ids: DuplicateIdsOption = DuplicateIds.reject,
    close_windows: CloseWindowsOption = False,
    actions: Annotated[list[str] | None, typer.Option(help=ACTIONS_HELP)] = None,
    start: StartOption = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar")] = True,
) -> None:
    """Run PATTERNS over EVENTS on the local engine and write an HTML report of the run
    (what `cepflow run --report` writes, without writing the matches)."""
    check_lateness(lateness)
    try:
        input_files(input, SideChannel())
        check_report_path(output)
    except (InputError, OutputError) as e:
        raise fail(str(e)) from None
    program = load_patterns(patterns, context)
    import_actions(actions)
    from cepflow.reports.record import RunRecord

    record = RunRecord(program)
    t0 = time.perf_counter()
    with open(os.devnull, "w", encoding="utf-8") as nowhere:
        result, _ = run_local(program, input, Path(STDOUT), None, close_windows, lateness,
                                   reader_options(unknown_types, missing_fields,
                                                       duplicate_ids),
                                   start, progress, record=record, stdout=nowhere)
    elapsed = time.perf_counter() - t0
    write_report(output, record, result, f"cepflow report — {patterns}", input, elapsed)
    if result.events == 0:
        raise fail(f"no event could be processed ({result.rejected:,} record(s) "
                        "rejected)", EXIT_NOTHING_PROCESSED)
