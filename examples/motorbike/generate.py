"""Generate a long motorbike stream (seed 003 §II) with accidents and crashes at known places.

Usage::

    python examples/motorbike/generate.py OUT.jsonl [--events 1000000] [--bikes 10000]
        [--days 10] [--accidents 300] [--crashes 3000] [--locations 5] [--seed 3]

Writes JSON Lines ``Motorbike`` events in timestamp order (``ts`` in ms, ``timestamp`` in
POSIX seconds as Listing 1) and ``OUT.expected.json`` with what the generator placed: the
accident and crash scenarios (time, bike, location), from which the expected ``Crash``,
``Accident``, ``AccidentsReport`` and ``DangerousLocation`` events follow without running
cepflow (``expected()`` below; ``tests`` check the engine against it).

The stream is built so that every complex event is one the generator placed:

* normal readings: each bike reports every ``period`` ms or more (≥ 10 s apart), seat on,
  tires at 2.5 BAR, speed uniform in 20..120 km/h — no pattern fires on them (a speed of 0
  never follows a reading ≥ 50 km/h of the same bike within 3 s, tires never drop);
* a **crash** scenario: a reading at 80 km/h, then 0 km/h 1 s later → one ``Crash``;
* an **accident** scenario (as examples/motorbike/accident.jsonl): 80 km/h with tires at 2.5,
  1 s later 60 km/h with tire 1 at 1.0 (``BlowOutTire``), 1 s later 0 km/h (two ``Crash``:
  both earlier readings were ≥ 50 km/h), 0.5 s later the driver leaves the seat
  (``DriverLeftSeat``) → ``Accident``.

Listing 5 (``DriverLeftSeat``) is ``every (a1 -> a2)``: one instance at a time, which takes the
first seat-on reading of *any* bike after the previous match. So the generator makes the first
event of the stream, and the event right after each accident, a reading of the *next*
accident's bike; the driver leaves the seat only in accidents. Accidents do not overlap.
"""

from __future__ import annotations

import argparse
import heapq
import json
import random
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DAY = 86_400_000
T0 = 1_488_326_400_000  # 003 Listing 1's first timestamp (2017-03-01), in ms
LOCATIONS = ("Cadiz", "Malaga", "Sevilla", "Granada", "Huelva")


def _reading(ts: int, bike: int, location: str, speed: int, tire1: float = 2.5,
             seat: bool = True) -> dict[str, Any]:
    return {"type": "Motorbike", "ts": ts, "timestamp": ts // 1000, "motorbikeId": bike,
            "location": location, "speed": speed, "tire1": tire1, "tire2": 2.5, "seat": seat}


