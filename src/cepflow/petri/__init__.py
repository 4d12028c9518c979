"""Prioritized coloured Petri nets (seed 004): the PCPN model, its simulator, and the
translation of pattern sets into nets that run them step by step (docs/petri.md).

* :class:`Net` — places with colour sets, transitions with guards and priorities, arcs with
  expressions in cepflow's own expression language (Def. 2); :class:`Multiset` (Def. 1).
* :class:`Simulator` — enabled binding elements honouring priorities (Def. 5), firing
  (Def. 6), a seeded choice, step / run / run-until and the trace of what fired.
"""

from cepflow.petri.colours import ColourSet
from cepflow.petri.inscriptions import ArcInscription
from cepflow.petri.multiset import Multiset, cpn_multiset, cpn_value
from cepflow.petri.net import P_HIGH, P_LOW, P_LOW2, P_NORMAL, Arc, Net, NetError, Place, Transition
from cepflow.petri.simulator import Firing, SimulationError, Simulator

__all__ = [
    "P_HIGH",
    "P_LOW",
    "P_LOW2",
    "P_NORMAL",
    "Arc",
    "ArcInscription",
    "ColourSet",
    "Firing",
    "Multiset",
    "Net",
    "NetError",
    "Place",
    "SimulationError",
    "Simulator",
    "Transition",
    "cpn_multiset",
    "cpn_value",
]
