"""CPN Tools' ``.cpn`` XML (format 6, CPN Tools 4): a net to open in CPN Tools.

The declarations become CPN ML: a ``colset`` per colour set (``INT`` ``int``, ``INTINF``
``intinf`` — epoch milliseconds do not fit CPN ML's ``int`` —, ``REAL``/``TIME`` ``real``,
``STRING``, ``BOOL``, ``UNIT``, ``product``, ``list``; ``ANY`` as ``string``), a ``var`` per
variable, the four priorities of 004 (``P_HIGH`` 100, ``P_NORMAL`` 1000, ``P_LOW`` 10000,
``P_LOW2`` 20000) and the further levels the translation uses (``P_LOW3`` …), and the net
functions written in ML (:data:`ML_FUNCTIONS`). Each subnet is a page; a place that
transitions of several pages use appears on each, the copies joined in a fusion set named
after it. Inscriptions are written in CPN ML (``=``, ``<>``, ``andalso``, ``orelse``,
``~`` for negation, ``if c then 1`x else empty`` for a conditional arc, ``xs^^[x]``), names
that CPN ML does not take are renamed (``a1.k`` → ``a1_k``), and positions come from
Graphviz's layout of each page when Graphviz is installed (a grid otherwise).

What CPN Tools will not show of a cepflow net is listed in docs/petri.md ("CPN Tools"):
cepflow's ``null`` has no CPN ML value, ``ANY`` fields are typed ``string``, and the file is
checked here for its structure (every reference resolves), not opened in CPN Tools.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cepflow.language import ast
from cepflow.petri.colours import ColourSet
from cepflow.petri.inscriptions import ArcInscription, var_name
from cepflow.petri.multiset import Multiset, cpn_value
from cepflow.petri.net import Net, priority_name

#: CPN ML for the functions net inscriptions call (tuple, nil and unit are ML syntax)
ML_FUNCTIONS = {
    "append": "fun append (xs, x) = xs ^^ [x];",
    "concat": "fun concat (xs, ys) = xs ^^ ys;",
    "nth": "fun nth (xs, i) = List.nth (xs, i);",
    "inf": "fun inf () = Real.posInf;",
    "cond": "fun cond (c, a, b) = if c then a else b;",
    "qkey": "fun qkey (kd: int, (r1, r2, _, _, _), s: int, c: int, l: int) =\n"
            "  if kd = 0 then (c, l, ~1, 0, 0) else (r1, r2, s, c, l);",
    "numbers": "fun numbers (evs) = List.map (fn (_, _, n) => n) evs;",
    "bindex": "fun bindex (r: real, size: real, t: real) =\n"
              "  let fun up k = if r + real k * size <= t then up (k + 1) else k\n"
              "      fun down k = if r + real (k - 1) * size > t then down (k - 1) else k\n"
              "  in up (down (floor ((t - r) / size) + 1)) end;",
    "older": "fun older (evs1, _: string, evs2, _: string) =\n"
             "  let fun cmp ([], []) = false | cmp ([], _) = false | cmp (_, []) = true\n"
             "        | cmp (((t1, k1, n1) :: r1), ((t2, k2, n2) :: r2)) =\n"
             "          if Real.< (t1, t2) then true else if Real.< (t2, t1) then false\n"
             "          else if k1 <> k2 then k1 < k2 else if n1 <> n2 then n1 < n2\n"
             "          else cmp (r1, r2)\n"
             "  in cmp (evs1, evs2) end;",
    "rev": "fun rev (xs) = List.rev xs;",
    "bit": "fun bit (m: int, i: int) = if i = 0 then m mod 2 = 1 else bit (m div 2, i - 1);",
    "settled": "fun settled (evs, track, i: int) =\n"
               "  let val head = List.take (evs, length evs - length track)\n"
               "      val tail = List.drop (evs, length evs - length track)\n"
               "      fun keep ([], _) = [] | keep (_, []) = []\n"
               "        | keep (e :: es, m :: ms) = if bit (m, i) then e :: keep (es, ms)\n"
               "                                    else keep (es, ms)\n"
               "  in head ^^ keep (tail, track) end;",
    "first_done": "fun first_done (track: int list, ops: int list) =\n"
                  "  let val n = length track\n"
                  "      fun started i = List.filter (fn k => bit (List.nth (track, k), i))\n"
                  "                        (List.tabulate (n - 1, fn j => n - 2 - j)) ^^ [~1, i]\n"
                  "      fun less ([], _) = false | less (_, []) = true\n"
                  "        | less (a :: r, b :: s) = a < b orelse (a = b andalso less (r, s))\n"
                  "      fun pick (best, []) = best\n"
                  "        | pick (best, i :: r) = pick (if less (started i, started best)\n"
                  "                                      then i else best, r)\n"
                  "  in pick (hd ops, tl ops) end;",
}

_RESERVED = {"and", "andalso", "orelse", "not", "if", "then", "else", "val", "fun", "let",
             "in", "end", "fn", "case", "of", "type", "datatype", "as", "do", "while",
             "div", "mod", "o", "op", "raise", "handle", "rec", "with", "abstype", "local",
             "open", "infix", "infixr", "nonfix", "exception", "structure", "signature",
             "functor", "sig", "struct", "where", "include", "sharing", "eqtype", "empty",
             "colset", "var", "true", "false", "null"}
_OPS = {"==": "=", "!=": "<>", "and": "andalso", "or": "orelse", "%": "mod"}


class _Names:
    """CPN ML identifiers for the net's names (unique, never reserved)."""

    def __init__(self) -> None:
        self.map: dict[str, str] = {}
        self.used: set[str] = set()

    def __call__(self, name: str) -> str:
        if name not in self.map:
            base = re.sub(r"[^A-Za-z0-9_']", "_", name) or "x"
            if not base[0].isalpha():
                base = "v" + base
            if base in _RESERVED:
                base += "'"
            out, k = base, 1
            while out in self.used:
                k += 1
                out = f"{base}{k}"
            self.used.add(out)
            self.map[name] = out
        return self.map[name]


