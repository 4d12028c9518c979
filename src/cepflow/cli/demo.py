"""``cepflow demo …``: the case studies end to end, each ending with a one-line JSON summary.

``demo`` is a typer sub-app; each case study is one command (``cps`` here). The case files live
in the repository's ``examples/`` folder (``--dir`` points elsewhere); their Python parts
(registered actions) are imported from there, as ``cepflow run --actions`` does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from cepflow.runtime.actions import import_actions

demo_app = typer.Typer(add_completion=False, no_args_is_help=True,
                       help="Run a case study end to end (prints the steps, then a JSON line).")


def examples_dir() -> Path:
    """The repository's examples/ folder (src/cepflow/cli/demo.py → repo/examples)."""
    return Path(__file__).resolve().parents[3] / "examples"


def _case_module(directory: Path, module: str) -> Any:
    path = directory / module
    if not path.is_file():
        typer.echo(f"{path}: not found (give the case study's folder with --dir)", err=True)
        raise typer.Exit(2)
    return import_actions(str(path))


@demo_app.command()
def cps(
    choice: Annotated[int, typer.Option(
        "--choice", min=1, help="Which offered quick fix the user selects (1 = decrease the "
        "available CPU, the paper's choice; 2 = increase the total CPU)")] = 1,
    directory: Annotated[Path | None, typer.Option(
        "--dir", help="The case study folder (default: examples/cps)")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q",
                                        help="Print only the JSON summary")] = False,
) -> None:
    """CPS validation with quick fixes (000 §3, §6.4, Fig. 13): host h1 gets availableCpu 10
    > totalCpu 8, three invalidModel events match tolerationRange, DSE offers two quick fixes,
    the chosen one is applied and the model is valid again."""
    folder = directory or examples_dir() / "cps"
    case = _case_module(folder, "cps_case.py")
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
