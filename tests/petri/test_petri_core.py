"""The PCPN core: multisets (004 Def. 1), nets (Def. 2), bindings and enabling with priorities
(Defs. 4 and 5), firing (Def. 6), seeded choice, and 004's Example 1 (Fig. 3)."""

from __future__ import annotations

import pytest

from cepflow.petri.colours import INT, STRING, product
from cepflow.petri.inscriptions import arc, expr
from cepflow.petri.multiset import Multiset, cpn_multiset
from cepflow.petri.net import P_HIGH, P_LOW, Net, NetError
from cepflow.petri.simulator import SimulationError, Simulator
from support_petri import fig3


def test_multiset_operations_of_definition_1() -> None:
    a, b = Multiset([1, 1, 2]), Multiset([1, 2, 2, 3])
    assert (a + b).count(1) == 3 and (a + b).count(2) == 3 and len(a + b) == 7
    assert Multiset([1, 2]) <= a and not a <= b
    assert (b - Multiset([2, 3])) == Multiset([1, 2])
    with pytest.raises(ValueError):
        _ = a - b
    assert cpn_multiset(Multiset([3, 3, 5])) == "2`3++1`5"
    assert cpn_multiset(Multiset()) == "empty"
    assert cpn_multiset([(14, "Barbara", 5), (16, "Alice", 4)]) == (
        '1`(14,"Barbara",5)++1`(16,"Alice",4)')
    assert cpn_multiset([-3, 2.5]) == "1`~3++1`2.5"


def test_example_1_follows_the_published_narrative() -> None:
    sim = Simulator(fig3())
    # only t1 can fire, with x = 3 or x = 5
    assert sim.enabled() == [("t1", {"x": 3}), ("t1", {"x": 5})]
    step = sim.fire("t1", {"x": 5})
    assert step.taken == [("p1", 5, 1)] and step.added == [("p2", 10, 1)]
    # t3's guard fails and t1 (enabled) has a lower priority than t2
    assert sim.enabled() == [("t2", {"y": 10, "z": 0})]
    sim.step()
    assert sim.marking["p3"] == Multiset([11]) and sim.marking["p4"] == Multiset([0])
    assert sim.marking["p1"] == Multiset([3, 3])
    # t1; t3; t1; t3 reaches the published final marking
    fired = []
    while (s := sim.step()) is not None:
        fired.append(s.transition)
    assert sorted(fired) == ["t1", "t1", "t3", "t3"]
    assert [cpn_multiset(sim.marking[p]) for p in ("p1", "p2", "p3", "p4", "p5")] == [
        "empty", "empty", "1`11", "1`0", "2`1"]


@pytest.mark.parametrize("seed", range(6))
def test_every_seeded_run_of_fig3_ends_in_its_final_marking(seed: int) -> None:
    sim = Simulator(fig3(), seed=seed)
    sim.run()
    assert {p: cpn_multiset(m) for p, m in sim.marking.items()} == {
        "p1": "empty", "p2": "empty", "p3": "1`11", "p4": "1`0", "p5": "2`1"}


def test_the_same_seed_gives_the_same_run() -> None:
    runs = []
    for _ in range(2):
        sim = Simulator(fig3(), seed=7)
        sim.run()
        runs.append([(s.transition, s.binding) for s in sim.trace])
    assert runs[0] == runs[1]


def test_priority_blocks_lower_levels_everywhere() -> None:
    # Def. 5 (3): a binding of a higher priority anywhere in the net disables the others
    n = Net("prio")
    n.place("a", INT)
    n.place("b", INT)
    n.transition("low", priority=P_LOW)
    n.transition("high", expr("v > 1"), P_HIGH)
    n.arc("a", "low", "in", arc("u"))
    n.arc("b", "high", "in", arc("v"))
    n.mark("a", 1)
    n.mark("b", 1, 2)
    sim = Simulator(n)
    assert sim.enabled() == [("high", {"v": 2})]
    with pytest.raises(SimulationError):
        sim.fire("low", {"u": 1})
    sim.step()
    assert sim.enabled() == [("low", {"u": 1})]  # v = 1 fails the guard


