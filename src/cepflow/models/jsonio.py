"""JSON load/save of metamodels and models (documented in docs/models.md).

Plain JSON only: nothing is ever evaluated or unpickled. Errors say where the offending
element is, as a JSON path (``model.json: $.objects[3].attributes.totalCpu: expected int, got
str '4'``).

Metamodel::

    {"metamodel": "cps", "classes": [{"name": "Host", "abstract": false, "supertypes": [],
      "attributes": [{"name": "totalCpu", "type": "int", "default": 0}],
      "references": [{"name": "applications", "type": "Application", "lower": 0,
                      "upper": -1, "containment": true}]}]}

Model (``metamodel`` is embedded, or its name when the caller supplies the metamodel)::

    {"format": "cepflow-model", "version": 1, "metamodel": {...}, "ts": 0,
     "objects": [{"id": "h1", "class": "Host", "attributes": {"totalCpu": 8},
                  "references": {"applications": ["a1"]}}]}
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cepflow.language.source import read_source
from cepflow.models.live_model import Model, ModelError
from cepflow.models.metamodel import (
    MANY,
    Metamodel,
    MetamodelBuilder,
    MetamodelError,
    did_you_mean,
)
from cepflow.models.mmparser import parse_metamodel

FORMAT = "cepflow-model"
VERSION = 1


class JsonFormatError(Exception):
    """A JSON document that is not a valid metamodel or model: where, and why."""

    def __init__(self, path: str, reason: str, source: str = "<json>") -> None:
        self.path = path
        self.reason = reason
        self.source = source
        super().__init__(f"{source}: {path}: {reason}")


# ---------------------------------------------------------------- writing


def metamodel_to_dict(mm: Metamodel) -> dict[str, Any]:
    """The JSON form of a metamodel (own features only; inheritance via ``supertypes``)."""
    return {
        "metamodel": mm.name,
        "classes": [
            {
                "name": c.name,
                "abstract": c.abstract,
                "supertypes": [s.name for s in c.supertypes],
                "attributes": [{"name": a.name, "type": a.type, "default": a.default}
                               for a in c.own_attributes.values()],
                "references": [{"name": r.name, "type": r.target, "lower": r.lower,
                                "upper": r.upper, "containment": r.containment}
                               for r in c.own_references.values()],
            }
            for c in mm
        ],
    }


def model_to_dict(model: Model, *, embed_metamodel: bool = True) -> dict[str, Any]:
    """The JSON form of a model: objects in creation order, every attribute, references in
    order (ids)."""
    mm = model.metamodel
    return {
        "format": FORMAT,
        "version": VERSION,
        "metamodel": metamodel_to_dict(mm) if embed_metamodel else mm.name,
        "ts": model.ts,
        "objects": [
            {
                "id": o.id,
                "class": o.cls.name,
                "attributes": {a: o[a] for a in o.cls.attributes},
                "references": {r: [t.id for t in o.targets(r)] for r in o.cls.references
                               if o.targets(r)},
            }
            for o in model.objects()
        ],
    }


def save_model(model: Model, path: str | Path, *, embed_metamodel: bool = True) -> None:
    """Write ``model`` as JSON (UTF-8, indented)."""
    text = json.dumps(model_to_dict(model, embed_metamodel=embed_metamodel), indent=1)
    Path(path).write_text(text + "\n", encoding="utf-8")


def save_metamodel(mm: Metamodel, path: str | Path) -> None:
    """Write ``mm`` as JSON."""
    Path(path).write_text(json.dumps(metamodel_to_dict(mm), indent=1) + "\n", encoding="utf-8")


# ---------------------------------------------------------------- reading


def read_metamodel(path: str | Path) -> Metamodel:
    """Read a metamodel file: JSON if it ends in ``.json``, the text format otherwise."""
    p = Path(path)
    text = read_source(p, MetamodelError)
    if p.suffix.lower() == ".json":
        return metamodel_from_dict(_json(text, str(path)), str(path))
    return parse_metamodel(text, str(path))


def load_model(path: str | Path, metamodel: Metamodel | None = None) -> Model:
    """Read a model JSON file (with its embedded metamodel, or the one given)."""
    return model_from_dict(_json(Path(path).read_text(encoding="utf-8"), str(path)),
                           metamodel, str(path))


def _json(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise JsonFormatError(f"line {e.lineno} column {e.colno}", f"invalid JSON: {e.msg}",
                              source) from None


class _Reader:
    """Typed access to a JSON document that reports errors with the element's path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, reason: str) -> JsonFormatError:
        return JsonFormatError(path, reason, self.source)

    def get(self, obj: Mapping[str, Any], key: str, path: str, kind: type | tuple[type, ...],
            default: Any = ..., *, what: str | None = None) -> Any:
        """``obj[key]`` checked to be of ``kind`` (``default`` if absent and given)."""
        if key not in obj:
            if default is not ...:
                return default
            raise self.fail(path, f"missing key '{key}'")
        return self.check(obj[key], f"{path}.{key}", kind, what)

    def check(self, value: Any, path: str, kind: type | tuple[type, ...],
              what: str | None = None) -> Any:
        kinds = kind if isinstance(kind, tuple) else (kind,)
        is_bool = isinstance(value, bool)
        if not isinstance(value, kinds) or (is_bool and bool not in kinds):
            expected = what or " or ".join(_JSON_NAMES.get(k, k.__name__) for k in kinds)
            raise self.fail(path, f"expected {expected}, got {_json_kind(value)} "
                                  f"{json.dumps(value)[:40]}")
        return value

    def keys(self, obj: Mapping[str, Any], path: str, allowed: set[str]) -> None:
        for key in obj:
            if key not in allowed:
                raise self.fail(f"{path}.{key}", f"unknown key (allowed: "
                                                 f"{', '.join(sorted(allowed))})")


