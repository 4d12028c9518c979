"""``match_lines`` writes one join per line (the pattern's text once when every row has the
same, the events' ids joined by ``","`` when none needs an escape, the writer's newline folded
in): each line must still be ``dumps`` of the row's record followed by the end asked for —
whatever the patterns, ids (texts needing escapes, empty lists) and whatever slice or chunks
of rows the writer is given."""

from __future__ import annotations

import json

import pyarrow as pa
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cepflow.outputs.encoding import dumps
from cepflow.outputs.records import MATCH_SCHEMA, REJECTED_SCHEMA, match_lines, rejected_lines

#: texts that need escapes, those that do not, and the bytes at the edges of each class
_CHARS = st.sampled_from(['"', "\\", "\x00", "\x1f", " ", "~", "\x7f", "é", "€", "a", "7"])
_TEXT = st.text(_CHARS, max_size=4) | st.text(max_size=3)
#: an id list: mostly plain numbers, as the file job writes them, sometimes anything
_IDS = st.lists(st.integers(0, 10**6).map(str) | _TEXT, max_size=4)
#: pattern names: one for every row (a file of one statement) or several
_PATTERNS = st.sampled_from(["P", "Pair", "Sequence", "Q\"x", "", "é"]) | _TEXT

ROWS = st.lists(st.tuples(_PATTERNS, st.integers(-10**12, 10**12), _IDS), max_size=10)


def _batch(rows: list[tuple[str, int, list[str]]]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(
        [{"pattern": p, "ts": ts, "params": dumps({"i": i}), "events": ids}
         for i, (p, ts, ids) in enumerate(rows)], schema=MATCH_SCHEMA)


def _expected(batch: pa.RecordBatch | pa.Table, end: str) -> list[str]:
    return [dumps({"pattern": r["pattern"], "ts": r["ts"], "params": json.loads(r["params"]),
                   "events": r["events"]}) + end for r in batch.to_pylist()]


@settings(deadline=None, max_examples=300)
@given(ROWS, st.booleans(), st.integers(0, 10), st.integers(0, 10), st.sampled_from(["", "\n"]))
@example([("P", 1, ["1", "2"]), ("P", 2, ["3"])], False, 0, 10, "\n")  # the usual batch
@example([("P", 1, ["1"]), ("P", 2, [])], False, 0, 10, "\n")  # an empty list among them
@example([("P", 1, ['a"'])], False, 0, 10, "")  # an id needing an escape
@example([("P", 1, ["1"]), ("Q", 2, ["2"])], False, 0, 10, "")  # two patterns, one width
@example([("Q", 1, ['"']), ("P", 2, ["2"])], False, 1, 10, "")  # the escape before the slice
@example([("PP", 1, ["1"]), ("P", 2, ["2"]), ("P", 3, ["3"])], False, 1, 2, "")
@example([("P", 1, ["1"]), ("Q", 2, ["2"])], True, 0, 10, "\n")  # two chunks
def test_match_lines_are_dumps_of_each_record(rows, chunked, start, length, end) -> None:
    batch = _batch(rows)
    part: pa.RecordBatch | pa.Table = batch.slice(min(start, len(rows)), length)
    if chunked and part.num_rows > 1:  # (a table of two chunks, as a reader may hand one)
        half = part.num_rows // 2
        part = pa.Table.from_batches([part.slice(0, half), part.slice(half)])
    assert match_lines(part, end).to_pylist() == _expected(part, end)


def test_rejected_lines_end_as_asked() -> None:
    rows = pa.RecordBatch.from_pylist([{"kind": "late", "source": "f", "location": "line 2",
                                        "reason": 'a "b"', "field": None, "record": "{}"}],
                                      schema=REJECTED_SCHEMA)
    line = ('{"kind":"late","source":"f","location":"line 2","reason":"a \\"b\\"",'
            '"field":null,"record":"{}"}')
    assert rejected_lines(rows).to_pylist() == [line]
    assert rejected_lines(rows, "\n").to_pylist() == [line + "\n"]
