"""Gesture recognition on the live pipeline (000 §7, 002 Listings 1-5): the recording, the
posture events of one arm cycle, one ForwardGesture per cycle and body end to end, and the law
behind the Spark version (one session per body = one session for all bodies)."""

import math
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))

from gesture_live import pipeline  # noqa: E402
from gesture_live.recording import (  # noqa: E402
    FRAME_COLUMNS,
    JOINTS,
    RECORDING,
    RecordingError,
    frame_records,
    read_recording,
    replay,
    synthesise,
)

from cepflow.live import LiveSession  # noqa: E402
from cepflow.models import Model  # noqa: E402
from cepflow.models.frames import FrameError, FrameLayout  # noqa: E402
from cepflow.queries import QueryEngine, QueryEventSource  # noqa: E402
from cepflow.spark.live import run_key  # noqa: E402

MM, QUERIES, PROGRAM = pipeline.load_case()


# ---------------------------------------------------------------- the recording (000 §7.4.1)

def test_shipped_recording_is_what_the_generator_produces():
    assert read_recording() == synthesise()
    assert RECORDING.read_text().splitlines()[0] == "frame,joint,x,y,z"


def test_recording_is_a_realistic_arm_rotation_of_a_20_joint_skeleton():
    rec = read_recording()
    assert len(rec) == 12 * 20 and len(JOINTS) == 20
    pos = {(r.frame, r.joint): r for r in rec}
    for f in range(12):
        s, h = pos[(f, "RightShoulder")], pos[(f, "RightHand")]
        assert 1.35 < s.y < 1.45                                     # shoulder ~1.4 m high
        assert math.hypot(h.x - s.x, h.y - s.y) == pytest.approx(0.6, abs=0.01) or f == 11
        moving = {j for j in JOINTS if (pos[(f, j)].x, pos[(f, j)].y)
                  != (pos[((f + 1) % 12, j)].x, pos[((f + 1) % 12, j)].y)}
        assert moving == {"RightElbow", "RightWrist", "RightHand"}   # only the arm moves
    # a full turn, 30 degrees a frame: down, sideways, up, across
    assert pos[(0, "RightHand")].y < 0.85 and pos[(6, "RightHand")].y > 1.95
    assert pos[(3, "RightHand")].x > 0.75 and pos[(9, "RightHand")].x < -0.4