_JSON_NAMES: dict[type, str] = {dict: "an object", list: "an array", str: "a string",
                                int: "an integer", bool: "a boolean", float: "a number"}


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
            dict: "object"}.get(type(value), type(value).__name__)


def metamodel_from_dict(data: Any, source: str = "<json>") -> Metamodel:
    """Build a metamodel from its JSON form; raise JsonFormatError or MetamodelError (whose
    messages start with the JSON path of the offending class or feature)."""
    r = _Reader(source)
    r.check(data, "$", dict)
    r.keys(data, "$", {"metamodel", "classes"})
    builder = MetamodelBuilder(r.get(data, "metamodel", "$", str), source)
    for i, c in enumerate(r.get(data, "classes", "$", list)):
        p = f"$.classes[{i}]"
        r.check(c, p, dict)
        r.keys(c, p, {"name", "abstract", "supertypes", "attributes", "references"})
        supers = r.get(c, "supertypes", p, list, [])
        for j, s in enumerate(supers):
            r.check(s, f"{p}.supertypes[{j}]", str)
        cb = builder.add_class(r.get(c, "name", p, str), supers,
                               abstract=r.get(c, "abstract", p, bool, False), loc=p)
        for j, a in enumerate(r.get(c, "attributes", p, list, [])):
            ap = f"{p}.attributes[{j}]"
            r.check(a, ap, dict)
            r.keys(a, ap, {"name", "type", "default"})
            cb.attr(r.get(a, "name", ap, str), r.get(a, "type", ap, str),
                    r.get(a, "default", ap, (int, float, str, bool), None), loc=ap)
        for j, ref in enumerate(r.get(c, "references", p, list, [])):
            rp = f"{p}.references[{j}]"
            r.check(ref, rp, dict)
            r.keys(ref, rp, {"name", "type", "lower", "upper", "containment"})
            cb.ref(r.get(ref, "name", rp, str), r.get(ref, "type", rp, str),
                   r.get(ref, "lower", rp, int, 0), r.get(ref, "upper", rp, int, MANY),
                   contains=r.get(ref, "containment", rp, bool, False), loc=rp)
    return builder.build()


def model_from_dict(data: Any, metamodel: Metamodel | None = None,
                    source: str = "<json>") -> Model:
    """Build a model from its JSON form (objects first, then references, so references may
    point forward). Every error names the JSON path of the offending element."""
    r = _Reader(source)
    r.check(data, "$", dict)
    r.keys(data, "$", {"format", "version", "metamodel", "ts", "objects"})
    if r.get(data, "format", "$", str) != FORMAT:
        raise r.fail("$.format", f"expected \"{FORMAT}\", got {json.dumps(data['format'])}")
    if r.get(data, "version", "$", int) != VERSION:
        raise r.fail("$.version", f"unsupported version {data['version']} (this is {VERSION})")
    mm = _model_metamodel(r, data, metamodel)
    model = Model(mm)
    ts = r.get(data, "ts", "$", (int, float), 0)
    objects = r.get(data, "objects", "$", list)
    with model.transaction(ts=ts):
        for i, o in enumerate(objects):
            p = f"$.objects[{i}]"
            r.check(o, p, dict)
            r.keys(o, p, {"id", "class", "attributes", "references"})
            cls = r.get(o, "class", p, str)
            if cls not in mm:
                raise r.fail(f"{p}.class", f"unknown class '{cls}'{did_you_mean(cls, mm.classes)}")
            if mm[cls].abstract:
                raise r.fail(f"{p}.class", f"class {cls} is abstract")
            attrs = r.get(o, "attributes", p, dict, {})
            obj_id = r.get(o, "id", p, str)
            try:
                model.create(cls, obj_id, values=attrs)
            except ModelError as e:
                where = f"{p}.attributes.{e.feature}" if e.feature else f"{p}.id"
                raise r.fail(where, e.reason) from None
        for i, o in enumerate(objects):
            p = f"$.objects[{i}]"
            for ref, targets in r.get(o, "references", p, dict, {}).items():
                rp = f"{p}.references.{ref}"
                r.check(targets, rp, list, "an array of object ids")
                for j, t in enumerate(targets):
                    r.check(t, f"{rp}[{j}]", str, "an object id")
                    try:
                        model.add(o["id"], ref, t)
                    except ModelError as e:
                        raise r.fail(f"{rp}[{j}]", e.reason) from None
    return model


def _model_metamodel(r: _Reader, data: Mapping[str, Any], given: Metamodel | None) -> Metamodel:
    """The given metamodel (whose name must match the document's), else the embedded one."""
    embedded = data.get("metamodel")
    if given is not None:
        name = embedded.get("metamodel") if isinstance(embedded, dict) else embedded
        if name is not None and name != given.name:
            raise r.fail("$.metamodel", f"model is of metamodel {json.dumps(name)}, "
                                        f"not {given.name!r}")
        return given
    if not isinstance(embedded, dict):
        raise r.fail("$.metamodel", "no metamodel embedded (an object) and none given")
    try:
        return metamodel_from_dict(embedded, r.source)
    except JsonFormatError as e:
        raise r.fail("$.metamodel" + e.path[1:], e.reason) from None
    except MetamodelError as e:
        path, _, reason = e.diagnostics[0].message.partition(": ")
        more = len(e.diagnostics) - 1
        if more:
            reason += f" (and {more} more problem{'s' if more > 1 else ''})"
        raise r.fail("$.metamodel" + path[1:], reason) from None
