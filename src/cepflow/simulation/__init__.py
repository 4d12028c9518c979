"""Stochastic simulation and Monte Carlo runs of pattern sets (seed 003 §V.B-D).

A model file (TOML, data only: :func:`load_model`) says which simple events the environment
produces; :func:`generate` draws one run's events from a seed; a :class:`Simulation` runs the
patterns over many runs (:func:`run_local` on this machine's cores,
``cepflow.spark.simulation.run_spark`` in Spark executors) and counts every event type;
:mod:`.stats` summarises the counts as Listing 31, :mod:`.properties` estimates how likely a
complex event is (Wilson intervals, the number of runs needed). docs/simulation.md.
"""

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
