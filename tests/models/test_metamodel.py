"""Metamodels: the builder, the text format, inheritance and every validation error."""

import pytest

from cepflow.models import MANY, MetamodelBuilder, MetamodelError, parse_metamodel

CPS = """
metamodel cps
// hosts and applications (000 §3 Fig. 4a)
class HostInstance {
  attr totalCpu: int
  attr availableCpu: int = 0
  ref applications: ApplicationInstance[0..*] contains
}
class ApplicationInstance { attr id: str  ref allocatedTo: HostInstance[0..1] }
"""


def errors(text: str) -> list[str]:
    with pytest.raises(MetamodelError) as e:
        parse_metamodel(text, "mm.txt")
    return [str(d) for d in e.value.diagnostics]


def test_text_format_declares_classes_features_and_multiplicities():
    mm = parse_metamodel(CPS)
    assert mm.name == "cps"
    host = mm["HostInstance"]
    assert list(host.attributes) == ["totalCpu", "availableCpu"]
    assert host.attributes["totalCpu"].type == "int"
    ref = host.references["applications"]
    assert (ref.target, ref.lower, ref.upper, ref.containment) == (
        "ApplicationInstance", 0, MANY, True)
    assert ref.many and ref.multiplicity == "[0..*]"
    alloc = mm["ApplicationInstance"].references["allocatedTo"]
    assert (alloc.lower, alloc.upper, alloc.containment, alloc.many) == (0, 1, False, False)


def test_defaults_are_typed_zero_values_unless_declared():
    mm = parse_metamodel('metamodel m class C { attr a: int attr b: float = 2 attr c: str '
                         'attr d: bool attr e: str = "x\\"y" attr f: bool = true '
                         'attr g: float = -1.5 }')
    attrs = mm["C"].attributes
    assert [attrs[n].default for n in "abcdefg"] == [0, 2.0, "", False, 'x"y', True, -1.5]
    assert isinstance(attrs["b"].default, float)


def test_multiplicity_forms():
    mm = parse_metamodel("metamodel m class C { ref a: C  ref b: C[*]  ref c: C[3]  "
                         "ref d: C[1..*]; ref e: C[2..5] }")
    refs = mm["C"].references
    assert [(refs[n].lower, refs[n].upper) for n in "abcde"] == [
        (0, 1), (0, MANY), (3, 3), (1, MANY), (2, 5)]


def test_type_aliases_are_accepted():
    mm = parse_metamodel("metamodel m class C { attr a: Integer attr b: Double attr c: String "
                         "attr d: Boolean attr e: EInt }")
    assert [a.type for a in mm["C"].attributes.values()] == ["int", "float", "str", "bool",
                                                               "int"]


def test_single_and_multiple_inheritance():
    mm = parse_metamodel("""metamodel m
    abstract class Named { attr name: str }
    abstract class Positioned { attr x: float  ref near: Positioned[0..*] }
    class Joint extends Named, Positioned { attr conf: float }
    class Hand extends Joint {}
    """)
    hand = mm["Hand"]
    assert set(hand.attributes) == {"conf", "name", "x"}
    assert set(hand.references) == {"near"}
    assert hand.attributes["name"].owner == "Named"
    assert hand.is_a("Named") and hand.is_a("Positioned") and hand.is_a(mm["Joint"])
    assert not mm["Joint"].is_a("Hand")
    assert {c.name for c in mm["Positioned"].descendants} == {"Positioned", "Joint", "Hand"}
    assert mm["Named"].abstract and not hand.abstract
    assert mm.have_common_subtype("Named", "Positioned")


def test_diamond_inheritance_shares_one_feature():
    mm = parse_metamodel("""metamodel m
    class Top { attr t: int }
    class L extends Top {} class R extends Top {}
    class Bottom extends L, R {}""")
    assert list(mm["Bottom"].attributes) == ["t"]


def test_builder_api_gives_the_same_metamodel_as_the_text():
    b = MetamodelBuilder("cps")
    b.add_class("HostInstance").attr("totalCpu", "int").attr("availableCpu", "int", 0).ref(
        "applications", "ApplicationInstance", 0, MANY, contains=True)
    b.add_class("ApplicationInstance").attr("id", "str").ref("allocatedTo", "HostInstance")
    built, parsed = b.build(), parse_metamodel(CPS)
    for c in parsed:
        other = built[c.name]
        assert [(a.name, a.type, a.default) for a in c.attributes.values()] == [
            (a.name, a.type, a.default) for a in other.attributes.values()]
        assert [(r.name, r.target, r.lower, r.upper, r.containment)
                for r in c.references.values()] == [
            (r.name, r.target, r.lower, r.upper, r.containment)
            for r in other.references.values()]


