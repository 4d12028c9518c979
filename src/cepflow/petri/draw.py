"""A net drawn by Graphviz: places as ellipses, transitions as boxes with their priority,
arcs with their expressions (double-headed for read arcs), one cluster per subnet (page). The
DOT ids are ``p:<place>`` and ``t:<transition>``, which the step-through page's script finds
in the SVG."""

from __future__ import annotations

from cepflow.language.printer import format_expr
from cepflow.petri.net import Net, priority_name


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _short(text: str, n: int = 48) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def net_to_dot(net: Net, inscriptions: bool = True, only: set[str] | None = None) -> str:
    """The net as a DOT digraph; ``only``: the subnets (pages) to draw, with the places their
    transitions use."""
    out = ["digraph pcpn {", "  rankdir=LR; nodesep=0.25; ranksep=0.5;",
           '  node [fontsize=10, fontname="Helvetica"]; edge [fontsize=8, '
           'fontname="Helvetica"];']
    if only is not None:
        trans = {t for t, tr in net.transitions.items() if tr.page in only}
        used = {a.place for a in net.arcs if a.transition in trans}
        net = Net(net.name, {p: pl for p, pl in net.places.items()
                             if p in used or pl.page in only},
                  {t: net.transitions[t] for t in trans},
                  [a for a in net.arcs if a.transition in trans])
    pages: dict[str, list[str]] = {}
    for p in net.places.values():
        pages.setdefault(p.page, []).append(
            f'  {_q("p:" + p.name)} [id={_q("p:" + p.name)}, shape=ellipse, '
            f'label={_q(p.name)}, tooltip={_q(p.colours.describe())}];')
    for t in net.transitions.values():
        label = t.name + f"\n{priority_name(t.priority)}"
        if inscriptions and t.guard is not None:
            label += "\n[" + _short(format_expr(t.guard)) + "]"
        pages.setdefault(t.page, []).append(
            f'  {_q("t:" + t.name)} [id={_q("t:" + t.name)}, shape=box, label={_q(label)}, '
            f'tooltip={_q(t.doc or t.name)}];')
    for k, (page, lines) in enumerate(pages.items()):
        if page:
            out.append(f"  subgraph cluster_{k} {{ label={_q(page)}; style=rounded; "
                       "color=gray70;")
            out += ["  " + ln for ln in lines]
            out.append("  }")
        else:
            out += lines
    for a in net.arcs:
        p, t = _q("p:" + a.place), _q("t:" + a.transition)
        label = f", label={_q(_short(a.inscription.text(), 40))}" if inscriptions else ""
        if a.kind == "in":
            out.append(f"  {p} -> {t} [{label[2:]}];" if label else f"  {p} -> {t};")
        elif a.kind == "out":
            out.append(f"  {t} -> {p} [{label[2:]}];" if label else f"  {t} -> {p};")
        else:
            out.append(f"  {p} -> {t} [dir=both, style=dashed{label}];")
    out.append("}")
    return "\n".join(out) + "\n"
