"""Attribute values stored column-wise (docs/models.md "Frames"): a model reads, writes,
notifies, rolls back and saves exactly as the value-by-value path says, whatever the blocks.

Law 1: ``Model.set_block`` (its column path: slices over the classes' columns, a plan kept while
the same objects come again) makes the same commits, the same errors and the same model as
``Model.set_many`` of the same rows — with objects created, deleted (their rows reused),
transactions rolled back, repeated objects, values needing conversion and bad values.
Law 2: every read (``obj[attr]`` of live objects, and of deleted objects kept by the caller)
equals what the commits delivered to a listener say, replayed into plain dicts.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cepflow.models import Model, ModelError, parse_metamodel
from cepflow.models.jsonio import model_from_dict, model_to_dict

MM = parse_metamodel("""
metamodel c
class Body { attr slide: int  ref parts: Part [0..*] contains }
abstract class Part { attr x: float  attr y: float  attr n: int }
class Head extends Part { attr name: str }
class Hand extends Part { attr up: bool }
""")

IDS = [f"p{i}" for i in range(8)]
VALUE = st.sampled_from([0.0, 1.5, -2.0, 3, None, None, "bad", True, float("inf")])
LAYOUTS = [[0, 1, 2, 3], [0, 2, 4, 6], [1, 3], [0, 1, 2, 3, 4, 5, 6, 7], [2, 2, 5], [7, 6, 5],
           [0, 4], [1, 5], [4, 0, 1]]
FEATURES = st.sampled_from([("x", "y"), ("x", "y"), ("x",), ("y", "n"), ("x", "name"),
                            ("x", "x"), ("up", "y"), ("nope",)])
CREATE = st.tuples(st.just("create"), st.integers(0, 7), st.sampled_from(["Head", "Hand"]),
                   st.sampled_from([0.5, 2, -1.0]))
CLEAN = st.sampled_from([0.0, 1.5, -2.0, float("inf"), None])  # no conversion needed
INTS = st.sampled_from([1, 2, None])  # ints: stored as floats in x and y, as ints in n
BLOCK = st.tuples(st.just("block"), st.sampled_from(range(len(LAYOUTS))), FEATURES,
                  st.lists(CLEAN, min_size=16, max_size=16) | st.lists(CLEAN, min_size=16,
                  max_size=16) | st.lists(INTS, min_size=16, max_size=16)
                  | st.lists(VALUE, min_size=16, max_size=16),
                  st.sampled_from(["objects", "objects", "ids", "kept"]))
DELETE = st.tuples(st.just("delete"), st.integers(0, 7))
SET = st.tuples(st.just("set"), st.integers(0, 7), st.sampled_from(["x", "n", "name"]), VALUE)
OP = st.one_of(CREATE, BLOCK, BLOCK, BLOCK, DELETE, SET)
STEP = st.one_of(OP, st.tuples(st.just("rollback"), st.lists(OP, min_size=1, max_size=3)),
                 st.tuples(st.just("savepoint"), OP, OP, OP))


def typed(value: Any) -> Any:
    """``value`` with every leaf paired with its type (1 and 1.0 differ, as they do stored)."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return type(value)(map(typed, value)) if not hasattr(value, "_fields") else \
            tuple(map(typed, value))
    return (type(value).__name__, value)


