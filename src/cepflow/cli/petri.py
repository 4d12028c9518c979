"""``cepflow petri``: a pattern set as a prioritized coloured Petri net (seed 004) — step
through it over an event stream, export it (PNML, CPN Tools), or write its step-through page
(docs/petri.md)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from cepflow.cli.options import (
    DuplicateIds,
    DuplicateIdsOption,
    MissingFields,
    MissingFieldsOption,
    UnknownTypes,
    UnknownTypesOption,
)
from cepflow.compiler.program import Program
from cepflow.events.event import SideChannel


class Format(StrEnum):
    text = "text"
    json = "json"


class Choice(StrEnum):
    random = "random"
    first = "first"


def _restrict(program: Program, pattern: str) -> Program:
    """The program with ``pattern`` and the statements whose output it reads only."""
    from cepflow.language import ast
    from cepflow.language.walk import atoms
    from cepflow.loader import load_module

    decls = {d.name: d for d in program.module.decls
             if isinstance(d, ast.ComplexEventDecl | ast.WindowDecl)}
    keep: set[str] = set()
    todo = [pattern]
    while todo:
        n = todo.pop()
        if n in keep or n not in decls:
            continue
        keep.add(n)
        d = decls[n]
        refs = ({d.source.name} if isinstance(d, ast.WindowDecl)
                else {a.name for a in atoms(d.body)})
        todo.extend(refs)
    module = replace(program.module, decls=tuple(
        d for d in program.module.decls
        if not isinstance(d, ast.ComplexEventDecl | ast.WindowDecl | ast.RuleDecl)
        or d.name in keep))
    return load_module(module, program.functions)


def petri(
    patterns: Annotated[Path, typer.Argument(help="Pattern file (.epl, .vepl)")],
    input: Annotated[list[Path] | None, typer.Option(
        "--input", "-i", help="Event file(s): the initial marking of the event places")] = None,
    pattern: Annotated[str | None, typer.Option(
        help="Only this complex event and what it reads")] = None,
    steps: Annotated[bool, typer.Option("--steps", help="Print every step")] = False,
    until_step: Annotated[int | None, typer.Option(
        help="Stop after this many steps")] = None,
    format: Annotated[Format, typer.Option(help="text (CPN Tools' notation) or json")
                      ] = Format.text,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Where the steps and marking go (default, or -: stdout)")] = None,
    export: Annotated[Path | None, typer.Option(
        help="Write the net: .pnml (ISO/IEC 15909-2) or .cpn (CPN Tools)")] = None,
    html: Annotated[Path | None, typer.Option(
        help="Write the step-through page (the net drawn, its tokens at every step)")] = None,
    interactive: Annotated[bool, typer.Option(
        help="Step through on the terminal (next, back, run to a step or a transition)")
                           ] = False,
    seed: Annotated[int, typer.Option(help="Seed of the choice among enabled bindings")] = 0,
    choice: Annotated[Choice, typer.Option(
        help="random (seeded) or first enabled binding")] = Choice.random,
    close_windows: Annotated[bool, typer.Option(
        help="At the end of the input, let time run out (windows close)")] = False,
    lateness: Annotated[float, typer.Option(help="Allowed lateness (ms) for reordering")] = 0,
    unknown_types: UnknownTypesOption = UnknownTypes.reject,
    missing_fields: MissingFieldsOption = MissingFields.reject,
    duplicate_ids: DuplicateIdsOption = DuplicateIds.reject,
) -> None:
    """Translate PATTERNS into a prioritized coloured Petri net and run it over EVENTS: each
    step (transition, binding, tokens taken and added) and the final marking of the
    complex-event places, in CPN Tools' notation or as JSON."""
    from cepflow.cli.common import check_lateness, err, fail, load_patterns, reader_options
    from cepflow.inputs import InputError, ordered_events
    from cepflow.petri.cpn import write_cpn
    from cepflow.petri.output import marking_json, marking_text, step_json, step_text
    from cepflow.petri.pnml import write_pnml
    from cepflow.petri.translate import Untranslatable, translate

    check_lateness(lateness)
    program = load_patterns(patterns, None)
    if pattern is not None:
        names = [a.name for a in program.automata] + [w.name for w in program.windows]
        if pattern not in names:
            raise fail(f"no complex event '{pattern}' in {patterns} (have: "
                        f"{', '.join(names)})")
        program = _restrict(program, pattern)
    if export is not None and export.suffix not in (".pnml", ".cpn"):
        raise fail(f"--export {export}: the file must end in .pnml or .cpn")
    side = SideChannel()
    try:
        events = list(ordered_events(
            input or [], program.schemas, side, lateness=lateness,
            **reader_options(unknown_types, missing_fields, duplicate_ids))) if input else []
    except InputError as e:
        raise fail(str(e)) from None
    for kind, r in side.items():
        err.print(f"not processed ({kind}): {r}", markup=False)
    try:
        tr = translate(program, events, close_windows=close_windows, source=str(patterns))
    except Untranslatable as e:
        for p in e.problems:
            err.print(str(p), markup=False, highlight=False)
        raise typer.Exit(1) from None
    net = tr.net
    if export is not None:
        try:
            (write_pnml if export.suffix == ".pnml" else write_cpn)(net, export)
        except OSError as e:
            err.print(f"{export}: {e.strerror}", markup=False)
            raise typer.Exit(2) from None
        err.print(f"wrote {export} ({len(net.places)} places, {len(net.transitions)} "
                  "transitions)", markup=False)
        if not input and html is None and not interactive:
            return
    shown = [pattern] if pattern is not None else list(tr.complex_places.values())
    sim = tr.simulator(seed=seed, choice=str(choice),
                       record=steps or html is not None or interactive)
    if interactive:
        _interactive(tr, sim, shown)
        return
    sim.run(until_step)
    if html is not None:
        from cepflow.petri.step_page import step_through_page

        step_through_page(tr, sim, str(patterns)).write(html)
        err.print(f"wrote {html}", markup=False)
    lines: list[str] = []
    if format == Format.json:
        data = {"steps": [step_json(s) for s in sim.trace] if steps else [],
                "marking": marking_json(sim.marking, shown), "fired": sim.steps,
                "finished": tr.finished(sim)}
        text = json.dumps(data, ensure_ascii=False) + "\n"
    else:
        if steps:
            lines += [step_text(net, s) for s in sim.trace]
        state = "final marking" if tr.finished(sim) else "marking"
        lines.append(f"{state} of the complex-event places after {sim.steps} step(s) "
                     "(CPN Tools' notation):")
        lines.append(marking_text(net, sim.marking, shown))
        text = "\n".join(lines) + "\n"
    if output is None or str(output) == "-":
        sys.stdout.write(text)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as e:
            err.print(f"{output}: {e.strerror}", markup=False)
            raise typer.Exit(2) from None


def _interactive(tr, sim, shown: list[str]) -> None:  # type: ignore[no-untyped-def]
    from cepflow.cli.common import err
    from cepflow.petri.multiset import cpn_multiset
    from cepflow.petri.output import marking_text, step_text
    from cepflow.petri.stepper import Stepper, interact

    if not sys.stdin.isatty():
        err.print("--interactive needs a terminal", markup=False)
        raise typer.Exit(2)
    net = tr.net

    def show_place(name: str) -> str:
        if name not in net.places:
            return f"no place {name!r}"
        return f"{name}: {cpn_multiset(sim.marking[name], net.places[name].colours)}"

    interact(Stepper(sim), input, print, lambda s: step_text(net, s), show_place,
             lambda: marking_text(net, sim.marking, shown))
