"""The start and the end of a ``cepflow`` process (docs/cli.md, "The process's start"): what a
local run and ``--help`` leave unimported (a module that only another command needs, imported at
the top of a module every command loads, fails here), and the prompt exit of the console script
(``cepflow.cli.main.exit_promptly``): the exit code, standard output and every output file as
Python's own exit leaves them, the ``atexit`` functions run, Python's teardown skipped — and
Python's own exit wherever skipping it could lose something. Each process case is a fresh
interpreter, started as the console script starts (``main()``)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cepflow import load
from cepflow.cli import main as cli_main
from cepflow.replay import replay

PATTERN = ("create schema A(key int);\ncreate schema B(key int);\n"
           "@Name('Pair') select a.key as key from pattern [every a=A -> b=B(b.key = a.key) "
           "where timer:within(10 sec)];\n")

#: what neither a local run nor --help may import: other commands' packages and the extras
NOT_IMPORTED = ("pandas", "pyspark", "py4j", "matplotlib", "hypothesis", "cepflow.spark",
                "cepflow.petri", "cepflow.analysis", "cepflow.dse", "cepflow.live",
                "cepflow.models", "cepflow.queries", "cepflow.reports",
                "cepflow.simulation.monte_carlo", "cepflow.simulation.generator", "multiprocessing")

_SCRIPT = """
import atexit, json, sys
argv, report = sys.argv[1:-1], sys.argv[-1]

class _Teardown:
    def __del__(self, _open=open, _path=report + ".teardown"):  # (in Python's teardown only)
        with _open(_path, "w") as f:
            f.write("ran")

_keep = _Teardown()

def _report():
    with open(report, "w") as f:
        json.dump(sorted(sys.modules), f)

atexit.register(_report)
sys.argv = ["cepflow", *argv]
from cepflow.cli.main import app, main
if report.endswith("whole"):
    app()  # (the whole app, as before: Python's exit)
main()
"""


def _cepflow(tmp_path: Path, *argv: str, whole: bool = False
             ) -> tuple[subprocess.CompletedProcess[str], list[str], bool]:
    """``cepflow ARGV`` as the console script runs it (``whole``: the whole typer app, as
    the script ran before ``main`` built one command): the process, the modules loaded when its
    atexit functions ran, and whether Python's teardown ran."""
    report = tmp_path / ("modules.whole" if whole else "modules.json")
    report.unlink(missing_ok=True)
    Path(f"{report}.teardown").unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-c", _SCRIPT, *argv, str(report)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    modules = json.loads(report.read_text()) if report.exists() else []
    return done, modules, Path(f"{report}.teardown").exists()


