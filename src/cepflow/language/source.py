"""Reading a pattern, query or metamodel file as text, with a located error for bad bytes.

Files are UTF-8; a UTF-8 byte order mark is skipped, and a file that starts with a UTF-16 or
UTF-32 byte order mark is decoded accordingly (what editors on Windows write). Bytes that are
not valid in the encoding, and NUL characters (a binary file, or UTF-16 without a byte order
mark), are reported as ``FILE:LINE:COL: error: …`` rather than as a decoding traceback.
"""

from __future__ import annotations

import codecs
from pathlib import Path

from cepflow.language.diagnostics import Diagnostic, DiagnosticError, PatternSyntaxError
from cepflow.language.limits import MAX_SOURCE_SIZE, size_error

__all__ = ["decode_source", "read_source"]

#: byte order marks, longest first (the UTF-32 little-endian one starts like UTF-16's)
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def read_source(path: str | Path, error: type[DiagnosticError] = PatternSyntaxError) -> str:
    """The text of the file at ``path``; raise ``error`` (a located diagnostic) if its bytes
    are not text or there are more than MAX_SOURCE_SIZE of them (never reading more, even
    from a device or a pipe). OSError (missing file, permissions) passes through."""
    with Path(path).open("rb") as f:
        data = f.read(MAX_SOURCE_SIZE + 1)
    too_large = size_error(len(data), str(path), "bytes")
    if too_large is not None:
        raise error([too_large])
    return decode_source(data, str(path), error)


def decode_source(data: bytes, source: str,
                  error: type[DiagnosticError] = PatternSyntaxError) -> str:
    """Decode a file's bytes (see the module docstring); ``source`` names it in messages."""
    encoding, skip = "utf-8", 0
    for bom, name in _BOMS:
        if data.startswith(bom):
            encoding, skip = name, len(bom)
            break
    body = data[skip:]
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as e:
        before = body[: e.start].decode(encoding, errors="replace")
        line, col = _position(before)
        bad = " ".join(f"0x{b:02X}" for b in body[e.start : min(e.end, e.start + 4)])
        raise error([Diagnostic(source, line, col, f"invalid {_label(encoding)} ({bad}): the "
                                f"file must be UTF-8 text")]) from None
    nul = text.find("\0")
    if nul >= 0:
        line, col = _position(text[:nul])
        raise error([Diagnostic(source, line, col, "NUL character: not a text file (or "
                                "UTF-16 without a byte order mark); save it as UTF-8")])
    return text


def _label(encoding: str) -> str:
    return "UTF-8 byte" if encoding == "utf-8" else f"{encoding.upper()[:6]} data"


def _position(before: str) -> tuple[int, int]:
    """1-based line and column just after ``before``."""
    line = before.count("\n") + 1
    return line, len(before) - (before.rfind("\n") + 1) + 1