def generate(events: int, bikes: int, days: float, accidents: int, crashes: int,
             seed: int = 3, locations: int = len(LOCATIONS)
             ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The stream (time-ordered readings) and the placed scenarios; each bike rides in one of
    the first ``locations`` places."""
    rng = random.Random(seed)
    span = int(days * DAY)
    home = {b: LOCATIONS[rng.randrange(locations)] for b in range(1, bikes + 1)}
    scenario_events = 6 * accidents + 2 * crashes
    normal = max(0, events - scenario_events)
    # scenarios at distinct, well separated instants; accidents in order of time
    slots = rng.sample(range(1, max(2, span // 60_000)), accidents + crashes)
    starts = sorted(s * 60_000 + rng.randrange(0, 30_000) for s in slots)
    kinds = ["accident"] * accidents + ["crash"] * crashes
    rng.shuffle(kinds)
    out: list[dict[str, Any]] = []
    busy: dict[int, list[tuple[int, int]]] = defaultdict(list)  # bike -> (from, to) blocked
    placed: list[dict[str, Any]] = []
    accident_bikes: list[int] = []
    for start, kind in zip(starts, kinds, strict=True):
        bike = rng.randrange(1, bikes + 1)
        if kind == "accident":
            accident_bikes.append(bike)
        placed.append({"kind": kind, "ts": T0 + start, "bike": bike, "location": home[bike]})
    # one scenario per bike at a time: a scenario needs 20 s of its bike's time
    for p in placed:
        busy[p["bike"]].append((p["ts"] - 10_000, p["ts"] + 13_000))
    for i, p in enumerate(placed):
        ts, bike, loc = p["ts"], p["bike"], p["location"]
        if p["kind"] == "crash":
            out += [_reading(ts, bike, loc, 80), _reading(ts + 1000, bike, loc, 0)]
            p["crash_ts"] = [ts + 1000]
        else:
            out += [_reading(ts, bike, loc, 80), _reading(ts + 1000, bike, loc, 60, 1.0),
                    _reading(ts + 2000, bike, loc, 0, 1.0),
                    _reading(ts + 2500, bike, loc, 0, 1.0, seat=False)]
            p["crash_ts"] = [ts + 2000, ts + 2000]
            p["accident_ts"] = ts + 2500
            nxt = [q for q in placed[i + 1:] if q["kind"] == "accident"]
            if nxt:  # hand Listing 5's single instance to the next accident's bike
                b2 = nxt[0]["bike"]
                out.append(_reading(ts + 2501, b2, home[b2], 30))
                busy[b2].append((ts + 2501 - 10_000, ts + 2501 + 10_000))
    if accident_bikes:
        b1 = accident_bikes[0]
        out.append(_reading(T0, b1, home[b1], 30))
        busy[b1].append((T0 - 10_000, T0 + 10_000))
    # no other reading between an accident's last reading and the handover reading
    quiet = [(p["accident_ts"], p["accident_ts"] + 1) for p in placed if "accident_ts" in p]
    normal = max(0, events - len(out))
    out += _normal_readings(normal, bikes, span, home, busy, quiet, rng)
    out.sort(key=lambda e: e["ts"])  # stable: scenario order within an instant is kept
    return out, {"placed": placed, "end": out[-1]["ts"] if out else T0}


def _normal_readings(n: int, bikes: int, span: int, home: dict[int, str],
                     busy: dict[int, list[tuple[int, int]]], quiet: list[tuple[int, int]],
                     rng: random.Random) -> Iterator[dict[str, Any]]:
    """``n`` ordinary readings spread over the bikes (over ``span``, a little beyond when
    readings are skipped), at least 10 s apart per bike, away from the bike's scenarios and
    from the ``quiet`` instants."""
    quiet_ts = {t for lo, hi in quiet for t in range(lo, hi + 1)}
    per_bike = max(1, n // bikes)
    period = max(10_000, span // per_bike)
    made = 0
    heap = [(T0 + 10_001 + rng.randrange(period), b) for b in range(1, bikes + 1)]
    heapq.heapify(heap)
    while made < n and heap:
        ts, bike = heapq.heappop(heap)
        if ts not in quiet_ts and not any(lo <= ts <= hi for lo, hi in busy.get(bike, ())):
            yield _reading(ts, bike, home[bike], rng.randrange(20, 121))
            made += 1
        heapq.heappush(heap, (ts + period + rng.randrange(0, 1000), bike))


def expected(info: dict[str, Any], crash_batch: int = 100) -> dict[str, Any]:
    """The complex events the placed scenarios must give, computed from them alone."""
    placed, end = info["placed"], info["end"]
    crashes = sorted((ts, p["location"]) for p in placed for ts in p["crash_ts"])
    accidents = sorted((p["accident_ts"], p["location"]) for p in placed
                       if p["kind"] == "accident")
    # DangerousLocation: every 100th crash of a location
    seen: dict[str, int] = defaultdict(int)
    dangerous = []
    for ts, loc in crashes:
        seen[loc] += 1
        if seen[loc] % crash_batch == 0:
            dangerous.append((ts, loc))
    # AccidentsReport: daily batches from the first accident; a batch posts if it or the
    # previous one had accidents, one row per location of the batch, then count 0 for the
    # locations only the previous batch had
    report = []
    if accidents:
        ref = accidents[0][0]
        batches: dict[int, dict[str, int]] = defaultdict(dict)
        for ts, loc in accidents:
            k = (ts - ref) // DAY
            batches[k][loc] = batches[k].get(loc, 0) + 1
        last_k = max(batches) + 1
        for k in range(last_k + 1):
            boundary = ref + (k + 1) * DAY
            if boundary > end:
                break
            now, before = batches.get(k, {}), batches.get(k - 1, {})
            report += [(boundary, loc, n) for loc, n in now.items()]
            report += [(boundary, loc, 0) for loc in before if loc not in now]
    return {"crashes": len(crashes), "accidents": accidents, "dangerous": dangerous,
            "report": report}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--bikes", type=int, default=10_000)
    ap.add_argument("--days", type=float, default=10)
    ap.add_argument("--accidents", type=int, default=300)
    ap.add_argument("--crashes", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--locations", type=int, default=len(LOCATIONS),
                    choices=range(1, len(LOCATIONS) + 1))
    a = ap.parse_args()
    stream, info = generate(a.events, a.bikes, a.days, a.accidents, a.crashes, a.seed,
                            a.locations)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with a.out.open("w", encoding="utf-8") as fh:
        for e in stream:
            fh.write(json.dumps(e, separators=(",", ":")) + "\n")
    exp = expected(info)
    a.out.with_suffix(".expected.json").write_text(json.dumps(
        {"placed": info["placed"], "end": info["end"], **exp}, indent=1), encoding="utf-8")
    print(f"wrote {len(stream):,} events to {a.out}: {len(exp['accidents'])} accidents, "
          f"{exp['crashes']} crashes, {len(exp['dangerous'])} DangerousLocation, "
          f"{len(exp['report'])} AccidentsReport rows expected")


if __name__ == "__main__":
    main()
