"""The bulk set (Model.set_many) and the frame layout that uses it: one validation pass, one
commit, and a bad row changes nothing — the ModelError names its object, attribute and row."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.models import Change, Model, ModelError, parse_metamodel
from cepflow.models.frames import FrameError, FrameLayout

MM = parse_metamodel("""
metamodel m
class Body { attr slide: int  ref head: Head [1] contains  ref hand: Hand [1] contains }
class Head { attr x: float  attr y: float  attr name: str }
class Hand { attr x: float  attr y: float  attr up: bool  ref near: Head [0..1] }
""")


@pytest.fixture
def model():
    m = Model(MM)
    with m.transaction(ts=0):
        m.create("Head", "h", x=1.0, y=2.0)
        m.create("Hand", "r", x=0.5)
    return m


def snapshot(model):
    return {o.id: {a: o[a] for a in o.cls.attributes} for o in model.objects()}


def test_set_many_is_one_commit_in_row_order(model):
    commits = []
    model.subscribe(commits.append)
    h = model["h"]
    assert model.set_many([(h, "x", 3.0), ("r", "y", 4), ("h", "x", 5.0), (h, "name", "a")]) == 4
    (commit,) = commits
    assert commit.changes == (
        Change("set", "h", "Head", "x", 1.0, 3.0),
        Change("set", "r", "Hand", "y", 0.0, 4.0),  # ints are stored as floats
        Change("set", "h", "Head", "x", 3.0, 5.0),  # the old value of a repeated attribute
        Change("set", "h", "Head", "name", "", "a"),
    )
    assert isinstance(model["r"]["y"], float) and model["h"]["x"] == 5.0
    assert model.set_many([]) == 0 and len(commits) == 1  # nothing: no commit


@pytest.mark.parametrize(("rows", "row", "obj", "feature", "reason"), [
    ([("h", "x", 1.5), ("h", "x", "left")], 1, "h", "x", "wrong type: expected float"),
    ([("h", "x", 1.5), ("r", "up", 1)], 1, "r", "up", "wrong type: expected bool"),
    ([("h", "z", 1.5)], 0, "h", "z", "class Head has no feature 'z'"),
    ([("h", "x", 1.5), ("r", "near", "h")], 1, "r", "near", "is a reference of Hand"),
    ([("h", "x", 1.5), ("nobody", "x", 1.0)], 1, "nobody", None, "no such object"),
    ([("h", "x", 1.5), ("h", "x")], 1, None, None, "expected (object, attribute, value)"),
    ([("h", "x", 2.5), ("h", "y", True)], 1, "h", "y", "wrong type: expected float"),
    ([("h", "x", 2.5), ("h", ["y"], 1.0)], 1, None, None, "attribute names are strings"),
    ([("h", "x", 2.5), (3, "y", 1.0)], 1, None, None, "expected an object or an object id"),
])
def test_a_bad_row_names_object_feature_and_row_and_changes_nothing(model, rows, row, obj,
                                                                      feature, reason):
    commits = []
    model.subscribe(commits.append)
    before = snapshot(model)
    with pytest.raises(ModelError) as e:
        model.set_many(rows)
    assert (e.value.row, e.value.obj, e.value.feature) == (row, obj, feature)
    assert reason in str(e.value) and str(e.value).startswith(f"row {row}: ")
    assert snapshot(model) == before and commits == []


def test_inside_a_transaction_a_bad_row_undoes_only_the_bulk_set(model):
    with model.transaction(ts=40):
        model.set("h", "y", 9.0)
        with pytest.raises(ModelError, match=r"row 2: r\.x: wrong type"):
            model.set_many([("h", "x", 7.0), ("r", "x", 1.0), ("r", "x", None)])
        assert model["h"]["x"] == 1.0 and model["r"]["x"] == 0.5  # rows 0 and 1 undone
        model.set_many([("r", "x", 2.0)])
    assert (model["h"]["y"], model["r"]["x"], model.commits) == (9.0, 2.0, 2)


def test_a_deleted_object_is_rejected(model):
    r = model["r"]
    model.delete(r)
    with pytest.raises(ModelError, match="row 0: r: object is deleted"):
        model.set_many([(r, "x", 1.0)])


VALUES = st.one_of(st.floats(-5, 5), st.integers(-5, 5))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["h", "r"]), st.sampled_from(["x", "y"]), VALUES),
                max_size=8))
def test_set_many_equals_one_set_per_row_in_one_transaction(rows):
    """Law: a bulk set makes the same commit as the same sets one by one."""
    results = []
    for bulk in (True, False):
        m = Model(MM)
        with m.transaction(ts=0):
            m.create("Head", "h")
            m.create("Hand", "r")
        commits = []
        m.subscribe(commits.append)
        with m.transaction(ts=40):
            if bulk:
                m.set_many(rows)
            else:
                for obj, attr, value in rows:
                    m.set(obj, attr, value)
        results.append((snapshot(m), [c.changes for c in commits]))
    assert results[0] == results[1]


def test_frame_errors_name_the_row_of_the_bad_reading():
    """The frame's readings go to the model as one bulk set; a bad value names its own row
    (counting the readings left out with None) and no reading of the frame is applied."""
    model = Model(MM)
    layout = FrameLayout(MM, "Body", ("x", "y"))
    with model.transaction(ts=0):
        assert layout.apply(model, "b", [("Head", 0.0, 1.0), ("Hand", 0.5, 0.5)]) == 5
    with (pytest.raises(FrameError, match=r"b: row 2 \(Hand\): b\.Hand\.y: wrong type") as e,
          model.transaction(ts=40)):
        layout.apply(model, "b", [("Head", 2.0, None), ("Hand", None, 0.7),
                                  ("Hand", 0.9, "up")])
    assert e.value.field == "y"
    assert (model["b.Head"]["x"], model["b.Hand"]["y"], model.commits) == (0.0, 0.5, 1)
    with model.transaction(ts=80):  # a part deleted since is created again by its reading
        model.delete("b.Hand")
        assert layout.apply(model, "b", [("Head", 3.0, 3.0), ("Hand", 1.0, 1.0)]) == 4
    assert model["b.Hand"]["x"] == 1.0 and model["b"]["hand"] is model["b.Hand"]
