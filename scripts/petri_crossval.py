"""The long run of the Petri-net cross-validation (issue 19.5): thousands of random Esper
pattern sets and window statements, and VEPL patterns under chronicle, immediate and strict
with a rule (cepflow.petri.crossval), over random streams, each run as a net and in the
engine; every complex event must agree (number, time, values, the events that made it), and
every rule firing. The suite runs the same property at a modest number of examples
(tests/petri/test_petri_crossval.py, tests/petri/test_petri_windows.py).

    .venv/bin/python scripts/petri_crossval.py                 # 2,000 cases, streams of 30
    .venv/bin/python scripts/petri_crossval.py --cases 20000 --length 60 --seed 7

Prints each disagreement (the program, the stream, the differences) and exits 1 if any.
"""

from __future__ import annotations

import argparse
import sys
import time

from cepflow.language.epl import parse_epl
from cepflow.loader import load, load_module
from cepflow.petri.crossval import compare, random_program, random_stream, random_vepl, seeded


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--length", type=int, default=30, help="events per stream")
    ap.add_argument("--seed", type=int, default=0, help="the first case's seed")
    ap.add_argument("--no-windows", action="store_true", help="patterns only")
    args = ap.parse_args()
    bad = 0
    t0 = time.monotonic()
    for k in range(args.cases):
        seed = args.seed + k
        pick = seeded(seed)
        vepl = k % 3 == 2  # a third of the cases: VEPL (chronicle, immediate, strict)
        text = random_vepl(pick) if vepl else random_program(pick,
                                                              windows=not args.no_windows)
        events = random_stream(pick, args.length)
        close = bool(pick([False, True]))
        prog = load(text) if vepl else load_module(parse_epl(text))
        c = compare(prog, events, seed=seed, close_windows=close)
        if not c.equal:
            bad += 1
            print(f"--- case {seed} (close_windows={close})\n{text}"
                  f"{[(e.type, e.params, e.ts) for e in events]}")
            print("\n".join(c.differences))
        if (k + 1) % 250 == 0:
            print(f"{k + 1:,} cases, {bad} disagreeing, {time.monotonic() - t0:,.0f} s",
                  file=sys.stderr)
    print(f"{args.cases:,} cases: {bad} disagreeing")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
