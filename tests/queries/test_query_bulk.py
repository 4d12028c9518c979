"""The bulk path (docs/models.md "Frames"): a sensor frame of many bodies applied as attribute
blocks (``FrameLayout.apply_frame`` → ``Model.set_block``) and the query engine's matches
maintained column-wise. Law: for every commit, the bulk engine's deltas, matches and query
events equal those of an engine taking the same commit change by change
(``QueryEngine(bulk=False)``, the reference) and those of a second model fed body after body
(``FrameLayout.apply``: ordinary changes, no block) with its own reference engine, whose
attribute values the block-fed model reads back — with bodies appearing and disappearing,
readings missing, values crossing the queries' thresholds, a registered function that raises,
frames with a bad value (undone whole), and commits the bulk path must leave to the reference
(a value read as a parameter, ordinary changes to a block's objects).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.models import BlockChanges, Model, ModelError, parse_metamodel
from cepflow.models.changes import BLOCK_MIN
from cepflow.models.frames import FrameError, FrameLayout
from cepflow.queries import (
    FunctionRegistry,
    History,
    QueryEngine,
    QueryEventSource,
    compile_queries,
)
from cepflow.queries.naive import evaluate

MM = parse_metamodel("""
metamodel g
class Body {
  attr level: float
  ref hand: Hand [0..1] contains
  ref head: Head [0..1] contains
  ref elbow: Elbow [0..1] contains
  ref friend: Body [0..1]
}
abstract class Joint { attr x: float  attr y: float  attr n: int }
class Hand extends Joint {}
class Head extends Joint {}
class Elbow extends Joint {}
""")


def spread(a: float, b: float) -> float:
    """A registered function that fails on one value (the check is then false)."""
    if a == 7.0:
        raise ValueError("seven")
    return a - b


QUERIES = compile_queries("""
pattern raised(B: Body, H: Hand, D: Head) {
    Body.hand(B, H); Body.head(B, D); Hand.y(H, HY); Head.y(D, DY);
    check(movingAverage(HY, 2) > movingAverage(DY, 3));
}
pattern wide(B: Body, H: Hand) {
    Body.hand(B, H); Body.elbow(B, E); Hand.x(H, HX); Elbow.x(E, EX); Hand.y(H, HY);
    check(abs(spread(HX, EX)) >= 1 and HY < 2 or HX == EX);
}
pattern low(B: Body, H: Hand) { Body.hand(B, H); Hand.x(H, X); X != 1.0; check(X < 2.5); }
pattern counted(H: Hand, N: int) { Hand.n(H, N); }
pattern pose(B: Body, H: Hand) { find raised(B, H, _); neg find low(B, H); }
pattern ahead(B: Body, C: Body) {
    Body.friend(B, C); Body.hand(B, H); Body.hand(C, K); Hand.x(H, X); Hand.y(K, Y);
    check(movingAverage(X, 2) > Y);
}
""", MM, functions=FunctionRegistry({"spread": spread}))

SPECS = [(f"{q}{c.title()}", q, c) for q in QUERIES.queries for c in ("found", "lost")]
PARTS = ("Hand", "Head", "Elbow")
LAYOUT_ATTRIBUTES = ("x", "y", "n")
VALUES = st.sampled_from([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 7.0, 2, None])
READING = st.tuples(st.sampled_from(PARTS), VALUES, VALUES,
                    st.sampled_from([None] * 12 + [1, 2]))
BODY = st.tuples(st.integers(0, 4), st.lists(READING, min_size=1, max_size=3,
                                             unique_by=lambda r: r[0]))
FRAME = st.tuples(st.just("frame"), st.lists(BODY, min_size=1, max_size=5,
                                             unique_by=lambda b: b[0]))
#: a frame whose last reading of its last body carries a value of the wrong type ("bad" for a
#: float, 0.5 for an int): it raises and the transaction undoes the whole frame
BAD = st.tuples(st.just("bad"), st.lists(BODY, min_size=1, max_size=5, unique_by=lambda b: b[0]),
                st.sampled_from([1, 3]))
STEP = st.one_of(
    FRAME, FRAME, FRAME, BAD,
    st.tuples(st.just("delete"), st.integers(0, 5)),
    st.tuples(st.just("friend"), st.integers(0, 5), st.integers(0, 5)),
    st.tuples(st.just("mixed"), st.lists(BODY, max_size=5, unique_by=lambda b: b[0]),
              st.integers(0, 5)),
)


class Pair:
    """One model followed by the bulk engine and by the reference, with their events."""

    def __init__(self) -> None:
        self.model = Model(MM)
        self.history = History(QUERIES.history_sites(), QUERIES.functions, MM)
        self.history.reset(self.model)
        self.model.subscribe(self.history.apply)  # the oracle's own history
        self.layout = FrameLayout(MM, "Body", LAYOUT_ATTRIBUTES)
        self.layout.block_min = 0  # (small frames: blocks all the same)
        self.bulk = QueryEngine(self.model, QUERIES)
        self.bulk.bulk_min = 0  # (small frames: the bulk path all the same)
        self.reference = QueryEngine(self.model, QUERIES, bulk=False)
        self.events = [QueryEventSource(e, SPECS) for e in (self.bulk, self.reference)]
        self.ts = 0
        self.taken = 0  # commits the bulk path took
        take = self.bulk._bulk

        def counted(entries: Any) -> bool:
            done = take(entries)
            self.taken += done
            return done

        self.bulk._bulk = counted  # type: ignore[method-assign]
        # the same steps body after body on a model of its own: no block anywhere
        self.plain = Model(MM)
        self.plain_layout = FrameLayout(MM, "Body", LAYOUT_ATTRIBUTES)
        self.plain_engine = QueryEngine(self.plain, QUERIES, bulk=False)
        self.events.append(QueryEventSource(self.plain_engine, SPECS))

    def frame(self, bodies: list[tuple[int, list[tuple[Any, ...]]]]) -> None:
        self.layout.apply_frame(self.model, [(f"b{i}", rows) for i, rows in bodies])

    def step(self, step: tuple[Any, ...]) -> None:
        self.ts += 40
        kind = step[0]
        if kind == "bad":  # the last reading of the last body gets a value of the wrong type
            body, rows = step[1][-1]
            part, x, y, n = rows[-1]
            rows = [*rows[:-1], (part, "bad", y, n) if step[2] == 1 else (part, x, y, 0.5)]
            step = ("frame", [*step[1][:-1], (body, rows)])
        errors = [self._step(model, step) for model in (self.model, self.plain)]
        assert errors[0] == errors[1]
        assert (errors[0] is not None) == (kind == "bad")
        self.check()

    def _step(self, model: Model, step: tuple[Any, ...]) -> str | None:
        """Make ``step`` on ``model`` (the block-fed one or the plain one) in a transaction;
        the error of a bad frame (the transaction undone), else None."""
        kind = step[0]
        try:
            with model.transaction(ts=self.ts):
                if kind in ("frame", "mixed") and model is self.model:
                    self.frame(step[1])
                elif kind in ("frame", "mixed"):
                    for i, rows in step[1]:
                        self.plain_layout.apply(model, f"b{i}", rows)
                if kind == "delete" and f"b{step[1]}" in model:
                    model.delete(f"b{step[1]}")
                elif kind == "friend" and {f"b{step[1]}", f"b{step[2]}"} <= set(
                        o.id for o in model.objects()) and step[1] != step[2]:
                    model.set(f"b{step[1]}", "friend", f"b{step[2]}")
                elif kind == "mixed" and f"b{step[2]}" in model:
                    # an ordinary change in the frame's commit
                    model.set(f"b{step[2]}", "level", float(step[2]))
        except FrameError as e:
            return str(e)
        return None

    def check(self) -> None:
        """After a commit: the same deltas, matches and events from the three engines, the
        same relations in the two engines of the block-fed model, and the same values in
        both models."""
        assert self.bulk.last_update == self.reference.last_update \
            == self.plain_engine.last_update
        drained = [[(e.type, e.params, e.ts, e.id) for e in source.drain()]
                   for source in self.events]
        assert drained[0] == drained[1] == drained[2]
        for q in QUERIES.queries:
            assert self.bulk.matches(q) == self.reference.matches(q) \
                == self.plain_engine.matches(q)
        for key, rel in self.bulk._relations.items():
            twin = self.reference._relations[key]
            assert rel.tuples == twin.tuples, key
            for columns in list(rel._indexes):  # every index as rebuilt from the tuples
                fresh: dict[Any, set[Any]] = {}
                for t in rel.tuples:
                    fresh.setdefault(tuple(t[c] for c in columns) if len(columns) != 1
                                     else t[columns[0]], set()).add(t)
                assert rel.index(columns) == fresh, (key, columns)
        assert _reads(self.model) == _reads(self.plain)


def _reads(model: Model) -> dict[str, tuple[Any, ...]]:
    """Every object's class and attribute values (with their types) as read back."""
    return {o.id: (o.cls.name, *((a, type(o[a]), o[a]) for a in sorted(o.cls.attributes)))
            for o in model.objects()}


