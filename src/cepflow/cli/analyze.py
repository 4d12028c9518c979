"""``cepflow analyze``: the dependency graph, cycles, races and findings of a pattern set
before it is deployed (docs/analysis.md)."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from cepflow.cli.options import ACTIONS_HELP, import_action_modules


class AnalysisFormat(StrEnum):
    """What ``analyze`` writes."""

    text = "text"
    json = "json"
    dot = "dot"
    svg = "svg"
    html = "html"


def _format_of(fmt: AnalysisFormat | None, output: Path | None) -> AnalysisFormat:
    if fmt is not None:
        return fmt
    if output is not None and str(output) != "-":
        suffix = output.suffix.lower().lstrip(".")
        if suffix in {f.value for f in AnalysisFormat}:
            return AnalysisFormat(suffix)
        if suffix == "gv":
            return AnalysisFormat.dot
    return AnalysisFormat.text


def analyze(
    patterns: Annotated[list[Path], typer.Argument(
        help="Pattern files (.vepl, .cep; .epl = Esper EPL), analysed as one set")],
    format: Annotated[AnalysisFormat | None, typer.Option(
        "--format", "-f", help="text, json, dot, svg (Graphviz) or html; default: from "
        "--output's suffix, else text")] = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Where to write (default or '-': standard output)")] = None,
    fix: Annotated[Path | None, typer.Option(
        help="Write the pattern set with priorities by level to this file (.epl: EPL with "
             "@Priority, else cepflow syntax)")] = None,
    actions: Annotated[list[str] | None, typer.Option(
        help=ACTIONS_HELP + "; their declared emits become edges of the graph")] = None,
) -> None:
    """Analyse PATTERNS: dependency graph and levels, cycles, races with their fix by
    priorities, patterns that can never fire and other traps. Exit code 1 when the set does
    not read or has an error finding, 2 for a bad option or an unwritable output."""
    from cepflow.analysis.analyzer import analyze_set
    from cepflow.analysis.patternset import read
    from cepflow.runtime.actions import registered

    fmt = _format_of(format, output)
    try:
        pset = read(patterns)
    except OSError as e:
        typer.echo(f"{e.filename}: {e.strerror}", err=True)
        raise typer.Exit(2) from None
    for d in pset.diagnostics:
        if d.severity == "warning" or not pset.ok:
            typer.echo(str(d), err=True)
    if not pset.ok:
        raise typer.Exit(1)
    if actions:
        import_action_modules(actions)
        pset = read(patterns, registered())
    result = analyze_set(pset)
    text = _render(result, fmt)
    _write(text, output)
    if fix is not None:
        from cepflow.analysis.fix import FixError, write_fixed

        try:
            written = write_fixed(result, fix)
        except FixError as e:
            typer.echo(f"--fix {fix}: {e}", err=True)
            raise typer.Exit(1) from None
        except OSError as e:
            typer.echo(f"{fix}: {e.strerror}", err=True)
            raise typer.Exit(2) from None
        typer.echo(f"wrote {written}: priorities by level for "
                   f"{len(result.plan.priorities)} patterns and statements", err=True)
    if any(f.severity == "error" for f in result.findings):
        raise typer.Exit(1)


def _render(result: object, fmt: AnalysisFormat) -> str:
    from cepflow.analysis import render
    from cepflow.automaton.dot import RenderError, to_svg

    if fmt is AnalysisFormat.json:
        return render.to_json_text(result)  # type: ignore[arg-type]
    if fmt is AnalysisFormat.dot:
        return render.to_dot(result)  # type: ignore[arg-type]
    if fmt is AnalysisFormat.svg:
        try:
            return to_svg(render.to_dot(result))  # type: ignore[arg-type]
        except RenderError as e:
            typer.echo(f"{e} (or write DOT: --format dot)", err=True)
            raise typer.Exit(2) from None
    if fmt is AnalysisFormat.html:
        from cepflow.analysis.html_page import page

        return page(result).html()  # type: ignore[arg-type]
    return render.to_text(result)  # type: ignore[arg-type]


def _write(text: str, output: Path | None) -> None:
    if output is None or str(output) == "-":
        sys.stdout.write(text)
        return
    try:
        tmp = output.with_name(f".{output.name}.part")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(output)
    except OSError as e:
        typer.echo(f"{output}: {e.strerror}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"wrote {output}", err=True)
