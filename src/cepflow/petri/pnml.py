"""PNML (ISO/IEC 15909-2, the 2009 high-level net grammar): writing a net and reading it back.

A net is written as a ``highlevelnet`` document: colour sets as named sorts (``integer``,
``string``, ``bool``, ``dot`` for UNIT, ``productsort``, ``list``; REAL, TIME and ANY, which
the standard has no sort for, as arbitrary sorts), variables as variable declarations, the
net functions (``tuple`` aside, which is the grammar's ``tuple``) as arbitrary operators, and
one page per subnet. Every label carries its ``<text>`` — the inscription as
:meth:`~cepflow.petri.inscriptions.ArcInscription.text` writes it — and its ``<structure>``,
the term in the grammar's operators (``and``, ``or``, ``not``, ``equality``, ``inequality``,
``lt``/``leq``/``gt``/``geq``, ``addition``/``subtraction``/``mult``/``div``/``mod``,
``numberof`` and ``add`` for multisets, ``tuple``, ``makelist``/``emptylist``,
``numberconstant``, ``stringconstant``, ``booleanconstant``, ``variable``, ``useroperator``
for the rest: ``real`` and ``null`` constants, negation, the net functions). What the standard
has no label for is in ``<toolspecific tool="cepflow">``: a transition's priority (Def. 2's
π), a place's role, the component names of product sorts, and which arc pairs are read arcs.

:func:`from_pnml` reads the terms of the ``<structure>`` elements (the ``<text>`` only where a
label has no structure), so reading a written net gives the same net (tested). XML is parsed
with defusedxml: a PNML file is data, and a document type declaration or entity in it is
refused.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import defusedxml.ElementTree as SafeET

import cepflow
from cepflow.language import ast
from cepflow.petri.colours import BASIC_SETS, ColourSet
from cepflow.petri.inscriptions import NET_FUNCTIONS, ArcInscription, arc, expr
from cepflow.petri.multiset import Multiset
from cepflow.petri.net import Net, NetError, priority_name

NS = "http://www.pnml.org/version-2009/grammar/pnml"
HLNET = "http://www.pnml.org/version-2009/grammar/highlevelnet"
TOOL = "cepflow"

_BINARY = {"and": "and", "or": "or", "==": "equality", "!=": "inequality", "<": "lt",
           "<=": "leq", ">": "gt", ">=": "geq", "+": "addition", "-": "subtraction",
           "*": "mult", "/": "div", "%": "mod"}
_BY_ELEMENT = {v: k for k, v in _BINARY.items()}


class PnmlError(ValueError):
    """A PNML document cannot be read as a net: what is wrong and where (element, id)."""


# -- writing --------------------------------------------------------------------------------
class _Writer:
    def __init__(self, net: Net) -> None:
        self.net = net
        self.var_ids: dict[str, str] = {}
        self.ops: set[str] = set()

    def sort(self, cs: ColourSet) -> ET.Element:
        return ET.Element("usersort", declaration=_sid(cs.name))

    def sort_def(self, cs: ColourSet) -> ET.Element:
        k = cs.kind
        if k in ("INT", "INTINF"):
            return ET.Element("integer")
        if k == "STRING":
            return ET.Element("string")
        if k == "BOOL":
            return ET.Element("bool")
        if k == "UNIT":
            return ET.Element("dot")
        if k == "product":
            el = ET.Element("productsort")
            for _, f in cs.fields:
                el.append(self.sort(f))
            return el
        if k == "list":
            el = ET.Element("list")
            assert cs.element is not None
            el.append(self.sort(cs.element))
            return el
        raise AssertionError(k)

    def term(self, e: ast.Expr) -> ET.Element:
        if isinstance(e, ast.Name):
            v = ".".join((e.name, *e.path))
            return ET.Element("variable", refvariable=self.var_id(v))
        if isinstance(e, ast.Const):
            return self.constant(e.value)
        if isinstance(e, ast.Unary):
            if e.op == "not":
                return _op("not", self.term(e.operand))
            return self.user("neg", [self.term(e.operand)])
        if isinstance(e, ast.Binary):
            return _op(_BINARY[e.op], self.term(e.left), self.term(e.right))
        if isinstance(e, ast.Call):
            if e.func == "tuple":
                return _op("tuple", *(self.term(a) for a in e.args))
            return self.user(e.func, [self.term(a) for a in e.args])
        raise AssertionError(e)

    def constant(self, v: Any) -> ET.Element:
        if v is None:
            return self.user("null", [])
        if isinstance(v, bool):
            return ET.Element("booleanconstant", value="true" if v else "false")
        if isinstance(v, int):
            el = ET.Element("numberconstant", value=str(v))
            el.append(ET.Element("integer"))
            return el
        if isinstance(v, float):
            return self.user("real", [self.constant(repr(v))])
        if isinstance(v, str):
            el = ET.Element("stringconstant")
            ET.SubElement(el, "value").text = v
            return el
        if isinstance(v, tuple):  # a colour of a product or list (markings)
            return _op("tuple", *(self.constant(x) for x in v))
        raise PnmlError(f"a constant {v!r} cannot be written")

    def colour(self, v: Any, cs: ColourSet) -> ET.Element:
        """A token colour as a term of its colour set (lists as makelist/emptylist)."""
        if cs.kind == "product" and isinstance(v, tuple):
            return _op("tuple", *(self.colour(x, f) for x, (_, f) in zip(v, cs.fields,
                                                                           strict=True)))
        if cs.kind == "list" and isinstance(v, tuple):
            assert cs.element is not None
            if not v:
                el = ET.Element("emptylist")
                el.append(self.sort(cs.element))
                return el
            el = _op("makelist", *(self.colour(x, cs.element) for x in v))
            el.insert(0, self.sort(cs.element))
            return el
        if cs.kind == "UNIT":
            return ET.Element("dotconstant")
        return self.constant(v)

    def user(self, op: str, args: list[ET.Element]) -> ET.Element:
        self.ops.add(op)
        return _op("useroperator", *args, declaration=f"op_{op}")

    def var_id(self, v: str) -> str:
        if v not in self.var_ids:
            self.var_ids[v] = f"v{len(self.var_ids) + 1}"
        return self.var_ids[v]

    def multiset(self, ins: ArcInscription, cs: ColourSet) -> ET.Element:
        """An arc expression: ``numberof(m, term)``."""
        body = (self.term(ins.terms[0]) if len(ins.terms) == 1
                else _op("tuple", *(self.term(t) for t in ins.terms)))
        mult = (self.term(ins.mult) if ins.mult is not None
                else _number(1, "positive"))
        return _op("numberof", mult, body)

    def marking(self, ms: Multiset, cs: ColourSet) -> ET.Element:
        items = [_op("numberof", _number(n, "positive"), self.colour(v, cs))
                 for v, n in ms.items()]
        return items[0] if len(items) == 1 else _op("add", *items)

    def document(self) -> ET.Element:
        net = self.net
        root = ET.Element("pnml", xmlns=NS)
        el = ET.SubElement(root, "net", id="net", type=HLNET)
        _text(ET.SubElement(el, "name"), net.name)
        # pages: one per subnet, in the order their nodes come
        pages: dict[str, ET.Element] = {}

        def page(name: str) -> ET.Element:
            if name not in pages:
                pg = ET.SubElement(el, "page", id=f"page{len(pages) + 1}")
                _text(ET.SubElement(pg, "name"), name or net.name)
                pages[name] = pg
            return pages[name]

        ids: dict[str, str] = {}
        for k, p in enumerate(net.places.values(), start=1):
            ids[p.name] = f"p{k}"
            pl = ET.SubElement(page(p.page), "place", id=ids[p.name])
            _text(ET.SubElement(pl, "name"), p.name)
            ty = ET.SubElement(pl, "type")
            _text(ty, p.colours.name)
            ET.SubElement(ty, "structure").append(self.sort(p.colours))
            ms = net.initial.get(p.name)
            if ms:
                from cepflow.petri.multiset import cpn_multiset
                mk = ET.SubElement(pl, "hlinitialMarking")
                _text(mk, cpn_multiset(ms, p.colours))
                ET.SubElement(mk, "structure").append(self.marking(ms, p.colours))
            ts = _tool(pl)
            ET.SubElement(ts, "place", role=p.role, doc=p.doc)
        for k, t in enumerate(net.transitions.values(), start=1):
            ids[t.name] = f"t{k}"
            tr = ET.SubElement(page(t.page), "transition", id=ids[t.name])
            _text(ET.SubElement(tr, "name"), t.name)
            if t.guard is not None:
                from cepflow.language.printer import format_expr
                cond = ET.SubElement(tr, "condition")
                _text(cond, format_expr(t.guard))
                ET.SubElement(cond, "structure").append(self.term(t.guard))
            ET.SubElement(_tool(tr), "priority", level=str(t.priority),
                          name=priority_name(t.priority), doc=t.doc)
        for k, a in enumerate(net.arcs, start=1):
            p, t = ids[a.place], ids[a.transition]
            pg = page(net.transitions[a.transition].page)
            for direction in (("in", "out") if a.kind == "read" else (a.kind,)):
                src, dst = (p, t) if direction == "in" else (t, p)
                ar = ET.SubElement(pg, "arc", id=f"a{k}" + (f"{direction}" if a.kind == "read"
                                                            else ""), source=src, target=dst)
                ins = ET.SubElement(ar, "hlinscription")
                _text(ins, a.inscription.text())
                ET.SubElement(ins, "structure").append(
                    self.multiset(a.inscription, net.places[a.place].colours))
                if a.kind == "read":
                    ET.SubElement(_tool(ar), "read", pair=f"a{k}")
        # declarations last written, first in the document: they depend on what was used
        decl = ET.Element("declaration")
        ds = ET.SubElement(ET.SubElement(decl, "structure"), "declarations")
        types = net.variable_types()
        sets = net.colour_sets([types.get(v, BASIC_SETS["ANY"]) for v in self.var_ids])
        for cs in sets.values():
            if cs.kind in ("REAL", "ANY"):
                ET.SubElement(ds, "arbitrarysort", id=_sid(cs.name), name=cs.name)
            else:
                ET.SubElement(ds, "namedsort", id=_sid(cs.name), name=cs.name).append(
                    self.sort_def(cs))
        for v, vid in self.var_ids.items():
            vd = ET.SubElement(ds, "variabledecl", id=vid, name=v)
            vd.append(self.sort(types.get(v, BASIC_SETS["ANY"])))
        for op in sorted(self.ops):
            od = ET.SubElement(ds, "arbitraryoperator", id=f"op_{op}", name=op)
            ET.SubElement(od, "output").append(ET.Element("usersort", declaration=_sid("ANY")))
        if "ANY" not in sets and self.ops:
            ET.SubElement(ds, "arbitrarysort", id=_sid("ANY"), name="ANY")
        el.insert(1, decl)
        info = _tool(el)
        for cs in sets.values():
            if cs.kind == "product":
                ET.SubElement(info, "colourset", name=cs.name,
                              fields=" ".join(n for n, _ in cs.fields))
            elif cs.kind not in ("product", "list"):
                ET.SubElement(info, "colourset", name=cs.name, kind=cs.kind)
        for v, cs in net.var_types.items():
            ET.SubElement(info, "vartype", name=v, colourset=cs.name)
        if net.doc:
            ET.SubElement(info, "doc").text = net.doc
        return root


def _sid(name: str) -> str:
    return "s_" + re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _text(parent: ET.Element, text: str) -> None:
    ET.SubElement(parent, "text").text = text


def _tool(parent: ET.Element) -> ET.Element:
    return ET.SubElement(parent, "toolspecific", tool=TOOL, version=cepflow.__version__)


def _op(tag: str, *subterms: ET.Element, **attrs: str) -> ET.Element:
    el = ET.Element(tag, **attrs)
    for s in subterms:
        ET.SubElement(el, "subterm").append(s)
    return el


def _number(n: int, sort: str = "integer") -> ET.Element:
    el = ET.Element("numberconstant", value=str(n))
    el.append(ET.Element(sort))
    return el


def to_pnml(net: Net) -> str:
    """The net as a PNML document (text)."""
    root = _Writer(net).document()
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def write_pnml(net: Net, path: str | Path) -> None:
    Path(path).write_text(to_pnml(net), encoding="utf-8")


# -- reading --------------------------------------------------------------------------------
def _strip(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _kids(el: ET.Element, tag: str | None = None) -> list[ET.Element]:
    return [c for c in el if tag is None or _strip(c.tag) == tag]


def _kid(el: ET.Element, tag: str) -> ET.Element | None:
    for c in el:
        if _strip(c.tag) == tag:
            return c
    return None


def _label_text(el: ET.Element, tag: str) -> str | None:
    lab = _kid(el, tag)
    if lab is None:
        return None
    t = _kid(lab, "text")
    return None if t is None else (t.text or "")


class _Reader:
    def __init__(self, root: ET.Element) -> None:
        self.root = root
        self.vars: dict[str, str] = {}
        self.sorts: dict[str, ET.Element] = {}
        self.sort_names: dict[str, str] = {}
        self.sets: dict[str, ColourSet] = dict(BASIC_SETS)
        self.fields: dict[str, list[str]] = {}
        self.kinds: dict[str, str] = {}

    def fail(self, what: str, el: ET.Element | None = None) -> PnmlError:
        where = f" ({_strip(el.tag)} {el.get('id')})" if el is not None and el.get("id") \
            else ""
        return PnmlError(f"PNML: {what}{where}")

    def term(self, el: ET.Element) -> ast.Expr:
        tag = _strip(el.tag)
        subs = [self.term(_only(s, self)) for s in _kids(el, "subterm")]
        if tag == "variable":
            ref = el.get("refvariable", "")
            if ref not in self.vars:
                raise self.fail(f"unknown variable {ref!r}", el)
            head, *rest = self.vars[ref].split(".")
            return ast.Name(head, tuple(rest))
        if tag == "numberconstant":
            return ast.Const(int(el.get("value", "0")))
        if tag == "booleanconstant":
            return ast.Const(el.get("value") == "true")
        if tag == "stringconstant":
            v = _kid(el, "value")
            return ast.Const("" if v is None else (v.text or ""))
        if tag == "not":
            return ast.Unary("not", subs[0])
        if tag in _BY_ELEMENT:
            if len(subs) != 2:
                raise self.fail(f"{tag} needs two subterms", el)
            return ast.Binary(_BY_ELEMENT[tag], subs[0], subs[1])
        if tag == "tuple":
            return ast.Call("tuple", tuple(subs))
        if tag == "useroperator":
            op = el.get("declaration", "").removeprefix("op_")
            if op == "null":
                return ast.Const(None)
            if op == "neg":
                return ast.Unary("-", subs[0])
            if op == "real":
                assert isinstance(subs[0], ast.Const)
                return ast.Const(float(subs[0].value))
            if op not in NET_FUNCTIONS and op not in _builtin_names():
                raise self.fail(f"unknown operator {op!r}", el)
            return ast.Call(op, tuple(subs))
        raise self.fail(f"term <{tag}> is not one cepflow writes", el)

    def value(self, el: ET.Element) -> Any:
        """A constant term (a marking's colour) as a value."""
        tag = _strip(el.tag)
        if tag in ("makelist", "tuple"):
            return tuple(self.value(_only(s, self)) for s in _kids(el, "subterm"))
        if tag == "emptylist":
            return ()
        if tag == "dotconstant":
            return ()
        e = self.term(el)
        if not isinstance(e, ast.Const):
            raise self.fail("a marking holds constants only", el)
        return e.value

    def marking(self, el: ET.Element) -> Multiset:
        ms = Multiset()
        items = [el] if _strip(el.tag) == "numberof" else [
            _only(s, self) for s in _kids(el, "subterm")]
        for it in items:
            if _strip(it.tag) != "numberof":
                raise self.fail("a marking is a sum of numberof terms", it)
            n, v = (_only(s, self) for s in _kids(it, "subterm"))
            ms.add(self.value(v), int(n.get("value", "1")))
        return ms

    def colour_set(self, sid: str) -> ColourSet:
        name = self.sort_names.get(sid)
        if name is None:
            raise self.fail(f"unknown sort {sid!r}")
        if name in self.sets:
            return self.sets[name]
        d = self.sorts[sid]
        tag = _strip(d.tag)
        if tag == "arbitrarysort":
            cs = ColourSet(name, self.kinds.get(name, "ANY"))
        else:
            body = _only(d, self)
            bt = _strip(body.tag)
            if bt == "productsort":
                subs = [self.colour_set(s.get("declaration", "")) for s in body]
                names = self.fields.get(name) or [f"f{i}" for i in range(len(subs))]
                cs = ColourSet(name, "product", tuple(zip(names, subs, strict=True)))
            elif bt == "list":
                cs = ColourSet(name, "list", element=self.colour_set(
                    _only(body, self).get("declaration", "")))
            else:
                kind = self.kinds.get(name) or {"integer": "INT", "string": "STRING",
                                                 "bool": "BOOL", "dot": "UNIT"}[bt]
                cs = ColourSet(name, kind)
        self.sets[name] = cs
        return cs

    def read(self) -> Net:
        root = self.root
        if _strip(root.tag) != "pnml":
            raise self.fail("the document is not PNML (root element is not <pnml>)")
        nets = _kids(root, "net")
        if len(nets) != 1:
            raise self.fail(f"expected one <net>, found {len(nets)}")
        el = nets[0]
        if el.get("type") != HLNET:
            raise self.fail(f"net type {el.get('type')!r} is not the high-level net grammar")
        net = Net(_label_text(el, "name") or el.get("id", "net"))
        for ts in _kids(el, "toolspecific"):
            if ts.get("tool") != TOOL:
                continue
            for c in _kids(ts, "colourset"):
                if c.get("fields"):
                    self.fields[c.get("name", "")] = c.get("fields", "").split()
                if c.get("kind"):
                    self.kinds[c.get("name", "")] = c.get("kind", "")
            doc = _kid(ts, "doc")
            if doc is not None:
                net.doc = doc.text or ""
        decl = _kid(el, "declaration")
        if decl is not None:
            st = _kid(decl, "structure")
            ds = _kid(st, "declarations") if st is not None else None
            for d in _kids(ds) if ds is not None else []:
                tag = _strip(d.tag)
                if tag in ("namedsort", "arbitrarysort"):
                    self.sorts[d.get("id", "")] = d
                    self.sort_names[d.get("id", "")] = d.get("name", "")
                elif tag == "variabledecl":
                    self.vars[d.get("id", "")] = d.get("name", "")
        ts = _kid(el, "toolspecific")
        if ts is not None and ts.get("tool") == TOOL:
            for vt in _kids(ts, "vartype"):
                net.var_types[vt.get("name", "")] = self.colour_set(
                    _sid(vt.get("colourset", "")))
        ids: dict[str, str] = {}
        arcs: list[tuple[ET.Element, str]] = []
        for pg in _kids(el, "page"):
            page = _label_text(pg, "name") or ""
            page = "" if page == net.name else page
            for node in pg:
                tag = _strip(node.tag)
                nid = node.get("id", "")
                name = _label_text(node, "name") or nid
                if tag == "place":
                    ty = _kid(node, "type")
                    st = _kid(ty, "structure") if ty is not None else None
                    if st is None:
                        raise self.fail("a place needs its sort (<type><structure>)", node)
                    cs = self.colour_set(_only(st, self).get("declaration", ""))
                    info = _tool_info(node, "place")
                    net.place(name, cs, info.get("role", ""), page, info.get("doc", ""))
                    ids[nid] = name
                    mk = _kid(node, "hlinitialMarking")
                    if mk is not None:
                        ms_st = _kid(mk, "structure")
                        if ms_st is not None:
                            net.initial[name] = self.marking(_only(ms_st, self))
                elif tag == "transition":
                    cond = _kid(node, "condition")
                    guard = None
                    if cond is not None:
                        cst = _kid(cond, "structure")
                        guard = (self.term(_only(cst, self)) if cst is not None
                                 else expr(_label_text(node, "condition") or "true"))
                    info = _tool_info(node, "priority")
                    net.transition(name, guard, int(info.get("level", "2")), page,
                                   info.get("doc", ""))
                    ids[nid] = name
                elif tag == "arc":
                    arcs.append((node, page))
        reads: dict[str, list[tuple[str, str, ArcInscription]]] = {}
        for node, _ in arcs:
            src, dst = node.get("source", ""), node.get("target", "")
            if src not in ids or dst not in ids:
                raise self.fail("an arc joins an unknown node", node)
            lab = _kid(node, "hlinscription")
            if lab is None:
                raise self.fail("an arc needs its inscription", node)
            st = _kid(lab, "structure")
            ins = (self.inscription(_only(st, self)) if st is not None
                   else arc(_label_text(node, "hlinscription") or ""))
            if src in ids and ids[src] in net.places:
                place, trans, kind = ids[src], ids[dst], "in"
            else:
                place, trans, kind = ids[dst], ids[src], "out"
            info = _tool_info(node, "read")
            if info:
                reads.setdefault(info.get("pair", ""), []).append((place, trans, ins))
                continue
            net.arc(place, trans, kind, ins)  # type: ignore[arg-type]
        for pair, items in reads.items():
            place, trans, ins = items[0]
            if len(items) != 2:
                raise self.fail(f"read arc {pair} needs both its arcs")
            net.arc(place, trans, "read", ins)
        try:
            net.check()
        except NetError as e:
            raise self.fail(str(e)) from None
        return net

    def inscription(self, el: ET.Element) -> ArcInscription:
        if _strip(el.tag) != "numberof":
            raise self.fail("an arc inscription is a numberof term", el)
        m, body = (_only(s, self) for s in _kids(el, "subterm"))
        mult = self.term(m)
        if isinstance(mult, ast.Const) and mult.value == 1:
            mult_e = None
        else:
            mult_e = mult
        b = self.term(body)
        terms = b.args if isinstance(b, ast.Call) and b.func == "tuple" and _strip(
            body.tag) == "tuple" else (b,)
        return ArcInscription(tuple(terms), mult_e)


def _builtin_names() -> set[str]:
    from cepflow.compiler.evaluator import BUILTINS
    return set(BUILTINS)


def _only(el: ET.Element, reader: _Reader) -> ET.Element:
    kids = list(el)
    if len(kids) != 1:
        raise reader.fail(f"<{_strip(el.tag)}> must hold one element, has {len(kids)}", el)
    return kids[0]


def _tool_info(node: ET.Element, tag: str) -> dict[str, str]:
    for ts in _kids(node, "toolspecific"):
        if ts.get("tool") == TOOL:
            el = _kid(ts, tag)
            if el is not None:
                return dict(el.attrib)
    return {}


def from_pnml(text: str) -> Net:
    """Read a PNML document written by :func:`to_pnml` (PnmlError when it is not one)."""
    try:
        root = SafeET.fromstring(text)
    except Exception as e:  # ParseError, DTDForbidden, EntitiesForbidden …
        raise PnmlError(f"PNML: not a well-formed document: {e}") from None
    return _Reader(root).read()


def read_pnml(path: str | Path) -> Net:
    return from_pnml(Path(path).read_text(encoding="utf-8"))
