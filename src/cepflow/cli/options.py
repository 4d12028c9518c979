"""What the commands share: ``-h`` as ``--help``, ``--version``, the choices ``--help`` lists
(engines, contexts), ``--actions`` (trusted code, imported with one-line errors), and the
one-line refusal when Spark is not installed."""

from __future__ import annotations

from enum import StrEnum
from types import ModuleType

import typer

import cepflow
from cepflow.extras import MissingExtra, require_spark
from cepflow.language.ast import CONTEXTS
from cepflow.runtime.actions import ActionsError, import_actions

#: -h as well as --help, on the app and (inherited by their contexts) every command
HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}


class EngineName(StrEnum):
    """Where detection runs: in this process, or on Spark (the ``spark`` extra)."""

    local = "local"
    spark = "spark"


#: the event processing contexts (docs/semantics.md)
ContextName = StrEnum("ContextName", [(c, c) for c in CONTEXTS])

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
