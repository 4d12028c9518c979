"""The window statements of the case studies in seeds 003 and 004, with their published facts.

* 003 §II.C.2 Listing 3 ``AccidentsReport`` (number of accidents per day and location:
  ``win:time_batch(86400 seconds) group by a1.location``) and Listing 4 ``DangerousLocation``
  ("raised every time 100 events of type Crash are detected in a given location":
  ``win:length_batch(100) group by a1.location``);
* 003 §V.F.1 temperature monitoring: ``Monitor`` "tells us the average temperature every 10
  seconds";
* 004 §IV contractions monitoring: ``Counter`` = ``select count(a1.contrDuration) as numContr
  from pattern[(every a1 = Patient(a1.contrDuration >= 20))].win:time(10 minutes)`` over the
  published 12 events, whose PCPN marking gives the count at every minute 1..31, and the
  remark that a batch window would have created "only 4 events".
"""

from __future__ import annotations

import random

import pytest
from windows_helpers import events, rows, run, schema, statement

from cepflow.windows import WindowRunner, WindowSpec, run_statements

DAY = 86_400_000
T0 = 1_488_326_400_000  # 003 Listing 1's first timestamp (POSIX seconds), in ms


# -- 003: motorbike fleet ---------------------------------------------------------------------
MOTO = {"Accident": schema("Accident", "motorbikeId", ("location", "str")),
        "Crash": schema("Crash", "motorbikeId", ("location", "str"))}

ACCIDENTS_REPORT = statement(
    [("current_timestamp()", "timestamp"), ("a1.location", "location"), ("count(*)", "count")],
    WindowSpec.time_batch(86_400 * 1000), input_type="Accident", name="AccidentsReport",
    group_by=["a1.location"], alias="a1")


def test_accidents_report_counts_accidents_per_day_and_location() -> None:
    hour = 3_600_000
    evs = events("Accident", [
        (T0, 1, "Cadiz"), (T0 + hour, 2, "Malaga"), (T0 + 2 * hour, 3, "Cadiz"),
        (T0 + DAY - 1, 4, "Cadiz"),                       # day 1: Cadiz 3, Malaga 1
        (T0 + DAY + hour, 5, "Cadiz"),                    # day 2: Cadiz 1
        #                                                   days 3, 4, 5: none
        (T0 + 5 * DAY + hour, 6, "Sevilla"), (T0 + 5 * DAY + 2 * hour, 7, "Sevilla"),  # day 6
    ])
    out = run(ACCIDENTS_REPORT, MOTO, evs, until=T0 + 7 * DAY)
    assert rows(out) == [
        # day boundaries from the first accident (reference point = first arrival)
        (T0 + DAY, T0 + DAY, "Cadiz", 3), (T0 + DAY, T0 + DAY, "Malaga", 1),
        # Malaga had accidents in the previous batch only: Esper posts its group with count 0
        (T0 + 2 * DAY, T0 + 2 * DAY, "Cadiz", 1), (T0 + 2 * DAY, T0 + 2 * DAY, "Malaga", 0),
        (T0 + 3 * DAY, T0 + 3 * DAY, "Cadiz", 0),
        # day 4 posts nothing (no accident then or the day before) and no boundary is
        # scheduled until Sevilla's accident, which schedules T0 + 6 days (still aligned)
        (T0 + 6 * DAY, T0 + 6 * DAY, "Sevilla", 2), (T0 + 7 * DAY, T0 + 7 * DAY, "Sevilla", 0)]
    assert all(e.type == "AccidentsReport" for e in out)
    runner = WindowRunner(ACCIDENTS_REPORT, MOTO)
    assert runner.output_schema.param_names == ("timestamp", "location", "count")
    assert [p.type for p in runner.output_schema.params] == ["any", "str", "int"]


