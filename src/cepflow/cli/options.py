"""What the commands share: ``-h`` as ``--help``, ``--version``, the choices ``--help`` lists
(engines, contexts, what becomes of unusable records), ``--actions`` (trusted code, imported
with one-line errors), and the one-line refusal when Spark is not installed."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from types import ModuleType
from typing import Annotated

import typer

import cepflow
from cepflow.compiler.program import Program
from cepflow.extras import MissingExtra, require_spark
from cepflow.language.ast import CONTEXTS
from cepflow.language.diagnostics import DiagnosticError
from cepflow.loader import diagnose_paths
from cepflow.runtime.actions import ActionsError, import_actions

#: -h as well as --help, on the app and (inherited by their contexts) every command
HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}


class EngineName(StrEnum):
    """Where detection runs: in this process, or on Spark (the ``spark`` extra)."""

    local = "local"
    spark = "spark"


#: the event processing contexts (docs/semantics.md)
ContextName = StrEnum("ContextName", [(c, c) for c in CONTEXTS])

class UnknownTypes(StrEnum):
    """What becomes of records whose event type the patterns do not declare."""

    reject = "reject"
    keep = "keep"


class MissingFields(StrEnum):
    """What becomes of records that leave out a declared parameter."""

    reject = "reject"
    null = "null"


class DuplicateIds(StrEnum):
    """What becomes of records whose id an earlier record of their file has."""

    reject = "reject"
    keep = "keep"


UnknownTypesOption = Annotated[UnknownTypes, typer.Option(
    help="Records of an event type the patterns do not declare: reject them to the side "
         "file, or keep them (counted as processed; no pattern reads them)")]
MissingFieldsOption = Annotated[MissingFields, typer.Option(
    help="Records that leave out a declared parameter: reject them to the side file, or "
         "read the parameter as null")]
DuplicateIdsOption = Annotated[DuplicateIds, typer.Option(
    help="Records whose id an earlier record of the same file has: reject them to the side "
         "file, or keep them (the check keeps a file's ids in memory while it is read)")]


class OnError(StrEnum):
    """What an expression or rule action that fails on an event does (docs/semantics.md)."""

    skip = "skip"
    fail = "fail"


OnErrorOption = Annotated[OnError, typer.Option(
    help="An expression or rule action that fails on an event: skip (the condition is false, "
         "the event goes to the side file as kind error) or fail (record it and stop)")]
MaxPartialMatchesOption = Annotated[int | None, typer.Option(
    min=1, help="Stop when an engine holds more partial matches than this at once (on Spark "
                "per partition or shard)")]
InputsOption = Annotated[list[Path], typer.Option(
    "--input", "-i", help="Event file(s) or folder")]
ContextOption = Annotated[ContextName | None, typer.Option(
    help="The context of every pattern that does not declare one (a pattern that declares "
         "another is an error)")]
CloseWindowsOption = Annotated[bool, typer.Option(
    help="At end of input, let open windows close (fires trailing-NOT timers)")]
StartOption = Annotated[float | None, typer.Option(
    help="The statements' start time (ms), where patterns that begin with timer:interval "
         "start (default: the first event's time)")]

ACTIONS_HELP = ("Trusted Python code: a module or .py file whose import registers rule "
                "actions; it is imported (run) after the pattern file checks")


def show_version(show: bool) -> None:
    """The eager ``--version`` option: print the version and exit."""
    if show:
        typer.echo(f"cepflow {cepflow.__version__}")
        raise typer.Exit()


def import_action_modules(specs: list[str] | None) -> list[ModuleType]:
    """Import the ``--actions`` modules (trusted code; only once the patterns checked): a
    failure is one line with the file and line, and exit code 2."""
    modules = []
    for spec in specs or []:
        try:
            modules.append(import_actions(spec))
        except ActionsError as e:
            typer.echo(f"--actions {e}", err=True)
            raise typer.Exit(2) from None
    return modules


def need_spark(what: str) -> None:
    """Exit (code 2) with one line saying how to install PySpark, the ``spark`` extra, when
    ``what`` needs it and it is missing."""
    try:
        require_spark(what)
    except MissingExtra as e:
        typer.echo(str(e), err=True)
        raise typer.Exit(2) from None


@contextmanager
def reading(path: Path) -> Iterator[None]:
    """Around reading a pattern or model file: its located errors one a line and exit code 1;
    a file that cannot be read, one line and exit code 2."""
    try:
        yield
    except DiagnosticError as e:
        for d in e.diagnostics:
            typer.echo(str(d), err=True)
        raise typer.Exit(1) from None
    except OSError as e:
        typer.echo(f"{path}: {e.strerror}", err=True)
        raise typer.Exit(2) from None


def load_program(paths: Sequence[Path], context: str | None = None) -> Program:
    """Check and compile a pattern set (one file, or several of one language read as one
    module): diagnostics one a line on stderr; exit 1 on errors, 2 if a file cannot be read."""
    with reading(paths[0]):
        diags, program = diagnose_paths(paths, context=None if context is None else str(context))
    for d in diags:
        typer.echo(str(d), err=True)
    if program is None:
        raise typer.Exit(1)
    return program
