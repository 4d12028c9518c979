"""The gesture pipeline on Spark, keyed by body (frames in, gestures out), equals the
in-process live session on the same frames; and the demo command, both engines."""

import json
import sys
from pathlib import Path

import pandas as pd
import pytest
from pyspark import cloudpickle
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

from gesture_live import pipeline  # noqa: E402
from gesture_live.recording import FRAME_COLUMNS, frame_records, read_recording  # noqa: E402

from cepflow.cli.main import app  # noqa: E402
from cepflow.spark.live import complex_rows, detect_live, stats_by_key  # noqa: E402

SCHEMA = ("body string, frame long, ts long, joint string, x double, y double, z double")


def test_spark_per_body_equals_in_process(spark):
    bodies, cycles = 3, 2
    cloudpickle.register_pickle_by_value(pipeline)  # the action and jointAngle travel
    records = pd.DataFrame(list(frame_records(read_recording(), bodies, cycles)),
                           columns=list(FRAME_COLUMNS))
    frames = spark.createDataFrame(records, SCHEMA)
    result = detect_live(frames, pipeline.live_spec()).cache()
    rows = complex_rows(result)
    stats = stats_by_key(result)
    local = []
    run = pipeline.run_local(bodies, cycles, on_gesture=local.append)
    expected = sorted((ce.params[0], ce.type, float(ce.ts),
                       json.dumps(ce.bindings_for_output(), sort_keys=True),
                       json.dumps([[p.type, p.ts] for p in ce.parts])) for ce in local)
    assert rows == expected and len(rows) == bodies * cycles
    assert set(stats) == {f"body{b}" for b in range(bodies)}
    assert sum(s["query_events"] for s in stats.values()) == run.query_events
    assert sum(s["changes"] for s in stats.values()) == run.changes
    assert all(s["frames"] == 12 * cycles and s["rule_firings"] == cycles
               for s in stats.values())
    with pytest.raises(ValueError, match=r"no column\(s\) \['joint'\]"):
        detect_live(frames.withColumnRenamed("joint", "part"), pipeline.live_spec())


def test_demo_gesture_local_and_spark_end_with_the_same_counts(spark):
    runner = CliRunner()
    local = runner.invoke(app, ["demo", "gesture", "--bodies", "3", "--cycles", "2"])
    assert local.exit_code == 0, local.output
    lines = local.output.strip().splitlines()
    assert lines[1] == "ForwardGesture body0 at 440 ms (cycle 1)"
    summary = json.loads(lines[-1])
    assert {k: summary[k] for k in ("bodies", "cycles", "frames", "gestures", "query_events",
                                    "rule_firings", "one_gesture_per_cycle")} == {
        "bodies": 3, "cycles": 2, "frames": 24, "gestures": 6, "query_events": 36,
        "rule_firings": 6, "one_gesture_per_cycle": True}
    assert summary["elapsed"] > 0 and summary["frames_per_s"] > 0
    on_spark = runner.invoke(app, ["demo", "gesture", "--bodies", "3", "--cycles", "2",
                                   "--engine", "spark", "-q"])
    assert on_spark.exit_code == 0, on_spark.output
    (line,) = on_spark.output.strip().splitlines()
    remote = json.loads(line)
    assert remote["engine"] == "spark"
    for k in ("bodies", "cycles", "frames", "gestures", "query_events", "changes",
              "rule_firings", "one_gesture_per_cycle"):
        assert remote[k] == summary[k], k


def test_demo_gesture_rejects_bad_options(tmp_path):
    runner = CliRunner()
    bad = runner.invoke(app, ["demo", "gesture", "--engine", "flink"])
    text = " ".join(bad.output.replace("│", " ").split())
    assert bad.exit_code == 2 and "'flink' is not one of 'local', 'spark'" in text, text
    missing = runner.invoke(app, ["demo", "gesture", "--dir", str(tmp_path)])
    assert missing.exit_code == 2 and "not a gesture case folder" in missing.output
    negative = runner.invoke(app, ["demo", "gesture", "--bodies", "-1"])
    assert negative.exit_code == 2
