"""Monte Carlo runs on Spark: the runs' seeds become a DataFrame, each executor generates its
runs' events and runs the patterns (:meth:`Simulation.run`, the code the local processes run),
and only the counts and times come back — one row per run. The same seed and run number give
the same events, hence the same counts, as :func:`cepflow.simulation.run_local`.

It lives with the Spark pipeline (``cepflow.spark``, the ``spark`` extra); the simulation
itself is ``cepflow.simulation`` (docs/simulation.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

from cepflow.simulation.monte_carlo import RunResult, Simulation
from cepflow.spark.session import spark_session

#: what an executor sends back for a run (its counts by event type, and group of count_by)
RESULT_SCHEMA = pa.schema([
    ("run", pa.int64()), ("counts", pa.map_(pa.string(), pa.int64())), ("seconds", pa.float64()),
    ("generate_seconds", pa.float64()), ("detect_seconds", pa.float64()),
    ("digest", pa.string()), ("rejected", pa.int64()), ("cpu_seconds", pa.float64())])
RESULT_DDL = ("run bigint, counts map<string,bigint>, seconds double, generate_seconds double, "
              "detect_seconds double, digest string, rejected bigint, cpu_seconds double")


def run_partition(simulation: Simulation) -> Any:
    """The ``mapInArrow`` function: each input row ``(seed, run)`` becomes its run's result."""

    def runs(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            seeds = batch.column("seed").to_pylist()
            numbers = batch.column("run").to_pylist()
            out = [simulation.run(r, int(s)) for s, r in zip(seeds, numbers, strict=True)]
            yield pa.RecordBatch.from_pydict({
                "run": [r.run for r in out],
                "counts": [list(r.counts.items()) for r in out],
                "seconds": [r.seconds for r in out],
                "generate_seconds": [r.generate_seconds for r in out],
                "detect_seconds": [r.detect_seconds for r in out],
                "digest": [r.digest for r in out],
                "rejected": [r.rejected for r in out],
                "cpu_seconds": [r.cpu_seconds for r in out],
            }, schema=RESULT_SCHEMA)

    return runs


def run_spark(spark: SparkSession, simulation: Simulation, runs: Sequence[int],
              partitions: int | None = None) -> list[RunResult]:
    """Run ``runs`` in Spark's executors; the results in run order. The seeds DataFrame has
    one row per run, ``(seed, run)`` — the seed as text, since it may exceed 64 bits — in
    ``partitions`` partitions (default: up to four per core, for balance)."""
    todo = list(runs)
    if not todo:
        return []
    cores = spark.sparkContext.defaultParallelism
    n = max(1, min(len(todo), partitions or 4 * cores))
    seeds = spark.createDataFrame([(str(simulation.seed), r) for r in todo],
                                  "seed string, run bigint").repartition(n)
    rows = seeds.mapInArrow(run_partition(simulation), RESULT_DDL).collect()
    types = simulation.event_types
    out = [RunResult(row.run, _ordered(dict(row.counts), types), row.seconds,
                     row.generate_seconds, row.detect_seconds, row.digest, row.rejected,
                     row.cpu_seconds)
           for row in rows]
    return sorted(out, key=lambda r: r.run)


def _ordered(counts: dict[str, int], types: Sequence[str]) -> dict[str, int]:
    """The counts in the order a local run gives them: event types, then groups sorted."""
    return {**{t: counts[t] for t in types},
            **dict(sorted((k, v) for k, v in counts.items() if k not in types))}


class SparkRunner:
    """Runs on Spark, with the interface of :class:`cepflow.simulation.monte_carlo.LocalRunner`:
    ``map(runs)`` is one Spark job."""

    def __init__(self, simulation: Simulation, master: str | None = None,
                 spark: SparkSession | None = None) -> None:
        self.simulation = simulation
        self.master = master
        self.spark = spark

    @property
    def workers(self) -> int:
        return self.spark.sparkContext.defaultParallelism if self.spark is not None else 1

    @property
    def where(self) -> str:
        return self.spark.sparkContext.master if self.spark is not None else (
            self.master or "local[*]")

    def __enter__(self) -> SparkRunner:
        if self.spark is None:
            self.spark = spark_session(self.master, app_name="cepflow-simulate")
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, runs: Sequence[int]) -> Iterator[RunResult]:
        assert self.spark is not None
        yield from run_spark(self.spark, self.simulation, runs)
