"""Metamodels: classes with typed attributes, references and (multiple) inheritance.

A metamodel is the type system of a live model (000 §3 Fig. 4a, §7 Fig. 15): classes own
attributes of a primitive type (``int``, ``float``, ``str``, ``bool``) and references to other
classes with a multiplicity ``[lower..upper]`` (``upper == MANY`` for unbounded) that may be
containments. A class inherits every feature of its supertypes, transitively; a feature name
must be unique across a class and everything it inherits (the same feature reached through
two paths of a diamond is one feature).

Metamodels are immutable once built. They are declared with :class:`MetamodelBuilder` (Python)
or parsed from text (:mod:`cepflow.models.mmparser`) and JSON (:mod:`cepflow.models.jsonio`),
which all go through the builder's single validation pass.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cepflow.events.event import PRIMITIVE_ALIASES
from cepflow.language.diagnostics import Diagnostic, DiagnosticError

#: Upper bound of a reference that takes any number of targets.
MANY = -1

#: The attribute types of a metamodel (canonical names).
PRIMITIVE_TYPES = ("int", "float", "str", "bool")

_ZERO: dict[str, Any] = {"int": 0, "float": 0.0, "str": "", "bool": False}

#: Where a declaration came from: (line, column) in a text file, a JSON path, or unknown.
Loc = tuple[int, int] | str | None


def primitive_type(name: str) -> str | None:
    """The canonical primitive type for ``name`` (``Integer`` -> ``int``), None if not one."""
    return PRIMITIVE_ALIASES.get(name.lower())


def coerce_value(type_name: str, value: Any) -> Any:
    """``value`` as a value of primitive ``type_name``; raise TypeError saying why it is not.

    ints are accepted for floats (and stored as float); bools are never ints or floats.
    """
    if type_name == "bool":
        if isinstance(value, bool):
            return value
    elif type_name == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif type_name == "float":
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    elif type_name == "str":
        if isinstance(value, str):
            return value
    else:  # pragma: no cover - guarded by the builder
        raise TypeError(f"unknown type {type_name!r}")
    raise TypeError(f"expected {type_name}, got {type(value).__name__} {value!r}")


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or an empty string."""
    close = difflib.get_close_matches(name, list(candidates), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


class MetamodelError(DiagnosticError):
    """Problems found in a metamodel declaration: every one of them, located where possible."""

    def __str__(self) -> str:
        return "\n".join(format_diagnostic(d) for d in self.diagnostics)


def format_diagnostic(d: Diagnostic) -> str:
    """``FILE:LINE:COL: error: msg``, or ``FILE: error: msg`` when the place is unknown."""
    return str(d) if d.line > 0 else f"{d.file}: {d.severity}: {d.message}"


@dataclass(frozen=True, eq=False)
class Attribute:
    """A single-valued attribute of a primitive type with a default value."""

    name: str
    type: str
    default: Any
    owner: str
    loc: Loc = field(default=None, repr=False)


@dataclass(frozen=True, eq=False)
class Reference:
    """A reference to instances of class ``target`` with multiplicity ``[lower..upper]``.

    References are ordered sets (a target occurs at most once). A containment reference makes
    its source the container of each target: an object has at most one container, containment
    has no cycles, and deleting a container deletes what it contains.
    """

    name: str
    target: str
    lower: int
    upper: int
    containment: bool
    owner: str
    loc: Loc = field(default=None, repr=False)

    @property
    def many(self) -> bool:
        """True if the reference can hold more than one target."""
        return self.upper == MANY or self.upper > 1

    @property
    def multiplicity(self) -> str:
        """``[lower..upper]`` as written in the text format (``*`` for MANY)."""
        upper = "*" if self.upper == MANY else str(self.upper)
        return f"[{self.lower}..{upper}]"


Feature = Attribute | Reference


class ModelClass:
    """A class of a metamodel. Built by :class:`MetamodelBuilder`; immutable afterwards.

    ``attributes``/``references`` hold every feature including inherited ones (own features
    first, then supertypes' in declaration order); ``ancestors`` the names of the class and all
    its supertypes; ``descendants`` the class and all its subclasses.
    """

    def __init__(self, name: str, abstract: bool, loc: Loc = None) -> None:
        self.name = name
        self.abstract = abstract
        self.loc = loc
        self.supertypes: tuple[ModelClass, ...] = ()
        self.own_attributes: dict[str, Attribute] = {}
        self.own_references: dict[str, Reference] = {}
        self.attributes: dict[str, Attribute] = {}
        self.references: dict[str, Reference] = {}
        self.ancestors: frozenset[str] = frozenset()
        self.descendants: tuple[ModelClass, ...] = ()

    def is_a(self, other: ModelClass | str) -> bool:
        """True if this class is ``other`` or one of its (transitive) subclasses."""
        return (other if isinstance(other, str) else other.name) in self.ancestors

    def feature(self, name: str) -> Feature | None:
        """The attribute or reference called ``name`` (own or inherited), or None."""
        return self.attributes.get(name) or self.references.get(name)

    @property
    def feature_names(self) -> list[str]:
        """Every feature name of the class, attributes first."""
        return [*self.attributes, *self.references]

    def __repr__(self) -> str:
        return f"<class {self.name}>"


class Metamodel:
    """A named, immutable set of classes (in declaration order)."""

    def __init__(self, name: str, classes: Mapping[str, ModelClass], source: str) -> None:
        self.name = name
        self.classes: dict[str, ModelClass] = dict(classes)
        self.source = source

    def __getitem__(self, name: str) -> ModelClass:
        try:
            return self.classes[name]
        except KeyError:
            raise KeyError(
                f"metamodel {self.name} has no class '{name}'{did_you_mean(name, self.classes)}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self.classes

    def __iter__(self) -> Iterator[ModelClass]:
        return iter(self.classes.values())

    def __len__(self) -> int:
        return len(self.classes)

    def have_common_subtype(self, a: str, b: str) -> bool:
        """True if some class is both an ``a`` and a ``b`` (one may be the other)."""
        return any(c.is_a(b) for c in self.classes[a].descendants)

    def __repr__(self) -> str:
        return f"<metamodel {self.name}: {', '.join(self.classes)}>"


class ClassBuilder:
    """Collects the features of one class; returned by :meth:`MetamodelBuilder.add_class`."""

    def __init__(self, owner: MetamodelBuilder, name: str, supertypes: tuple[str, ...],
                 abstract: bool, loc: Loc) -> None:
        self._owner = owner
        self.name = name
        self.supertypes = supertypes
        self.abstract = abstract
        self.loc = loc
        self.attributes: list[tuple[str, str, Any, Loc]] = []
        self.references: list[tuple[str, str, int, int, bool, Loc]] = []

    def attr(self, name: str, type: str, default: Any = None, *, loc: Loc = None) -> ClassBuilder:
        """Declare attribute ``name: type`` (default: the type's zero value)."""
        self.attributes.append((name, type, default, loc))
        return self

    def ref(self, name: str, target: str, lower: int = 0, upper: int = 1, *,
            contains: bool = False, loc: Loc = None) -> ClassBuilder:
        """Declare reference ``name: target[lower..upper]`` (``upper=MANY`` for ``*``)."""
        self.references.append((name, target, lower, upper, contains, loc))
        return self


class MetamodelBuilder:
    """Declare a metamodel in Python; :meth:`build` validates it and reports every problem.

    >>> b = MetamodelBuilder("cps")
    >>> _ = b.add_class("Host").attr("totalCpu", "int").ref("apps", "App", 0, MANY, contains=True)
    >>> _ = b.add_class("App").attr("id", "str")
    >>> mm = b.build()
    """

    def __init__(self, name: str, source: str = "<python>") -> None:
        self.name = name
        self.source = source
        self._classes: list[ClassBuilder] = []

    def add_class(self, name: str, supertypes: Iterable[str] = (), *, abstract: bool = False,
                  loc: Loc = None) -> ClassBuilder:
        """Declare a class; add its features on the returned :class:`ClassBuilder`."""
        cb = ClassBuilder(self, name, tuple(supertypes), abstract, loc)
        self._classes.append(cb)
        return cb

    def build(self) -> Metamodel:
        """The validated metamodel; raise MetamodelError listing every problem."""
        return _Validator(self).run()


class _Validator:
    """The single validation pass behind every way of declaring a metamodel."""

    def __init__(self, builder: MetamodelBuilder) -> None:
        self.b = builder
        self.errors: list[Diagnostic] = []
        self.declared: dict[str, ClassBuilder] = {}  # first declaration of each class name

    def error(self, loc: Loc, message: str) -> None:
        if isinstance(loc, str):  # a JSON path
            self.errors.append(Diagnostic(self.b.source, 0, 0, f"{loc}: {message}"))
        else:
            line, col = loc if loc else (0, 0)
            self.errors.append(Diagnostic(self.b.source, line, col, message))

    def run(self) -> Metamodel:
        classes = self._declare_classes()
        self._link_supertypes(classes)
        order = self._linearize(classes)
        self._declare_features(classes)
        for name in order:
            self._inherit(classes[name])
        self._check_targets(classes)
        if self.errors:
            raise MetamodelError(self.errors)
        for cls in classes.values():
            cls.descendants = tuple(c for c in classes.values() if c.is_a(cls))
        return Metamodel(self.b.name, classes, self.b.source)

    def _declare_classes(self) -> dict[str, ModelClass]:
        classes: dict[str, ModelClass] = {}
        for cb in self.b._classes:
            if not cb.name.isidentifier():
                self.error(cb.loc, f"'{cb.name}' is not a valid class name")
            elif primitive_type(cb.name) is not None:
                self.error(cb.loc, f"class name '{cb.name}' is a primitive type name")
            elif cb.name in classes:
                self.error(cb.loc, f"class '{cb.name}' is declared twice")
            else:
                classes[cb.name] = ModelClass(cb.name, cb.abstract, cb.loc)
                self.declared[cb.name] = cb
        return classes

    def _declarations(self, classes: dict[str, ModelClass]) -> Iterator[tuple[ClassBuilder,
                                                                             ModelClass]]:
        """(builder, class) for every class declared once (duplicates are already errors)."""
        for name, cb in self.declared.items():
            yield cb, classes[name]

    def _link_supertypes(self, classes: dict[str, ModelClass]) -> None:
        for cb, cls in self._declarations(classes):
            supers = []
            for s in cb.supertypes:
                if s not in classes:
                    self.error(cb.loc, f"class '{cb.name}' extends unknown class "
                                       f"'{s}'{did_you_mean(s, classes)}")
                elif classes[s] in supers:
                    self.error(cb.loc, f"class '{cb.name}' extends '{s}' twice")
                else:
                    supers.append(classes[s])
            cls.supertypes = tuple(supers)

    def _linearize(self, classes: dict[str, ModelClass]) -> list[str]:
        """Classes with supertypes first; an inheritance cycle is an error (and is cut)."""
        order: list[str] = []
        state: dict[str, int] = {}  # 1 = visiting, 2 = done

        def visit(cls: ModelClass) -> None:
            state[cls.name] = 1
            kept = []
            for s in cls.supertypes:
                if state.get(s.name) == 1:
                    self.error(cls.loc, f"inheritance cycle: '{cls.name}' extends '{s.name}', "
                                        f"which is (a subclass of) '{cls.name}'")
                    continue
                if s.name not in state:
                    visit(s)
                kept.append(s)
            cls.supertypes = tuple(kept)
            state[cls.name] = 2
            order.append(cls.name)

        for cls in classes.values():
            if cls.name not in state:
                visit(cls)
        return order

    def _declare_features(self, classes: dict[str, ModelClass]) -> None:
        for cb, cls in self._declarations(classes):
            seen: set[str] = set()
            for name, type_name, default, loc in cb.attributes:
                if self._feature_name_ok(cls, name, seen, loc):
                    attr = self._attribute(cls, name, type_name, default, loc)
                    if attr is not None:
                        cls.own_attributes[name] = attr
            for name, target, lower, upper, contains, loc in cb.references:
                if self._feature_name_ok(cls, name, seen, loc) and self._multiplicity_ok(
                        cls, name, lower, upper, loc):
                    cls.own_references[name] = Reference(
                        name, target, lower, upper, contains, cls.name, loc)

    def _feature_name_ok(self, cls: ModelClass, name: str, seen: set[str], loc: Loc) -> bool:
        if not name.isidentifier():
            self.error(loc, f"'{name}' is not a valid feature name (class {cls.name})")
            return False
        if name in seen:
            self.error(loc, f"feature '{name}' is declared twice in class {cls.name}")
            return False
        seen.add(name)
        return True

    def _attribute(self, cls: ModelClass, name: str, type_name: str, default: Any,
                   loc: Loc) -> Attribute | None:
        prim = primitive_type(type_name)
        if prim is None:
            self.error(loc, f"attribute {cls.name}.{name} has unknown type '{type_name}' "
                            f"(attribute types: {', '.join(PRIMITIVE_TYPES)}; "
                            f"use 'ref' for a reference to a class)")
            return None
        if default is None:
            default = _ZERO[prim]
        try:
            default = coerce_value(prim, default)
        except TypeError as e:
            self.error(loc, f"default value of {cls.name}.{name}: {e}")
            return None
        return Attribute(name, prim, default, cls.name, loc)

    def _multiplicity_ok(self, cls: ModelClass, name: str, lower: int, upper: int,
                         loc: Loc) -> bool:
        ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (lower, upper))
        if not ints or lower < 0 or (upper != MANY and (upper < 1 or upper < lower)):
            self.error(loc, f"reference {cls.name}.{name} has an invalid multiplicity "
                            f"[{lower}..{'*' if upper == MANY else upper}] (need 0 <= lower <= "
                            f"upper, upper >= 1 or *)")
            return False
        return True

    def _inherit(self, cls: ModelClass) -> None:
        """Own features, then each supertype's in order; conflicting names are errors."""
        cls.ancestors = frozenset({cls.name}.union(*(s.ancestors for s in cls.supertypes)))
        attributes = dict(cls.own_attributes)
        references = dict(cls.own_references)
        for s in cls.supertypes:
            for feats, inherited in ((attributes, s.attributes), (references, s.references)):
                for name, f in inherited.items():
                    other = attributes.get(name) or references.get(name)
                    if other is None:
                        feats[name] = f
                    elif other is not f:
                        self.error(cls.loc if other.owner != cls.name else other.loc,
                                   f"class {cls.name}: feature '{name}' of {other.owner} "
                                   f"conflicts with '{name}' inherited from {f.owner}")
        cls.attributes, cls.references = attributes, references

    def _check_targets(self, classes: dict[str, ModelClass]) -> None:
        for cls in classes.values():
            for ref in cls.own_references.values():
                if ref.target not in classes:
                    hint = " (attribute types need 'attr')" if primitive_type(ref.target) else \
                        did_you_mean(ref.target, classes)
                    self.error(ref.loc, f"reference {cls.name}.{ref.name} targets unknown class "
                                        f"'{ref.target}'{hint}")
