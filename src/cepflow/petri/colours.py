"""Colour sets (seed 004 Def. 2: places have colours in a set Σ): the typed data a token carries.

A colour set is a name and a type: the basic sets ``INT``, ``INTINF`` (integers of any size:
epoch milliseconds do not fit CPN Tools' 31-bit ``INT``), ``REAL``, ``STRING``, ``BOOL`` and
``ANY`` (any scalar or tuple: fields declared ``any``, group keys), products of named
components (CPN Tools' ``product``, a Python tuple) and lists (``list``, a Python tuple of
elements, so that tokens stay hashable multiset keys). Every basic set also holds ``null``
(None): cepflow events may lack a value, and Esper's tags of an ``or`` branch that did not
match are null. Colour sets are data; :meth:`ColourSet.contains` checks a value, and
:meth:`ColourSet.cpn` writes the CPN ML declaration the CPN Tools export uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: the basic kinds and the CPN ML type each is declared with
BASIC: dict[str, str] = {
    "INT": "int", "INTINF": "intinf", "REAL": "real", "STRING": "string", "BOOL": "bool",
    "ANY": "string", "UNIT": "unit",
}


@dataclass(frozen=True)
class ColourSet:
    """A named colour set. ``kind`` is a basic kind (:data:`BASIC`), ``product`` or ``list``;
    ``fields`` names and types a product's components; ``element`` is a list's element set."""

    name: str
    kind: str
    fields: tuple[tuple[str, ColourSet], ...] = ()
    element: ColourSet | None = None

    def __post_init__(self) -> None:
        if self.kind not in BASIC and self.kind not in ("product", "list"):
            raise ValueError(f"colour set {self.name}: unknown kind {self.kind!r}")
        if self.kind == "product" and len(self.fields) < 2:
            raise ValueError(f"colour set {self.name}: a product needs two components or more")
        if self.kind == "list" and self.element is None:
            raise ValueError(f"colour set {self.name}: a list needs an element colour set")

    @property
    def arity(self) -> int:
        """How many components a token of this set has (1 unless a product)."""
        return len(self.fields) if self.kind == "product" else 1

    @property
    def field_names(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.fields)

    def contains(self, value: Any) -> bool:
        """Is ``value`` a colour of this set?"""
        k = self.kind
        if k == "product":
            return (isinstance(value, tuple) and len(value) == len(self.fields)
                    and all(cs.contains(v) for (_, cs), v in zip(self.fields, value,
                                                                  strict=True)))
        if k == "list":
            assert self.element is not None
            return isinstance(value, tuple) and all(self.element.contains(v) for v in value)
        if value is None:
            return True
        if k in ("INT", "INTINF"):
            return isinstance(value, int) and not isinstance(value, bool)
        if k == "REAL":
            return isinstance(value, int | float) and not isinstance(value, bool)
        if k == "STRING":
            return isinstance(value, str)
        if k == "BOOL":
            return isinstance(value, bool)
        if k == "UNIT":
            return value == ()
        return isinstance(value, str | int | float | bool | tuple)  # ANY (group keys: tuples)

    def cpn(self) -> str:
        """The CPN ML declaration (``colset TH = product INT*INT*STRING;``)."""
        if self.kind == "product":
            return f"colset {self.name} = product {'*'.join(cs.name for _, cs in self.fields)};"
        if self.kind == "list":
            assert self.element is not None
            return f"colset {self.name} = list {self.element.name};"
        return f"colset {self.name} = {BASIC[self.kind]};"

    def describe(self) -> str:
        """A one-line description for step output and reports."""
        if self.kind == "product":
            return "(" + ", ".join(f"{n}: {cs.name}" for n, cs in self.fields) + ")"
        if self.kind == "list":
            assert self.element is not None
            return f"list of {self.element.name}"
        return self.kind


INT = ColourSet("INT", "INT")
INTINF = ColourSet("INTINF", "INTINF")
REAL = ColourSet("REAL", "REAL")
STRING = ColourSet("STRING", "STRING")
BOOL = ColourSet("BOOL", "BOOL")
ANY = ColourSet("ANY", "ANY")
UNIT = ColourSet("UNIT", "UNIT")

#: the basic sets by name
BASIC_SETS: dict[str, ColourSet] = {cs.name: cs for cs in (INT, INTINF, REAL, STRING, BOOL,
                                                           ANY, UNIT)}

#: cepflow's parameter types (events.event.PARAM_TYPES) as colour sets
FOR_PARAM: dict[str, ColourSet] = {"int": INTINF, "float": REAL, "str": STRING, "bool": BOOL,
                                   "any": ANY}


def product(name: str, fields: list[tuple[str, ColourSet]] | tuple[tuple[str, ColourSet], ...]
            ) -> ColourSet:
    """A product colour set, or the one component's set itself when there is only one."""
    fields = tuple(fields)
    if len(fields) == 1:
        return fields[0][1]
    return ColourSet(name, "product", fields)


def list_of(name: str, element: ColourSet) -> ColourSet:
    return ColourSet(name, "list", element=element)
