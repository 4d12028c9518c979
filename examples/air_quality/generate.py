"""Synthetic readings for the air-quality case study (seed 003 §V.F.2): 61 stations, six
pollutants, one reading per station and pollutant every 10 minutes.

Usage::

    python examples/air_quality/generate.py OUT.jsonl [--days 1] [--stations 61]
        [--seed 17] [--start 2017-01-01T00:00:00Z] [--shuffle-ties]

Writes JSON Lines ``Reading`` events (``station``, ``pollutant``, ``value``; ``ts`` in epoch
milliseconds) in timestamp order. At each 10-minute instant every station reports every
pollutant, all with the same ``ts``; within an instant the readings come station by station in
the order CO, O3, NO2, SO2, PM10, PM25 — or, with ``--shuffle-ties``, in a seeded random order
(the order-independence test uses it).

**Distributions** (all drawn from ``random.Random(seed)``; the values are synthetic — the
seed's real Andalusian data are not public):

* *station level*: each (station, pollutant) has a base level drawn from a log-normal
  distribution around the pollutant's median — CO 0.4 ppm, O3 0.035 ppm, NO2 15 ppb, SO2 3 ppb,
  PM10 25 µg/m³, PM2.5 10 µg/m³ — with sigma = 0.5 on the log scale;
* *daily cycle*: the base times ``1 + 0.3 sin(2π (hour - peak) / 24 + π/2)``: O3 peaks at 15:00,
  the others at 08:00;
* *noise*: a log-scale AR(1) process per (station, pollutant), ``e(t) = 0.9 e(t-1) + N(0, 0.1)``;
* *episodes*: each (station, pollutant, day) has, with probability 0.05, one pollution episode
  starting at a uniform 10-minute instant of the day and lasting a uniform 2 to 8 hours, during
  which the value is multiplied by a factor uniform in [3, 20] — how higher grades appear;
* values are never negative and are rounded as stations report them: O3 to 3 decimals (ppm),
  CO and PM2.5 to 1 decimal, NO2, SO2 and PM10 to integers.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

#: pollutant -> (median, decimals reported, hour of the daily peak)
PROFILE: dict[str, tuple[float, int, int]] = {
    "CO": (0.4, 1, 8), "O3": (0.035, 3, 15), "NO2": (15.0, 0, 8), "SO2": (3.0, 0, 8),
    "PM10": (25.0, 0, 8), "PM25": (10.0, 1, 8)}
POLLUTANTS = tuple(PROFILE)
STEP_MS = 600_000  # 10 minutes
PER_DAY = 144


def stations(n: int = 61) -> list[str]:
    """Station ids ``AND01`` … (the Andalusian network has 61)."""
    return [f"AND{i:02d}" for i in range(1, n + 1)]


def readings(days: int = 1, n_stations: int = 61, seed: int = 17,
             start_ms: int = 1_483_228_800_000, shuffle_ties: bool = False
             ) -> Iterator[dict[str, Any]]:
    """The readings, in timestamp order (see the module docstring)."""
    rng = random.Random(seed)
    ids = stations(n_stations)
    base = {(s, p): PROFILE[p][0] * math.exp(rng.gauss(0.0, 0.5)) for s in ids
            for p in POLLUTANTS}
    noise = dict.fromkeys(base, 0.0)
    tie = random.Random(seed + 1)
    for day in range(days):
        episodes: dict[tuple[str, str], tuple[int, int, float]] = {}
        for key in base:
            if rng.random() < 0.05:
                first = rng.randrange(PER_DAY)
                length = rng.randint(12, 48)  # 2 to 8 hours of 10-minute steps
                episodes[key] = (first, first + length, rng.uniform(3.0, 20.0))
        for k in range(PER_DAY):
            ts = start_ms + (day * PER_DAY + k) * STEP_MS
            hour = (k * 10 / 60) % 24
            batch = []
            for s in ids:
                for p in POLLUTANTS:
                    _, decimals, peak = PROFILE[p]
                    e = 0.9 * noise[s, p] + rng.gauss(0.0, 0.1)
                    noise[s, p] = e
                    cycle = 1 + 0.3 * math.sin(2 * math.pi * (hour - peak) / 24 + math.pi / 2)
                    value = base[s, p] * cycle * math.exp(e)
                    ep = episodes.get((s, p))
                    if ep is not None and ep[0] <= k < ep[1]:
                        value *= ep[2]
                    value = max(0.0, round(value, decimals))
                    if decimals == 0:
                        value = float(int(value))
                    batch.append({"type": "Reading", "ts": ts, "station": s, "pollutant": p,
                                  "value": value})
            if shuffle_ties:
                tie.shuffle(batch)
            yield from batch


def _epoch_ms(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
               .timestamp() * 1000)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--days", type=int, default=1)
    ap.add_argument("--stations", type=int, default=61)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--start", default="2017-01-01T00:00:00Z")
    ap.add_argument("--shuffle-ties", action="store_true")
    a = ap.parse_args(argv)
    with a.out.open("w", encoding="utf-8") as f:
        for r in readings(a.days, a.stations, a.seed, _epoch_ms(a.start), a.shuffle_ties):
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
