"""What a simulation produced, for its outputs: Listing 31's statistics, the property estimates,
Table 2's ratios, where the time went, and ``runs.json`` (every run's counts)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import cepflow
from cepflow.simulation.monte_carlo import RunResult, Simulation
from cepflow.simulation.properties import Estimate, estimate, ratios
from cepflow.simulation.stats import Summary, summarise


@dataclass
class Outcome:
    """A finished simulation: its runs (in run order) and how they were made."""

    simulation: Simulation
    results: list[RunResult]
    wall_seconds: float
    #: where the runs went: ``local`` or ``spark``, and its processes or master
    engine: str
    where: str
    properties: Sequence[str] = ()
    confidence: float = 0.95
    patterns: Sequence[str] = ()
    #: the sequential mode's target half-width and whether it was reached (None: not used)
    precision: float | None = None
    precision_reached: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def rows(self) -> list[str]:
        """What the statistics have a row for: every event type, then the groups of
        ``count_by`` that occurred in some run (in natural order: ``station=2`` before
        ``station=10``)."""
        types = self.simulation.event_types
        known = set(types)
        groups = {k for r in self.results for k in r.counts if k not in known}
        return [*types, *sorted(groups, key=_natural)]

    @cached_property
    def summary(self) -> list[Summary]:
        return summarise(self.rows, self.results)

    @cached_property
    def estimates(self) -> list[Estimate]:
        return [estimate(p, self.results, self.simulation.simple, self.confidence)
                for p in self.properties]

    @cached_property
    def ratios(self) -> dict[str, float | None]:
        return ratios(self.results, self.simulation.simple, self.simulation.complex)

    @property
    def rejected(self) -> tuple[int, int]:
        """Runs whose engine put records on its side channel, and how many records in all."""
        return (sum(1 for r in self.results if r.rejected),
                sum(r.rejected for r in self.results))

    @property
    def timing(self) -> dict[str, float]:
        """Seconds summed over runs: generating events (with making them objects) and
        detecting; the wall time of the whole simulation; events per second of detection."""
        gen = sum(r.generate_seconds for r in self.results)
        det = sum(r.detect_seconds for r in self.results)
        events = sum(r.counts.get(t, 0) for r in self.results for t in self.simulation.simple)
        return {"generate_seconds": gen, "detect_seconds": det,
                "cpu_seconds": sum(r.cpu_seconds for r in self.results),
                "generate_share": gen / (gen + det) if gen + det else 0.0,
                "wall_seconds": self.wall_seconds, "simple_events": events,
                "runs_per_second": len(self.results) / self.wall_seconds
                if self.wall_seconds else 0.0,
                "detect_events_per_second": events / det if det else 0.0}

    def runs_json(self) -> dict[str, Any]:
        """Everything needed to redo or re-analyse the simulation."""
        sim = self.simulation
        return {
            "cepflow": cepflow.__version__,
            "patterns": list(self.patterns),
            "model": sim.model.path,
            "seed": sim.seed,
            "duration_ms": sim.duration_ms,
            "events_per_run": sim.events,
            "start_ms": sim.model.start_ms,
            "engine": self.engine,
            "where": self.where,
            "event_types": {"simple": sim.simple, "complex": sim.complex},
            "count_by": {name: list(attrs) for name, attrs in sim.count_by},
            "timing": self.timing,
            "confidence": self.confidence,
            "properties": [e.to_dict() for e in self.estimates],
            "ratios": self.ratios,
            "precision": self.precision,
            "precision_reached": self.precision_reached,
            "runs_with_rejected": self.rejected[0],
            **self.extra,
            "runs": [r.to_dict() for r in self.results],
        }

    def write_runs_json(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.runs_json(), indent=1, allow_nan=False) + "\n",
                        encoding="utf-8")
        return path


def _natural(text: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]
