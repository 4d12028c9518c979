"""What ``cepflow petri`` prints: steps and markings as text (CPN Tools' notation) and as JSON
data (``{"steps": [...], "marking": {place: [[colour values], ...]}}``)."""

from __future__ import annotations

import math
from typing import Any

from cepflow.petri.multiset import Multiset, cpn_multiset, cpn_value
from cepflow.petri.net import Net
from cepflow.petri.simulator import Firing


def binding_text(b: dict[str, Any]) -> str:
    return ", ".join(f"{k}={cpn_value(v)}" for k, v in b.items())


def tokens_text(net: Net, items: list[tuple[str, Any, int]]) -> str:
    """``place: n`colour`` for the tokens a step took or added, places joined by ``; ``."""
    by: dict[str, Multiset] = {}
    for p, c, n in items:
        by.setdefault(p, Multiset()).add(c, n)
    return "; ".join(f"{p}: {cpn_multiset(ms, net.places[p].colours)}" for p, ms in by.items())


def step_text(net: Net, s: Firing) -> str:
    lines = [f"step {s.index}  {s.transition}  {binding_text(s.binding)}"]
    if s.taken:
        lines.append(f"  - {tokens_text(net, s.taken)}")
    if s.added:
        lines.append(f"  + {tokens_text(net, s.added)}")
    return "\n".join(lines)


def marking_text(net: Net, marking: dict[str, Multiset], places: list[str]) -> str:
    return "\n".join(f"{p}: {cpn_multiset(marking[p], net.places[p].colours)}" for p in places)


def jsonable(v: Any) -> Any:
    """A colour as JSON data: tuples (products, lists) as arrays, non-finite numbers null."""
    if isinstance(v, tuple):
        return [jsonable(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def step_json(s: Firing) -> dict[str, Any]:
    def items(xs: list[tuple[str, Any, int]]) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        for p, c, n in xs:
            out.setdefault(p, []).extend([jsonable(c)] * n)
        return out
    return {"step": s.index, "transition": s.transition,
            "binding": {k: jsonable(v) for k, v in s.binding.items()},
            "taken": items(s.taken), "added": items(s.added)}


def marking_json(marking: dict[str, Multiset], places: list[str]) -> dict[str, list[Any]]:
    return {p: [jsonable(c) for c in marking[p].elements()] for p in places}
