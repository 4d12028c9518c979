"""``cepflow search``: bounded search for a shortest input sequence that makes the patterns
emit a target event (003 §V.E; docs/analysis.md, "Bounded search")."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated

import typer

#: a horizon: milliseconds, or a number with a unit of the pattern language
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*")
_UNITS = {"": 1, "ms": 1, "s": 1000, "sec": 1000, "min": 60_000, "h": 3_600_000,
          "hour": 3_600_000, "d": 86_400_000, "day": 86_400_000}


def _horizon(text: str | None) -> float | None:
    if text is None:
        return None
    m = _DURATION.fullmatch(text)
    if m is None or m.group(2) not in _UNITS:
        raise typer.BadParameter(f"'{text}' is not a duration (ms, or with a unit: 15 s, "
                                 "1 min, 1 d)", param_hint="--horizon")
    return float(m.group(1)) * _UNITS[m.group(2)]


def witness_lines(witness: list, schemas: dict) -> list[str]:
    """The witness as JSON Lines ``cepflow run`` reads: parameters by name, or positionally
    (``params``) when a name would collide with the envelope (``type``, ``ts``, ``id``)."""
    out = []
    for e in witness:
        names = schemas[e.type].param_names
        rec: dict = {"type": e.type, "ts": e.ts}
        if set(names) & {"type", "ts", "id", "params"}:
            rec["params"] = list(e.params)
        else:
            rec.update(zip(names, e.params, strict=True))
        out.append(json.dumps(rec))
    return out


def search(
    patterns: Annotated[list[Path], typer.Argument(
        help="Pattern files (.vepl, .cep; .epl = Esper EPL), searched as one set")],
    target: Annotated[str, typer.Option(help="The event type to reach (a complex event or "
                                        "statement of the set)")],
    domain: Annotated[Path | None, typer.Option(
        help="TOML file: the events, attribute values and time steps to explore (default: "
             "derived from the patterns' conditions and windows)")] = None,
    max_events: Annotated[int, typer.Option(
        help="Longest input sequence explored", min=1)] = 4,
    horizon: Annotated[str | None, typer.Option(
        help="Longest time from the first event to the last (ms, or 15 s, 1 min, 1 d)")
    ] = None,
    max_states: Annotated[int | None, typer.Option(
        help="Stop after this many distinct states", min=1)] = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write the witness as JSON Lines (cepflow run -i reads it)")
    ] = None,
    show_domain: Annotated[bool, typer.Option(
        "--show-domain", help="Print the domain explored")] = False,
    jobs: Annotated[int, typer.Option(
        "--jobs", "-j", help="Worker processes expanding each level (the same states and "
        "witness as one; 1 where processes cannot be forked)", min=1)] = 1,
) -> None:
    """Search every input sequence over a finite domain, breadth first, for a shortest one
    after which the patterns emit TARGET; equal engine states are merged. Prints the witness
    (and writes it with -o) or says that none exists within the bound. Exit code 0 either
    way, 1 when the patterns do not read or the target is unknown, 2 for a bad domain file
    or option."""
    from cepflow.analysis.bounded_search import SearchError
    from cepflow.analysis.bounded_search import search as run_search
    from cepflow.analysis.domain import DomainError, load_domain
    from cepflow.analysis.patternset import read

    limit = _horizon(horizon)
    try:
        pset = read(patterns)
    except OSError as e:
        typer.echo(f"{e.filename}: {e.strerror}", err=True)
        raise typer.Exit(2) from None
    if pset.program is None:
        for d in pset.diagnostics:
            typer.echo(str(d), err=True)
        raise typer.Exit(1)
    program = pset.program
    try:
        dom = load_domain(domain, program)
    except DomainError as e:
        typer.echo(str(e), err=True)
        raise typer.Exit(2) from None
    except OSError as e:
        typer.echo(f"{domain}: {e.strerror}", err=True)
        raise typer.Exit(2) from None
    if show_domain:
        typer.echo(dom.describe())

    def progress(r: object) -> None:
        typer.echo(f"  {r.depth} event(s): {r.states:,} states kept, "  # type: ignore[attr-defined]
                   f"{r.transitions:,} explored, {r.seconds:,.1f} s", err=True)  # type: ignore[attr-defined]

    try:
        result = run_search(program, target, dom, max_events, limit, max_states, progress,
                            jobs=jobs)
    except SearchError as e:
        typer.echo(str(e), err=True)
        raise typer.Exit(1) from None
    rate = result.transitions / result.seconds if result.seconds else 0.0
    what = (f"{result.transitions:,} states explored ({result.states:,} distinct kept), "
            f"{result.seconds:,.1f} s, {rate:,.0f} states/s")
    bound = (f"at most {max_events} events, steps {[f'{s:g}' for s in dom.steps]} ms"
             + (f", within {limit:g} ms" if limit is not None else "")
             + f", {len(dom.events)} candidate events")
    if result.witness is None:
        stop = "" if result.complete else " (stopped at --max-states: not every sequence seen)"
        typer.echo(f"no witness for {target} within the bound ({bound}){stop}: {what}")
        return
    typer.echo(f"shortest witness for {target}: {len(result.witness)} event(s) ({what})")
    lines = witness_lines(result.witness, program.schemas)
    for line in lines:
        typer.echo(f"  {line}")
    if output is not None:
        try:
            output.write_text("\n".join(lines) + "\n", encoding="utf-8")
        except OSError as e:
            typer.echo(f"{output}: {e.strerror}", err=True)
            raise typer.Exit(2) from None
        home = pset.origin.get(("decl", target), str(patterns[0]))
        typer.echo(f"wrote {output} (reproduce: cepflow run {home} -i {output} -o out.jsonl)",
                   err=True)
