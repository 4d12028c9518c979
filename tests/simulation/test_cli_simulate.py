"""``cepflow simulate`` end to end: stats.csv in Listing 31's shape, runs.json, the HTML report
and plots; the number of runs from a precision, the plan, the sequential mode; errors."""

import csv
import json
from pathlib import Path

from typer.testing import CliRunner

from cepflow.cli.main import app
from cepflow.loader import diagnose_paths
from cepflow.simulation import Simulation, load_model, required_runs
from cepflow.simulation.monte_carlo import LocalRunner

ROOT = Path(__file__).resolve().parents[2]
MOTORBIKE = ROOT / "examples" / "motorbike"
TEMPERATURE = ROOT / "examples" / "temperature"
runner = CliRunner()
APP = [str(MOTORBIKE / "motorbike.epl"), str(MOTORBIKE / "properties.epl"), "--model",
       str(MOTORBIKE / "model.toml")]


def simulate(*args: str):
    return runner.invoke(app, ["simulate", *args])


def test_statistics_runs_report_and_plots(tmp_path: Path) -> None:
    stats, runs, report, plots = (tmp_path / "stats.csv", tmp_path / "runs.json",
                                  tmp_path / "report.html", tmp_path / "plots")
    res = simulate(*APP, "--runs", "5", "--duration", "2h", "--seed", "3", "--workers", "2",
                   "--property", "TooHighTirePressure", "--property", "Accident",
                   "-o", str(stats), "--json", str(runs), "--report", str(report),
                   "--plots", str(plots))
    assert res.exit_code == 0, res.output
    rows = list(csv.reader(stats.open()))
    assert rows[0] == ["Event", "Min", "Max", "Median", "Mean", "Std.Dev"]
    assert [r[0] for r in rows[1:]] == ["Motorbike", "GhostRider", "BlowOutTire",
                                        "DriverLeftSeat", "Crash", "Accident",
                                        "TwoAccidentsTheSameDay", "TooHighTirePressure",
                                        "AccidentsReport", "DangerousLocation", "Duration"]
    data = json.loads(runs.read_text())
    assert data["seed"] == 3 and data["duration_ms"] == 7_200_000
    assert [r["run"] for r in data["runs"]] == [0, 1, 2, 3, 4]
    # the same counts as the runs made here, one by one
    _, program = diagnose_paths([MOTORBIKE / "motorbike.epl", MOTORBIKE / "properties.epl"])
    sim = Simulation(program, load_model(MOTORBIKE / "model.toml"), 7_200_000, 3)
    assert [r["counts"] for r in data["runs"]] == [sim.run(i).counts for i in range(5)]
    motorbikes = [r["counts"]["Motorbike"] for r in data["runs"]]
    assert rows[1][1:3] == [str(min(motorbikes)), str(max(motorbikes))]
    (high,) = [p for p in data["properties"] if p["name"] == "TooHighTirePressure"]
    assert high["hits"] == 5 and high["probability"] == 1.0
    assert high["ratio"] == sum(r["counts"]["TooHighTirePressure"] for r in data["runs"]) / sum(
        motorbikes)
    assert 0 < data["timing"]["generate_share"] < 1
    page = report.read_text()
    for part in ("Event counts", "Properties", "Histograms", "TooHighTirePressure",
                 "<svg", "Wilson"):
        assert part in page
    assert sorted(p.name for p in plots.iterdir()) == sorted(
        [f"count-{r[0]}.png" for r in rows[1:-1]]
        + ["property-Accident.png", "property-TooHighTirePressure.png"])
    assert "TooHighTirePressure" in res.stderr and "5 of 5" in res.stderr


def test_the_number_of_runs_from_a_precision(tmp_path: Path) -> None:
    res = simulate("--plan", "--confidence", "0.95", "--precision", "0.03", "--formula", "seed")
    assert res.exit_code == 0 and res.stdout.strip() == "1067"
    res = simulate("--plan", "--confidence", "0.99", "--precision", "0.03", "--p", "0.05")
    assert res.stdout.strip() == str(required_runs(0.99, 0.03, 0.05)) == "351"
    runs = tmp_path / "runs.json"
    res = simulate(str(TEMPERATURE / "alerts.epl"), "-m", str(TEMPERATURE / "model.toml"),
                   "--precision", "0.25", "--duration", "1 min", "--seed", "1",
                   "--json", str(runs))
    assert res.exit_code == 0, res.output
    assert len(json.loads(runs.read_text())["runs"]) == required_runs(0.95, 0.25) == 16


