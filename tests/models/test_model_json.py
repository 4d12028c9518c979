"""JSON load/save of metamodels and models: round trips and errors located by JSON path."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.models import (
    JsonFormatError,
    MetamodelError,
    Model,
    load_model,
    metamodel_from_dict,
    metamodel_to_dict,
    model_from_dict,
    model_to_dict,
    parse_metamodel,
    read_metamodel,
    save_metamodel,
    save_model,
)

MM = parse_metamodel("""
metamodel cps
abstract class Named { attr name: str }
class Host extends Named {
  attr totalCpu: int  attr load: float = 0.5  attr up: bool
  ref applications: Application[0..*] contains
  ref backup: Host[0..1]
}
class Application extends Named { ref host: Host[0..1] }
""")


def sample() -> Model:
    m = Model(MM)
    with m.transaction(ts=1234):
        h1 = m.create("Host", "h1", name="alpha", totalCpu=8, up=True)
        h2 = m.create("Host", "h2", load=2)
        for i in range(3):
            a = m.create("Application", f"a{i}", name=f"app {i} ✓")
            m.add(h1 if i < 2 else h2, "applications", a)
            m.set(a, "host", h1)
        m.set(h2, "backup", h1)
    return m


def test_metamodel_round_trip_through_json():
    data = metamodel_to_dict(MM)
    again = metamodel_from_dict(json.loads(json.dumps(data)))
    assert metamodel_to_dict(again) == data
    assert again["Host"].is_a("Named") and again["Host"].attributes["load"].default == 0.5


def test_model_round_trip_through_json(tmp_path):
    m = sample()
    path = tmp_path / "model.json"
    save_model(m, path)
    loaded = load_model(path)
    assert model_to_dict(loaded) == model_to_dict(m)
    assert loaded.ts == 1234
    assert [a.id for a in loaded["h1"]["applications"]] == ["a0", "a1"]
    assert loaded["a2"].container is loaded["h2"]


def test_model_without_embedded_metamodel_needs_one(tmp_path):
    path = tmp_path / "model.json"
    save_model(sample(), path, embed_metamodel=False)
    assert json.loads(path.read_text())["metamodel"] == "cps"
    assert model_to_dict(load_model(path, MM)) == model_to_dict(sample())
    with pytest.raises(JsonFormatError, match=r"\$\.metamodel: no metamodel embedded"):
        load_model(path)
    other = parse_metamodel("metamodel other class X {}")
    with pytest.raises(JsonFormatError, match="model is of metamodel \"cps\", not 'other'"):
        load_model(path, other)


def test_metamodel_files_text_or_json(tmp_path):
    text = tmp_path / "cps.mm"
    text.write_text("metamodel cps class Host { attr totalCpu: int }")
    as_json = tmp_path / "cps.json"
    save_metamodel(read_metamodel(text), as_json)
    assert metamodel_to_dict(read_metamodel(as_json)) == metamodel_to_dict(read_metamodel(text))
    bad = tmp_path / "bad.mm"
    bad.write_text("metamodel x\nclass {}")
    with pytest.raises(MetamodelError, match=r"bad.mm:2:7: error: unexpected '\{'"):
        read_metamodel(bad)


def model_doc(**changes):
    doc = model_to_dict(sample())
    for path, value in changes.items():
        target = doc
        keys = path.split("/")
        for k in keys[:-1]:
            target = target[int(k)] if isinstance(target, list) else target[k]
        last = keys[-1]
        if value is ...:
            del target[last]
        elif isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
    return doc


@pytest.mark.parametrize("changes, expected", [
    ({"format": "other"}, "$.format: expected \"cepflow-model\""),
    ({"version": 9}, "$.version: unsupported version 9"),
    ({"objects": {}}, "$.objects: expected an array, got object"),
    ({"objects/1": 3}, "$.objects[1]: expected an object, got integer 3"),
    ({"objects/1/class": "Hots"},
     "$.objects[1].class: unknown class 'Hots' (did you mean 'Host'?)"),
    ({"objects/1/class": "Named"}, "$.objects[1].class: class Named is abstract"),
    ({"objects/1/id": 7}, "$.objects[1].id: expected a string, got integer 7"),
    ({"objects/1/id": "h1"}, "$.objects[1].id: an object with this id already exists"),
    ({"objects/0/attributes/totalCpu": "8"},
     "$.objects[0].attributes.totalCpu: wrong type: expected int, got str '8'"),
    ({"objects/0/attributes/cpu": 8}, "$.objects[0].attributes.cpu: class Host has no feature"),
    ({"objects/0/colour": 8}, "$.objects[0].colour: unknown key"),
    ({"objects/0/references/applications/1": "h2"},
     "$.objects[0].references.applications[1]: target h2 is a Host"),
    ({"objects/0/references/applications/1": "zz"},
     "$.objects[0].references.applications[1]: no object 'zz'"),
    ({"objects/0/references/applications": "a0"},
     "$.objects[0].references.applications: expected an array of object ids, got string"),
    ({"objects/1/references/applications/0": "a0"},
     "$.objects[1].references.applications[0]: a0 is already contained in h1.applications"),
    ({"objects/0/id": ...}, "$.objects[0]: missing key 'id'"),
    ({"metamodel/classes/1/attributes/0/type": "integer!"},
     "$.metamodel.classes[1].attributes[0]: attribute Host.totalCpu has unknown type"),
    ({"metamodel/classes/1/references/0/upper": "many"},
     "$.metamodel.classes[1].references[0].upper: expected an integer, got string"),
    ({"metamodel/classes/1/abstract": 1},
     "$.metamodel.classes[1].abstract: expected a boolean, got integer 1"),
])
def test_model_json_errors_name_the_element(changes, expected):
    with pytest.raises(JsonFormatError) as e:
        model_from_dict(model_doc(**changes), source="m.json")
    assert str(e.value).startswith(f"m.json: {expected}"), str(e.value)


def test_invalid_json_text_is_located(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"format": "cepflow-model",\n "objects": [}')
    with pytest.raises(JsonFormatError, match=r"broken.json: line 2 column 14: invalid JSON"):
        load_model(path)


def test_metamodel_json_errors():
    with pytest.raises(JsonFormatError, match=r"\$\.classes\[0\]\.name: expected a string"):
        metamodel_from_dict({"metamodel": "m", "classes": [{"name": 1}]})
    with pytest.raises(MetamodelError, match=r"\$\.classes\[1\]: class 'A' is declared twice"):
        metamodel_from_dict({"metamodel": "m", "classes": [{"name": "A"}, {"name": "A"}]})


def test_loading_is_all_or_nothing():
    doc = model_doc(**{"objects/4/references/host/0": "nobody"})
    with pytest.raises(JsonFormatError):
        model_from_dict(doc)


# ---------------------------------------------------------------- property: round trip


@st.composite
def models(draw: st.DrawFn) -> Model:
    m = Model(MM)
    with m.transaction(ts=draw(st.integers(0, 10**6))):
        hosts = [m.create("Host", name=draw(st.text(max_size=6)),
                          totalCpu=draw(st.integers(-5, 5)),
                          load=draw(st.floats(-1e6, 1e6, allow_nan=False)),
                          up=draw(st.booleans()))
                 for _ in range(draw(st.integers(0, 4)))]
        for _ in range(draw(st.integers(0, 6))):
            app = m.create("Application", name=draw(st.text(max_size=3)))
            if hosts and draw(st.booleans()):
                m.add(draw(st.sampled_from(hosts)), "applications", app)
            if hosts and draw(st.booleans()):
                m.set(app, "host", draw(st.sampled_from(hosts)))
        for h in hosts:
            if draw(st.booleans()):
                m.set(h, "backup", draw(st.sampled_from(hosts)))
    return m


@settings(max_examples=50, deadline=None)
@given(models())
def test_random_models_round_trip(m):
    doc = json.loads(json.dumps(model_to_dict(m)))
    assert model_to_dict(model_from_dict(doc)) == model_to_dict(m)