TAKEN: list[int] = []


@settings(max_examples=80, deadline=None)
@given(st.lists(STEP, min_size=2, max_size=12))
def test_bulk_frames_give_the_reference_deltas_and_events(steps):
    pair = Pair()
    for step in steps:
        pair.step(step)
    TAKEN.append(pair.taken)
    oracle = evaluate(QUERIES, pair.model, pair.history)
    for q in QUERIES.queries:
        assert pair.bulk.matches(q) == pair.reference.matches(q) == oracle[q]


def test_the_law_was_tested_on_bulk_commits():
    if not TAKEN:
        test_bulk_frames_give_the_reference_deltas_and_events()
    # (an eighth of the examples, at least, had bulk commits to compare: about half do — 37
    # to 43 of 80 in three runs — and a quarter was once missed by one, 19 of 80, in a full
    # run; the law itself is checked in every example)
    assert sum(t > 0 for t in TAKEN) >= len(TAKEN) // 8, TAKEN


def test_a_steady_frame_takes_the_bulk_path_and_crosses_thresholds():
    """The usual frame (every body reported, floats) goes the bulk way, and values crossing
    the thresholds make matches appear and disappear as the reference says."""
    pair = Pair()
    pair.step(("frame", [(i, [("Hand", 0.0, 0.0, 1), ("Head", 0.0, 1.0, 1),
                              ("Elbow", 0.0, 0.0, 1)]) for i in range(4)]))
    assert pair.taken == 0  # bodies appear: ordinary changes only
    for k, y in enumerate([2.0, 3.0, 0.0, 0.5, 3.0]):
        pair.step(("frame", [(i, [("Hand", float(k % 3), y + i, None), ("Head", 0.0, 1.0, None),
                                  ("Elbow", 1.0, 0.0, None)]) for i in range(4)]))
    assert pair.taken == 5
    assert pair.reference.matches("raised") and pair.reference.matches("wide")
    oracle = evaluate(QUERIES, pair.model, pair.history)
    assert all(pair.bulk.matches(q) == oracle[q] for q in QUERIES.queries)


