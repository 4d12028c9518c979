"""The SparkSession cepflow runs on: Spark's embedded ``local[*]`` by default, a cluster with
``master``. Settings follow measurements on small machines (docs/spark.md, "Settings"): shuffle
partitions = cores (Spark's default of 200 makes small jobs slow and is frozen into streaming
checkpoints), the UI off, large Arrow batches for the column-wise engine path, workers on this
very Python interpreter."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

#: Arrow batch size for the Python side (the engine's batch path wants large batches)
ARROW_BATCH = 65_536
#: no byte limit on the Arrow batches sent to Python (``Int.MaxValue`` turns Spark's check
#: off): with a limit (64 MiB by default) Spark sizes the batch being built after every row,
#: which took a fifth of the JVM's time in the replay's detection stage (docs/spark.md,
#: "Settings"); :data:`ARROW_BATCH` rows bound a batch instead
ARROW_BYTES = 2**31 - 1


def local_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 2)


def local_memory_mb() -> int:
    """The driver heap for ``local`` masters, where the driver is also the executor: a quarter
    of the machine's memory, between 2 and 8 GiB. With 2 GiB the detection job's sort spilled
    0.8 GB on 10M filter events (2 cores) and took 13.9 s; with 4 GiB it did not, 10.0 to 10.6 s
    (docs/spark.md, "Settings")."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    except (ValueError, OSError, AttributeError):
        return 2048
    return max(2048, min(8192, total // 4))


def spark_session(
    master: str | None = None,
    app_name: str = "cepflow",
    conf: dict[str, Any] | None = None,
    quiet_jvm: bool = False,
) -> SparkSession:
    """Get or create the session; ``master`` defaults to ``local[*]``.

    ``quiet_jvm`` trades JIT warm-up for start-up time (tests): about half the JVM start CPU.
    """
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    cores = local_cores()
    settings: dict[str, Any] = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(cores),
        "spark.default.parallelism": str(cores),
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(ARROW_BATCH),
        "spark.sql.execution.arrow.maxBytesPerBatch": str(ARROW_BYTES),
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": (f"{local_memory_mb()}m" if (master or "local").startswith(
            "local") else "2g"),
        # pandas 2.3 warns about a concat inside PySpark's own worker code on every batch
        "spark.executorEnv.PYTHONWARNINGS": "ignore::FutureWarning",
    }
    java = [f"-Dlog4j2.configurationFile={Path(__file__).with_name('log4j2.properties')}"]
    if quiet_jvm:
        java += ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
    settings["spark.driver.extraJavaOptions"] = " ".join(java)
    settings.update(conf or {})
    builder = SparkSession.builder.master(master or f"local[{cores}]").appName(app_name)
    for k, v in settings.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
