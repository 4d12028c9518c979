"""PNML (ISO/IEC 15909-2 high-level grammar) export and import, and CPN Tools' .cpn export."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cepflow.inputs import read_events
from cepflow.loader import load
from cepflow.petri.cpn import to_cpn
from cepflow.petri.net import Net
from cepflow.petri.pnml import PnmlError, from_pnml, to_pnml
from cepflow.petri.simulator import Simulator
from cepflow.petri.translate import translate
from support_petri import fig3

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def same(a: Net, b: Net) -> None:
    assert a.name == b.name
    assert a.places == b.places
    assert a.transitions == b.transitions
    assert sorted(map(repr, a.arcs)) == sorted(map(repr, b.arcs))
    assert {p: m for p, m in a.initial.items() if m} == b.initial
    assert a.var_types == b.var_types


@pytest.mark.parametrize(("patterns", "events"), [
    ("every/every.epl", "every/events.jsonl"),
    ("contractions/contractions.epl", "contractions/patients.jsonl"),
    ("motorbike/motorbike.epl", "motorbike/accident.jsonl"),
])
def test_reading_the_pnml_back_gives_the_same_net(patterns: str, events: str) -> None:
    prog = load(EXAMPLES / patterns)
    tr = translate(prog, list(read_events(EXAMPLES / events, prog.schemas)))
    text = to_pnml(tr.net)
    back = from_pnml(text)
    same(tr.net, back)
    # and it runs to the same complex events
    a, b = Simulator(tr.net, seed=1), Simulator(back, seed=1)
    a.run()
    b.run()
    assert {p: a.marking[p] for p in tr.complex_places} == {
        p: b.marking[p] for p in tr.complex_places}


def test_fig3_round_trips_and_is_a_high_level_net() -> None:
    net = fig3()
    text = to_pnml(net)
    root = ET.fromstring(text)
    ns = {"p": "http://www.pnml.org/version-2009/grammar/pnml"}
    assert root.find("p:net", ns).get("type") == (
        "http://www.pnml.org/version-2009/grammar/highlevelnet")
    # the guard x < 7 is the grammar's lt over a variable and a number constant
    cond = root.find(".//p:transition/p:condition/p:structure/p:lt", ns)
    assert cond is not None and cond.find("p:subterm/p:variable", ns) is not None
    assert cond.find("p:subterm/p:numberconstant", ns).get("value") == "7"
    same(net, from_pnml(text))


def test_a_pnml_file_is_data_entities_are_refused() -> None:
    bomb = ('<?xml version="1.0"?><!DOCTYPE pnml [<!ENTITY a "aaaa">]>'
            '<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">&a;</pnml>')
    with pytest.raises(PnmlError, match="not a well-formed document"):
        from_pnml(bomb)
    with pytest.raises(PnmlError, match="not the high-level net grammar"):
        from_pnml('<pnml xmlns="http://www.pnml.org/version-2009/grammar/pnml">'
                  '<net id="n" type="http://www.pnml.org/version-2009/grammar/ptnet"/></pnml>')
    text = to_pnml(fig3()).replace('refvariable="v1"', 'refvariable="nope"')
    with pytest.raises(PnmlError, match="unknown variable 'nope'"):
        from_pnml(text)


def test_cpn_tools_file_has_its_declarations_pages_and_resolving_references() -> None:
    prog = load(EXAMPLES / "contractions" / "contractions.epl")
    tr = translate(prog, list(read_events(EXAMPLES / "contractions" / "patients.jsonl",
                                          prog.schemas)))
    text = to_cpn(tr.net)
    assert '<!DOCTYPE workspaceElements PUBLIC "-//CPN//DTD CPNXML 1.0//EN"' in text
    root = ET.fromstring(text.split("\n", 2)[2])
    layouts = [e.text for e in root.iter("layout")]
    assert "colset INTINF = intinf;" in layouts and "val P_HIGH = 100;" in layouts
    assert any(t.startswith("colset CE_Duration = product INT*TIME*") for t in layouts)
    # CPN ML names: a1.ts becomes a1_ts, declared once
    assert layouts.count("var a1_ts : INTINF;") == 1
    ids = {e.get("id") for e in root.iter() if e.get("id")}
    refs = [e.get("idref") for e in root.iter() if e.get("idref")]
    assert refs and all(r in ids for r in refs)
    pages = [p.get("name") for p in root.iter("pageattr")]
    assert {"Duration", "Counter", "stream"} <= set(pages)
    # a place several pages use is on each, joined in a fusion set
    assert any(f.get("name") == "stream_dn" and len(list(f)) > 1 for f in root.iter("fusion"))
    prios = {e.find("text").text for e in root.iter("priority")}
    assert {"P_HIGH", "P_NORMAL"} <= prios
    conds = [e.find("text").text for e in root.iter("cond") if e.find("text").text]
    assert any("andalso" in c for c in conds) and not any("==" in c for c in conds)
    marks = [e.find("text").text for e in root.iter("initmark") if e.find("text").text]
    assert '1`(1,60000.0,1,"Alice",10)' in marks[0] or any(
        '1`(1,60000.0,1,"Alice",10)' in m for m in marks)