def test_small_frames_go_change_by_change_unless_asked():
    """Below ``bulk_min`` changes a commit goes the reference way (the bulk path's fixed
    cost); at or above it, the bulk way."""
    pair = Pair()
    pair.bulk.bulk_min = BLOCK_MIN
    pair.layout.block_min = BLOCK_MIN
    bodies = BLOCK_MIN // 4  # 2 readings of 2 values each per body
    frame = [(i, [("Hand", 1.0, 1.0, None), ("Head", 0.0, 0.0, None)]) for i in range(bodies)]
    pair.step(("frame", frame))
    pair.step(("frame", frame[:-1]))
    assert pair.taken == 0
    pair.step(("frame", frame))
    assert pair.taken == 1


def test_a_value_read_as_a_parameter_leaves_the_commit_to_the_reference():
    pair = Pair()
    pair.step(("frame", [(0, [("Hand", 0.0, 0.0, 1)])]))
    pair.step(("frame", [(0, [("Hand", 1.0, 0.0, 2)])]))  # n is a parameter of counted
    assert pair.taken == 0
    assert pair.bulk.matches("counted") == {("b0.Hand", 2)}
    pair.step(("frame", [(0, [("Hand", 2.0, 0.0, None)])]))
    assert pair.taken == 1


def test_frame_changes_are_the_changes_of_applying_body_after_body():
    """apply_frame makes the same commit as apply per body (materialised from its blocks),
    new bodies and parts in the middle of a frame and missing readings included."""
    frames = [
        [("a", [("Hand", 1.0, 2.0, 3), ("Head", 0.0, 1.0, None)])],
        [("a", [("Hand", 1.5, None, None), ("Head", 0.5, 1.0, 4)]),
         ("b", [("Elbow", 1, 2.0, None)]),
         ("a", [("Elbow", 3.0, 3.0, None)])],
        [("b", [("Elbow", 2.0, 2.0, None), ("Hand", 0.0, 0.0, 0)]),
         ("a", [("Hand", 2.0, 1.0, None), ("Elbow", None, 1.0, None)])],
    ]
    commits: list[list[Any]] = [[], []]
    for k, bulk in enumerate((False, True)):
        model = Model(MM)
        model.subscribe(commits[k].append)
        layout = FrameLayout(MM, "Body", LAYOUT_ATTRIBUTES)
        layout.block_min = 0
        for ts, frame in enumerate(frames):
            with model.transaction(ts=ts):
                if bulk:
                    layout.apply_frame(model, frame)
                else:
                    for key, rows in frame:
                        layout.apply(model, key, rows)
    assert [c.changes for c in commits[1]] == [c.changes for c in commits[0]]
    assert [tuple(c.changes) for c in commits[1]] == [c.changes for c in commits[0]]
    assert any(isinstance(c.changes, BlockChanges) for c in commits[1])
    assert [len(c.changes) for c in commits[1]] == [len(c.changes) for c in commits[0]]