def test_multiplicities_read_arcs_and_guard_assignments() -> None:
    pair = product("PAIR", [("k", STRING), ("v", INT)])
    n = Net("misc")
    n.place("src", pair)
    n.place("ctl", INT)
    n.place("out", pair)
    # two tokens of one colour are needed; ctl is only tested (read arc); s is assigned
    n.transition("t", expr("s == v * 10 and k != \"z\""))
    n.arc("src", "t", "in", arc("2`(k, v)"))
    n.arc("ctl", "t", "read", arc("c"))
    n.arc("out", "t", "out", arc("(s > c)`(k, s)"))
    n.mark("src", ("a", 1), ("a", 1), ("b", 5), ("z", 9), ("z", 9))
    n.mark("ctl", 5)
    sim = Simulator(n)
    assert sim.enabled() == [("t", {"k": "a", "v": 1, "c": 5, "s": 10})]
    sim.step()
    assert sim.marking["ctl"] == Multiset([5])
    assert sim.marking["out"] == Multiset([("a", 10)])
    assert sim.step() is None


def test_a_condition_false_puts_no_token() -> None:
    n = Net("cond")
    n.place("p", INT)
    n.place("q", INT)
    n.transition("t")
    n.arc("p", "t", "in", arc("x"))
    n.arc("q", "t", "out", arc("(x > 2)`x"))
    n.mark("p", 1, 3)
    sim = Simulator(n, choice="first")
    sim.run()
    assert sim.marking["q"] == Multiset([3]) and not sim.marking["p"]


def test_index_lookup_and_full_scan_agree() -> None:
    # the join looks up the second place by the key the first bound (guard equality)
    rec = product("REC", [("key", INT), ("val", INT)])
    n = Net("join")
    n.place("l", rec)
    n.place("r", rec)
    n.place("o", product("O", [("a", INT), ("b", INT)]))
    n.transition("j", expr("k2 == k1 and v1 < v2"))
    n.arc("l", "j", "in", arc("(k1, v1)"))
    n.arc("r", "j", "in", arc("(k2, v2)"))
    n.arc("o", "j", "out", arc("(v1, v2)"))
    for k in range(20):
        n.mark("l", (k % 5, k))
        n.mark("r", (k % 7, 2 * k))
    sim = Simulator(n)
    got = {(b["v1"], b["v2"]) for _, b in sim.enabled()}
    want = {(k, 2 * j) for k in range(20) for j in range(20) if k % 5 == j % 7 and k < 2 * j}
    assert got == want


def test_malformed_nets_are_refused_with_the_culprit() -> None:
    n = Net("bad")
    n.place("p", INT)
    n.transition("t", expr("y > 1"))
    n.arc("p", "t", "in", arc("x"))
    with pytest.raises(NetError, match="transition t: guard reads unbound variable"):
        n.check()
    n2 = Net("bad2")
    n2.place("p", INT)
    n2.transition("t")
    n2.arc("p", "t", "out", arc("(x, 1)"))
    with pytest.raises(NetError, match="2 term"):
        n2.check()
    n3 = Net("bad3")
    n3.place("p", INT)
    n3.transition("t")
    n3.arc("p", "t", "in", arc("x"))
    n3.arc("p", "t", "out", arc('"s"'))
    n3.mark("p", 1)
    with pytest.raises(SimulationError, match="not a colour of INT"):
        Simulator(n3).step()


def test_a_whole_colour_variable_is_looked_up_by_the_whole_colour() -> None:
    # one term for a product place binds the whole tuple; the index on it must use the whole
    # colour too (it once used the first component: nothing matched)
    key = product("K", [("a", INT), ("b", INT)])
    n = Net("whole")
    n.place("cand", key)
    n.place("items", product("I", [("k", key), ("v", INT)]))
    n.place("out", INT)
    n.transition("pop")
    n.arc("cand", "pop", "in", arc("k"))
    n.arc("items", "pop", "in", arc("(k, v)"))
    n.arc("out", "pop", "out", arc("v"))
    n.mark("cand", (1, 2), (1, 4), (2, 2))  # (joined after items: looked up by k)
    n.mark("items", ((1, 2), 7))
    sim = Simulator(n)
    assert sim.enabled() == [("pop", {"k": (1, 2), "v": 7})]
