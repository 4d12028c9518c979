"""The air-quality case study (seed 003 §V.F.2): the 43 statements follow the EPA table, the
analysis finds the four-level graph and the AirQualityLevel race, the fixed set is clean and
its output does not depend on the order of the readings within an instant."""

from __future__ import annotations

import itertools
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

import cepflow
from cepflow.analysis import analyze
from cepflow.analysis.fix import write_fixed
from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.language.parser import parse
from cepflow.runtime.engine import Engine

HERE = Path(__file__).resolve().parents[2] / "examples" / "air_quality"
sys.path.insert(0, str(HERE))

import breakpoints  # noqa: E402
import generate  # noqa: E402
import make_patterns  # noqa: E402

EPL = HERE / "air_quality.epl"
VEPL = HERE / "air_quality.vepl"


def test_the_files_are_the_table() -> None:
    assert EPL.read_text(encoding="utf-8") == make_patterns.epl()
    assert VEPL.read_text(encoding="utf-8") == make_patterns.vepl()
    epl = parse_epl(EPL.read_text(encoding="utf-8"), str(EPL))
    vepl = parse(VEPL.read_text(encoding="utf-8"), str(VEPL))
    assert epl.decls == vepl.decls
    produced = [d for d in epl.decls if not hasattr(d, "traits")]
    assert len(produced) == 43


#: (pollutant, average, grade) computed by hand from the EPA table (EPA-454/B-16-002, Table
#: 5) after truncating the average (O3 to 3 decimals, PM2.5 and CO to 1, the rest to integers)
HAND = [
    ("O3", 0.0, 1), ("O3", 0.0549, 1), ("O3", 0.055, 2), ("O3", 0.0709, 2), ("O3", 0.071, 3),
    ("O3", 0.0859, 3), ("O3", 0.086, 4), ("O3", 0.1059, 4), ("O3", 0.106, 5), ("O3", 0.2, 5),
    ("O3", 0.2009, 5), ("O3", 0.201, 6), ("O3", 0.5, 6),
    ("PM25", 12.0, 1), ("PM25", 12.09, 1), ("PM25", 12.1, 2), ("PM25", 35.49, 2),
    ("PM25", 35.5, 3), ("PM25", 55.4, 3), ("PM25", 55.5, 4), ("PM25", 150.4, 4),
    ("PM25", 150.5, 5), ("PM25", 250.49, 5), ("PM25", 250.5, 6), ("PM25", 600.0, 6),
    ("PM10", 54.0, 1), ("PM10", 54.9, 1), ("PM10", 55.0, 2), ("PM10", 154.9, 2),
    ("PM10", 155.0, 3), ("PM10", 254.0, 3), ("PM10", 255.0, 4), ("PM10", 354.9, 4),
    ("PM10", 355.0, 5), ("PM10", 424.9, 5), ("PM10", 425.0, 6),
    ("CO", 4.4, 1), ("CO", 4.49, 1), ("CO", 4.5, 2), ("CO", 9.4, 2), ("CO", 9.5, 3),
    ("CO", 12.4, 3), ("CO", 12.5, 4), ("CO", 15.4, 4), ("CO", 15.5, 5), ("CO", 30.49, 5),
    ("CO", 30.5, 6),
    ("SO2", 35.0, 1), ("SO2", 35.9, 1), ("SO2", 36.0, 2), ("SO2", 75.9, 2), ("SO2", 76.0, 3),
    ("SO2", 185.0, 3), ("SO2", 186.0, 4), ("SO2", 304.9, 4), ("SO2", 305.0, 5),
    ("SO2", 604.0, 5), ("SO2", 605.0, 6),
    ("NO2", 53.0, 1), ("NO2", 53.99, 1), ("NO2", 54.0, 2), ("NO2", 100.0, 2),
    ("NO2", 101.0, 3), ("NO2", 360.0, 3), ("NO2", 361.0, 4), ("NO2", 649.0, 4),
    ("NO2", 650.0, 5), ("NO2", 1249.0, 5), ("NO2", 1250.0, 6), ("NO2", 2100.0, 6),
]


@pytest.mark.parametrize("path", [EPL, VEPL], ids=["epl", "vepl"])
def test_grades_follow_the_table(path: Path) -> None:
    """One station per value: its single reading is its average, graded by the patterns."""
    program = cepflow.load(path)
    engine = Engine(program)
    out = []
    for i, (p, value, _) in enumerate(HAND):
        out += engine.process(Event("Reading", (f"h{i}", p, value), 0))
    graded = {c.params[0]: c.params[2] for c in out if c.type.startswith(
        tuple(breakpoints.POLLUTANTS)) and not c.type.endswith("Average")}
    assert graded == {f"h{i}": g for i, (_, _, g) in enumerate(HAND)}
    for p, value, g in HAND:  # (the table's reading in breakpoints.py agrees)
        assert breakpoints.grade(p, value) == g


