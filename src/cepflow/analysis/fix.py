"""``cepflow analyze --fix FILE``: the pattern set with priorities by level, written through the
pretty-printer — cepflow syntax (language/printer.py), or EPL for a ``.epl`` file
(language/epl_printer.py, ``@Priority(n)``). Several input files are written as one set."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from cepflow.analysis.analyzer import Analysis
from cepflow.language import ast
from cepflow.language.epl_printer import EplPrintError, format_epl
from cepflow.language.printer import format_module


class FixError(ValueError):
    """A fix that cannot be written (a cyclic set; a set EPL cannot say)."""


def fixed_module(a: Analysis) -> ast.Module:
    """The analysed set with every pattern's and statement's priority set by the plan."""
    if a.graph.cycles:
        raise FixError("the set has a cycle: no priority order exists")
    prio = a.plan.priorities
    decls = tuple(replace(d, priority=prio[d.name])  # (rules keep theirs)
                  if isinstance(d, ast.ComplexEventDecl | ast.WindowDecl) and d.name in prio
                  else d for d in a.pset.module.decls)
    return replace(a.pset.module, decls=decls)


def fixed_text(a: Analysis, epl: bool) -> str:
    """The fixed set as pattern text (EPL or cepflow syntax), with a header comment."""
    module = fixed_module(a)
    head = (f"// {', '.join(Path(f).name for f in a.pset.files)} with priorities by level "
            "(cepflow analyze --fix; docs/analysis.md)\n\n")
    if epl:
        try:
            return head + format_epl(module)
        except EplPrintError as e:
            raise FixError(f"{e} (write the fix with another suffix: cepflow syntax)") from None
    return head + format_module(module)


def write_fixed(a: Analysis, path: str | Path) -> Path:
    """Write the fixed set to ``path`` (EPL for ``.epl``, else cepflow syntax); the file
    appears only when complete."""
    path = Path(path)
    text = fixed_text(a, path.suffix.lower() == ".epl")
    tmp = path.with_name(f".{path.name}.part")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
