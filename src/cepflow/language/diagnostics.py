"""Located messages about pattern files, shared by the parser and the checker.

A diagnostic prints like a compiler message (``FILE:LINE:COL: error: message``) so editors and
CI logs can jump to it; lines and columns are 1-based.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Diagnostic:
    """One error or warning at a (1-based) line and column of a pattern file."""

    file: str
    line: int
    col: int
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: {self.severity}: {self.message}"

    @property
    def is_error(self) -> bool:
        """True for errors, False for warnings."""
        return self.severity == "error"


def sort_diagnostics(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics in file order (line, then column), errors before warnings at one place."""
    return sorted(diagnostics, key=lambda d: (d.line, d.col, d.severity != "error", d.message))


class DiagnosticError(Exception):
    """An error carrying located diagnostics (sorted into file order), one per line of its text."""

    def __init__(self, diagnostics: Iterable[Diagnostic]) -> None:
        self.diagnostics: list[Diagnostic] = sort_diagnostics(diagnostics)
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(d) for d in self.diagnostics)


class PatternSyntaxError(DiagnosticError):
    """Raised by the parser with every syntax error it found (not only the first one)."""
