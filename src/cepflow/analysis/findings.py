"""What an analysis reports: located findings, each with a severity, a code, one sentence and a
suggested fix (docs/analysis.md lists every code)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning", "info"]
#: order in listings: errors first
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Location:
    """FILE:LINE:COL of a finding (1-based; line 0 when the place is unknown)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Finding:
    """One problem or remark about a pattern set."""

    severity: Severity
    code: str
    location: Location
    message: str
    fix: str

    def to_json(self) -> dict[str, str]:
        return {"severity": self.severity, "code": self.code, "location": str(self.location),
                "message": self.message, "fix": self.fix}

    def __str__(self) -> str:
        return f"{self.location}: {self.severity}: {self.message} [{self.code}]"


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Errors first, then by file, line and column."""
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], f.location.file,
                                           f.location.line, f.location.col, f.code,
                                           f.message))
