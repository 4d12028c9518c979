"""PySpark is an extra (issue 16, item 10): without it every in-process part imports and runs,
and whatever needs Spark says in one line how to install it."""

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cepflow.cli.main import app
from cepflow.extras import SPARK_INSTALL

ROOT = Path(__file__).resolve().parents[2]
GESTURE = ROOT / "examples" / "gesture" / "gesture.vepl"
EVENTS = ROOT / "examples" / "gesture" / "events.jsonl"
runner = CliRunner()

#: a Python run in which PySpark cannot be imported (as if it were not installed)
WITHOUT_PYSPARK = "import sys; sys.modules['pyspark'] = None\n"


def test_nothing_outside_cepflow_spark_imports_pyspark() -> None:
    script = WITHOUT_PYSPARK + """
import importlib, pkgutil, cepflow, cepflow.cli.main
names = [m.name for m in pkgutil.walk_packages(cepflow.__path__, "cepflow.",
                                               onerror=lambda name: None)
         if not m.name.startswith("cepflow.spark")]
for name in names:
    importlib.import_module(name)
try:
    import cepflow.spark
except ImportError as e:
    print("SPARK:", e)
print(len(names))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    *_, spark_line, count = done.stdout.strip().splitlines()
    assert int(count) > 60  # every module of cepflow but cepflow.spark.*
    assert spark_line == f"SPARK: cepflow.spark needs PySpark, which is not installed: " \
                         f"{SPARK_INSTALL}"


@pytest.fixture
def no_pyspark(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", None)


@pytest.mark.parametrize(("args", "what"), [
    (["run", str(GESTURE), "-i", str(EVENTS), "-o", "{out}", "--engine", "spark"],
     "--engine spark"),
    (["stream", str(GESTURE), "--source", "{tmp}", "--sink", "{tmp}/sink", "--checkpoint",
      "{tmp}/ck"], "cepflow stream"),
    (["demo", "gesture", "--engine", "spark", "--bodies", "1", "--cycles", "1"],
     "demo gesture --engine spark"),
    (["simulate", str(GESTURE), "-m", str(ROOT / "examples" / "motorbike" / "model.toml"),
      "-n", "1", "--engine", "spark"], "--engine spark"),
], ids=["run", "stream", "demo-gesture", "simulate"])
def test_spark_commands_without_pyspark_say_how_to_install(
        no_pyspark: None, tmp_path: Path, args: list[str], what: str) -> None:
    out = tmp_path / "m.jsonl"
    args = [a.format(out=out, tmp=tmp_path) for a in args]
    res = runner.invoke(app, args)
    assert res.exit_code == 2
    assert res.output.strip() == f"{what} needs PySpark, which is not installed: " \
                                 'pip install "cepflow[spark]"'
    assert not out.exists() and not (tmp_path / "sink").exists()


def test_local_engine_runs_without_pyspark(no_pyspark: None, tmp_path: Path) -> None:
    out = tmp_path / "m.jsonl"
    res = runner.invoke(app, ["run", str(GESTURE), "-i", str(EVENTS), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert len(out.read_text().splitlines()) == 100
