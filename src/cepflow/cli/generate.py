"""``cepflow generate``: one run's simple events from a simulation model, written to a file."""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from cepflow.cli.options import reading
from cepflow.timefmt import duration_text

if TYPE_CHECKING:  # (the simulation package is imported by the commands that use it only)
    from cepflow.simulation.simulation_model import SimulationModel

err = Console(stderr=True, soft_wrap=True)


def read_model(path: Path) -> SimulationModel:
    """Load a model file for a command: its errors (one a line, located) exit with code 1,
    an unreadable file with code 2."""
    from cepflow.simulation.simulation_model import load_model

    with reading(path):
        model = load_model(path)
    return model


def run_duration(text: str | None, model: SimulationModel,
                 events: int | None = None) -> float | None:
    """``--duration`` in ms, else the model's ``[simulation] duration`` — unless ``--events``
    bounds the runs (then None); exit 2 if there is no bound."""
    if text is None:
        if events is not None:
            return None
        if model.duration_ms is None:
            err.print(f"give --duration (e.g. 1d): {model.path} sets no [simulation] duration",
                      markup=False)
            raise typer.Exit(2)
        return model.duration_ms
    from cepflow.simulation.simulation_model import parse_duration

    try:
        ms = parse_duration(text)
    except ValueError as e:
        err.print(f"--duration: {e}", markup=False)
        raise typer.Exit(2) from None
    if ms <= 0:
        err.print("--duration: must be longer than 0", markup=False)
        raise typer.Exit(2)
    return ms


def pick_seed(seed: int | None) -> int:
    """The seed given, or a fresh random one (printed, so the run can be repeated)."""
    from cepflow.simulation.generator import MAX_SEED

    if seed is None:
        seed = secrets.randbits(63)
        err.print(f"seed {seed} (give --seed {seed} to repeat this)", markup=False)
    elif not 0 <= seed <= MAX_SEED:
        err.print(f"--seed: must be a whole number from 0 to 2**128 - 1 (got {seed})",
                  markup=False)
        raise typer.Exit(2)
    return seed


def generate_command(
    model_path: Annotated[Path, typer.Argument(metavar="MODEL", help="Model file (TOML)")],
    output: Annotated[Path, typer.Option(
        "--output", "-o", help="Events file: .jsonl, .csv or .parquet; - for JSON Lines on "
                               "stdout")],
    duration: Annotated[str | None, typer.Option(
        help="Simulated time, with its unit: 1d, 16 d, 3600 s, 90 min (default: the "
             "model's simulation.duration, unless --events is given)")] = None,
    events: Annotated[int | None, typer.Option(
        min=1, help="Stop after this many events (with --duration: whichever comes first)")
    ] = None,
    seed: Annotated[int | None, typer.Option(
        help="Random seed (default: a fresh one, printed)")] = None,
    run: Annotated[int, typer.Option(
        min=0, help="Run number: the events of that run of `cepflow simulate --seed`")] = 0,
) -> None:
    """Generate the simple events of one simulation run (seed 003 §V.B) and write them."""
    from cepflow.simulation.draws import GenerationError
    from cepflow.simulation.files import format_for, write_events
    from cepflow.simulation.generator import generate

    model = read_model(model_path)
    ms = run_duration(duration, model, events)
    if format_for(output) is None:
        err.print(f"{output}: unknown output format (use .jsonl, .csv, .parquet or -)",
                  markup=False)
        raise typer.Exit(2)
    seed = pick_seed(seed)
    t0 = time.perf_counter()
    try:
        generated = generate(model, ms, seed, run, limit=events)
    except GenerationError as e:
        err.print(f"{model_path}: {e}", markup=False)
        raise typer.Exit(1) from None
    took = time.perf_counter() - t0
    if str(output) != "-":
        output.parent.mkdir(parents=True, exist_ok=True)
    try:
        n = write_events(generated, output)
    except ValueError as e:
        err.print(str(e), markup=False)
        raise typer.Exit(2) from None
    except OSError as e:
        err.print(f"{e.filename or output}: {e.strerror}", markup=False)
        raise typer.Exit(2) from None
    per_type = ", ".join(f"{t} {k:,}" for t, k in generated.counts().items())
    span = duration_text(generated.end_ms - model.start_ms)
    rate = f", {n / took:,.0f} events/s" if took > 0 and n else ""
    err.print(f"wrote {n:,} events ({per_type}) to {output}: seed {seed}, run {run}, "
              f"{span} simulated; generated in {took:.3f} s{rate}",
              markup=False, highlight=False)
