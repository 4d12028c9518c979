"""``cepflow run`` on the local engine keeps pyarrow from importing pandas (a third of the
process's start), and what asks pyarrow for pandas explicitly still gets it afterwards; with
``--actions`` (the user's code in the process) pyarrow is left as it is. Each case is a fresh
interpreter: the test process itself has pandas loaded (Spark)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PATTERN = ("create schema A(key int);\ncreate schema B(key int);\n"
           "@Name('Pair') select a.key as key from pattern [every a=A -> b=B(b.key = a.key)];\n")


def _run_in_fresh_process(tmp_path: Path, *extra: str) -> dict[str, object]:
    """``cepflow run`` in a new interpreter; what it loaded, and pyarrow's pandas conversions
    after it."""
    (tmp_path / "p.epl").write_text(PATTERN)
    (tmp_path / "e.jsonl").write_text('{"type":"A","ts":0,"params":[1]}\n'
                                      '{"type":"B","ts":5,"params":[1]}\n')
    script = f"""
import json, sys
from cepflow.cli.main import app
sys.argv = ["cepflow", "run", {str(tmp_path / "p.epl")!r}, "-i", {str(tmp_path / "e.jsonl")!r},
            "-o", {str(tmp_path / "out.jsonl")!r}, "--no-progress", *{list(extra)!r}]
try:
    app()
except SystemExit as e:
    code = e.code
loaded = "pandas" in sys.modules
import pandas as pd, pyarrow as pa
frame = pa.table({{"x": [1.5, None]}}).to_pandas()
back = pa.Table.from_pandas(pd.DataFrame({{"y": [1.0, float("nan")]}}))
series = pa.array(pd.Series([2.0, None]))
print(json.dumps({{"code": code, "pandas_loaded": loaded, "frame": frame["x"].isna().tolist(),
                  "back_nulls": back.column("y").null_count, "series": series.to_pylist()}}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_local_run_does_not_import_pandas_and_pandas_works_after_it(tmp_path: Path) -> None:
    got = _run_in_fresh_process(tmp_path)
    assert got["code"] in (0, None)
    assert (tmp_path / "out.jsonl").read_text().count("\n") == 1
    assert got["pandas_loaded"] is False
    # what asks pyarrow for pandas explicitly imports it then, and converts as usual
    assert got["frame"] == [False, True]
    assert got["back_nulls"] == 1
    assert got["series"] == [2.0, None]


def test_with_actions_pyarrow_is_left_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "my_actions.py").write_text("")
    got = _run_in_fresh_process(tmp_path, "--actions", str(tmp_path / "my_actions.py"))
    assert got["code"] in (0, None)
    assert got["pandas_loaded"] is True
    assert got["series"] == [2.0, None]
