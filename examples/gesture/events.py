"""Semi-synthetic gesture event stream (000 §7.4): per body and 12-frame arm cycle, the four
posture events of one forward gesture and two noise events; bodies interleaved frame by frame.

Run ``python examples/gesture/events.py --bodies 4 --cycles 25 > events.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator

from cepflow.events.event import Event

FRAME_MS = 40  # 25 frames per second
#: frame of the 12-frame arm cycle -> query event published in it
CYCLE = {
    1: "ForwardStartFound",
    3: "RightHandAboveHeadFound",
    4: "ForwardStartLost",
    6: "ForwardEndFound",
    8: "RightHandAboveHeadLost",
    10: "ForwardEndLost",
}
EVENTS_PER_CYCLE = len(CYCLE)


def gesture_events(bodies: int, cycles: int, with_ids: bool = False) -> Iterator[Event]:
    """The stream, in timestamp order: 6 events per body and cycle, 1 ForwardGesture each."""
    n = 0
    for c in range(cycles):
        for frame in range(12):
            kind = CYCLE.get(frame)
            if kind is None:
                continue
            ts = (c * 12 + frame) * FRAME_MS
            for body in range(bodies):
                yield Event(kind, (f"body{body}",), ts, id=f"e{n}" if with_ids else None)
                n += 1


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bodies", type=int, default=4)
    ap.add_argument("--cycles", type=int, default=25)
    args = ap.parse_args(argv)
    for e in gesture_events(args.bodies, args.cycles, with_ids=True):
        sys.stdout.write(json.dumps({"type": e.type, "ts": e.ts, "id": e.id, "B": e.params[0]})
                         + "\n")


if __name__ == "__main__":
    main()
