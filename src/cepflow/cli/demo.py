"""``cepflow demo …``: the case studies end to end, each ending with a one-line JSON summary.

``demo`` is a typer sub-app; each case study is one command (``cps`` here). The case files ship
inside the package as ``cepflow.examples`` — the repository's ``examples/`` folder, mapped by
setup.py — so an installed cepflow finds them as a checkout does; ``cepflow demo path`` prints
where they are, and ``--dir`` runs a copy from elsewhere (its Python parts imported from there,
as ``cepflow run --actions`` does).
"""

from __future__ import annotations

import importlib
import json
from importlib.resources import files
from pathlib import Path
from types import ModuleType
from typing import Annotated

import typer

from cepflow.runtime.actions import ActionsError, import_actions

demo_app = typer.Typer(add_completion=False, no_args_is_help=True,
                       help="Run a case study end to end (prints the steps, then a JSON line).")


def examples_dir() -> Path:
    """The shipped case studies: the ``cepflow.examples`` package's folder (examples/ of the
    repository in a checkout or editable install, site-packages/cepflow/examples in a wheel)."""
    return Path(str(files("cepflow.examples")))


def _case_module(directory: Path | None, module: str) -> ModuleType:
    """The case study's module: the shipped one (``cepflow.examples.cps.cps_case``), or the
    file ``module``.py of the folder given with ``--dir``."""
    if directory is None:
        return importlib.import_module(f"cepflow.examples.cps.{module}")
    path = directory / f"{module}.py"
    if not path.is_file():
        typer.echo(f"{path}: not found (give the case study's folder with --dir)", err=True)
        raise typer.Exit(2)
    try:
        return import_actions(str(path))
    except ActionsError as e:
        typer.echo(str(e), err=True)
        raise typer.Exit(2) from None


@demo_app.command()
def path(case: Annotated[str | None, typer.Argument(
        help="A case study (cps, gesture, gesture_live, motorbike, …); none: the folder of "
             "them all")] = None) -> None:
    """Print the folder of the shipped case studies (or of one), e.g. for
    cepflow check "$(cepflow demo path gesture)/gesture.vepl"."""
    root = examples_dir()
    names = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name[0] not in "._")
    if case is not None and case not in names:
        typer.echo(f"no case study '{case}' (have: {', '.join(names)})", err=True)
        raise typer.Exit(2)
    typer.echo(str(root if case is None else root / case))


@demo_app.command()
def cps(
    choice: Annotated[int, typer.Option(
        "--choice", min=1, help="Which offered quick fix the user selects (1 = decrease the "
        "available CPU, the paper's choice; 2 = increase the total CPU)")] = 1,
    directory: Annotated[Path | None, typer.Option(
        "--dir", help="A copy of the case study's folder (default: the shipped one, "
        "cepflow demo path cps)")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q",
                                        help="Print only the JSON summary")] = False,
) -> None:
    """CPS validation with quick fixes (000 §3, §6.4, Fig. 13): host h1 gets availableCpu 10
    > totalCpu 8, three invalidModel events match tolerationRange, DSE offers two quick fixes,
    the chosen one is applied and the model is valid again."""
    folder = directory or examples_dir() / "cps"
    case = _case_module(directory, "cps_case")
    report = (lambda line: None) if quiet else typer.echo
    try:
        run = case.run_scenario(choice=choice - 1, directory=folder, report=report)
    except ValueError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    typer.echo(json.dumps(run.summary, separators=(",", ":")))
    if not run.summary["valid_at_end"]:
        raise typer.Exit(1)


# gesture recognition on the live pipeline (its own module: src/cepflow/cli/demo_gesture.py)
from cepflow.cli.demo_gesture import gesture  # noqa: E402

demo_app.command()(gesture)