@pytest.mark.parametrize("block_min", [0, BLOCK_MIN])  # a block, or ordinary changes
def test_a_bad_frame_value_names_its_row_and_changes_nothing(block_min):
    model = Model(MM)
    layout = FrameLayout(MM, "Body", LAYOUT_ATTRIBUTES)
    layout.block_min = block_min
    with model.transaction(ts=0):
        layout.apply_frame(model, {"a": [("Hand", 1.0, 1.0, 1), ("Head", 0.0, 0.0, 0)],
                                   "b": [("Hand", 2.0, 2.0, 2)]})
    seen: list[Any] = []
    model.subscribe(seen.append)
    with pytest.raises(FrameError, match=r"b: row 1 \(Hand\): b.Hand.n: wrong type") as err, \
            model.transaction(ts=40):
        layout.apply_frame(model, {"a": [("Hand", 5.0, 5.0, None), ("Head", 5.0, 5.0, 5)],
                                   "b": [("Head", 0.5, 0.5, None), ("Hand", 5.0, 5.0, "x")]})
    assert err.value.field == "n"
    assert not seen
    assert [model["a.Hand"]["x"], model["a.Head"]["n"], model["b.Hand"]["x"]] == [1.0, 0, 2.0]
    assert "b.Head" not in model


def test_set_block_checks_values_and_is_undone_with_its_transaction():
    model = Model(MM)
    with model.transaction(ts=0):
        h = model.create("Hand", "h", x=1.0)
        d = model.create("Head", "d", x=2.0)
    with pytest.raises(ModelError) as err:
        model.set_block([h, d], ["x", "n"], [[5.0, 6.0], [1, 2.5]])
    assert (err.value.row, err.value.obj, err.value.feature) == (1, "d", "n")
    assert (h["x"], d["x"], h["n"]) == (1.0, 2.0, 0)
    with pytest.raises(RuntimeError), model.transaction(ts=40):
        assert model.set_block([h, "d"], ["x", "y"], [[5.0, 6.0], [None, 1]]) == 3
        assert (h["x"], d["x"], d["y"]) == (5.0, 6.0, 1.0)
        raise RuntimeError
    assert (h["x"], d["x"], d["y"]) == (1.0, 2.0, 0.0)
    with pytest.raises(ModelError, match="column x has 1 value"):
        model.set_block([h, d], ["x"], [[1.0]])


MATCH_VALUE = st.one_of(st.sampled_from(["a", "b", "b.Hand", ""]), st.integers(-3, 3),
                        st.sampled_from([0.5, -1.0, float("nan"), True, None, ("t",)]))


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 3).flatmap(lambda n: st.lists(
    st.tuples(*[MATCH_VALUE] * n) | st.tuples(*[st.sampled_from(["x", "y", "z"])] * n),
    unique=True, max_size=8)))
