"""Gesture case study (000 §7.4, examples/gesture): every arm cycle of every body yields
exactly one gesture."""

import sys
from collections import Counter
from pathlib import Path

import pytest

from cepflow.loader import load
from cepflow.runtime.engine import Engine

HERE = Path(__file__).resolve().parents[2] / "examples" / "gesture"
sys.path.insert(0, str(HERE))

from events import EVENTS_PER_CYCLE, gesture_events  # noqa: E402


@pytest.mark.parametrize(("bodies", "cycles"), [(1, 3), (4, 25), (30, 4)])
def test_one_gesture_per_cycle_and_body(bodies: int, cycles: int) -> None:
    program = load(HERE / "gesture.vepl")
    slides: Counter = Counter()
    eng = Engine(program, actions={"gesture.next_slide":
                                   lambda act: slides.update([act.bindings["B"]])})
    events = list(gesture_events(bodies, cycles))
    assert len(events) == EVENTS_PER_CYCLE * bodies * cycles
    found = [m for e in events for m in eng.process(e)]
    assert len(found) == bodies * cycles
    assert Counter(m.params[0] for m in found) == {f"body{b}": cycles for b in range(bodies)}
    assert slides == Counter({f"body{b}": cycles for b in range(bodies)})
    # each gesture is the four posture events of one cycle of one body, in order
    for m in found:
        assert [e.type for e in m.parts] == ["ForwardStartFound", "ForwardStartLost",
                                             "ForwardEndFound", "ForwardEndLost"]
        assert len({e.params[0] for e in m.parts}) == 1
        assert m.ts - m.parts[0].ts == 9 * 40
    assert all(v == 0 for v in eng.partial_matches().values())
