"""Nets the Petri-net tests share."""

from __future__ import annotations

from cepflow.petri.colours import INT
from cepflow.petri.inscriptions import arc, expr
from cepflow.petri.net import P_HIGH, Net


def fig3() -> Net:
    """004 Example 1 / Fig. 3, rebuilt from the text (the figure's inscriptions are not in
    the seed's text; these satisfy every sentence of Example 1 — docs/petri.md)."""
    n = Net("fig3")
    for p in ("p1", "p2", "p3", "p4", "p5"):
        n.place(p, INT)
    n.transition("t1", expr("x < 7"))
    n.transition("t2", expr("y > 7"), P_HIGH)
    n.transition("t3", expr("w < 7"))
    n.arc("p1", "t1", "in", arc("x"))
    n.arc("p2", "t1", "out", arc("2 * x"))
    n.arc("p2", "t2", "in", arc("y"))
    n.arc("p3", "t2", "in", arc("z"))
    n.arc("p3", "t2", "out", arc("y + 1"))
    n.arc("p4", "t2", "out", arc("z"))
    n.arc("p2", "t3", "in", arc("w"))
    n.arc("p5", "t3", "out", arc("w - 5"))
    n.mark("p1", 3, 3, 5)
    n.mark("p3", 0)
    return n