def _files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "p.epl").write_text(PATTERN)
    n = 400
    pq.write_table(pa.table({"type": ["A", "B"] * (n // 2),
                             "ts": [i * 100 for i in range(n)],
                             "key": [(i // 2) % 7 for i in range(n)]}), tmp_path / "e.parquet")
    return tmp_path / "p.epl", tmp_path / "e.parquet"


def _loaded(modules: list[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def test_a_local_run_imports_only_what_it_uses_and_exits_promptly(tmp_path: Path) -> None:
    patterns, events = _files(tmp_path)
    out = tmp_path / "out.jsonl"
    done, modules, teardown = _cepflow(tmp_path, "run", str(patterns), "-i", str(events),
                                       "-o", str(out), "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "wrote 200 complex event(s)" in done.stderr
    replay([events], load(patterns), tmp_path / "in_process.jsonl")  # (Python's own exit after)
    assert out.read_bytes() == (tmp_path / "in_process.jsonl").read_bytes()
    assert len(out.read_text().splitlines()) == 200
    assert "cepflow.runtime.engine" in modules  # (the list is the run's)
    assert [m for m in NOT_IMPORTED if _loaded(modules, m)] == []
    assert not teardown  # (Python's teardown skipped: the atexit functions ran, above)


def test_help_and_version_import_little_and_print_everything(tmp_path: Path) -> None:
    done, modules, teardown = _cepflow(tmp_path, "--help")
    assert done.returncode == 0, done.stderr
    assert "Usage: cepflow" in done.stdout and "run" in done.stdout
    assert [m for m in NOT_IMPORTED if _loaded(modules, m)] == []
    assert not teardown
    done, _, _ = _cepflow(tmp_path, "--version")
    assert (done.returncode, done.stdout.strip()) == (0, "cepflow 0.1.0")


def test_exit_codes_and_the_matches_on_standard_output_are_kept(tmp_path: Path) -> None:
    patterns, events = _files(tmp_path)
    done, _, teardown = _cepflow(tmp_path, "run", str(patterns), "-i", str(events), "-o", "-",
                                 "--no-progress")
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 200 and not teardown
    (tmp_path / "bad.epl").write_text("select from pattern [every a = A ->];")
    done, _, _ = _cepflow(tmp_path, "check", str(tmp_path / "bad.epl"))
    assert done.returncode == 1 and "bad.epl:1:" in done.stderr
    (tmp_path / "none.jsonl").write_text('{"type":"Z","ts":0}\n')
    done, _, _ = _cepflow(tmp_path, "run", str(patterns), "-i", str(tmp_path / "none.jsonl"),
                          "-o", str(tmp_path / "o.jsonl"), "--no-progress")
    assert done.returncode == 3 and "no event could be processed" in done.stderr
    done, _, _ = _cepflow(tmp_path, "run", str(patterns), "-i", str(events), "-o",
                          str(tmp_path / "o.jsonl"), "--lateness", "-1")
    assert done.returncode == 2


@pytest.mark.parametrize("argv", [
    ["run", "--help"], ["run", "-h"], ["run"], ["run", "p.epl", "-i", "e.parquet", "-o", "-",
                                                 "--lateness", "x"],
    ["demo", "--help"], ["generate", "--help"], ["rnu", "p.epl"], ["check", "p.epl"],
    ["check", "p.epl", "--bogus"], ["run", "p.epl", "-i", "e.parquet", "-o", "-",
                                    "--no-progress", "--version"],
])
def test_the_one_command_app_answers_as_the_whole_app(tmp_path: Path, argv: list[str]) -> None:
    _files(tmp_path)
    one, _, _ = _cepflow(tmp_path, *argv)
    whole, _, _ = _cepflow(tmp_path, *argv, whole=True)
    assert (one.returncode, one.stdout, one.stderr) == (
        whole.returncode, whole.stdout, whole.stderr)


def test_main_builds_only_the_command_it_runs() -> None:
    assert cli_main._command_app(["run", "x"]).registered_commands == [
        c for c in cli_main.app.registered_commands if c.callback is cli_main.run]
    assert cli_main._command_app(["generate"]).registered_commands[0].name == "generate"
    assert [g.name for g in cli_main._command_app(["demo", "gesture"]).registered_groups] == [
        "demo"]
    for args in ([], ["--help"], ["--version", "run"], ["rnu"]):
        assert cli_main._command_app(args) is cli_main.app


class _Exited(Exception):
    pass


@pytest.fixture
def exits(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """``os._exit`` and the atexit functions recorded instead of run."""
    import atexit
    import os

    seen: list[object] = []

    def fake_exit(code: int) -> None:
        seen.append(("exit", code))
        raise _Exited

    monkeypatch.setattr(os, "_exit", fake_exit)
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: seen.append("atexit"))
    monkeypatch.setattr(threading, "active_count", lambda: 1)
    return seen


@pytest.mark.parametrize(("code", "expected"), [(None, 0), (0, 0), (3, 3), (6, 6)])
def test_the_prompt_exit_runs_the_atexit_functions_then_exits_with_the_code(
        exits: list[object], code: object, expected: int) -> None:
    with pytest.raises(_Exited):
        cli_main.exit_promptly(code)
    assert exits == ["atexit", ("exit", expected)]


def test_python_exits_as_usual_when_another_thread_lives_or_the_code_is_a_text(
        exits: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    cli_main.exit_promptly("a message")  # (SystemExit prints it: Python's exit)
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    cli_main.exit_promptly(0)
    assert exits == []


def test_python_exits_as_usual_when_standard_output_cannot_be_flushed(
        exits: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    class Closed:
        def flush(self) -> None:
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    cli_main.exit_promptly(0)
    assert exits == ["atexit"]


def test_pyarrow_parquet_only_for_a_run_that_reads_or_writes_parquet(tmp_path: Path) -> None:
    """pyarrow.parquet (≈ 0.02 s of the start) is imported by inputs/outputs' Parquet code when
    it runs, not at import: a JSON Lines run and --help go without it."""
    patterns, events = _files(tmp_path)
    lines = tmp_path / "e.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in pq.read_table(events).to_pylist()))
    runs = {"jsonl": ("-i", str(lines), "-o", str(tmp_path / "o.jsonl")),
            "parquet in": ("-i", str(events), "-o", str(tmp_path / "p.jsonl")),
            "parquet out": ("-i", str(lines), "-o", str(tmp_path / "o.parquet"))}
    loaded = {}
    for name, argv in runs.items():
        done, modules, _ = _cepflow(tmp_path, "run", str(patterns), *argv, "--no-progress")
        assert done.returncode == 0, done.stderr
        assert "wrote 200 complex event(s)" in done.stderr
        loaded[name] = _loaded(modules, "pyarrow.parquet")
    assert loaded == {"jsonl": False, "parquet in": True, "parquet out": True}
    assert (tmp_path / "o.jsonl").read_bytes() == (tmp_path / "p.jsonl").read_bytes()
    _, modules, _ = _cepflow(tmp_path, "--help")
    assert not _loaded(modules, "pyarrow.parquet")