def test_accidents_report_rows_feed_a_weekly_statement() -> None:
    # AccidentsReport rows re-enter the stream: a statement over them sees each at its time
    worst = statement(["location", ("max(count)", "worst")], WindowSpec.time(7 * DAY),
                      input_type="AccidentsReport", name="WorstDay", group_by=["location"],
                      filter="count > 0")
    evs = events("Accident", [(T0 + i * 6 * 3_600_000, i, "Cadiz") for i in range(10)])
    out = run_statements([worst, ACCIDENTS_REPORT], evs, MOTO)  # order is found from names
    assert [(e.type, e.ts, e.params[-1]) for e in out] == [
        ("AccidentsReport", T0 + DAY, 4), ("WorstDay", T0 + DAY, 4),
        ("AccidentsReport", T0 + 2 * DAY, 4), ("WorstDay", T0 + 2 * DAY, 4)]


def crashes(seed: int, cadiz: int, malaga: int) -> list:
    places = ["Cadiz"] * cadiz + ["Malaga"] * malaga
    random.Random(seed).shuffle(places)
    return events("Crash", [(1000 * i, i, p) for i, p in enumerate(places)])


def test_dangerous_location_every_100_crashes_in_cadiz() -> None:
    # Listing 4 as written: a filter on Cadiz, one length batch of 100, group by location
    dangerous = statement(
        [("current_timestamp()", "timestamp"), ("a1.location", "location")],
        WindowSpec.length_batch(100), input_type="Crash", name="DangerousLocation",
        group_by=["a1.location"], filter='a1.location == "Cadiz"', alias="a1")
    evs = crashes(3, 250, 300)
    cadiz_ts = [e.ts for e in evs if e.params[1] == "Cadiz"]
    out = run(dangerous, MOTO, evs)
    assert rows(out) == [(cadiz_ts[99], cadiz_ts[99], "Cadiz"),
                         (cadiz_ts[199], cadiz_ts[199], "Cadiz")]
    assert out[0].parts == (next(e for e in evs if e.ts == cadiz_ts[99]),)


def test_dangerous_location_for_every_location_needs_a_window_per_location() -> None:
    # "every time 100 crashes are detected in a given location", for all locations: Esper's
    # #groupwin(location)#length_batch(100) — one batch per location.
    dangerous = statement(["location", ("count(*)", "crashes")],
                          WindowSpec.length_batch(100, per_group=True), input_type="Crash",
                          name="DangerousLocation", group_by=["location"])
    evs = crashes(4, 250, 300)
    nth = {p: [e.ts for e in evs if e.params[1] == p] for p in ("Cadiz", "Malaga")}
    expected = sorted([(nth["Cadiz"][i], "Cadiz", 100) for i in (99, 199)]
                      + [(nth["Malaga"][i], "Malaga", 100) for i in (99, 199, 299)])
    assert rows(run(dangerous, MOTO, evs)) == expected
    # one shared length batch instead mixes locations: rows per location of each 100 crashes
    shared = statement(["location", ("count(*)", "crashes")], WindowSpec.length_batch(100),
                       input_type="Crash", group_by=["location"])
    out = rows(run(shared, MOTO, evs))
    assert len(out) == 2 * 5 and {r[0] for r in out} == {evs[i].ts for i in range(99, 550, 100)}
    assert all(sum(r[2] for r in out if r[0] == t) == 100 for t in {r[0] for r in out})


# -- 003: temperature monitoring --------------------------------------------------------------
TEMPS = {"Temperature": schema("Temperature", ("sensor", "str"), ("value", "float"))}


def test_monitor_averages_the_temperature_every_10_seconds() -> None:
    # one reading per second; Monitor = select avg(value) from Temperature#time_batch(10 sec)
    monitor = statement([("avg(value)", "avgTemp")], WindowSpec.time_batch(10_000),
                        input_type="Temperature", name="Monitor")
    values = [float(v) for v in range(100, 130)]
    evs = events("Temperature", [(1000 * i, "s1", v) for i, v in enumerate(values)])
    out = run(monitor, TEMPS, evs)
    # the third batch [20 s, 30 s) is still open at the end of input: not output (as Esper)
    assert rows(out) == [(10_000, 104.5), (20_000, 114.5)]
    assert rows(run(monitor, TEMPS, evs, flush=True))[-1] == (30_000, 124.5)
    assert rows(run(monitor, TEMPS, evs, until=30_000))[-1] == (30_000, 124.5)
    # a sensor that falls silent: one last row with a null average, then nothing
    assert rows(run(monitor, TEMPS, evs, until=60_000))[-2:] == [(30_000, 124.5), (40_000, None)]


