"""Graphviz export: a compiled automaton — states, typed and guarded transitions, negative
transitions (with their filters) to the trap or to a restricted copy of their state, timed zones
as clusters of the states they enclose — and a data-window statement as its dataflow (input
stream → window → select/group by/having → output type). :func:`render` runs Graphviz for
SVG/PNG/PDF, or refuses with the command that installs it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from cepflow.automaton.automaton import INITIAL, TIMER, TRAP, Automaton, Position
from cepflow.events.event import EventType
from cepflow.language import ast
from cepflow.language.printer import column_name, format_expr
from cepflow.timefmt import duration_text
from cepflow.windows.statement import WindowStatement

#: what ``render`` writes itself (DOT text) and what it asks Graphviz to draw
DOT_SUFFIXES = (".dot", ".gv")
DRAWN_SUFFIXES = (".svg", ".png", ".pdf")


class RenderError(Exception):
    """A drawing that cannot be made (no Graphviz, an unknown format, Graphviz failed); the
    message is one line and says what to do."""


def _label(*lines: str) -> str:
    """A quoted DOT label of ``lines``: the text is escaped, the lines joined by DOT breaks."""
    return '"' + "\\n".join(ln.replace("\\", "\\\\").replace('"', '\\"') for ln in lines) + '"'


def _guard(position: Position) -> str:
    return ", ".join(f"{v}=${i}" for i, v in position.binds)


def _transition(prefix: str, t: str, position: Position) -> list[str]:
    """A transition's label lines: the event type and its bindings, then its filter."""
    guard = _guard(position)
    lines = [prefix + t + (f" [{guard}]" if guard else "")]
    if position.filter_src:
        lines.append(f"where {position.filter_src}")
    return lines


