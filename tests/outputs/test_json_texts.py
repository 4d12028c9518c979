"""``json_texts`` of a string column is ``json.dumps`` of each text (null for null), whatever
the texts hold, for slices of a column and both Arrow string types: its quick check of the
data buffer may only ever skip the escape search where no text needs an escape."""

from __future__ import annotations

import json

import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cepflow.outputs.encoding import dumps, json_texts

#: texts that need escapes, those that do not, and the bytes at the edges of each class
_CHARS = st.sampled_from(['"', "\\", "\x00", "\x1f", " ", "~", "\x7f", "é", "€", "a", "7"])
TEXTS = st.lists(st.none() | st.text(_CHARS, max_size=4) | st.text(max_size=4), max_size=12)


@settings(deadline=None)
@given(TEXTS, st.integers(0, 12), st.integers(0, 12), st.booleans(), st.booleans())
@example(["7", 'a"b', "9"], 0, 1, False, False)  # a quote outside the slice: no escape in it
@example(["7", 'a"b', "9"], 1, 1, False, False)  # the quote inside it
@example(["é"], 0, 1, True, False)  # ensure_ascii escapes what is not printable ASCII
@example(["\x7f"], 0, 1, True, True)
def test_json_texts_equal_json_dumps(texts, start, length, ascii_only, large) -> None:
    column = pa.array(texts, pa.large_string() if large else pa.string())
    part = column.slice(min(start, len(texts)), length)
    expected = [None if v is None else json.dumps(v, ensure_ascii=ascii_only)
                for v in part.to_pylist()]
    got = json_texts(part, ascii_only=ascii_only).to_pylist()
    assert got == [("null" if e is None else e) for e in expected]


FLOATS = st.lists(st.none() | st.floats() | st.sampled_from([0.0, -0.0, 1e16, 1e-7, 0.1, 2.5]),
                  max_size=12)


@settings(deadline=None)
@given(FLOATS, st.booleans())
@example([float("nan"), float("inf"), -0.0, None], True)
@example([float("nan"), float("-inf"), 1e300], False)
def test_json_texts_of_floats_equal_the_encoders(values, ascii_only) -> None:
    """A double column: each finite value by its repr (the encoder's own text), the others as
    the encoder of ``ascii_only`` writes them (cepflow's ``dumps`` writes NaN and the
    infinities as text), null for null."""
    expected = ["null" if v is None else json.dumps(v, ensure_ascii=True) if ascii_only
                else dumps(v) for v in values]
    assert json_texts(pa.array(values, pa.float64()), ascii_only=ascii_only).to_pylist() \
        == expected
