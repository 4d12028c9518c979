"""Models: mutations, change notifications, validation errors, transactions and rollback."""

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.models import Change, Model, ModelError, model_to_dict, parse_metamodel

MM = parse_metamodel("""
metamodel cps
abstract class Named { attr name: str }
class Host extends Named {
  attr totalCpu: int
  attr availableCpu: int
  attr load: float
  attr up: bool = true
  ref applications: Application[0..*] contains
  ref backup: Host[0..1]
  ref peers: Host[0..2]
}
class Application extends Named { ref host: Host[1] ref modules: Module[0..*] contains }
class Module { ref uses: Application[0..*] }
""")


@pytest.fixture
def model():
    return Model(MM)


@pytest.fixture
def commits(model):
    seen = []
    model.subscribe(seen.append)
    return seen


def test_create_gives_defaults_and_generated_ids(model):
    h = model.create("Host", "h1", totalCpu=8, load=1)
    assert (h["totalCpu"], h["availableCpu"], h["load"], h["up"], h["name"]) == (8, 0, 1.0,
                                                                               True, "")
    assert isinstance(h["load"], float)
    a = model.create(MM["Application"])
    assert a.id == "Application#1" and model[a.id] is a
    assert model.create("Module").id == "Module#2"


def test_attribute_called_id_is_set_through_values():
    mm = parse_metamodel("metamodel m class App { attr id: str }")
    m = Model(mm)
    app = m.create("App", "obj1", values={"id": "a-7"})
    assert (app.id, app["id"]) == ("obj1", "a-7")


def test_every_change_is_notified_at_commit(model, commits):
    with model.transaction(ts=40):
        h = model.create("Host", "h1")
        a = model.create("Application", "a1")
        model.add(h, "applications", a)
        model.set(a, "host", h)
        model.set(h, "totalCpu", 4)
        assert commits == []
    (commit,) = commits
    assert (commit.ts, commit.number) == (40, 1)
    assert [(c.kind, c.obj, c.feature, c.old, c.new) for c in commit.changes] == [
        ("create", "h1", None, None, {"name": "", "totalCpu": 0, "availableCpu": 0,
                                      "load": 0.0, "up": True}),
        ("create", "a1", None, None, {"name": ""}),
        ("add", "h1", "applications", None, "a1"),
        ("add", "a1", "host", None, "h1"),
        ("set", "h1", "totalCpu", 0, 4),
    ]
    assert commit.changes[-1].to_dict() == {"kind": "set", "obj": "h1", "class": "Host",
                                            "feature": "totalCpu", "old": 0, "new": 4}


def test_changes_outside_a_transaction_commit_one_by_one(model, commits):
    h = model.create("Host", "h1")
    model.set(h, "name", "x")
    assert [len(c.changes) for c in commits] == [1, 1]
    assert [c.number for c in commits] == [1, 2]


def test_setting_an_equal_value_is_still_a_change(model, commits):
    h = model.create("Host", "h1", totalCpu=2)
    model.set(h, "totalCpu", 2)
    assert commits[-1].changes == (Change("set", "h1", "Host", "totalCpu", 2, 2),)


def test_single_valued_reference_set_replaces_the_target(model, commits):
    h1, h2, h3 = (model.create("Host", f"h{i}") for i in (1, 2, 3))
    model.set(h1, "backup", h2)
    model.set(h1, "backup", h3)
    assert h1["backup"] is h3
    assert [(c.kind, c.old, c.new) for c in commits[-1].changes] == [
        ("remove", "h2", None), ("add", None, "h3")]
    model.set(h1, "backup", None)
    assert h1["backup"] is None
    n = len(commits)
    model.set(h1, "backup", None)  # nothing to change: no commit
    assert len(commits) == n


def test_reading_references(model):
    h = model.create("Host", "h")
    apps = [model.create("Application", f"a{i}") for i in range(3)]
    for a in apps:
        model.add(h, "applications", a)
    assert h["applications"] == tuple(apps)
    assert h.targets("applications") == tuple(apps)
    assert apps[0].container is h and apps[0].containing_feature == "applications"
    model.remove(h, "applications", apps[1])
    assert h["applications"] == (apps[0], apps[2]) and apps[1].container is None
    assert model.instances("Named") == [h, *apps]
    assert [o.id for o in model.objects()] == ["h", "a0", "a1", "a2"]


def snapshot(model: Model) -> dict:
    d = model_to_dict(model, embed_metamodel=False)
    d.pop("ts")
    return d