class Side:
    """A model changed through set_block (``blocks``) or through set_many, and what its
    listener was told, replayed into plain dicts."""

    def __init__(self, blocks: bool) -> None:
        self.model = Model(MM)
        self.blocks = blocks
        self.commits: list[Any] = []
        self.told: dict[str, dict[str, Any]] = {}  # id -> values, from the commits
        self.held: dict[str, Any] = {}  # id -> the live object, as a caller keeps it
        self.dead: list[tuple[Any, dict[str, Any]]] = []  # deleted objects and their values
        self.model.subscribe(self.listen)
        self.layouts: list[list[Any]] = [[] for _ in LAYOUTS]  # the same lists again

    def listen(self, commit: Any) -> None:
        self.commits.append(typed(tuple(commit.changes)))
        for ch in commit.changes:
            if ch.kind == "create":
                self.told[ch.obj] = dict(ch.new)
                obj = self.model.get(ch.obj)  # (None: deleted again in the same commit)
                if obj is not None:
                    self.held[ch.obj] = obj
            elif ch.kind == "set":
                self.told[ch.obj][ch.feature] = ch.new
            elif ch.kind == "delete":
                assert typed(ch.old) == typed(self.told.pop(ch.obj))
                obj = self.held.pop(ch.obj, None)
                if obj is not None:
                    self.dead.append((obj, ch.old))

    def op(self, op: tuple[Any, ...]) -> Any:
        """Apply one operation; the ModelError it raised, as (object, feature, reason)."""
        m = self.model
        try:
            kind = op[0]
            if kind == "create":
                if IDS[op[1]] not in m:
                    m.create(op[2], IDS[op[1]], x=op[3], n=op[1])
            elif kind == "delete":
                if IDS[op[1]] in m:
                    m.delete(IDS[op[1]])
            elif kind == "set":
                m.set(IDS[op[1]], op[2], op[3])
            elif kind == "block":
                _, layout, features, values, how = op
                present = [i for i in LAYOUTS[layout] if IDS[i] in m]
                if how == "kept" and self.layouts[layout]:
                    # the objects of the last time, as a caller kept them: some may be deleted
                    objects = self.layouts[layout]
                elif not present:
                    return None
                else:
                    objects = [IDS[i] if how == "ids" else m[IDS[i]] for i in present]
                if how == "objects" and len(present) == len(LAYOUTS[layout]):
                    objects = self.layouts[layout]  # the very list of the last time
                    objects[:] = [m[IDS[i]] for i in LAYOUTS[layout]]
                columns = [[values[(j * 8 + k) % 16] for k in range(len(objects))]
                           for j in range(len(features))]
                if self.blocks:
                    m.set_block(objects, features, columns)
                else:
                    rows = [(o, f, c[k]) for k, o in enumerate(objects)
                            for f, c in zip(features, columns, strict=True) if c[k] is not None]
                    if rows:
                        m.set_many(rows)
                    elif not m.in_transaction:  # a block setting nothing still commits
                        with m.transaction():
                            pass
            return None
        except ModelError as e:
            return (e.obj, e.feature, e.reason)

    def step(self, step: tuple[Any, ...]) -> list[Any]:
        m = self.model
        if step[0] == "rollback":
            errors = []
            with pytest.raises(RuntimeError), m.transaction(ts=0):
                errors = [self.op(op) for op in step[1]]
                raise RuntimeError
            return errors
        if step[0] == "savepoint":
            with m.transaction(ts=0):
                errors = [self.op(step[1])]
                with pytest.raises(RuntimeError), m.transaction():
                    errors.append(self.op(step[2]))
                    raise RuntimeError
                errors.append(self.op(step[3]))
            return errors
        return [self.op(step)]

    def reads(self) -> Any:
        return typed({o.id: {a: o[a] for a in o.cls.attributes} for o in self.model.objects()})

    def check(self) -> None:
        """Law 2: reads are what the listener was told (live and deleted objects)."""
        assert self.reads() == typed(self.told)
        assert set(self.held) == {o.id for o in self.model.objects()}
        for obj, values in self.dead:
            assert not obj.alive
            assert typed({a: obj[a] for a in obj.cls.attributes}) == typed(values)


@settings(max_examples=150, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=25))
# an object deleted since the caller kept the list, whose value in the block is None: set_many
# has no row of it, so the block must not check it either (it raised 'object is deleted')
@example([("block", 0, ("x", "y"), [0.0] * 16, "objects"), ("delete", 2),
          ("block", 0, ("x",), [0.0, 0.0, None] + [0.0] * 13, "kept")])
# one id deleted, created again and deleted again in a transaction that rolls back: the first
# object must come back (the second delete overwrote the first in the undo record: KeyError)
@example([("rollback", [("delete", 0), ("create", 0, "Head", 0.5), ("delete", 0)])])
def test_blocks_make_the_commits_errors_and_model_of_value_by_value_sets(steps):
    blocks, values = Side(blocks=True), Side(blocks=False)
    creations = [("create", i, "Head" if i % 2 else "Hand", 1.0) for i in range(6)]
    for step in [*creations, *steps]:
        errors = [blocks.step(step), values.step(step)]
        # the same error (set_block numbers rows by object, set_many by value: not compared)
        assert errors[0] == errors[1]
        assert blocks.commits == values.commits
        blocks.check()
        values.check()
        assert blocks.reads() == values.reads()
    saved = model_to_dict(blocks.model)
    assert typed(saved) == typed(model_to_dict(values.model))
    assert typed(model_to_dict(model_from_dict(saved, MM))) == typed(saved)  # save/restore


