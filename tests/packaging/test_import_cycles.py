"""No import cycle anywhere in src/ (issue 20): the import graph of the package, read with the
standard library's ast — imports inside functions and under ``if TYPE_CHECKING`` included, since
a cycle hidden in a function is still a cycle of the design — must be acyclic."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

SRC = Path(__file__).resolve().parents[2] / "src"


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def import_graph() -> nx.DiGraph:
    """Module -> the modules it imports (``from pkg import sub`` is an edge to ``pkg.sub``,
    not to ``pkg``: importing a submodule does not need the package's own names)."""
    mods = _modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(mods)
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in mods else base)
            graph.add_edges_from((name, t) for t in targets if t in mods and t != name)
    return graph


def test_the_graph_is_read() -> None:
    graph = import_graph()
    assert graph.has_edge("cepflow.runtime.engine", "cepflow.runtime.matcher")
    assert graph.has_edge("cepflow.cli.main", "cepflow.replay")


def test_no_import_cycle() -> None:
    cycles = sorted(sorted(c) for c in nx.strongly_connected_components(import_graph())
                    if len(c) > 1)
    assert cycles == [], f"import cycles: {cycles}"
