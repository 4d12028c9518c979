"""The semi-synthetic recorded arm rotation of the gesture benchmark (000 §7.4.1, 002 §5).

000 replays "a previously recorded real execution sequence in which the right arm is rotated.
A full arm cycle consists of 12 positions, i.e., 12 frames", multiplied over N bodies. The
original recording is not published, so this module *synthesises* one with a Kinect-like
skeleton and ships it as data (``arm_rotation.csv``: one row per frame and joint, metres):

* a 1.75 m person standing 2.5 m in front of the sensor; x to the subject's right, y the height
  above the floor, z the distance from the sensor; right shoulder at 1.40 m, upper arm 0.28 m,
  forearm 0.24 m, hand 0.08 m beyond the wrist (shoulder to hand 0.60 m);
* the right arm turns a full circle in the frontal plane, 30° per frame: hanging down (frame
  0), sideways at shoulder height (3), straight up (6), across the chest to the left at
  shoulder height (9), and back down, the elbow bent in the last frame (11);
* every frame reports x and y of all 20 joints — the 40 elementary changes per body and frame
  of 000 §7.4 — but, as there, "only a few coordinates are manipulated": the rest of the body
  stands still (its joints re-report the same position, which is still an observation), the
  moving arm joints (elbow, wrist, hand) carry a deterministic sensor jitter of at most 3 mm
  (seeded); z is reported once, when the body appears.

Replayed at 25 frames per second, each cycle gives the posture events of ``gesture.vql``
(3-frame moving averages, so each posture is seen one frame after the arm reaches it):
``ForwardStartFound`` (frame 4), ``ForwardStartLost`` and ``RightHandAboveHeadFound`` (5),
``RightHandAboveHeadLost`` and ``ForwardEndFound`` (10), ``ForwardEndLost`` (11): one
``ForwardGesture`` and two noise events per cycle and body, as in 000 §7.4.1.

``python examples/gesture_live/recording.py`` rewrites ``arm_rotation.csv`` from this code;
the tests check that the shipped file is what the code produces.
"""

from __future__ import annotations

import csv
import math
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
RECORDING = HERE / "arm_rotation.csv"

FRAMES_PER_CYCLE = 12
FPS = 25
FRAME_MS = 1000 // FPS  # 40 ms

#: the 20 joints a Kinect v1 tracks, as classes of body.mm, with the rest pose (x, y, z) in m
REST_POSE: dict[str, tuple[float, float, float]] = {
    "Head": (0.00, 1.62, 2.50),
    "CenterShoulder": (0.00, 1.42, 2.52),
    "Spine": (0.00, 1.10, 2.55),
    "CenterHip": (0.00, 0.95, 2.55),
    "LeftShoulder": (-0.18, 1.40, 2.53),
    "LeftElbow": (-0.22, 1.12, 2.55),
    "LeftWrist": (-0.24, 0.88, 2.53),
    "LeftHand": (-0.25, 0.80, 2.52),
    "RightShoulder": (0.18, 1.40, 2.53),
    "RightElbow": (0.18, 1.12, 2.55),
    "RightWrist": (0.18, 0.88, 2.53),
    "RightHand": (0.18, 0.80, 2.52),
    "LeftHip": (-0.09, 0.92, 2.55),
    "LeftKnee": (-0.10, 0.50, 2.55),
    "LeftAnkle": (-0.10, 0.09, 2.58),
    "LeftFoot": (-0.10, 0.04, 2.48),
    "RightHip": (0.09, 0.92, 2.55),
    "RightKnee": (0.10, 0.50, 2.55),
    "RightAnkle": (0.10, 0.09, 2.58),
    "RightFoot": (0.10, 0.04, 2.48),
}
JOINTS: tuple[str, ...] = tuple(REST_POSE)

UPPER_ARM, FOREARM, HAND = 0.28, 0.24, 0.08
#: elbow flexion (degrees) per frame: the arm is stretched except on the way back down
ELBOW_FLEXION = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 60)
JITTER = 0.003  # metres
FIELDS = ("frame", "joint", "x", "y", "z")
SEED = 2014


@dataclass(frozen=True)
class JointPosition:
    """One row of the recording: where ``joint`` is in frame ``frame`` of the cycle."""

    frame: int
    joint: str
    x: float
    y: float
    z: float


def synthesise(seed: int = SEED) -> list[JointPosition]:
    """The 12-frame cycle, 20 joints a frame, coordinates rounded to the millimetre."""
    rng = random.Random(seed)
    sx, sy, _ = REST_POSE["RightShoulder"]
    rows = []
    for frame in range(FRAMES_PER_CYCLE):
        upper = math.radians(30 * frame)  # from hanging down, outwards, up, over, down
        fore = upper + math.radians(ELBOW_FLEXION[frame])  # the forearm folds inwards
        elbow = (sx + UPPER_ARM * math.sin(upper), sy - UPPER_ARM * math.cos(upper))
        wrist = (elbow[0] + FOREARM * math.sin(fore), elbow[1] - FOREARM * math.cos(fore))
        hand = (wrist[0] + HAND * math.sin(fore), wrist[1] - HAND * math.cos(fore))
        arm = {"RightElbow": elbow, "RightWrist": wrist, "RightHand": hand}
        for joint, (x, y, z) in REST_POSE.items():
            if joint in arm:  # the moving joints, with sensor jitter
                x, y = arm[joint]
                x, y = x + rng.uniform(-JITTER, JITTER), y + rng.uniform(-JITTER, JITTER)
            rows.append(JointPosition(frame, joint, round(x, 3), round(y, 3), z))
    return rows


