"""``cepflow generate``: files cepflow reads back, the same bytes for the same seed, located
errors for bad models."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cepflow.cli.main import app
from cepflow.events.event import SideChannel
from cepflow.inputs import read_events
from cepflow.loader import load
from cepflow.simulation import generate, load_model

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "examples" / "motorbike" / "model.toml"
PATTERNS = ROOT / "examples" / "motorbike" / "motorbike.epl"
runner = CliRunner()


def gen(*args: str) -> object:
    return runner.invoke(app, ["generate", str(MODEL), *args])


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_every_format_reads_back_as_the_generated_events(tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"events{suffix}"
    res = gen("--duration", "6h", "--seed", "7", "--run", "2", "-o", str(out))
    assert res.exit_code == 0, res.output
    assert "seed 7, run 2, 6 h simulated" in res.output
    program = load(PATTERNS)
    side = SideChannel()
    back = list(read_events(out, program.schemas, side))
    assert not len(side), side.all()
    expected = generate(load_model(MODEL), 6 * 3_600_000, 7, 2).events(program.schemas)
    assert [(e.type, e.ts, e.params) for e in back] == [
        (e.type, e.ts, e.params) for e in expected]


def test_the_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    for path, seed in ((a, "5"), (b, "5"), (c, "6")):
        assert gen("--seed", seed, "-o", str(path)).exit_code == 0
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    # the model's duration (1 d) applies without --duration
    first = json.loads(a.read_text().splitlines()[-1])
    assert first["ts"] < 1488326400000 + 86_400_000


def test_stdout_and_a_fresh_seed() -> None:
    res = gen("--duration", "10 min", "-o", "-")
    assert res.exit_code == 0
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
    assert lines and all(json.loads(ln)["type"] == "Motorbike" for ln in lines)
    assert "give --seed" in res.stderr


def test_bad_model_is_located(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(MODEL.read_text().replace('mean = "60 s"', 'mean = "sixty"'))
    res = runner.invoke(app, ["generate", str(bad), "-o", str(tmp_path / "x.jsonl")])
    assert res.exit_code == 1
    line = res.stderr.strip().splitlines()[0]
    where = next(i for i, ln in enumerate(bad.read_text().splitlines(), 1) if "sixty" in ln)
    assert line.startswith(f"{bad}:{where}:38: error: "), line
    assert "source[0].arrival.mean: 'sixty' is not a duration" in line
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["--duration", "86400"], "--duration: '86400' is not a duration"),
    (["-o", "x.txt"], "unknown output format"),
    (["--seed", "-1"], "--seed: must be a whole number"),
])
def test_bad_options(tmp_path: Path, args: list[str], message: str) -> None:
    full = ["-o", str(tmp_path / "e.jsonl"), *args] if "-o" not in args else args
    res = gen(*full)
    assert res.exit_code == 2
    assert message in res.stderr
