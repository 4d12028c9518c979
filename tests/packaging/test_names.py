"""One name, one thing (issue 20): two modules of src/cepflow share a file name only when they
are the same concept on two sides (a format's reader and writer; the local and the Spark replay
job), and no two public classes share a name (docs/architecture.md, "Names")."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "cepflow"

#: the same concept on two sides: inputs/ reads what outputs/ writes; replay.py is the local
#: file job, spark/replay.py the same job on Spark
PAIRS = {"csvfile.py", "files.py", "jsonl.py", "parquet.py", "records.py", "replay.py"}


def _modules() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"]


def test_module_names() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for p in _modules():
        by_name[p.name].append(str(p.relative_to(PACKAGE)))
    shared = {n: sorted(ps) for n, ps in by_name.items() if len(ps) > 1}
    unexplained = {n: ps for n, ps in shared.items() if n not in PAIRS}
    assert not unexplained, unexplained


def test_public_class_names() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for p in _modules():
        for node in ast.parse(p.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where[node.name].append(str(p.relative_to(PACKAGE)))
    shared = {n: ps for n, ps in where.items() if len(ps) > 1}
    assert not shared, shared