def write_recording(path: Path = RECORDING, rows: list[JointPosition] | None = None) -> None:
    """Write the cycle as CSV: ``frame,joint,x,y,z``."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["frame", "joint", "x", "y", "z"])
        for r in synthesise() if rows is None else rows:
            w.writerow([r.frame, r.joint, *(f"{v + 0.0:.3f}" for v in (r.x, r.y, r.z))])


class RecordingError(ValueError):
    """A malformed recording file; the message says FILE:LINE:COL (field): reason."""


def read_recording(path: Path = RECORDING) -> list[JointPosition]:
    """Read and check a recording: every frame 0..n-1 lists each of the 20 joints once."""
    rows: list[JointPosition] = []
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header != list(FIELDS):
            raise RecordingError(f"{path}:1:1: expected the header frame,joint,x,y,z, "
                                 f"got {header}")
        for line, record in enumerate(reader, start=2):
            if len(record) != 5:
                raise RecordingError(f"{path}:{line}:1: expected 5 fields, got {len(record)}")
            cols = [1]
            for text in record[:-1]:
                cols.append(cols[-1] + len(text) + 1)
            rows.append(_row(record, lambda i, why, line=line, cols=cols: RecordingError(
                f"{path}:{line}:{cols[i]} ({FIELDS[i]}): {why}")))
    frames = sorted({r.frame for r in rows})
    if frames != list(range(len(frames))) or not frames:
        raise RecordingError(f"{path}: frames must be numbered 0..n-1, got {frames[:20]}")
    for fr in frames:
        joints = [r.joint for r in rows if r.frame == fr]
        if sorted(joints) != sorted(JOINTS):
            missing = sorted(set(JOINTS) - set(joints))
            extra = sorted(j for j in set(joints) if joints.count(j) > 1)
            raise RecordingError(f"{path}: frame {fr} must list each joint once "
                                 f"(missing {missing}, repeated {extra})")
    return sorted(rows, key=lambda r: (r.frame, JOINTS.index(r.joint)))


def _row(record: list[str], error: Callable[[int, str], RecordingError]) -> JointPosition:
    """One CSV record as a position; ``error(field_index, reason)`` makes the exception."""
    frame, joint, *xyz = record
    try:
        number = int(frame)
    except ValueError:
        number = -1
    if number < 0:
        raise error(0, f"not a frame number: {frame!r}")
    if joint not in REST_POSE:
        raise error(1, f"unknown joint {joint!r}")
    coords = []
    for i, text in enumerate(xyz, start=2):
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise error(i, f"not a finite number: {text!r}")
        coords.append(value)
    return JointPosition(number, joint, *coords)


#: one joint's reading in a replayed frame: (joint, x, y, z or None when not reported)
Reading = tuple[str, float, float, float | None]
#: one body's frame: (body id, frame number over all cycles, ts in ms, readings)
BodyFrame = tuple[str, int, int, list[Reading]]
#: the columns of :func:`frame_records`
FRAME_COLUMNS = ("body", "frame", "ts", "joint", "x", "y", "z")


def body_name(i: int) -> str:
    """The id of the i-th replayed body."""
    return f"body{i}"


def body_offset(i: int) -> tuple[float, float]:
    """Where body i stands (x, z offsets in m): a grid of 1 m places, 10 abreast. Realistic
    positions; the queries are relative, so the offset does not change the postures."""
    return float(i % 10), float(i // 10)


def replay(recording: list[JointPosition], bodies: int, cycles: int,
           first_body: int = 0) -> Iterator[BodyFrame]:
    """The replayed stream, one item per body and frame, in (frame, body) order.

    Frame ``g`` (0-based over all cycles) has ``ts = g * 40`` ms. Every frame reports x and y of
    all 20 joints; z is reported only in a body's first frame, where the body appears. The
    readings of each body's frames are computed once and shared by every cycle.
    """
    if bodies < 0 or cycles < 0:
        raise ValueError(f"bodies and cycles must be >= 0, got {bodies} and {cycles}")
    per_frame: dict[int, list[JointPosition]] = {}
    for r in recording:
        per_frame.setdefault(r.frame, []).append(r)
    n = len(per_frame)
    names = [body_name(b) for b in range(first_body, first_body + bodies)]
    shifted: list[list[list[Reading]]] = []
    first: list[list[Reading]] = []
    for b in range(first_body, first_body + bodies):
        dx, dz = body_offset(b)
        shifted.append([[(r.joint, round(r.x + dx, 3), r.y, None) for r in per_frame[f]]
                        for f in range(n)])
        first.append([(r.joint, round(r.x + dx, 3), r.y, round(r.z + dz, 3))
                      for r in per_frame[0]])
    for g in range(cycles * n):
        f = g % n
        for i, name in enumerate(names):
            yield name, g, g * FRAME_MS, first[i] if g == 0 else shifted[i][f]


def frame_records(recording: list[JointPosition], bodies: int, cycles: int,
                  first_body: int = 0) -> Iterator[tuple[str, int, int, str, float, float,
                                                         float | None]]:
    """The replayed stream as flat records ``FRAME_COLUMNS`` (one per body, frame and joint):
    the input of the Spark pipeline."""
    for body, g, ts, readings in replay(recording, bodies, cycles, first_body):
        for joint, x, y, z in readings:
            yield body, g, ts, joint, x, y, z


if __name__ == "__main__":
    write_recording(Path(sys.argv[1]) if len(sys.argv) > 1 else RECORDING)
