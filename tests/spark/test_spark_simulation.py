"""Monte Carlo runs on Spark give the counts (and the events) of the local runs."""

import json
from pathlib import Path

from typer.testing import CliRunner

from cepflow.cli.main import app
from cepflow.loader import diagnose_paths
from cepflow.simulation import Simulation, load_model, run_local
from cepflow.spark.simulation import SparkRunner, run_spark

MOTORBIKE = Path(__file__).resolve().parents[2] / "examples" / "motorbike"


def test_spark_equals_local_for_the_same_seeds(spark) -> None:
    _, program = diagnose_paths([MOTORBIKE / "motorbike.epl", MOTORBIKE / "properties.epl"])
    # a seed beyond 64 bits travels as text
    sim = Simulation(program, load_model(MOTORBIKE / "model.toml"), 3 * 3_600_000, 2**100 + 7,
                     count_by=(("TooHighTirePressure", ("motorbikeId",)),))
    runs = [0, 1, 2, 5, 8]
    remote = run_spark(spark, sim, runs)
    local = run_local(sim, runs, workers=1)
    assert [r.run for r in remote] == runs
    assert [(r.counts, r.digest, r.rejected) for r in remote] == [
        (r.counts, r.digest, r.rejected) for r in local]
    assert all(r.seconds > 0 and r.detect_seconds > 0 for r in remote)
    assert "TooHighTirePressure[motorbikeId=2]" in remote[0].counts
    with SparkRunner(sim, spark=spark) as runner:
        assert runner.where.startswith("local")
        assert [r.run for r in runner.map([3])] == [3]


def test_cepflow_simulate_on_spark(spark, tmp_path: Path) -> None:
    args = ["simulate", str(MOTORBIKE / "motorbike.epl"), "-m", str(MOTORBIKE / "model.toml"),
            "-n", "3", "--duration", "1h", "--seed", "4"]
    on_spark, here = tmp_path / "spark.json", tmp_path / "local.json"
    res = CliRunner().invoke(app, [*args, "--engine", "spark", "--json", str(on_spark)])
    assert res.exit_code == 0, res.output
    assert CliRunner().invoke(app, [*args, "--json", str(here)]).exit_code == 0
    a, b = json.loads(on_spark.read_text()), json.loads(here.read_text())
    assert a["engine"] == "spark" and b["engine"] == "local"
    assert [r["counts"] for r in a["runs"]] == [r["counts"] for r in b["runs"]]
