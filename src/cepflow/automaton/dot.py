"""Graphviz export of a compiled automaton: states, typed and guarded transitions, negative
transitions to the trap (or to a restricted copy of their state), and timed zones as clusters
of the states they enclose."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from cepflow.automaton.model import INITIAL, TRAP, Automaton


def _q(s: str) -> str:
    """Quote a label; ``\\n`` sequences in it stay DOT line breaks."""
    return '"' + s.replace('"', '\\"') + '"'


def to_dot(auto: Automaton) -> str:
    """The automaton as a DOT digraph (q0 initial, f final, x trap)."""
    lines = [f"digraph {_q(auto.name)} {{", "  rankdir=LR;",
             f"  label={_q(f'{auto.name}: {auto.pattern_text}  [context {auto.context}]')};",
             "  labelloc=t; node [shape=circle, fontsize=11]; edge [fontsize=10];",
             '  q0 [label="q0", shape=circle, style=bold];',
             '  f [label="f", shape=doublecircle];',
             '  x [label="x (trap)", shape=octagon, color=red, fontcolor=red];']
    label = auto.state_label
    rest = sorted({e.source for m in auto.edges.values() for es in m.values() for e in es
                   if e.source != INITIAL} | {e.target for m in auto.edges.values()
                                              for es in m.values() for e in es if not e.final})
    pos_by_id = {p.id: p for p in auto.positions}
    zone_states: dict[int, list[int]] = {z.id: [] for z in auto.zones}
    for s in rest:
        copied = auto.restricted.get(s)  # a restricted copy: only the operand before the NOT
        pos = pos_by_id.get(s if copied is None else copied)
        text = f"q{s}\\nafter {pos.label}" if pos else f"q{s}"
        if copied is not None:
            text += f"\\n(NOT seen: copy of q{copied})"
        lines.append(f"  q{s} [label={_q(text)}];")
        for z in (pos.zones if pos else ()):
            zone_states[z].append(s)
    for z in auto.zones:
        if not zone_states[z.id]:
            continue
        what = "within" if z.kind == "within" else "holds-for"
        extra = " (completes when it closes)" if z.timer_accept else ""
        lines.append(f"  subgraph cluster_zone{z.id} {{ style=dashed; color=blue; "
                     f"label={_q(f'zone {z.id}: {what} {z.length:g} ms{extra}')};")
        lines.append("    " + " ".join(f"q{s};" for s in zone_states[z.id]) + " }")
    for src, m in auto.edges.items():
        for t, es in m.items():
            for e in es:
                dst = "f" if e.final else f"q{e.target}"
                guard = ", ".join(f"{v}=${i}" for i, v in e.position.binds)
                text = t + (f" [{guard}]" if guard else "")
                if e.position.filter_src:
                    text += f"\\nwhere {e.position.filter_src}"
                if e.enters:
                    text += "\\nenter " + ",".join(f"z{z}" for z in e.enters)
                if e.exits:
                    text += "\\nleave " + ",".join(f"z{z}" for z in e.exits)
                lines.append(f"  {label(src)} -> {dst} [label={_q(text)}];")
    for src, m in auto.forbids.items():
        for t, fs in m.items():
            for f in fs:
                guard = ", ".join(f"{v}=${i}" for i, v in f.position.binds)
                text = f"¬ {t}" + (f" [{guard}]" if guard else "")
                dst = "x" if f.target == TRAP else label(f.target)
                lines.append(f"  {label(src)} -> {dst} [label={_q(text)}, style=dashed, "
                             "color=red, fontcolor=red];")
    for z in auto.zones:
        for s in sorted(z.timer_accept):
            lines.append(f"  q{s} -> f [label={_q(f'deadline of z{z.id}')}, style=dotted];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(dot: str, path: Path) -> bool:
    """Write ``dot`` to ``path``; for .png/.svg/.pdf run Graphviz if installed (False if not)."""
    path = Path(path)
    if path.suffix in (".dot", ".gv", ""):
        path.write_text(dot)
        return True
    exe = shutil.which("dot")
    if exe is None:
        path.with_suffix(".dot").write_text(dot)
        return False
    subprocess.run([exe, f"-T{path.suffix[1:]}", "-o", str(path)], input=dot.encode(),
                   check=True)
    return True
