"""A package that installs like one (issue 16, item 10): the wheel built from this checkout,
installed into a fresh venv — without PySpark — runs ``cepflow demo cps``, ``demo gesture``
and ``check`` on a shipped example, and says how to get Spark.

About 30 s (pip installs numpy, pandas, pyarrow … from its cache or index). Needs pip's index
or a warm cache; deselect with ``-m "not packaging"`` offline.
"""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import cepflow

ROOT = Path(__file__).resolve().parents[2]
#: what a build reads: the package, its examples (cepflow.examples), metadata and licence
SOURCES = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "src", "examples")

pytestmark = pytest.mark.packaging


def _sh(*cmd: str | Path, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the venv's bin folder, the built wheel): built from a clean copy of the sources, so
    that nothing stale of an earlier build (build/, *.egg-info) goes into the wheel."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, source / name)
    pip = (sys.executable, "-m", "pip")
    done = _sh(*pip, "wheel", "--no-deps", "-q", "-w", tmp / "dist", source, cwd=tmp)
    assert done.returncode == 0, done.stderr
    (wheel,) = (tmp / "dist").glob("cepflow-*.whl")
    done = _sh(sys.executable, "-m", "venv", "--without-pip", tmp / "venv", cwd=tmp)
    assert done.returncode == 0, done.stderr
    done = _sh(*pip, "--python", tmp / "venv" / "bin" / "python", "install", "-q", wheel,
               cwd=tmp)
    assert done.returncode == 0, done.stderr
    return tmp / "venv" / "bin", wheel


def test_wheel_metadata_licence_and_spark_extra(installed: tuple[Path, Path]) -> None:
    _, wheel = installed
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        licence = z.read(next(n for n in names if n.endswith(".dist-info/licenses/LICENSE")))
    assert "License-Expression: Apache-2.0" in meta
    assert licence == (ROOT / "LICENSE").read_bytes()
    assert b"Apache License" in licence and b"Version 2.0, January 2004" in licence
    requires = [ln for ln in meta.splitlines() if ln.startswith("Requires-Dist:")]
    spark = [ln for ln in requires if "pyspark" in ln]
    assert spark and all('extra == "spark"' in ln for ln in spark), spark
    # the case studies ship once, inside the package; the repository's tests do not
    assert "cepflow/examples/cps/cps.mm" in names
    assert "cepflow/examples/gesture_live/arm_rotation.csv" in names
    assert not [n for n in names if "/test_" in n or "__pycache__" in n]


def test_fresh_venv_without_pyspark_runs_the_demos(installed: tuple[Path, Path],
                                                   tmp_path: Path) -> None:
    bin_, _ = installed
    python, cli = bin_ / "python", bin_ / "cepflow"
    probe = _sh(python, "-c", "import importlib.util, cepflow; "
                "print(importlib.util.find_spec('pyspark') is None, cepflow.__file__)",
                cwd=tmp_path)
    no_spark, where = probe.stdout.split()
    assert no_spark == "True"
    assert not Path(where).is_relative_to(ROOT)  # the wheel's copy, not this checkout

    assert _sh(cli, "--version", cwd=tmp_path).stdout.strip() == f"cepflow {cepflow.__version__}"
    cps = _sh(cli, "demo", "cps", "-q", cwd=tmp_path)
    assert cps.returncode == 0, cps.stdout + cps.stderr
    assert json.loads(cps.stdout.splitlines()[-1])["valid_at_end"] is True
    gesture = _sh(cli, "demo", "gesture", "--bodies", "2", "--cycles", "2", "-q", cwd=tmp_path)
    assert gesture.returncode == 0, gesture.stdout + gesture.stderr
    summary = json.loads(gesture.stdout.splitlines()[-1])
    assert summary["gestures"] == 4 and summary["one_gesture_per_cycle"] is True

    folder = Path(_sh(cli, "demo", "path", "motorbike", cwd=tmp_path).stdout.strip())
    assert folder.is_relative_to(bin_.parent) and folder.is_dir()
    check = _sh(cli, "check", folder / "motorbike.epl", folder / "motorbike.vepl", cwd=tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count(": ok — 5 complex event pattern(s), 2 window statement(s)") == 2

    gen = _sh(cli, "generate", folder / "model.toml", "--duration", "1h", "--seed", "1", "-o",
              tmp_path / "sim.jsonl", cwd=tmp_path)  # the simulation model ships too
    assert gen.returncode == 0 and (tmp_path / "sim.jsonl").read_text().count("\n") > 100, (
        gen.stdout + gen.stderr)

    spark = _sh(cli, "run", folder / "motorbike.epl", "-i", folder / "accident.jsonl", "-o",
                tmp_path / "m.jsonl", "--engine", "spark", cwd=tmp_path)
    assert spark.returncode == 2
    assert spark.stderr.strip() == ('--engine spark needs PySpark, which is not installed: '
                                    'pip install "cepflow[spark]"')
    assert not (tmp_path / "m.jsonl").exists()