@pytest.mark.parametrize(("line", "message"), [
    ("0,Head,0.1,1.6", ":2:1: expected 5 fields"),
    ("x,Head,0.1,1.6,2.5", ":2:1 (frame): not a frame number"),
    ("0,Tail,0.1,1.6,2.5", ":2:3 (joint): unknown joint 'Tail'"),
    ("0,Head,0.1,high,2.5", ":2:12 (y): not a finite number: 'high'"),
    ("0,Head,0.1,1.6,nan", ":2:16 (z): not a finite number"),
])
def test_malformed_recordings_are_reported_with_line_column_and_field(tmp_path, line, message):
    bad = tmp_path / "bad.csv"
    bad.write_text("frame,joint,x,y,z\n" + line + "\n")
    with pytest.raises(RecordingError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_recording(bad)


def test_a_recording_missing_a_joint_is_rejected(tmp_path):
    bad = tmp_path / "bad.csv"
    lines = RECORDING.read_text().splitlines()
    bad.write_text("\n".join(line for line in lines if ",LeftFoot," not in line) + "\n")
    with pytest.raises(RecordingError, match=r"frame 0 must list each joint once "
                                             r"\(missing \['LeftFoot'\]"):
        read_recording(bad)


# ---------------------------------------------------------------- the posture events

def test_each_cycle_gives_the_four_gesture_events_and_two_noise_events():
    """Phases of 000 Fig. 17 per cycle (frame: events), 40 elementary changes per frame."""
    model = Model(MM)
    source = QueryEventSource(QueryEngine(model, QUERIES), [
        (name, query, change, ["B"]) for name, query, change in [
            ("ForwardStartFound", "ForwardStart", "found"),
            ("ForwardStartLost", "ForwardStart", "lost"),
            ("ForwardEndFound", "ForwardEnd", "found"),
            ("ForwardEndLost", "ForwardEnd", "lost"),
            ("RightHandAboveHeadFound", "rightHandAboveHead", "found"),
            ("RightHandAboveHeadLost", "rightHandAboveHead", "lost")]])
    changes = []
    model.subscribe(lambda commit: changes.append(len(commit.changes)))
    layout = FrameLayout(MM, "Body", ("x", "y", "z"))
    seen: dict[int, list[str]] = {}
    for body, g, ts, readings in replay(read_recording(), 1, 4):
        with model.transaction(ts=ts):
            layout.apply(model, body, readings)
        for e in source.drain():
            assert e.params == (body,) and e.ts == ts
            seen.setdefault(g, []).append(e.type)
    expected = {4: ["ForwardStartFound"], 5: ["ForwardStartLost", "RightHandAboveHeadFound"],
                10: ["ForwardEndFound", "RightHandAboveHeadLost"], 11: ["ForwardEndLost"]}
    assert seen == {c * 12 + f: types for c in range(4) for f, types in expected.items()}
    assert changes[0] == 1 + 20 * 2 and set(changes[1:]) == {40}  # appear, then 2 x 20 joints


def test_postures_follow_the_smoothed_positions_not_the_raw_ones():
    """With 3-frame moving averages each posture is seen one frame after the arm reaches it;
    without smoothing ForwardStart would be found in frame 3 (the raw arm is horizontal)."""
    model = Model(MM)
    engine = QueryEngine(model, QUERIES)
    layout = FrameLayout(MM, "Body", ("x", "y", "z"))
    found = []
    for body, g, ts, readings in replay(read_recording(), 1, 1):
        with model.transaction(ts=ts):
            layout.apply(model, body, readings)
        if engine.matches("ForwardStart"):
            found.append(g)
    assert found == [4]
    raw = {r.joint: r for r in read_recording() if r.frame == 3}
    assert abs(raw["RightHand"].y - raw["RightShoulder"].y) < 0.01  # horizontal in frame 3
    assert pipeline.joint_angle(0, 0, 1, 0, 2, 0) == pytest.approx(180)
    assert pipeline.joint_angle(0, 1, 0, 0, 1, 0) == pytest.approx(90)


# ---------------------------------------------------------------- end to end (000 §7.4)

@pytest.mark.parametrize(("bodies", "cycles", "frame_transactions"),
                         [(1, 3, True), (7, 4, True), (7, 4, False)])
def test_every_arm_cycle_of_every_body_yields_exactly_one_forward_gesture(
        bodies, cycles, frame_transactions):
    gestures = []
    run = pipeline.run_local(bodies, cycles, on_gesture=gestures.append,
                             frame_transactions=frame_transactions)
    assert run.gestures == len(gestures) == run.rule_firings == bodies * cycles
    assert run.per_body == Counter({f"body{b}": cycles for b in range(bodies)})
    assert run.slides == {f"body{b}": cycles for b in range(bodies)}  # the rule's transformation
    assert run.query_events == 6 * bodies * cycles                    # 4 + 2 noise per cycle
    assert run.frames == 12 * cycles and run.body_frames == 12 * cycles * bodies
    # appear (41) + 40 per later frame + 1 per rule firing
    assert run.changes == bodies * (41 + 40 * (12 * cycles - 1) + cycles)
    for ce in gestures:
        assert ce.type == "ForwardGesture"
        assert [p.type for p in ce.parts] == list(pipeline.GESTURE_EVENTS)
        assert {p.params for p in ce.parts} == {ce.params}
        cycle = int(ce.ts) // 480
        assert [p.ts for p in ce.parts] == [480 * cycle + 40 * f for f in (4, 5, 10, 11)]


def test_a_transaction_per_frame_finds_the_gestures_of_a_transaction_per_body():
    """The bulk path (one transaction per sensor frame, all bodies) and the change-by-change
    one (a transaction per frame and body) find the same gestures, parts and times."""
    runs = []
    for frame_transactions in (True, False):
        gestures: list = []
        pipeline.run_local(12, 2, on_gesture=gestures.append,
                           frame_transactions=frame_transactions)
        runs.append(sorted((ce.params, ce.ts, tuple((p.type, p.ts) for p in ce.parts))
                           for ce in gestures))
    assert runs[0] == runs[1] and len(runs[0]) == 24


def test_the_rule_transforms_the_model_and_its_commit_feeds_back():
    model = Model(MM)
    session = LiveSession(model, QUERIES, PROGRAM, actions=pipeline.ACTIONS)
    commits = []
    model.subscribe(lambda c: commits.append(c))
    layout = FrameLayout(MM, "Body", ("x", "y", "z"))
    for body, _g, ts, readings in replay(read_recording(), 1, 1):
        with session.transaction(ts=ts):
            layout.apply(model, body, readings)
    assert model["body0"]["slide"] == 1
    rule_commit = commits[-1]  # after frame 11's commit, the rule's own transaction
    assert [(c.kind, c.obj, c.feature, c.old, c.new) for c in rule_commit.changes] == [
        ("set", "body0", "slide", 0, 1)]
    assert rule_commit.ts == 440
    assert session.finish().rule_firings == 1


# ---------------------------------------------------------------- per body = all bodies

def _frames(bodies: int, cycles: int, first: int = 0) -> pd.DataFrame:
    return pd.DataFrame(list(frame_records(read_recording(), bodies, cycles, first)),
                        columns=list(FRAME_COLUMNS))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies=st.integers(1, 4), cycles=st.integers(1, 3), seed=st.randoms(use_true_random=False))