def test_matches_in_match_order_are_sorted_by_the_match_sort_key(matches):
    """Deltas sorted without a key where the tuples' own order is the key's (string or int
    positions) — in every case the order of ``match_sort_key``."""
    from cepflow.queries.incremental import in_match_order, match_sort_key

    assert [match_sort_key(m) for m in in_match_order(matches)] == \
        [match_sort_key(m) for m in sorted(matches, key=match_sort_key)]


def test_values_changed_between_blocks_are_read_again():
    """A block reuses what the filters gave after the last block only when this block starts
    from the values that one left: a value changed change by change in between is read."""
    pair = Pair()

    def frame(x: float) -> tuple[Any, ...]:
        return ("frame", [(i, [("Hand", x, 0.0, None), ("Head", 0.0, 1.0, None),
                               ("Elbow", 0.0, 0.0, None)]) for i in range(4)])

    pair.step(frame(0.5))  # the bodies appear
    pair.step(frame(0.25))  # (wide: HX = 0.25 or 0.5 is neither 1 away from EX = 0 nor equal)
    pair.step(frame(0.5))  # the filters of 0.25 reused
    pair.bulk.bulk_min = 10**9
    pair.step(frame(0.0))  # change by change: HX == EX, wide appears
    pair.bulk.bulk_min = 0
    assert pair.bulk.matches("wide")
    pair.step(frame(0.5))  # from 0.0, not from 0.5: wide disappears
    assert pair.taken == 3
    assert not pair.reference.matches("wide") and not pair.bulk.matches("wide")


@pytest.mark.parametrize("bad", [1, 3])
def test_a_bad_frame_is_undone_and_the_next_frame_starts_from_the_one_before(bad):
    """A frame of existing bodies (a block) with a value of the wrong type in its last body
    raises; the model's values, the engines' memories, matches and events are those of the
    frame before, and the next frame's deltas are taken from there (in bulk again)."""
    pair = Pair()

    def frame(x: float, y: float) -> list[tuple[int, list[tuple[Any, ...]]]]:
        return [(i, [("Hand", x, y, None), ("Head", 0.0, 1.0, None),
                     ("Elbow", 0.0, 0.0, None)]) for i in range(3)]

    pair.step(("frame", frame(0.5, 0.0)))  # the bodies appear
    pair.step(("frame", frame(3.0, 3.0)))  # hand y averages 1.5 > 1: raised; x 3: not low
    before = (_reads(pair.model), {q: pair.bulk.matches(q) for q in QUERIES.queries})
    assert pair.taken == 1 and pair.bulk.matches("raised") and not pair.bulk.matches("low")
    pair.step(("bad", frame(1.5, -2.0), bad))  # raised and low would change: undone
    assert (_reads(pair.model), {q: pair.bulk.matches(q) for q in QUERIES.queries}) == before
    pair.step(("frame", frame(1.5, -2.0)))  # averages (3 - 2) / 2: the undone frame unseen
    assert pair.taken == 2
    assert not pair.bulk.matches("raised") and pair.bulk.matches("low")


def test_a_frames_commit_is_delivered_with_the_collector_paused():
    """A commit holding blocks reaches its listeners (the query engine's bulk step among
    them) with the cyclic collector paused, and apply_frame builds its blocks so; an ordinary
    commit is delivered with the collector as it was; afterwards it runs again."""
    import gc

    pair = Pair()
    seen: list[tuple[bool, bool]] = []
    pair.model.subscribe(lambda c: seen.append((isinstance(c.changes, BlockChanges),
                                                gc.isenabled())))
    frame = [(i, [("Hand", 1.0, 1.0, None), ("Head", 0.0, 0.0, None)]) for i in range(3)]
    applied = pair.layout.apply_frame
    during: list[bool] = []

    def watched(model: Model, frame: Any) -> int:
        real = model.set_block

        def set_block(*args: Any) -> int:
            during.append(gc.isenabled())
            return real(*args)

        model.set_block = set_block  # type: ignore[method-assign]
        try:
            return applied(model, frame)
        finally:
            del model.set_block

    pair.layout.apply_frame = watched  # type: ignore[method-assign]
    assert gc.isenabled()
    pair.step(("frame", frame))  # the bodies appear: ordinary changes
    pair.step(("frame", frame))  # a block
    assert seen == [(False, True), (True, False)] and during == [False]
    assert gc.isenabled()