def test_sequential_mode(tmp_path: Path) -> None:
    runs = tmp_path / "runs.json"
    res = simulate(str(TEMPERATURE / "alerts.epl"), "-m", str(TEMPERATURE / "model.toml"),
                   "--until-precision", "0.1", "--property", "Critical", "--batch", "8",
                   "--duration", "2 min", "--seed", "2", "--json", str(runs), "--workers", "1")
    assert res.exit_code == 0, res.output
    data = json.loads(runs.read_text())
    (critical,) = data["properties"]
    assert data["precision_reached"] is True and critical["half_width"] <= 0.1
    assert len(data["runs"]) % 8 == 0
    res = simulate(str(TEMPERATURE / "alerts.epl"), "-m", str(TEMPERATURE / "model.toml"),
                   "--until-precision", "0.001", "--property", "Critical", "--batch", "4",
                   "--max-runs", "8", "--duration", "1 min", "--seed", "2", "--workers", "1")
    assert res.exit_code == 3 and "not reached in 8 runs" in res.stderr


def test_stats_to_stdout_and_counts_by_parameter() -> None:
    res = simulate(str(TEMPERATURE / "alerts.epl"), "-m", str(TEMPERATURE / "model.toml"),
                   "-n", "2", "--duration", "1 min", "--seed", "1", "-o", "-")
    assert res.exit_code == 0
    assert res.stdout.splitlines()[:2] == ["Event,Min,Max,Median,Mean,Std.Dev",
                                           "TemperatureEvent,60,60,60,60,0"]
    res = simulate(*APP, "-n", "2", "--duration", "1h", "--seed", "1", "-o", "-",
                   "--count-by", "Motorbike.motorbikeId,location")
    assert res.exit_code == 0, res.output
    rows = [r[0] for r in csv.reader(res.stdout.splitlines())]
    assert rows[-4:] == ["Motorbike[motorbikeId=1,location=Cadiz]",
                         "Motorbike[motorbikeId=2,location=Malaga]",
                         "Motorbike[motorbikeId=3,location=Sevilla]", "Duration"]
    res = simulate(*APP, "-n", "1", "--count-by", "Motorbike")
    assert res.exit_code == 2 and "write TYPE.ATTR" in res.stderr


def test_errors(tmp_path: Path) -> None:
    res = simulate("--plan")
    assert res.exit_code == 2 and "--plan needs --precision" in res.stderr
    res = simulate(*APP, "-n", "2", "--property", "Nope")
    assert res.exit_code == 2 and "--property Nope: not a complex event" in res.stderr
    res = simulate(*APP, "-n", "2", "--precision", "0.1")
    assert res.exit_code == 2 and "not --runs and --precision" in res.stderr
    res = simulate(*APP)
    assert res.exit_code == 2 and "give one of --runs N" in res.stderr
    res = simulate(*APP, "--until-precision", "0.1")
    assert res.exit_code == 2 and "needs at least one --property" in res.stderr
    bad = tmp_path / "model.toml"
    bad.write_text((MOTORBIKE / "model.toml").read_text().replace("timestamp = {", "stamp = {"))
    res = simulate(*APP[:2], "-m", str(bad), "-n", "1")
    assert res.exit_code == 1
    assert f"{bad}:" in res.stderr and "source[0].attributes.stamp: Motorbike has no " \
        "parameter 'stamp'" in res.stderr
    assert "source[0].attributes: no value for 'timestamp'" in res.stderr
    res = simulate(str(MOTORBIKE / "motorbike.epl"), str(MOTORBIKE / "properties.vepl"),
                   "-m", str(MOTORBIKE / "model.toml"), "-n", "1")
    assert res.exit_code == 1 and "one language" in res.stderr


def test_a_model_too_large_to_generate(tmp_path: Path, monkeypatch) -> None:
    big = tmp_path / "big.toml"
    big.write_text((MOTORBIKE / "model.toml").read_text().replace('mean = "60 s"',
                                                                  'mean = "1 ms"'))

    def no_workers(self):  # the size is checked before any worker is forked
        raise AssertionError("the runner started")

    monkeypatch.setattr(LocalRunner, "__enter__", no_workers)
    res = simulate(*APP[:2], "-m", str(big), "-n", "3", "--duration", "16d", "--workers", "2")
    assert res.exit_code == 1
    assert res.stderr.strip().splitlines()[-1].startswith(
        f"{big}: the model would generate about 4,147,200,000 events per run")


def test_runs_of_a_number_of_events(tmp_path: Path) -> None:
    runs = tmp_path / "runs.json"
    res = simulate(*APP, "-n", "3", "--events", "500", "--seed", "1", "--json", str(runs))
    assert res.exit_code == 0, res.output
    data = json.loads(runs.read_text())
    assert data["events_per_run"] == 500 and data["duration_ms"] is None
    assert [r["counts"]["Motorbike"] for r in data["runs"]] == [500, 500, 500]
    assert "3 runs of 500 events, seed 1" in res.stderr
    out = tmp_path / "e.jsonl"
    res = runner.invoke(app, ["generate", str(MOTORBIKE / "model.toml"), "--events", "42",
                              "--seed", "1", "--run", "2", "-o", str(out)])
    assert res.exit_code == 0 and len(out.read_text().splitlines()) == 42