def test_one_session_per_body_equals_one_session_for_all(bodies, cycles, seed):
    """The law the Spark pipeline relies on: keys share nothing, so running each body in its
    own session (rows shuffled, as a shuffle would) gives the in-process result."""
    together = []
    pipeline.run_local(bodies, cycles, on_gesture=together.append)
    spec = pipeline.live_spec()
    frames = _frames(bodies, cycles)
    apart = []
    for body, rows in frames.groupby("body"):
        shuffled = rows.sample(frac=1, random_state=seed.randint(0, 2**31))
        found, stats = run_key(spec, str(body), shuffled)
        apart += found
        assert stats["frames"] == 12 * cycles and stats["complex_events"] == cycles
    key = lambda ce: (ce.params, ce.ts, tuple((p.type, p.ts) for p in ce.parts))  # noqa: E731
    assert sorted(map(key, apart)) == sorted(map(key, together))


def test_run_key_rejects_frames_with_mixed_or_decreasing_timestamps():
    spec = pipeline.live_spec()
    frames = _frames(1, 1)
    mixed = frames.copy()
    mixed.loc[mixed.index[3], "ts"] = 7
    with pytest.raises(ValueError, match="key body0: frame 0: its rows carry different"):
        run_key(spec, "body0", mixed)
    back = frames.copy()
    back.loc[back["frame"] == 5, "ts"] = 0
    with pytest.raises(ValueError, match="frame 5: timestamp 0 is older"):
        run_key(spec, "body0", back)


# ---------------------------------------------------------------- frames → transactions

def test_frame_layout_errors_name_the_key_row_and_field():
    model = Model(MM)
    layout = FrameLayout(MM, "Body", ("x", "y", "z"))
    with model.transaction(ts=0):
        layout.apply(model, "b", [("Head", 0.0, 1.6, 2.5)])
    with (pytest.raises(FrameError, match=r"b: row 1: unknown part 'Tail'") as e,
          model.transaction(ts=40)):
        layout.apply(model, "b", [("Head", 0.0, 1.6, None), ("Tail", 0, 0, 0)])
    assert e.value.field == "part"
    assert model["b.Head"]["y"] == 1.6 and model.commits == 1  # the transaction rolled back
    with pytest.raises(FrameError, match=r"b: row 0 \(Head\): b.Head.x: wrong type") as e:
        layout.apply(model, "b", [("Head", "left", 1.6, None)])
    assert e.value.field == "x"
    with pytest.raises(FrameError, match="expected a part and 3 value"):
        layout.apply(model, "b", [("Head", 1.0)])
    with pytest.raises(FrameError, match="no class 'Torso'"):
        FrameLayout(MM, "Torso", ("x",))
    with pytest.raises(FrameError, match=r"has no attribute\(s\) \['w'\]"):
        FrameLayout(MM, "Body", ("x", "w"))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(["Head", "RightHand", "LeftKnee"]),
                                   st.one_of(st.none(), st.floats(-3, 3)),
                                   st.one_of(st.none(), st.floats(-3, 3))),
                         max_size=4), min_size=1, max_size=6))
def test_frames_leave_the_last_reported_value_and_count_every_reading(frames):
    """Law: after any frames, each attribute holds its last non-null reading (the default if
    none), and every non-null reading of an existing part is one ``set`` change."""
    model = Model(MM)
    layout = FrameLayout(MM, "Body", ("x", "y"))
    commits = []
    model.subscribe(commits.append)
    last: dict[tuple[str, str], float] = {}
    expected_sets = 0
    seen_parts: set[str] = set()
    for ts, rows in enumerate(frames):
        with model.transaction(ts=ts):
            n = layout.apply(model, "b", rows)
        assert n == len(commits[-1].changes)
        for part, x, y in rows:
            for attr, v in (("x", x), ("y", y)):
                if v is not None:
                    last[(part, attr)] = v
                    expected_sets += part in seen_parts
            seen_parts.add(part)
    for part in seen_parts:
        for attr in ("x", "y"):
            assert model[f"b.{part}"][attr] == last.get((part, attr), 0.0)
    assert sum(ch.kind == "set" and ch.obj != "b" for c in commits for ch in c.changes) \
        == expected_sets
