"""Stochastic simulation and Monte Carlo runs of pattern sets (seed 003 §V.B-D).

A model file (TOML, data only: :func:`load_model`) says which simple events the environment
produces; :func:`generate` draws one run's events from a seed; a :class:`Simulation` runs the
patterns over many runs (:func:`run_local` on this machine's cores,
``cepflow.spark.simulation.run_spark`` in Spark executors) and counts every event type;
:mod:`.stats` summarises the counts as Listing 31, :mod:`.properties` estimates how likely a
complex event is (Wilson intervals, the number of runs needed). docs/simulation.md.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

#: where each name of the package lives: imported on first use (PEP 562), so that a command
#: that imports one light module of the package (``cepflow simulate``'s options read
#: ``properties.FORMULAS``) does not load the runner, the generator and multiprocessing at
#: every start of ``cepflow`` (docs/cli.md, "The process's start")
_HOMES = {
    "GenerationError": "draws",
    "RunEvents": "generator", "generate": "generator", "stream": "generator",
    "RunResult": "monte_carlo", "Simulation": "monte_carlo", "run_local": "monte_carlo",
    "Estimate": "properties", "estimate": "properties", "required_runs": "properties",
    "wilson_interval": "properties", "z_value": "properties",
    "SimulationModel": "simulation_model", "SimulationModelError": "simulation_model",
    "load_model": "simulation_model", "parse_duration": "simulation_model",
    "parse_model": "simulation_model",
    "Summary": "stats", "summarise": "stats",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from cepflow.simulation.draws import GenerationError
    from cepflow.simulation.generator import RunEvents, generate, stream
    from cepflow.simulation.monte_carlo import RunResult, Simulation, run_local
    from cepflow.simulation.properties import (
        Estimate,
        estimate,
        required_runs,
        wilson_interval,
        z_value,
    )
    from cepflow.simulation.simulation_model import (
        SimulationModel,
        SimulationModelError,
        load_model,
        parse_duration,
        parse_model,
    )
    from cepflow.simulation.stats import Summary, summarise

__all__ = [
    "Estimate",
    "GenerationError",
    "RunEvents",
    "RunResult",
    "Simulation",
    "SimulationModel",
    "SimulationModelError",
    "Summary",
    "estimate",
    "generate",
    "load_model",
    "parse_duration",
    "parse_model",
    "required_runs",
    "run_local",
    "stream",
    "summarise",
    "wilson_interval",
    "z_value",
]
