"""Seed 003 §V.F.1, temperature monitoring: Warning (2 consecutive readings above 400) and
Critical (4 consecutive rising readings, the first above 100, the last more than 1.5x the
first), in EPL and in cepflow syntax (examples/temperature/alerts.*), on a stream whose
expected alerts are worked out by hand in the comments below."""

from pathlib import Path

import pytest

from cepflow.events.event import SideChannel
from cepflow.inputs import read_events
from cepflow.loader import load
from cepflow.runtime.engine import Engine

HERE = Path(__file__).resolve().parents[2] / "examples" / "temperature"


def alerts(name: str) -> list[tuple[str, tuple, float]]:
    program = load(HERE / name)
    side = SideChannel()
    engine = Engine(program)
    out = [m for e in read_events(HERE / "alerts.jsonl", program.schemas, side)
           for m in engine.process(e)]
    return [(m.type, m.params, m.ts) for m in out]


# readings, one a second: 70 420 410 390 450 460 470 100 120 130 150 190 105 110 120 130 140
# 200 210 250 330
WARNINGS = [(420, 410), (450, 460), (460, 470)]  # 410 -> 390 ends the attempt at 410
CRITICALS = [
    (120, 130, 150, 190),  # 190 > 1.5 * 120
    (120, 130, 140, 200),  # 105 110 120 130 and 110 120 130 140 fail 1.5x; 105 broke the rest
    (130, 140, 200, 210),
    (140, 200, 210, 250),
    (200, 210, 250, 330),
]


@pytest.mark.parametrize("name", ["alerts.epl", "alerts.vepl"])
def test_warning_and_critical_on_the_worked_stream(name: str) -> None:
    out = alerts(name)
    assert [p for t, p, _ in out if t == "Warning"] == WARNINGS
    assert [p for t, p, _ in out if t == "Critical"] == CRITICALS
    t0 = 1500000100_000
    assert [ts - t0 for t, _, ts in out if t == "Warning"] == [2000, 5000, 6000]


def test_both_syntaxes_compile_to_the_same_automata() -> None:
    a, b = load(HERE / "alerts.epl"), load(HERE / "alerts.vepl")
    for x, y in zip(a.automata, b.automata, strict=True):
        assert (x.name, x.start, len(x.positions), sorted(x.forbids)) == (
            y.name, y.start, len(y.positions), sorted(y.forbids))