@pytest.mark.parametrize("action, message", [
    (lambda m: m.create("Named"), "class Named is abstract"),
    (lambda m: m.create("Nope"), "metamodel cps has no class 'Nope'"),
    (lambda m: m.create("Host", "h1"), "h1: an object with this id already exists"),
    (lambda m: m.create("Host", totalCpu="8"), "Host#1.totalCpu: wrong type: expected int, got "
                                               "str '8'"),
    (lambda m: m.create("Host", cpu=1), "class Host has no feature 'cpu'"),
    (lambda m: m.set("h1", "totalCpux", 1), "h1.totalCpux: class Host has no feature "
                                            "'totalCpux' (did you mean 'totalCpu'?)"),
    (lambda m: m.set("h1", "up", 1), "h1.up: wrong type: expected bool, got int 1"),
    (lambda m: m.set("h1", "totalCpu", True), "expected int, got bool True"),
    (lambda m: m.set("h1", "load", "1.0"), "h1.load: wrong type: expected float"),
    (lambda m: m.set("h1", "applications", "a1"), "h1.applications: reference is many-valued "
                                                  "[0..*]; use add/remove"),
    (lambda m: m.set("zz", "totalCpu", 1), "zz: no such object"),
    (lambda m: m.add("h1", "applications", "h2"), "h1.applications: target h2 is a Host, not an "
                                                  "instance of Application"),
    (lambda m: m.add("h1", "applications", "a1"), "h1.applications: already contains a1"),
    (lambda m: m.add("h2", "applications", "a1"), "h2.applications: a1 is already contained in "
                                                  "h1.applications"),
    (lambda m: m.add("h1", "peers", "h1"), "h1.peers: multiplicity upper bound 2 exceeded "
                                           "[0..2] by adding h1"),
    (lambda m: m.add("h1", "totalCpu", "h3"), "'totalCpu' is an attribute of Host, not a "
                                              "reference (use set)"),
    (lambda m: m.add("h1", "backup", "zz"), "h1.backup: no object 'zz'"),
    (lambda m: m.remove("h1", "peers", "h1"), "h1.peers: does not contain h1"),
    (lambda m: m.add("m1", "uses", 42), "expected an object or an object id, got 42"),
])
def test_invalid_changes_raise_and_change_nothing(model, commits, action, message):
    with model.transaction():
        h1, h2, h3 = (model.create("Host", f"h{i}") for i in (1, 2, 3))
        a1 = model.create("Application", "a1")
        model.create("Module", "m1")
        model.add(h1, "applications", a1)
        model.add(h1, "peers", h2)
        model.add(h1, "peers", h3)
    before, n = snapshot(model), len(commits)
    with pytest.raises(ModelError) as e:
        action(model)
    assert message in str(e.value)
    assert snapshot(model) == before and len(commits) == n


def test_error_names_object_feature_and_reason(model):
    model.create("Host", "h1")
    with pytest.raises(ModelError) as e:
        model.set("h1", "totalCpu", "x")
    assert (e.value.obj, e.value.feature) == ("h1", "totalCpu")
    assert e.value.reason.startswith("wrong type")


def test_containment_cycles_are_rejected():
    mm = parse_metamodel("metamodel t class N { ref kids: N[0..*] contains }")
    m = Model(mm)
    a, b, c = (m.create("N", x) for x in "abc")
    m.add(a, "kids", b)
    m.add(b, "kids", c)
    with pytest.raises(ModelError, match="containment cycle: a contains c"):
        m.add(c, "kids", a)
    with pytest.raises(ModelError, match="an object cannot contain itself"):
        m.add(a, "kids", a)


def test_deleted_objects_cannot_be_used(model):
    h = model.create("Host", "h1")
    a = model.create("Application", "a1")
    model.delete(a)
    assert not a.alive and "a1" not in model and a not in model
    with pytest.raises(ModelError, match="a1: object is deleted"):
        model.set(a, "name", "x")
    with pytest.raises(ModelError, match=r"h1\.applications: target a1 is deleted"):
        model.add(h, "applications", a)


def test_objects_of_another_model_are_rejected(model):
    other = Model(MM).create("Host", "x")
    model.create("Host", "h")
    with pytest.raises(ModelError, match="belongs to another model"):
        model.add("h", "peers", other)


def test_delete_removes_references_and_contents_with_notifications(model, commits):
    with model.transaction():
        h, h2 = model.create("Host", "h"), model.create("Host", "h2")
        a = model.create("Application", "a")
        mod = model.create("Module", "mod")
        model.add(h, "applications", a)
        model.add(a, "modules", mod)
        model.set(a, "host", h)
        model.set(h2, "backup", h)
        model.add(mod, "uses", a)
    model.delete(h)
    assert [(c.kind, c.obj, c.feature, c.old) for c in commits[-1].changes] == [
        ("remove", "a", "modules", "mod"),       # mod is deleted first: its container link …
        ("remove", "mod", "uses", "a"),          # … and its own references
        ("delete", "mod", None, {}),
        ("remove", "h", "applications", "a"),    # then a: incoming, outgoing, itself
        ("remove", "a", "host", "h"),
        ("delete", "a", None, {"name": ""}),
        ("remove", "h2", "backup", "h"),         # then h
        ("delete", "h", None, {"name": "", "totalCpu": 0, "availableCpu": 0, "load": 0.0,
                               "up": True}),
    ]
    assert [o.id for o in model.objects()] == ["h2"] and h2["backup"] is None


