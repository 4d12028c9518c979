"""One subnet per data-window statement (seed 004 §III.B.2, Fig. 8; docs/windows.md)."""

from __future__ import annotations

from cepflow.petri.translate.builder import Builder, Problem
from cepflow.windows.statement import WindowStatement


class WindowNet:
    """The subnet of one window statement; ``index`` orders it among the components."""

    def __init__(self, b: Builder, statement: WindowStatement, index: int) -> None:
        self.b = b
        self.statement = statement
        self.index = index
        self.name = statement.name

    def check(self) -> list[Problem]:
        return [Problem(self.name, "data window", "window statements are not translated yet",
                        self.statement.loc)]

    def build(self) -> None:
        raise NotImplementedError