def ml(e: ast.Expr, names: Callable[[str], str], real: bool = False) -> str:
    """An expression in CPN ML."""
    if isinstance(e, ast.Name):
        return names(var_name(e))
    if isinstance(e, ast.Const):
        v = e.value
        return "null" if v is None else "()" if v == () else cpn_value(v)
    if isinstance(e, ast.Unary):
        inner = ml(e.operand, names)
        return f"not ({inner})" if e.op == "not" else f"~({inner})"
    if isinstance(e, ast.Binary):
        op = _OPS.get(e.op, e.op)
        return f"({ml(e.left, names)} {op} {ml(e.right, names)})"
    if isinstance(e, ast.Call):
        args = [ml(a, names) for a in e.args]
        if e.func == "tuple":
            return "(" + ", ".join(args) + ")"
        if e.func == "nil":
            return "[]"
        if e.func == "unit":
            return "()"
        return f"{e.func}({', '.join(args)})"
    raise AssertionError(e)


def ml_arc(ins: ArcInscription, names: Callable[[str], str]) -> str:
    body = (ml(ins.terms[0], names) if len(ins.terms) == 1
            else "(" + ", ".join(ml(t, names) for t in ins.terms) + ")")
    if ins.mult is None:
        return f"1`{body}"
    if isinstance(ins.mult, ast.Const) and isinstance(ins.mult.value, int):
        return f"{ins.mult.value}`{body}"
    return f"if {ml(ins.mult, names)} then 1`{body} else empty"


def ml_colour_set(cs: ColourSet) -> str:
    if cs.kind == "ANY":
        return f"colset {cs.name} = string;"
    if cs.kind in ("REAL",):
        return f"colset {cs.name} = real;"
    return cs.cpn()