def test_failing_transaction_rolls_back_everything(model, commits):
    with model.transaction(ts=1):
        h = model.create("Host", "h", totalCpu=4)
        apps = [model.create("Application", f"a{i}") for i in range(3)]
        for x in apps:
            model.add(h, "applications", x)
        model.set(apps[1], "host", h)
    before, n = snapshot(model), len(commits)
    with pytest.raises(ModelError), model.transaction(ts=2):
        model.set(h, "totalCpu", 9)
        model.remove(h, "applications", apps[0])
        model.create("Host", "new")
        model.delete(h)
        model.set("new", "totalCpu", "bad")
    assert snapshot(model) == before and len(commits) == n
    assert h.alive and apps[1].alive and apps[1].container is h  # the same objects come back
    assert h["applications"] == tuple(apps) and h["totalCpu"] == 4 and model.ts == 1
    assert "new" not in model


def test_any_exception_rolls_back(model):
    with pytest.raises(ZeroDivisionError), model.transaction():
        model.create("Host", "h")
        1 / 0  # noqa: B018
    assert len(model) == 0


def test_nested_transactions_are_savepoints(model, commits):
    with model.transaction(ts=5):
        model.create("Host", "h1")
        with pytest.raises(ModelError), model.transaction():
            model.create("Host", "h2")
            model.create("Host", "h1")
        with model.transaction(ts=5):
            model.create("Host", "h3")
    assert [o.id for o in model.objects()] == ["h1", "h3"]
    assert len(commits) == 1 and [c.obj for c in commits[0].changes] == ["h1", "h3"]


def test_caught_error_inside_a_transaction_keeps_the_rest(model, commits):
    with model.transaction():
        h = model.create("Host", "h")
        with pytest.raises(ModelError):
            model.set(h, "totalCpu", "x")
        model.set(h, "totalCpu", 3)
    assert h["totalCpu"] == 3 and len(commits[0].changes) == 2


def test_timestamps(model, commits):
    with model.transaction(ts=100):
        model.create("Host", "h")
    model.set("h", "totalCpu", 1)  # defaults to the previous commit's time
    assert [c.ts for c in commits] == [100, 100]
    with pytest.raises(ModelError, match="older than the previous commit's"), \
            model.transaction(ts=99):
        pass
    with pytest.raises(ModelError, match="differs from the outer"), \
            model.transaction(ts=200), model.transaction(ts=300):
        pass
    with pytest.raises(ModelError, match="must be a number"), model.transaction(ts="1"):
        pass
    assert model.ts == 100 and model.commits == 2


def test_listener_changes_are_delivered_after_the_current_commit(model):
    seen: list[tuple[str, int]] = []

    def first(commit):
        seen.append(("first", commit.number))
        if commit.number == 1:
            model.create("Host", "echo")

    model.subscribe(first)
    model.subscribe(lambda c: seen.append(("second", c.number)))
    model.create("Host", "h")
    assert seen == [("first", 1), ("second", 1), ("first", 2), ("second", 2)]


def test_listener_errors_propagate_after_every_listener_ran(model):
    seen = []

    def bad(commit):
        raise RuntimeError("boom")

    model.subscribe(bad)
    unsubscribe = model.subscribe(seen.append)
    with pytest.raises(RuntimeError, match="boom"):
        model.create("Host", "h")
    assert len(seen) == 1 and "h" in model  # committed all the same
    unsubscribe()
    with pytest.raises(RuntimeError):
        model.create("Host", "h2")
    assert len(seen) == 1


def test_validate_reports_lower_bounds(model):
    model.create("Application", "a")
    assert model.validate() == ["a.host: needs at least 1 target(s), has 0"]


# ---------------------------------------------------------------- property: rollback is exact

OPS = st.lists(st.tuples(st.sampled_from(["create", "delete", "set", "add", "remove"]),
                         st.integers(0, 20), st.integers(0, 20), st.integers(0, 5)),
               max_size=15)


def apply_op(model: Model, op: tuple) -> None:
    kind, i, j, v = op
    objs = list(model.objects())
    if kind == "create" or not objs:
        model.create(["Host", "Application", "Module"][i % 3])
        return
    o, t = objs[i % len(objs)], objs[j % len(objs)]
    if kind == "delete":
        model.delete(o)
    elif kind == "set":
        feature = ["totalCpu", "name", "backup", "host"][v % 4]
        value = {"totalCpu": v, "name": str(v), "backup": t, "host": t}[feature]
        model.set(o, feature, value)
    else:
        ref = ["applications", "peers", "modules", "uses"][v % 4]
        getattr(model, kind)(o, ref, t)


@settings(max_examples=60, deadline=None)
@given(OPS, OPS)
def test_rollback_restores_the_exact_state(setup, ops):
    model = Model(MM)
    for op in setup:
        with contextlib.suppress(ModelError):
            apply_op(model, op)
    before = snapshot(model)
    commits = []
    model.subscribe(commits.append)
    with pytest.raises(RuntimeError), model.transaction():
        for op in ops:
            with contextlib.suppress(ModelError):
                apply_op(model, op)
        raise RuntimeError("abort")
    assert snapshot(model) == before and commits == []
    for obj in model.objects():  # incoming/container bookkeeping is consistent again
        for ref in obj.cls.references:
            for t in obj.targets(ref):
                assert (obj, ref) in t._incoming
        for src, ref in obj._incoming:
            assert obj in src.targets(ref)