def test_unknown_class_lookup_suggests_a_name():
    mm = parse_metamodel(CPS)
    with pytest.raises(KeyError, match="did you mean 'HostInstance'"):
        mm["HostInstanc"]


@pytest.mark.parametrize("text, expected", [
    ("metamodel m\nclass A {\n  attr a int\n}",
     "mm.txt:3:10: error: unexpected 'int', expected ':'"),
    ("metamodel m class A { ref r: A[1.. }", "mm.txt:1:36: error: unexpected '}'"),
    ("metamodel m class A {", "mm.txt:1:22: error: unexpected end of input"),
    ("metamodel m class A { attr a: int = \"x }", "mm.txt:1:37: error: unterminated string"),
    ("class A {}", "mm.txt:1:1: error: unexpected 'class', expected 'metamodel'"),
])
def test_syntax_errors_are_located(text, expected):
    (message,) = errors(text)
    assert message.startswith(expected)


@pytest.mark.parametrize("text, expected", [
    ("metamodel m\nclass A {}\nclass A {}", "mm.txt:3:7: error: class 'A' is declared twice"),
    ("metamodel m\nclass A extends Bb {}\nclass B {}",
     "mm.txt:2:7: error: class 'A' extends unknown class 'Bb' (did you mean 'B'?)"),
    ("metamodel m\nclass A extends B {}\nclass B extends A {}", "inheritance cycle"),
    ("metamodel m\nclass A { attr a: int\n  ref a: A }",
     "mm.txt:3:7: error: feature 'a' is declared twice in class A"),
    ("metamodel m\nclass A { attr a: Foo }", "mm.txt:2:16: error: attribute A.a has unknown type"),
    ("metamodel m\nclass A { ref r: Bee }\nclass Be {}",
     "mm.txt:2:15: error: reference A.r targets unknown class 'Bee' (did you mean 'Be'?)"),
    ("metamodel m\nclass A { ref r: int }", "targets unknown class 'int' (attribute types need"),
    ("metamodel m\nclass A { ref r: A[3..2] }", "invalid multiplicity [3..2]"),
    ("metamodel m\nclass A { ref r: A[0] }", "invalid multiplicity [0..0]"),
    ("metamodel m\nclass A { attr a: int = 1.5 }",
     "mm.txt:2:16: error: default value of A.a: expected int, got float 1.5"),
    ("metamodel m\nclass A { attr a: bool = 1 }", "expected bool, got int 1"),
    ("metamodel m\nclass A { attr x: int }\nclass B { attr x: str }\nclass C extends A, B {}",
     "class C: feature 'x' of A conflicts with 'x' inherited from B"),
    ("metamodel m\nclass A { attr x: int }\nclass B extends A { attr x: int }",
     "mm.txt:3:26: error: class B: feature 'x' of B conflicts with 'x' inherited from A"),
    ("metamodel m\nclass int {}", "class name 'int' is a primitive type name"),
])
def test_metamodel_errors_are_located(text, expected):
    assert any(expected in m for m in errors(text)), errors(text)


def test_every_error_is_reported_at_once():
    found = errors("metamodel m\nclass A { attr a: Foo }\nclass B extends Z { ref r: Q }")
    assert len(found) == 3


def test_builder_errors_without_location_name_the_source():
    b = MetamodelBuilder("m", source="<mine>")
    b.add_class("A").ref("r", "A", 2, 1)
    with pytest.raises(MetamodelError) as e:
        b.build()
    assert str(e.value).startswith("<mine>: error: reference A.r has an invalid multiplicity")


def test_event_schemas_and_metamodels_share_one_type_table():
    from cepflow.events.event import PRIMITIVE_ALIASES, canonical_type
    from cepflow.models.metamodel import primitive_type

    for name, canonical in PRIMITIVE_ALIASES.items():
        assert primitive_type(name.upper()) == canonical == canonical_type(name.capitalize())
    assert primitive_type("Object") is None and canonical_type("Object") == "any"
    assert canonical_type("Body") == "any" and primitive_type("Body") is None
