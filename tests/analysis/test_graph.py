"""The dependency graph, its levels and cycles (003 §V.A.1, Fig. 1; §V.F.1)."""

from __future__ import annotations

import networkx as nx
import pytest

from cepflow.analysis import analyze, analyze_set
from cepflow.analysis.patternset import from_text
from cepflow.runtime.actions import register

MOTORBIKE = ["examples/motorbike/motorbike.epl", "examples/motorbike/motorbike.vepl"]

#: 003 Fig. 1, as its caption and §V.A.1 describe it
FIG1 = {("Motorbike", "GhostRider"), ("Motorbike", "BlowOutTire"), ("Motorbike", "Crash"),
        ("Motorbike", "DriverLeftSeat"), ("BlowOutTire", "Accident"), ("Crash", "Accident"),
        ("DriverLeftSeat", "Accident"), ("Accident", "AccidentsReport"),
        ("Crash", "DangerousLocation")}


@pytest.mark.parametrize("path", MOTORBIKE)
def test_motorbike_graph_is_fig1(path: str) -> None:
    a = analyze([path])
    assert set(a.graph.edges()) == FIG1
    assert a.graph.levels == {"Motorbike": 0, "GhostRider": 1, "BlowOutTire": 1,
                              "DriverLeftSeat": 1, "Crash": 1, "Accident": 2,
                              "DangerousLocation": 2, "AccidentsReport": 3}
    assert a.graph.cycles == []
    kinds = {n: node.kind for n, node in a.graph.nodes.items()}
    assert kinds["AccidentsReport"] == kinds["DangerousLocation"] == "statement"
    assert kinds["Accident"] == "pattern" and kinds["Motorbike"] == "atomic"


def test_temperature_is_a_tree_without_race() -> None:
    """§V.F.1: the complex events depend only on the simple events — a tree."""
    for files in (["examples/temperature/temperature.epl", "examples/temperature/alerts.epl"],
                  ["examples/temperature/temperature.vepl", "examples/temperature/alerts.vepl"]):
        a = analyze(files)
        g = a.graph.g
        assert nx.is_arborescence(g)
        assert set(a.graph.edges()) == {("TemperatureEvent", n)
                                        for n in ("Monitor", "Warning", "Critical")}
        assert a.races == [] and a.resolved == []
        assert a.findings == []


def test_files_share_identical_inputs_and_refuse_different_ones(tmp_path) -> None:
    one = tmp_path / "one.vepl"
    two = tmp_path / "two.vepl"
    one.write_text("atomicEvent A(x: Integer)\ncomplexEvent P(x: Integer) { as A(x) }\n")
    two.write_text("atomicEvent A(x: Integer)\ncomplexEvent Q(x: Integer) { as P(x) }\n")
    a = analyze([one, two])
    assert set(a.graph.edges()) == {("A", "P"), ("P", "Q")}
    assert a.graph.nodes["Q"].file == str(two)
    two.write_text("atomicEvent A(x: String)\ncomplexEvent Q(x: Integer) { as P(x) }\n")
    with pytest.raises(ValueError, match="'A' is declared differently in"):
        analyze([one, two])


CYCLIC = """
atomicEvent A(x: Integer)
complexEvent B(x: Integer) { as A(x) OR C(x) }
complexEvent C(x: Integer) { as B(x) }
complexEvent D(x: Integer) { as B(x) -> A(x) }
complexEvent E(x: Integer) { as D(x) -> E2(x) }
complexEvent E2(x: Integer) { as E(x) -> A(x) }
"""


def test_cycles_at_one_instant_and_across_time() -> None:
    pset = from_text(CYCLIC)
    assert pset.ok and pset.program is None  # cepflow refuses the cycles; analysis goes on
    a = analyze_set(pset)
    by_nodes = {c.nodes: c for c in a.graph.cycles}
    assert set(by_nodes) == {("B", "C"), ("E", "E2")}
    assert by_nodes["B", "C"].at_once
    assert not by_nodes["E", "E2"].at_once
    assert "E2 completes only on A, not on E" in by_nodes["E", "E2"].why
    codes = {(f.severity, f.location.line) for f in a.findings if f.code == "cycle"}
    assert codes == {("error", 3), ("warning", 6)}
    assert a.graph.levels["B"] == a.graph.levels["C"]  # a cycle shares its level


def test_a_cycle_through_a_time_batch_waits() -> None:
    src = """
atomicEvent A(x: Integer)
complexEvent P(x: Integer) { as A(x) OR S(x) }
complexEvent S { from p = P window time_batch(1 min) select p.x as x }
"""
    a = analyze_set(from_text(src))
    (cyc,) = a.graph.cycles
    assert not cyc.at_once and "time batch" in cyc.why


def test_rules_emitting_declared_events_close_cycles() -> None:
    register("test.analysis.echo", lambda act: None, emits=("A",))
    src = """
atomicEvent A(x: Integer)
complexEvent P(x: Integer) { as A(x) }
rule again on P action test.analysis.echo
"""
    pset = from_text(src)
    a = analyze_set(pset)
    assert ("P", "rule:again") in set(a.graph.edges())
    assert a.graph.cycles == []  # without the action's declaration nothing is known
    from cepflow.analysis.patternset import _emits
    from cepflow.runtime.actions import registered

    pset.emits = _emits(registered())
    a = analyze_set(pset)
    assert ("rule:again", "A") in set(a.graph.edges())
    (cyc,) = a.graph.cycles
    assert cyc.at_once and set(cyc.nodes) == {"A", "P", "rule:again"}
