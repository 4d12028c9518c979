"""Event values as JSON data when a float is one JSON has no number for (NaN, ±Infinity).

The readers reject such values (docs/formats.md, "NaN and Infinity"), but an event given
through the Python API or a computed value may hold one. Two encodings, both valid JSON:

* :func:`as_text` — for outputs: the string ``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` (as
  Protocol Buffers' JSON mapping writes them), readable by any JSON reader;
* :func:`tagged` / :func:`untagged` — for saved engine state, which must come back exactly (a
  string parameter ``"NaN"`` stays a string): the object ``{"$float": "NaN"}``, turned back into
  the float on restore (docs/state-format.md).
"""

from __future__ import annotations

import math
from typing import Any

from cepflow.events.event import NONFINITE_TEXT

#: the key of a tagged float
TAG = "$float"
_FLOATS = {text: float(name) for name, text in NONFINITE_TEXT.items()}


def _walk(value: Any, replace: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else replace(NONFINITE_TEXT[repr(value)])
    if isinstance(value, dict):
        return {k: _walk(v, replace) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(v, replace) for v in value]
    if isinstance(value, set | frozenset):  # (as JSON writes a set: a list in repr order)
        return [_walk(v, replace) for v in sorted(value, key=repr)]
    return value


def as_text(value: Any) -> Any:
    """``value`` (dicts, lists, tuples and sets walked) with every NaN or infinity as its
    text."""
    return _walk(value, str)


def tagged(value: Any) -> Any:
    """``value`` with every NaN or infinity as ``{"$float": text}``."""
    return _walk(value, lambda text: {TAG: text})


def untagged(value: Any) -> Any:
    """The inverse of :func:`tagged`."""
    if isinstance(value, dict):
        if len(value) == 1 and TAG in value:
            return _FLOATS[value[TAG]]
        return {k: untagged(v) for k, v in value.items()}
    if isinstance(value, list):
        return [untagged(v) for v in value]
    return value
