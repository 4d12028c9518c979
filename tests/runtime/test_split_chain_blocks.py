"""The program split's VEPL chains' matches as column blocks (kernels/column_blocks.py): the
chain kernel patterns' ``ChainMatches`` and, over the derived stream in input rows, those of
chains over their output whose parameters are their key — over test_split_chains' random
programs, Arrow batches cut anywhere and a save/restore, against the split without blocks
(tests/esper/test_split_column_blocks.py's ``check_blocks``); ho_chain hand-derived."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_chain_alternatives import DECLS, columns, compile_
from test_chain_alternatives import specs as chain_specs
from test_split_chains import programs as chain_programs
from test_split_chains import runnable
from tests.esper.test_split_column_blocks import check_blocks, table_of

from cepflow.events.event import Event
from cepflow.loader import load
from cepflow.runtime.engine import Engine
from cepflow.runtime.rows import ObjectMatches
from cepflow.spark.columns import encode_match_table


def vepl_events(spec: list, _restore_at: int) -> list:
    """test_chain_alternatives' events (type, key, value, time step), numbered as read."""
    ts, out = 0, []
    for i, (t, k, v, dt) in enumerate(spec):
        ts += dt
        out.append(Event(t, (k, v), ts, id=i, seq=i))
    return out


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(chain_programs().filter(runnable), chain_specs,
       st.lists(st.integers(0, 30), max_size=4), st.integers(0, 80))
def test_chains_over_chain_output_in_blocks(bodies, spec, cuts, restore_at) -> None:
    """test_split_chains' VEPL programs: chain kernel patterns (alternatives, NOTs, trees,
    keyed and not, windows) and chains over their output (the derived type at any stage,
    twice, beside an input alternative, in a NOT, windows): their ChainMatches blocks — over
    the derived stream in input rows when their parameters are the key — against the
    objects."""
    check_blocks(compile_(bodies), spec, cuts, restore_at, vepl_events, columns)


def test_ho_chain_in_blocks() -> None:
    """ho_chain (``P1(s): P0(s) -> C(s, _)`` over ``P0(s): A(s, _) -> B(s, _)``), hand-derived
    over one batch: A 0 (k 0), B 1 (k 0) — P0's match [0, 1] —, C 2 (k 0): P1's [0, 1, 2],
    both ChainMatches blocks in input rows, written ``{"s":0}``; with a cut after B the P1
    match reads P0's match of the earlier batch: an object."""
    prog = compile_(["A(s, _) -> B(s, _)", "P0(s) -> C(s, _)"])
    spec = [("A", 0, 1, 0), ("B", 0, 2, 1), ("C", 0, 3, 1)]
    table, src = table_of(Engine(prog), vepl_events(spec, 0), columns)
    assert [(type(b).__name__, b.rows.tolist()) for b in table.blocks] == [
        ("ChainMatches", [[0], [1]]), ("ChainMatches", [[0], [1], [2]])]
    assert encode_match_table(table, src).to_pylist() == [
        {"pattern": "P0", "ts": 1, "params": '{"s":0}', "events": ["0", "1"]},
        {"pattern": "P1", "ts": 2, "params": '{"s":0}', "events": ["0", "1", "2"]}]
    engine, evs = Engine(prog), vepl_events(spec, 0)
    table_of(engine, evs[:2], columns)
    table, src = table_of(engine, evs[2:], columns)
    assert [type(b) for b in table.blocks] == [ObjectMatches]
    assert encode_match_table(table, src).to_pylist() == [
        {"pattern": "P1", "ts": 2, "params": '{"s":0}', "events": ["0", "1", "2"]}]
    assert check_blocks(prog, spec * 30, [13, 40], 50, vepl_events, columns) > 20


def test_a_chain_over_derived_events_with_more_parameters_stays_objects() -> None:
    """Hand-derived: ``H(s, x): P(s) -> C(s, x)`` binds a field of C beside the key, which its
    block would read by stage — not a row once the stages are input rows — so its matches
    over the derived stream stay objects (P's a block): A 0, B 1 (k 0) give P's match [0, 1],
    C 2 (k 0, v 3) H's, written ``{"s":0,"x":3}``."""
    prog = load(DECLS + "complexEvent P(s: Int) { as A(s, _) -> B(s, _) }\n"
                "complexEvent H(s: Int, x: Int) { as P(s) -> C(s, x) }\n")
    spec = [("A", 0, 1, 0), ("B", 0, 2, 1), ("C", 0, 3, 1)]
    table, src = table_of(Engine(prog), vepl_events(spec, 0), columns)
    assert [type(b).__name__ for b in table.blocks] == ["ChainMatches", "ObjectMatches"]
    assert encode_match_table(table, src).to_pylist() == [
        {"pattern": "P", "ts": 1, "params": '{"s":0}', "events": ["0", "1"]},
        {"pattern": "H", "ts": 2, "params": '{"s":0,"x":3}', "events": ["0", "1", "2"]}]