def test_a_frame_of_many_objects_goes_by_slices_and_a_deleted_row_is_reused():
    """The column path proper: a block over objects in creation order sets the columns by
    slices; a deleted object's row goes to the next object created, the deleted object
    keeping its last values."""
    model = Model(MM)
    with model.transaction(ts=0):
        parts = [model.create("Head" if k % 2 else "Hand", f"o{k}", x=float(k))
                 for k in range(40)]
    assert model.set_block(parts, ("x", "y"), [[k + 0.5 for k in range(40)],
                                               [None] * 20 + [1.0] * 20]) == 60
    assert [p["x"] for p in parts] == [k + 0.5 for k in range(40)]
    assert [p["y"] for p in parts] == [0.0] * 20 + [1.0] * 20
    gone = parts[3]  # a Head (the odd ones): the second Head's row
    row = gone._row
    model.delete(gone)
    fresh = model.create("Head", "new", x=9.0)
    assert fresh._row == row == 1
    assert (gone["x"], gone["y"], fresh["x"], fresh["y"]) == (3.5, 0.0, 9.0, 0.0)
    assert not gone.alive and gone["n"] == 0
    plan = model._block_plan
    model.set_block(parts[:3], ("x",), [[1.0, 2.0, 3.0]])
    assert model._block_plan is not plan  # other objects: another plan


FRAME_MM = parse_metamodel("""
metamodel f
class Body { ref hand: Hand [0..1] contains  ref head: Head [0..1] contains }
abstract class Joint { attr x: float  attr y: float  attr n: int }
class Hand extends Joint {}
class Head extends Joint {}
""")
#: the bodies and parts a frame names; frames repeat them, as a sensor's do
SHAPES = [(("a", ("Hand", "Head")), ("b", ("Hand", "Head"))),
          (("a", ("Hand", "Head")), ("b", ("Head", "Hand"))),
          (("a", ("Hand",)), ("b", ("Hand", "Head")), ("c", ("Head",)))]
FRAME_VALUE = st.sampled_from([0.5, 1.0, 2, None, "x"])
FRAME_STEP = st.one_of(
    st.tuples(st.just("frame"), st.sampled_from(range(len(SHAPES))),
              st.lists(st.sampled_from([0.5, 1.0, -3.0]), min_size=18, max_size=18)),
    st.tuples(st.just("frame"), st.sampled_from(range(len(SHAPES))),
              st.lists(FRAME_VALUE, min_size=18, max_size=18)),
    st.tuples(st.just("delete"), st.sampled_from(["a", "b", "a.Hand", "b.Head", "c"]),
              st.booleans()))


@settings(max_examples=150, deadline=None)
@given(st.lists(FRAME_STEP, min_size=1, max_size=14))
def test_repeated_frames_make_the_commits_and_errors_of_body_after_body(steps):
    """FrameLayout.apply_frame — a frame naming what the last one named goes to the model in
    one go — makes the commits, errors and model of FrameLayout.apply body after body, with
    bodies and parts deleted (or a deletion rolled back) between frames."""
    from cepflow.models.frames import FrameError, FrameLayout

    sides = []
    for bulk in (True, False):
        model = Model(FRAME_MM)
        commits: list[Any] = []
        model.subscribe(lambda c, commits=commits: commits.append(typed(tuple(c.changes))))
        layout = FrameLayout(FRAME_MM, "Body", ("x", "y", "n"))
        layout.block_min = 0
        sides.append((bulk, model, layout, commits))
    for ts, step in enumerate(steps):
        outcomes = []
        for bulk, model, layout, _ in sides:
            try:
                with model.transaction(ts=ts):
                    if step[0] == "frame":
                        values = iter(step[2])
                        frame = [(key, [(part, next(values), next(values), None)
                                        for part in parts]) for key, parts in SHAPES[step[1]]]
                        if bulk:
                            layout.apply_frame(model, frame)
                        else:
                            for key, rows in frame:
                                layout.apply(model, key, rows)
                    elif step[1] in model:
                        model.delete(step[1])
                        if step[2]:
                            raise RuntimeError("rolled back")
                outcomes.append(None)
            except (FrameError, RuntimeError) as e:
                outcomes.append((type(e).__name__, str(e), getattr(e, "field", None)))
        assert outcomes[0] == outcomes[1]
        assert sides[0][3] == sides[1][3]
        reads = [typed({o.id: {a: o[a] for a in o.cls.attributes} for o in side[1].objects()})
                 for side in sides]
        assert reads[0] == reads[1]