def to_dot(auto: Automaton) -> str:
    """The automaton as a DOT digraph (q0 initial, f final, x trap)."""
    lines = [f"digraph {_label(auto.name)} {{", "  rankdir=LR;",
             f"  label={_label(f'{auto.name}: {auto.pattern_text}  [context {auto.context}]')};",
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
        text = [f"q{s}"] + ([f"after {pos.label}"] if pos else [])
        if copied is not None:
            text.append(f"(NOT seen: copy of q{copied})")
        # (a box, not a circle: a circle grows with its longest line, a state's label is long)
        lines.append(f"  q{s} [label={_label(*text)}, shape=box, style=rounded];")
        for z in (pos.zones if pos else ()):
            zone_states[z].append(s)
    for z in auto.zones:
        if not zone_states[z.id]:
            continue
        what = "within" if z.kind == "within" else "holds-for"
        extra = " (completes when it closes)" if z.timer_accept else ""
        lines.append(f"  subgraph cluster_zone{z.id} {{ style=dashed; color=blue; label="
                     f"{_label(f'zone {z.id}: {what} {duration_text(z.length)}{extra}')};")
        lines.append("    " + " ".join(f"q{s};" for s in zone_states[z.id]) + " }")
    for src, m in auto.edges.items():
        for t, es in m.items():
            for e in es:
                dst = "f" if e.final else f"q{e.target}"
                # (an interval in the middle: its zone's deadline steps the instance on)
                text = (["deadline of " + ",".join(f"z{z}" for z in e.exits)] if t == TIMER
                        else _transition("", t, e.position))
                if e.enters:
                    text.append("enter " + ",".join(f"z{z}" for z in e.enters))
                if e.exits:
                    text.append("leave " + ",".join(f"z{z}" for z in e.exits))
                lines.append(f"  {label(src)} -> {dst} [label={_label(*text)}];")
    for src, m in auto.forbids.items():
        for t, fs in m.items():
            for f in fs:
                dst = "x" if f.target == TRAP else label(f.target)
                text = _transition("¬ ", t, f.position)
                lines.append(f"  {label(src)} -> {dst} [label={_label(*text)}, style=dashed, "
                             "color=red, fontcolor=red];")
    for z in auto.zones:
        for s in sorted(z.timer_accept):
            if TIMER in auto.edges.get(s, {}):
                continue  # (drawn above: the deadline goes on to the rest)
            lines.append(f"  q{s} -> f [label={_label(f'deadline of z{z.id}')}, style=dotted];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _expr(e: ast.Expr) -> str:
    """An expression of a window statement as written (``a1.location``, ``count(*)``)."""
    return format_expr(e) if isinstance(e, ast.Name) else column_name(e)


def _window_text(stmt: WindowStatement) -> list[str]:
    """The window in pattern-file syntax and what it keeps."""
    w = stmt.window
    size = duration_text(w.size) if w.kind in ("time", "time_batch") else f"{int(w.size)}"
    text = f"window {w.kind}({size})" + (" per group" if w.per_group else "")
    keeps = {"time": f"sliding: the events of the last {size}",
             "length": f"sliding: the last {size} events",
             "time_batch": f"tumbling: one batch every {size}",
             "length_batch": f"tumbling: batches of {size} events"}[w.kind]
    lines = [text, keeps + (", per group" if w.per_group else "")]
    if w.reference_point is not None:
        lines.append(f"batches aligned to {duration_text(w.reference_point)}")
    return lines


def window_to_dot(stmt: WindowStatement, output: EventType | None = None) -> str:
    """A data-window statement as a DOT digraph: its input stream (and filter), its window, its
    select list with group by and having, and the output type its rows take (``output``, from
    the program's schemas) — rows that re-enter the stream."""
    alias = f" as {stmt.alias}" if stmt.alias else ""
    select = ["select " + ", ".join(_expr(i.expr) + (f" as {i.alias}" if i.alias else "")
                                    for i in stmt.select)]
    if stmt.group_by:
        select.append("group by " + ", ".join(_expr(g) for g in stmt.group_by))
    if stmt.having is not None:
        select.append(f"having {_expr(stmt.having)}")
    params = ", ".join(f"{p.name}: {p.declared_type or p.type}" for p in output.params
                       ) if output is not None else ""
    rows = "rows when a batch ends" if stmt.window.is_batch else "rows on each event"
    feed = [f"where {_expr(stmt.filter)}"] if stmt.filter is not None else []
    lines = [f"digraph {_label(stmt.name)} {{", "  rankdir=LR;",
             f"  label={_label(f'{stmt.name}: window statement')};",
             "  labelloc=t; node [fontsize=11]; edge [fontsize=10];",
             f"  input [label={_label(' | '.join(stmt.input_types) + alias, 'input stream')}, "
             "shape=ellipse];",
             f"  window [label={_label(*_window_text(stmt))}, shape=box3d];",
             f"  select [label={_label(*select)}, shape=box];",
             f"  output [label={_label(f'{stmt.name}({params})', 're-enters the stream')}, "
             "shape=ellipse, style=bold];",
             f"  input -> window [label={_label(*feed) if feed else _label('')}];",
             f"  window -> select [label={_label(rows)}];",
             f"  select -> output [label={_label('insert into')}];",
             "}"]
    return "\n".join(lines) + "\n"


def install_hint() -> str:
    """The command that installs Graphviz here (apt, dnf, brew), or where to get it."""
    sudo = "sudo " if hasattr(os, "geteuid") and os.geteuid() != 0 else ""
    for tool, command in (("apt-get", f"{sudo}apt-get install graphviz"),
                          ("dnf", f"{sudo}dnf install graphviz"),
                          ("brew", "brew install graphviz")):
        if shutil.which(tool):
            return command
    return "see https://graphviz.org/download/"


def to_svg(dot: str) -> str:
    """``dot`` drawn by Graphviz as SVG text (for report pages); :class:`RenderError` (one
    line, with the install command) when Graphviz is missing or fails."""
    exe = shutil.which("dot")
    if exe is None:
        raise RenderError(f"drawing needs Graphviz's 'dot', which is not installed: "
                          f"{install_hint()}")
    done = subprocess.run([exe, "-Tsvg"], input=dot.encode(), capture_output=True,
                          check=False)
    if done.returncode != 0:
        why = (done.stderr.decode(errors="replace").strip().splitlines() or ["failed"])[0]
        raise RenderError(f"Graphviz failed: {why}")
    return done.stdout.decode("utf-8")


def render(dot: str, path: Path) -> None:
    """Write ``dot`` to ``path``: DOT text for .dot/.gv, a drawing by Graphviz's ``dot`` for
    .svg/.png/.pdf. Raises :class:`RenderError` (one line, nothing written) when the format is
    unknown, Graphviz is not installed or it fails; a drawing appears only when complete."""
    path = Path(path)
    suffix = path.suffix.lower()
    if not path.parent.is_dir():
        raise RenderError(f"{path}: the folder {path.parent} does not exist")
    if suffix in DOT_SUFFIXES:
        path.write_text(dot, encoding="utf-8")
        return
    if suffix not in DRAWN_SUFFIXES:
        raise RenderError(f"{path}: unknown format '{path.suffix}' (use "
                          f"{', '.join(DOT_SUFFIXES + DRAWN_SUFFIXES)})")
    exe = shutil.which("dot")
    if exe is None:
        raise RenderError(f"{path}: drawing {suffix[1:].upper()} needs Graphviz's 'dot', which "
                          f"is not installed: {install_hint()} (or write DOT: -o "
                          f"{path.with_suffix('.dot')})")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")  # renamed when complete
    try:
        done = subprocess.run([exe, f"-T{suffix[1:]}", "-o", tmp], input=dot.encode(),
                              capture_output=True, check=False)
        if done.returncode != 0:
            why = (done.stderr.decode(errors="replace").strip().splitlines() or ["failed"])[0]
            raise RenderError(f"{path}: Graphviz failed: {why}")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
