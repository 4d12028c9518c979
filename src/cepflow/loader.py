"""From pattern text or file to a compiled :class:`Program`, with every problem located.

Parsing (syntax), checking (names and types) and compiling (what the algebra cannot express)
all report ``FILE:LINE:COL: message`` diagnostics through :class:`PatternSyntaxError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cepflow.compiler.automata import CompileError
from cepflow.compiler.normalize import NormalizationError
from cepflow.compiler.program import Program, compile_module
from cepflow.language import ast
from cepflow.language.checker import check
from cepflow.language.diagnostics import Diagnostic, PatternSyntaxError, sort_diagnostics
from cepflow.language.parser import parse, parse_warnings
from cepflow.language.source import read_source


def diagnose(module: ast.Module, functions: Mapping[str, Callable[..., Any]] | None = None,
             context: str | None = None) -> tuple[list[Diagnostic], Program | None]:
    """All diagnostics of a parsed module (warnings included) and, if none is an error, the
    compiled program."""
    diags = [*parse_warnings(module), *check(module)]
    if any(d.severity == "error" for d in diags):
        return sort_diagnostics(diags), None
    try:
        program = compile_module(module, functions, context)
    except (CompileError, NormalizationError) as e:
        line, col = e.loc or (1, 1)
        who = getattr(e, "pattern", None)
        msg = f"in {who}: {e.args[0]}" if who else str(e.args[0])
        diags.append(Diagnostic(module.source, line, col, msg))
        return sort_diagnostics(diags), None
    return sort_diagnostics(diags), program


def load_module(module: ast.Module, functions: Mapping[str, Callable[..., Any]] | None = None,
                context: str | None = None) -> Program:
    """Check and compile a module; raise PatternSyntaxError listing every error."""
    diags, program = diagnose(module, functions, context)
    if program is None:
        raise PatternSyntaxError([d for d in diags if d.severity == "error"])
    return program


def parse_path(path: str | Path) -> ast.Module:
    """Parse a pattern file by its suffix: ``.epl`` is Esper EPL, anything else cepflow/VEPL.

    Bytes that are not text are a located PatternSyntaxError (language/source.py)."""
    p = Path(path)
    text = read_source(p)
    if p.suffix.lower() == ".epl":
        from cepflow.language.epl import parse_epl

        return parse_epl(text, str(p))
    return parse(text, str(p))


def load(source: str | Path, functions: Mapping[str, Callable[..., Any]] | None = None,
         context: str | None = None) -> Program:
    """Load patterns from a file path (``.epl``: Esper EPL) or from pattern text (if it is not
    an existing path)."""
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source
                                    and _is_file(source)):
        module = parse_path(source)
    else:
        module = parse(str(source))
    return load_module(module, functions, context)


def _is_file(text: str) -> bool:
    """True if ``text`` names an existing file (pattern text too long for a path is not one)."""
    try:
        return Path(text).is_file()
    except OSError:
        return False
