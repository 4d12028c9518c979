"""From pattern text or file to a compiled :class:`Program`, with every problem located.

Parsing (syntax), checking (names and types) and compiling (what the algebra cannot express)
all report ``FILE:LINE:COL: message`` diagnostics through :class:`PatternSyntaxError`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
    return _parse_text(read_source(p), p)


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


def diagnose_paths(paths: Sequence[str | Path], context: str | None = None
                   ) -> tuple[list[Diagnostic], Program | None]:
    """Like :func:`diagnose` for a pattern set written in several files of one language (an
    application and the properties a simulation checks, say): they are read as one module,
    their text in the order given, and every diagnostic names its own file and line.

    Each file is parsed alone first, so a syntax error is reported in its file even when it
    would change how the next file reads; names may refer across files. Raises
    PatternSyntaxError for syntax errors, OSError for a file that cannot be read."""
    if not paths:
        raise ValueError("no pattern file given")
    if len({Path(p).suffix.lower() == ".epl" for p in paths}) > 1:
        raise PatternSyntaxError([Diagnostic(str(paths[-1]), 1, 1, "a pattern set is written "
                                             "in one language: all .epl (Esper EPL) or none")])
    if len(paths) == 1:
        return diagnose(parse_path(paths[0]), context=context)
    texts, errors = [], []
    for p in paths:
        text = read_source(p)
        texts.append(text if text.endswith("\n") else text + "\n")
        try:
            _parse_text(text, Path(p))
        except PatternSyntaxError as e:
            errors.extend(e.diagnostics)
    if errors:
        raise PatternSyntaxError(errors)
    starts = [0]
    for text in texts:
        starts.append(starts[-1] + text.count("\n"))

    def placed(d: Diagnostic) -> Diagnostic:
        i = max(k for k in range(len(paths)) if starts[k] < d.line or k == 0)
        return Diagnostic(str(paths[i]), d.line - starts[i], d.col, d.message, d.severity)

    try:
        module = _parse_text("".join(texts), Path(paths[0]))
    except PatternSyntaxError as e:
        raise PatternSyntaxError([placed(d) for d in e.diagnostics]) from None
    diags, program = diagnose(module, context=context)
    return [placed(d) for d in diags], program


def _parse_text(text: str, path: Path) -> ast.Module:
    if path.suffix.lower() == ".epl":
        from cepflow.language.epl import parse_epl

        return parse_epl(text, str(path))
    return parse(text, str(path))
