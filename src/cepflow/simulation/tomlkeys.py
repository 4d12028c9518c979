"""Where a key of a TOML file is written: line and column for located error messages.

:mod:`tomllib` parses a document into plain dicts and lists without positions, so a model
error would only be able to name its key. This module scans the text once, line by line, and
records the position of every table header (``[a.b]``, ``[[a]]`` — the n-th ``[[a]]`` is the
path ``("a", n)``), of every ``key = value`` line and of the keys of inline tables on that
line. It reads only what tomllib has already accepted, and it is best effort: a key it cannot
place (inside a multi-line array, say) falls back to its nearest enclosing key.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

Path = tuple[str | int, ...]

_BARE = r"[A-Za-z0-9_-]+"
_KEY = rf'(?:{_BARE}|"[^"\\]*"|\'[^\']*\')'
_DOTTED = rf"{_KEY}(?:\s*\.\s*{_KEY})*"
_HEADER_RE = re.compile(rf"\s*(\[\[?)\s*({_DOTTED})\s*\]\]?")
_ASSIGN_RE = re.compile(rf"\s*({_DOTTED})\s*=")
_INLINE_KEY_RE = re.compile(rf"[{{,]\s*({_DOTTED})\s*=")


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(p.strip().strip("\"'") for p in re.findall(_KEY, dotted))


class KeyPositions:
    """Positions of the keys of one TOML text (1-based line and column)."""

    def __init__(self, text: str) -> None:
        self._pos: dict[Path, tuple[int, int]] = {}
        counts: dict[tuple[str | int, ...], int] = {}
        table: Path = ()
        # the current table of each array-of-tables prefix, so that [a.b] after the n-th [[a]]
        # means ("a", n, "b")
        arrays: dict[tuple[str, ...], int] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            stripped = line.lstrip()
            if not stripped or stripped.startswith("#"):
                continue
            header = _HEADER_RE.match(line)
            if header and stripped.startswith("["):
                names = _parts(header.group(2))
                path = self._resolve(names, arrays)
                if header.group(1) == "[[":
                    index = counts.get(path, 0)
                    counts[path] = index + 1
                    arrays[names] = index
                    path = (*path, index)
                table = path
                self._pos.setdefault(table, (number, line.index("[") + 1))
                continue
            assign = _ASSIGN_RE.match(line)
            if not assign:
                continue
            key_path = (*table, *_parts(assign.group(1)))
            self._pos.setdefault(key_path, (number, assign.start(1) + 1))
            rest_at = assign.end()
            for inner in _INLINE_KEY_RE.finditer(line, rest_at):
                self._pos.setdefault((*key_path, *_parts(inner.group(1))),
                                     (number, inner.start(1) + 1))

    @staticmethod
    def _resolve(names: tuple[str, ...], arrays: dict[tuple[str, ...], int]) -> Path:
        """A header's path with the array-of-tables indices its prefixes refer to."""
        out: list[str | int] = []
        for i, name in enumerate(names):
            out.append(name)
            prefix = names[: i + 1]
            if prefix in arrays and i + 1 < len(names):
                out.append(arrays[prefix])
        return tuple(out)

    def find(self, path: Sequence[str | int]) -> tuple[int, int]:
        """The position of ``path`` or of its longest prefix that was found; (1, 1) if none."""
        key = tuple(path)
        while key:
            if key in self._pos:
                return self._pos[key]
            key = key[:-1]
        return (1, 1)