def test_monitor_per_sensor_with_group_by() -> None:
    monitor = statement(["sensor", ("avg(value)", "avgTemp"), ("max(value)", "peak")],
                        WindowSpec.time_batch(10_000), input_type="Temperature",
                        group_by=["sensor"])
    evs = events("Temperature", [(500 * i, "ab"[i % 2], float(i)) for i in range(40)])
    assert rows(run(monitor, TEMPS, evs, until=20_000)) == [
        (10_000, "a", 9.0, 18.0), (10_000, "b", 10.0, 19.0),
        (20_000, "a", 29.0, 38.0), (20_000, "b", 30.0, 39.0)]


# -- 004: contractions monitoring -------------------------------------------------------------
PATIENTS = {"Patient": schema("Patient", ("id", "str"), ("contrDuration", "int"))}
#: 004 §IV, the EPL event data (ts in minutes, as the seed's Patient type declares)
CONTRACTIONS = events("Patient", [
    (1, "Alice", 10), (1, "Barbara", 20), (9, "Alice", 20), (9, "Barbara", 36),
    (12, "Alice", 38), (14, "Barbara", 39), (16, "Alice", 40), (24, "Barbara", 42),
    (24, "Carla", 10), (25, "Alice", 45), (29, "Alice", 36), (31, "Barbara", 20)])
#: 004 §IV, the final PCPN marking of Counter: (minute, count in the 10-minute slide)
PCPN_COUNTER = [(1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (6, 1), (7, 1), (8, 1), (9, 3),
                (10, 3), (11, 2), (12, 3), (13, 3), (14, 4), (15, 4), (16, 5), (17, 5), (18, 5),
                (19, 3), (20, 3), (21, 3), (22, 2), (23, 2), (24, 2), (25, 3), (26, 2), (27, 2),
                (28, 2), (29, 3), (30, 3), (31, 4)]


def counter(window: WindowSpec) -> object:
    return statement([("count(a1.contrDuration)", "numContr")], window,
                     input_type="Patient", name="Counter",
                     filter="a1.contrDuration >= 20", alias="a1")


def test_counter_outputs_on_every_arrival_and_expiry() -> None:
    out = rows(run(counter(WindowSpec.time(10)), PATIENTS, CONTRACTIONS))
    # Esper semantics: a row per accepted event and per expiry instant (t + 10 minutes)
    assert out == [(1, 1), (9, 2), (9, 3), (11, 2), (12, 3), (14, 4), (16, 5), (19, 3),
                   (22, 2), (24, 1), (24, 2), (25, 3), (26, 2), (29, 3), (31, 4)]


def test_counter_reproduces_the_published_pcpn_marking_at_every_minute() -> None:
    # The PCPN of 004 counts at every tick; the Esper rows are the changes. The last row at or
    # before each minute is the count the net marks for that minute: all 31 values agree.
    out = rows(run(counter(WindowSpec.time(10)), PATIENTS, CONTRACTIONS))
    at_minute = [(m, [c for t, c in out if t <= m][-1]) for m in range(1, 32)]
    assert at_minute == PCPN_COUNTER


@pytest.mark.parametrize(("flush", "expected"), [
    (False, [(11, 3), (21, 3), (31, 3)]),
    (True, [(11, 3), (21, 3), (31, 3), (41, 1)]),   # "only 4 events" (004 §IV)
])
def test_counter_with_a_batch_window_by_mistake(flush: bool, expected: list) -> None:
    out = rows(run(counter(WindowSpec.time_batch(10)), PATIENTS, CONTRACTIONS, flush=flush))
    assert out == expected
