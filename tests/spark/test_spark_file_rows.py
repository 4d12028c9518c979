"""The file parser reads a local file itself or takes the bytes Spark shipped: the same rows
either way (pure Python, no Spark session needed)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from cepflow.inputs.columnar import arity_of
from cepflow.loader import load
from cepflow.spark.dataframes import file_parser
from cepflow.spark.partitioning import plan

PROGRAM = """
atomicEvent A(k: Integer)
atomicEvent B(k: Integer)
complexEvent P(k: Integer) { as A(k) -> B(k) }
"""


def _rows(batch: pa.RecordBatch) -> list[dict]:
    prog = load(PROGRAM)
    parse = file_parser(prog, plan(prog), arity_of(prog.schemas), {})
    return [r for b in parse(iter([batch])) for r in b.to_pylist()]


def test_local_read_equals_shipped_content(tmp_path: Path) -> None:
    good = tmp_path / "a.jsonl"
    good.write_text('{"type": "A", "ts": 1, "k": 5}\n{"type": "B", "ts": 2, "k": 5}\n')
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"type": "A", "ts": 3, "k": "x"}\n{"type": "B", "ts": 4, "k": 6}\n')
    paths = [f"file:{good}", f"file://{bad}"]
    shipped = pa.RecordBatch.from_pydict({
        "path": paths, "content": [good.read_bytes(), bad.read_bytes()]})
    local = pa.RecordBatch.from_pydict({"path": paths})
    rows = _rows(local)
    assert rows == _rows(shipped)
    kinds = [(r["kind"], r["ts"], r["source"]) for r in rows]
    assert ("event", 1.0, None) in kinds and ("event", 4.0, None) in kinds
    assert ("rejected", None, str(bad)) in kinds  # the located reader's side channel


class _Files:
    """Stands for the binaryFile DataFrame: records the columns selected."""

    def select(self, *cols: str) -> tuple[str, ...]:
        return cols


def test_only_local_sources_drop_the_content_column() -> None:
    from cepflow.spark.dataframes import file_rows

    files = _Files()
    for local in ("/data/in", "in", "file:/data/in", "file:///data/in", "C:/data/in"):
        assert file_rows(files, local) == ("path",), local  # type: ignore[arg-type]
    for remote in ("hdfs:/data/in", "hdfs://nn/data", "s3a://b/in", "dbfs:/mnt/in"):
        assert file_rows(files, remote) is files, remote  # type: ignore[arg-type]
