"""Records that give their parameters as a ``params`` list (the form of the examples' event
files, contractions' ``patients.jsonl``) read column-wise (cepflow.inputs.columnar
``_listed_records``): the columnar fast path answers only when the record reader accepts every
record alike — the same events, values with their Python types, ids, times, order — and a
part holding a record it rejects takes the located reader (cepflow.inputs.batched): the same
events and rejections with their lines. A parameter named like an envelope field (contractions'
``Patient(ts, id, …)``) is the list's value, not the envelope's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.inputs.test_columnar_reader import FIXTURE, exact, lines
from tests.inputs.test_replay_columns import _outputs

from cepflow.events.event import EventType, ParamSpec, SideChannel
from cepflow.inputs import batched, read_jsonl
from cepflow.inputs.columnar import arity_of, decode, read_columns
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module

SCHEMAS = {
    "Patient": EventType("Patient", (ParamSpec("ts", "int", "Integer"),
                                     ParamSpec("id", "str", "String"),
                                     ParamSpec("d", "int", "Integer"))),
    "Temp": EventType("Temp", (ParamSpec("sensor", "str", "String"),
                               ParamSpec("value", "float", "Double"),
                               ParamSpec("ok", "bool", "Boolean"))),
    "Door": EventType("Door", (ParamSpec("room", "any", "Room"),)),
}
ARITY = arity_of(SCHEMAS)
ARITIES = {t: len(s.params) for t, s in SCHEMAS.items()}


def compare(content: bytes, tmp_path: Path, **opts: Any) -> bool:
    """The fast path's answer against the reader's; True if it answered."""
    path = tmp_path / "f.jsonl"
    path.write_bytes(content)
    side = SideChannel()
    want = list(read_jsonl(path, SCHEMAS, side, **opts))
    table = read_columns(content, ".jsonl", SCHEMAS, ARITY, str(path), **opts)
    if table is None:
        return False
    assert not side.malformed, f"fast path accepted a file the reader rejects: {side.malformed}"
    got = [e for b in table.to_batches() for e in decode(b, ARITIES, ARITY)]
    assert exact(got) == exact(want)
    return True


P = {"type": "Patient", "ts": 60000, "params": [1, "Alice", 10]}


@pytest.mark.parametrize("content", [
    lines(P, {**P, "params": [1, "Barbara", 20]}, {**P, "ts": 540000, "params": [9, "A", 0]}),
    lines({**P, "id": "e1"}, {**P, "id": "e2"}),  # (the envelope's id beside the param's)
    lines({**P, "id": 7}),
    lines(P, {"type": "Temp", "ts": 1, "params": ["s", 1.5, True]},
          {"type": "Door", "ts": 2, "params": ["r"]}, {"type": "Door", "ts": 3, "params": ["3"]}),
    lines({"type": "Temp", "ts": 1, "params": ["s", 1.5, False]},
          {"type": "Temp", "ts": 2, "params": ["t", 2, True]}),  # (an int for a float)
    lines({"type": "Temp", "ts": 1, "params": ["\u00e9\U0001f600", -0.0, True]}),
    lines(P).replace(b"\n", b"\r\n"),
    b"\xef\xbb\xbf" + lines(P),
    lines({"type": "Door", "ts": 1, "params": ["a,b"]}, {"type": "Door", "ts": 2,
                                                        "params": ['"params"]']}),
])
def test_params_lists_are_read_column_wise(tmp_path: Path, content: bytes) -> None:
    assert compare(content, tmp_path)


@pytest.mark.parametrize("content", [
    lines({**P, "params": [1, "Alice"]}),  # too short: rejected (strict)
    lines({**P, "params": [1, "Alice", 10, 11]}),  # too long: rejected
    lines({**P, "d": 3}),  # named beside the list: rejected
    lines({**P, "extra": 3}),  # an unknown field: rejected
    lines({**P, "params": [1, "Alice", [10]]}),  # a list in the list: rejected
    lines({**P, "params": [1, "Alice", {"x": 1}]}),
    lines({**P, "params": "1,Alice,10"}),  # not a list: an unknown field
    lines({**P, "params": [1.5, "Alice", 10]}),  # a float for an int: rejected
    lines({**P, "params": [True, "Alice", 10]}),  # a boolean for an int: rejected
    lines({**P, "params": [1, 2, 10]}),  # a number for a text: rejected
    lines({**P, "params": [1, None, 10]}),  # a null: a value the reader decides
    lines({**P, "ts": 1.5}), lines({**P, "ts": "2024-01-01T00:00:00Z"}),
    lines({**P, "type": "Nope"}),
    lines(P, {"type": "Door", "ts": 1, "room": 3}),  # (both forms in one file: the reader)
    lines({"type": "Door", "ts": 1, "params": [1]}, {"type": "Door", "ts": 2, "params": [1.5]}),
    lines({"type": "Door", "ts": 1, "params": [1]}, {"type": "Door", "ts": 2, "params": ["1"]}),
    # (an ``any`` parameter's text beside a number: one column, as pyarrow reads it — the
    # reader decides, as for named fields)
    lines(P, {"type": "Door", "ts": 2, "params": ["r"]}, {"type": "Door", "ts": 3, "params": [3]}),
    lines({"type": "Door", "ts": 1, "params": [1]}, {"type": "Door", "ts": 2, "params": [True]}),
    lines({"type": "Temp", "ts": 1, "params": ["s", float("nan"), True]}),
    lines({**P, "id": "a"}, {**P, "id": "a"}),  # a repeated id: the second rejected
    b'{"type":"Patient","ts":1,"params":[1,"A",2],"params":[1,"A",2]}\n',
    b'{"type":"Patient","ts":1,"params":[1,"A",2]}{"type":"Patient","ts":2,"params":[1,"A",2]}\n',
    b'{"type":"Patient","ts":1,"params":[1,"A",2]},{"type":"Patient","ts":2,"params":[1,"A",2]}\n',
    b'{"type":"Door","ts":1,"params":["}\n{"]}\n',
    b'{"type":"Door","ts":1,"params":[{}\n{}]}\n',
    b'{"type":"Door","ts":1,"params":["\\ud800"]}\n',
    ('{"type":"Door","ts":1,"params":[' + "9" * 30 + "]}\n").encode(),
    b'{"type":"Door","ts":1,"params":[1]}\n\n',
])
def test_params_lists_the_reader_decides(tmp_path: Path, content: bytes) -> None:
    assert not compare(content, tmp_path)


def test_padding_and_unknown_fields_are_the_readers(tmp_path: Path) -> None:
    """A short list padded with nulls (``strict_params=False``) and a list beside an unknown
    field the options ignore: the reader decides (the fast path does not answer, and the
    reader accepts)."""
    assert not compare(lines({**P, "params": [1, "Alice"]}), tmp_path, strict_params=False)
    assert not compare(lines({**P, "x": 1}), tmp_path, unknown_fields="ignore")


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=3),
                    st.sampled_from([1.0, -0.0, 0, "1", "", "\u2028", "\\", '"', "]"]))
RECORDS = st.fixed_dictionaries(
    {"type": st.sampled_from(["Patient", "Patient", "Temp", "Door", "Nope", 3])},
    optional={"ts": st.one_of(st.integers(-2**40, 2**40), st.floats(-1e6, 1e6)),
              "id": st.one_of(st.text(max_size=2), st.integers(0, 5)),
              "params": st.one_of(st.lists(SCALARS, max_size=4), SCALARS),
              "d": SCALARS})
#: records most of which the reader accepts
GOOD = st.one_of(
    st.builds(lambda ts, who, d: {"type": "Patient", "ts": ts, "params": [ts // 60000, who, d]},
              st.integers(0, 10**7), st.sampled_from(["Alice", "Bob", "é"]),
              st.integers(0, 60)),
    st.builds(lambda ts, s, v, ok: {"type": "Temp", "ts": ts, "params": [s, v, ok]},
              st.integers(0, 10**7), st.text(max_size=2), st.sampled_from([1.5, 2, -0.0]),
              st.booleans()))


@settings(max_examples=150, deadline=None, suppress_health_check=FIXTURE)
@given(st.lists(st.one_of(RECORDS, GOOD, GOOD), max_size=10), st.booleans())
@example([{"type": "Patient", "ts": 1, "params": [0, "A", 1]}], True)
def test_params_lists_property(tmp_path: Path, records: list[Any], strict: bool) -> None:
    compare(lines(*records), tmp_path, strict_params=strict)


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURE)
@given(st.lists(GOOD, min_size=1, max_size=10))
def test_clean_params_lists_are_fast(tmp_path: Path, records: list[Any]) -> None:
    """A file every record of which gives a list of scalars the reader accepts takes the fast
    path (Temp's value column: 1.5 and 2 read as doubles, the reader's floats)."""
    assert compare(lines(*records), tmp_path)


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURE)
@given(st.lists(st.one_of(GOOD, GOOD, GOOD, RECORDS), min_size=1, max_size=30),
       st.integers(40, 400))
def test_parts_with_a_bad_record_take_the_located_reader(tmp_path: Path, records: list[Any],
                                                         block: int) -> None:
    """The file read in parts (cepflow.inputs.batched, blocks of ``block`` bytes): each part
    column-wise or, holding a record the reader rejects, by the located reader — the same
    events and rejections (reason, line, field) as the reader over the whole file."""
    # (in time order: the parts are ordered, the reader's events are not)
    records = [{**r, "ts": i} if "ts" in r else r for i, r in enumerate(records)]
    path = tmp_path / "p.jsonl"
    path.write_bytes(lines(*records))
    side_a, side_b = SideChannel(), SideChannel()
    layout = batched.Layout.of(SCHEMAS)
    with mock.patch.object(batched, "BLOCK_BYTES", block):
        got = [e for p in batched.ordered_parts([path], layout, side_a)
               for e in p.event_list(layout)]
    want = list(read_jsonl(path, SCHEMAS, side_b))
    assert exact(got) == exact(want)
    assert side_a.items() == side_b.items()


CONTRACTIONS = Path(__file__).resolve().parents[2] / "examples" / "contractions"


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from([0, 0, 1, 60_000]), st.sampled_from("ABC"),
                          st.integers(15, 45), st.sampled_from(["", "", "", "", "short",
                                                                "text", "json"])),
                min_size=1, max_size=60),
       st.integers(60, 600), st.sampled_from(["jsonl", "parquet"]))
def test_contractions_column_route_equals_record_route(tmp_path_factory, spec, block, fmt
                                                       ) -> None:
    """contractions.epl (Duration's pair with a guard reading the first stage, Counter's fully
    aggregated sliding window nobody reads: its rows not made) over a random ``params``-list
    file with bad records, cut into parts anywhere: the column route writes what the record
    route writes — matches, rejections (with their lines), counts."""
    tmp = tmp_path_factory.mktemp("contr")
    out, ts = [], 60_000
    for dt, who, d, bad in spec:
        ts += dt
        params: list[Any] = [ts // 60_000, who, d]
        if bad == "short":
            params.pop()
        elif bad == "text":
            params[2] = str(d)
        out.append('{"type": "Patient", "ts": ' if bad == "json" else
                   json.dumps({"type": "Patient", "ts": ts, "params": params}))
    path = tmp / "p.jsonl"
    path.write_text("\n".join(out) + "\n")
    program = load_module(parse_epl((CONTRACTIONS / "contractions.epl").read_text()))
    with mock.patch.object(batched, "BLOCK_BYTES", block):
        by_columns = _outputs(tmp, "cols", [path], program, fmt)
    by_records = _outputs(tmp, "recs", [path], program, fmt, columns=False)
    assert by_columns == by_records