def test_averages_use_each_pollutants_window() -> None:
    program = cepflow.load(EPL)
    engine = Engine(program)
    hour = 3_600_000
    levels = []
    for k, v in enumerate([0.05, 0.07]):  # O3: 8-hour average; NO2: 1-hour average
        levels += engine.process(Event("Reading", ("s", "O3", v), k * 2 * hour))
        levels += engine.process(Event("Reading", ("s", "NO2", v * 1000), k * 2 * hour))
    avg = {(c.type, c.ts): c.params[2] for c in levels if c.type.endswith("Average")}
    assert avg["O3Average", 2 * hour] == pytest.approx(0.06)  # both within 8 hours
    assert avg["NO2Average", 2 * hour] == pytest.approx(70.0)  # the first left after 1 hour


def test_air_quality_level_is_the_worst_grade_per_station() -> None:
    program = cepflow.load(EPL)
    engine = Engine(program)
    values = {"CO": 1.0, "O3": 0.06, "NO2": 10.0, "SO2": 2.0, "PM10": 20.0, "PM25": 40.0}
    for p, v in values.items():
        engine.process(Event("Reading", ("a", p, v), 0))
        engine.process(Event("Reading", ("b", p, 0.0), 0))
    out = engine.process(Event("Reading", ("a", "CO", 1.0), 600_000))
    levels = {c.params[0]: (c.params[1], c.params[2]) for c in out
              if c.type == "AirQualityLevel"}
    assert levels == {"a": (3, 6), "b": (1, 6)}  # PM2.5 40 is USG; the rest lower


def test_the_analysis_finds_four_levels_and_the_race(tmp_path: Path) -> None:
    a = analyze([EPL])
    assert a.graph.depth == 4 and not a.graph.cycles
    assert sum(n.produces for n in a.graph.nodes.values()) == 43
    assert {a.graph.levels[n] for n in a.graph.nodes if n.endswith("Average")} == {1}
    assert a.graph.levels["AirQualityLevel"] == 3
    assert {r.kind for r in a.races} == {"boundary"}
    assert {r.consumer for r in a.races} == {"AirQualityLevel"}
    assert len(a.races) == 36 and a.findings == []
    fixed = analyze([write_fixed(a, tmp_path / "fixed.epl")])
    assert fixed.races == [] and fixed.findings == [] and len(fixed.resolved) == 36
    assert fixed.plan.priorities["COAverage"] == 3
    assert fixed.plan.priorities["AirQualityLevel"] == 1


def _by_instant(program, events: list[dict]) -> dict[float, Counter]:
    engine = Engine(program)
    out: dict[float, Counter] = defaultdict(Counter)
    for r in events:
        for c in engine.process(Event("Reading", (r["station"], r["pollutant"], r["value"]),
                                      r["ts"])):
            out[c.ts][(c.type, *c.params)] += 1
    for c in engine.finish(close_windows=True):
        out[c.ts][(c.type, *c.params)] += 1
    return dict(out)


def test_the_fixed_set_does_not_depend_on_the_order_within_an_instant(tmp_path: Path) -> None:
    fixed = cepflow.load(write_fixed(analyze([EPL]), tmp_path / "fixed.epl"))
    start = 1_483_228_800_000
    base = list(generate.readings(days=1, n_stations=8, seed=3, start_ms=start))[:8 * 6 * 18]
    runs = []
    for seed in (0, 1, 2):
        rng = random.Random(seed)
        by_ts: dict[int, list] = defaultdict(list)
        for r in base:
            by_ts[r["ts"]].append(r)
        shuffled = [r for ts in sorted(by_ts) for r in rng.sample(by_ts[ts], len(by_ts[ts]))]
        runs.append(_by_instant(fixed, shuffled))
    assert runs[0] == runs[1] == runs[2]
    levels = Counter(k[3] for c in runs[0].values() for k, n in c.items() for _ in range(n)
                     if k[0] == "AirQualityLevel")
    # one level per station and instant, of its 6 grades (the last instant's with
    # close_windows, which then closes one empty batch: count 0 per station)
    assert levels == {6: 8 * 18, 0: 8}


def test_the_generator_is_seeded_and_reports_as_stations_do() -> None:
    a = list(generate.readings(days=1, n_stations=3, seed=5))
    assert a == list(generate.readings(days=1, n_stations=3, seed=5))
    assert len(a) == 144 * 3 * 6 and a != list(generate.readings(days=1, n_stations=3, seed=6))
    assert all(r["value"] >= 0 for r in a)
    assert {r["pollutant"] for r in a} == set(breakpoints.POLLUTANTS)
    assert len(generate.stations()) == 61
    ts = sorted({r["ts"] for r in a})
    assert {b - a for a, b in itertools.pairwise(ts)} == {600_000}
