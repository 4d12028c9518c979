"""The data pipeline on Apache Spark: the same compiled patterns and engine as in-process,
over Spark DataFrames (batch replay), partitioned by the key the patterns unify on.

PySpark is an extra (``pip install "cepflow[spark]"``); without it, importing this package
raises :class:`cepflow.extras.MissingExtra` saying so."""
# ruff: noqa: E402 (the package's imports follow the check for PySpark)

from cepflow.extras import require_spark

require_spark("cepflow.spark")

from cepflow.spark.dataframes import (
    PartitionWarning,
    Prepared,
    detect,
    detect_prepared,
    prepare,
    read_events,
    write_matches,
    write_rejected,
)
from cepflow.spark.partitioning import Group, plan
from cepflow.spark.replay import Replayed, replay
from cepflow.spark.session import spark_session

__all__ = [
    "Group",
    "PartitionWarning",
    "Prepared",
    "Replayed",
    "detect",
    "detect_prepared",
    "plan",
    "prepare",
    "read_events",
    "replay",
    "spark_session",
    "write_matches",
    "write_rejected",
]