def _layout(nodes: list[tuple[str, str]], edges: list[tuple[str, str]]
            ) -> dict[str, tuple[float, float]]:
    """Positions of a page's nodes (id, 'place'|'trans'): Graphviz's dot, else a grid."""
    dot = shutil.which("dot")
    if dot and len(nodes) < 400:
        src = ["digraph g { rankdir=LR; nodesep=0.4; ranksep=0.8;"]
        for n, kind in nodes:
            shape = "ellipse" if kind == "place" else "box"
            src.append(f'  "{n}" [shape={shape}, width=1.2, height=0.6];')
        for a, b in edges:
            src.append(f'  "{a}" -> "{b}";')
        src.append("}")
        try:
            res = subprocess.run([dot, "-Tplain"], input="\n".join(src), capture_output=True,
                                 text=True, timeout=60, check=True)
            pos: dict[str, tuple[float, float]] = {}
            for line in res.stdout.splitlines():
                parts = line.split()
                if parts and parts[0] == "node":
                    pos[parts[1].strip('"')] = (float(parts[2]) * 72, float(parts[3]) * 72)
            if len(pos) == len(nodes):
                return pos
        except (OSError, subprocess.SubprocessError):
            pass
    return {n: (150.0 * (i % 8), -100.0 * (i // 8)) for i, (n, _) in enumerate(nodes)}


class _Writer:
    def __init__(self, net: Net) -> None:
        self.net = net
        self.n = 0
        self.names = _Names()

    def id(self) -> str:
        self.n += 1
        return f"ID{self.n}"

    def annotation(self, parent: ET.Element, tag: str, text: str, x: float, y: float
                   ) -> ET.Element:
        el = ET.SubElement(parent, tag, id=self.id())
        ET.SubElement(el, "posattr", x=f"{x:.1f}", y=f"{y:.1f}")
        ET.SubElement(el, "fillattr", colour="White", pattern="Solid", filled="false")
        ET.SubElement(el, "lineattr", colour="Black", thick="0", type="Solid")
        ET.SubElement(el, "textattr", colour="Black", bold="false")
        ET.SubElement(el, "text", tool="CPN Tools", version="4.0.1").text = text
        return el

    def node_attrs(self, el: ET.Element, x: float, y: float) -> None:
        ET.SubElement(el, "posattr", x=f"{x:.1f}", y=f"{y:.1f}")
        ET.SubElement(el, "fillattr", colour="White", pattern="", filled="false")
        ET.SubElement(el, "lineattr", colour="Black", thick="1", type="Solid")
        ET.SubElement(el, "textattr", colour="Black", bold="false")

    def document(self) -> ET.Element:
        net = self.net
        root = ET.Element("workspaceElements")
        ET.SubElement(root, "generator", tool="CPN Tools", version="4.0.1", format="6")
        cp = ET.SubElement(root, "cpnet")
        glob = ET.SubElement(cp, "globbox")
        block = ET.SubElement(glob, "block", id=self.id())
        ET.SubElement(block, "id").text = f"cepflow: {net.name}"
        types = net.variable_types()
        sets = net.colour_sets(list(types.values()))
        for cs in sets.values():
            c = ET.SubElement(block, "color", id=self.id())
            ET.SubElement(c, "id").text = cs.name
            ET.SubElement(c, "layout").text = ml_colour_set(cs)
        for v, cs in sorted(types.items()):
            el = ET.SubElement(block, "var", id=self.id())
            ET.SubElement(ET.SubElement(el, "type"), "id").text = cs.name
            ET.SubElement(el, "id").text = self.names(v)
            ET.SubElement(el, "layout").text = f"var {self.names(v)} : {cs.name};"
        levels = sorted({t.priority for t in net.transitions.values()} | {1, 2, 3})
        for lv in levels:
            value = {1: 100, 2: 1000, 3: 10000}.get(lv, 10000 * (lv - 2))
            el = ET.SubElement(block, "ml", id=self.id())
            el.text = f"val {priority_name(lv)} = {value};"
            ET.SubElement(el, "layout").text = el.text
        for f in sorted(ML_FUNCTIONS):
            el = ET.SubElement(block, "ml", id=self.id())
            el.text = ML_FUNCTIONS[f]
            ET.SubElement(el, "layout").text = ML_FUNCTIONS[f]
        # pages: a subnet each; a place on every page whose transitions use it (fused)
        page_of_t: dict[str, list[str]] = {}
        for t in net.transitions.values():
            page_of_t.setdefault(t.page or net.name, []).append(t.name)
        copies: dict[str, list[str]] = {}
        instances = []
        for page, trans in page_of_t.items():
            pg = ET.SubElement(cp, "page", id=self.id())
            instances.append(pg.get("id"))
            ET.SubElement(pg, "pageattr", name=page)
            places = []
            for a in net.arcs:
                if a.transition in trans and a.place not in places:
                    places.append(a.place)
            for p in net.places.values():  # places no transition uses: on their own page
                if (p.page or net.name) == page and p.name not in places and not any(
                        a.place == p.name for a in net.arcs):
                    places.append(p.name)
            nodes = [(f"p:{p}", "place") for p in places] + [(f"t:{t}", "trans")
                                                              for t in trans]
            edges = [((f"p:{a.place}", f"t:{a.transition}") if a.kind != "out" else
                      (f"t:{a.transition}", f"p:{a.place}"))
                     for a in net.arcs if a.transition in trans]
            pos = _layout(nodes, edges)
            ids: dict[str, str] = {}
            for p in places:
                ids[p] = self.place(pg, p, *pos[f"p:{p}"])
                copies.setdefault(p, []).append(ids[p])
            for t in trans:
                ids[t] = self.trans(pg, t, *pos[f"t:{t}"])
            for a in net.arcs:
                if a.transition in trans:
                    self.arc(pg, ids[a.transition], ids[a.place], a.kind,
                             ml_arc(a.inscription, self.names), pos[f"t:{a.transition}"],
                             pos[f"p:{a.place}"])
        for p, ids_ in copies.items():
            if len(ids_) > 1:
                fu = ET.SubElement(cp, "fusion", id=self.id(), name=self.names(p))
                for i in ids_:
                    ET.SubElement(fu, "fusion_elm", idref=i)
        inst = ET.SubElement(cp, "instances")
        for pid in instances:
            ET.SubElement(inst, "instance", id=self.id(), page=str(pid))
        ET.SubElement(cp, "options")
        ET.SubElement(cp, "binders")
        ET.SubElement(cp, "monitorblock", name="Monitors")
        ET.SubElement(cp, "IndexNode", expanded="true")
        return root

    def place(self, pg: ET.Element, name: str, x: float, y: float) -> str:
        p = self.net.places[name]
        el = ET.SubElement(pg, "place", id=self.id())
        self.node_attrs(el, x, y)
        ET.SubElement(el, "text").text = name
        ET.SubElement(el, "ellipse", w="60.0", h="40.0")
        ET.SubElement(el, "token", x="-10.0", y="0.0")
        ET.SubElement(el, "marking", x="0.0", y="0.0", hidden="false")
        self.annotation(el, "type", p.colours.name, x + 40, y - 25)
        ms = self.net.initial.get(name)
        self.annotation(el, "initmark", _ml_marking(ms, p.colours) if ms else "", x + 40,
                        y + 25)
        return el.get("id", "")

    def trans(self, pg: ET.Element, name: str, x: float, y: float) -> str:
        t = self.net.transitions[name]
        el = ET.SubElement(pg, "trans", id=self.id(), explicit="false")
        self.node_attrs(el, x, y)
        ET.SubElement(el, "text").text = name
        ET.SubElement(el, "box", w="80.0", h="40.0")
        ET.SubElement(el, "binding", x="7.2", y="-3.0")
        self.annotation(el, "cond", f"[{ml(t.guard, self.names)}]" if t.guard is not None
                        else "", x - 40, y + 30)
        self.annotation(el, "time", "", x + 45, y + 30)
        self.annotation(el, "code", "", x + 60, y - 50)
        self.annotation(el, "priority", priority_name(t.priority), x - 45, y - 30)
        return el.get("id", "")

    def arc(self, pg: ET.Element, tid: str, pid: str, kind: str, text: str,
            tpos: tuple[float, float], ppos: tuple[float, float]) -> None:
        orient = {"in": "PtoT", "out": "TtoP", "read": "BOTHDIR"}[kind]
        el = ET.SubElement(pg, "arc", id=self.id(), orientation=orient, order="1")
        ET.SubElement(el, "posattr", x="0.0", y="0.0")
        ET.SubElement(el, "fillattr", colour="White", pattern="", filled="false")
        ET.SubElement(el, "lineattr", colour="Black", thick="1", type="Solid")
        ET.SubElement(el, "textattr", colour="Black", bold="false")
        ET.SubElement(el, "arrowattr", headsize="1.2", currentcyckle="2")
        ET.SubElement(el, "transend", idref=tid)
        ET.SubElement(el, "placeend", idref=pid)
        mx, my = (tpos[0] + ppos[0]) / 2, (tpos[1] + ppos[1]) / 2
        self.annotation(el, "annot", text, mx, my + 10)


def _ml_marking(ms: Multiset, cs: ColourSet) -> str:
    def value(v: Any, s: ColourSet) -> str:
        if v is None:
            return "null"
        if s.kind == "UNIT":
            return "()"
        if s.kind == "product":
            return "(" + ",".join(value(x, f) for x, (_, f) in zip(v, s.fields,
                                                                  strict=True)) + ")"
        if s.kind == "list":
            assert s.element is not None
            return "[" + ",".join(value(x, s.element) for x in v) + "]"
        if s.kind == "ANY":
            return cpn_value(v if isinstance(v, str) else str(v))
        if s.kind == "REAL" and isinstance(v, int) and not isinstance(v, bool):
            return cpn_value(float(v))
        return cpn_value(v)
    return "++".join(f"{n}`{value(v, cs)}" for v, n in ms.items()) or "empty"


def to_cpn(net: Net) -> str:
    """The net as a CPN Tools document (text)."""
    root = _Writer(net).document()
    ET.indent(root)
    return ('<?xml version="1.0" encoding="iso-8859-1"?>\n'
            '<!DOCTYPE workspaceElements PUBLIC "-//CPN//DTD CPNXML 1.0//EN" '
            '"http://cpntools.org/DTD/6/cpn.dtd">\n'
            + ET.tostring(root, encoding="unicode"))


def write_cpn(net: Net, path: str | Path) -> None:
    Path(path).write_text(to_cpn(net), encoding="iso-8859-1", errors="xmlcharrefreplace")
