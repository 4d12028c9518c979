"""numba on the chain kernel's Python loop (runtime/kernels/queues.step_chain: windowed or
recurring keyed chains), measured, not adopted (benchmarks/README.md, "numba on step_chain").

The loop's state — a FIFO of partial matches per (key, stage) — is written here for numba's
nopython mode as arrays: one record per partial match (age, window start, last item, first
item), its queue as a linked list (head and tail per queue in a typed dict, ``nxt`` per record).
The workload: a chain with a recurring type and a window, ``A -> A -> B`` within Δ (stages
{0, 1} for A, {2} for B), 16 keys, whole-second timestamps. For each size: ``step_chain``
(Python) and the numba loop — their ``pred``, completions and starts checked equal — CPU time,
best of ``--repeat``; and numba's cost before the first result: the import, the compile in a
fresh process without a cache, and the load in a fresh process from the on-disk cache
(``cache=True``). Run it in an environment with numba (the project does not depend on it):

    python -m venv /tmp/nb && /tmp/nb/bin/pip install numba numpy pyarrow ...
    PYTHONPATH=src /tmp/nb/bin/python benchmarks/numba_step_chain.py
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def workload(n: int, keys: int = 16, seed: int = 7) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per event: its stage bits (A: stages 0 and 1, B: stage 2), key code and time."""
    rng = np.random.default_rng(seed)
    is_a = rng.random(n) < 0.6
    bits = np.where(is_a, 0b011, 0b100).astype(np.int64)
    return bits, rng.integers(0, keys, n).astype(np.int64), (np.arange(n) // 50).astype(float)


def python_loop(bits: np.ndarray, key: np.ndarray, ts: np.ndarray, window: float) -> tuple:
    from cepflow.runtime.kernels.queues import step_chain

    sets = {b: [s for s in range(3) if b >> s & 1] for b in np.unique(bits).tolist()}
    pred, done, _, started, _ = step_chain(3, list(map(sets.__getitem__, bits.tolist())),
                                           key.tolist(), ts.tolist(), [], window,
                                           float(ts[-1]))
    return pred, np.array(done, np.int64), np.array(started, np.int64)


SOURCE = '''
import numpy as np
from numba import njit, types
from numba.typed import Dict


@njit(cache=CACHE)
def push(head, tail, nxt, qid, r):
    tl = tail[qid] if qid in tail else -1
    if tl < 0:
        head[qid] = r
    else:
        nxt[tl] = r
    tail[qid] = r


@njit(cache=CACHE)
def loop(k, bits, key, ts, window):
    n = len(key)
    pred = np.full(n, -1, np.int64)
    rec_age = np.empty(n, np.int64)
    rec_start = np.empty(n, np.float64)
    rec_last = np.empty(n, np.int64)
    nxt = np.full(n, -1, np.int64)
    head = Dict.empty(types.int64, types.int64)
    tail = Dict.empty(types.int64, types.int64)
    done = np.zeros(n, np.bool_)
    started = np.zeros(n, np.bool_)
    n_rec = 0
    last = k - 1
    for i in range(n):
        kc = key[i]
        t = ts[i]
        b = bits[i]
        best = -1
        bs = -1
        for s in range(1, k):
            if not (b >> s) & 1:
                continue
            qid = kc * k + s
            h = head[qid] if qid in head else -1
            while h >= 0 and rec_start[h] + window < t:  # expired before t
                h = nxt[h]
            if h >= 0:
                head[qid] = h
            else:
                head[qid] = -1
                tail[qid] = -1
            if h >= 0 and (best < 0 or rec_age[h] < rec_age[best]):
                best = h
                bs = s
        if best >= 0:
            qid = kc * k + bs
            h2 = nxt[best]
            head[qid] = h2
            if h2 < 0:
                tail[qid] = -1
            nxt[best] = -1
            if t - rec_start[best] > window:
                continue
            pred[i] = rec_last[best]
            if bs == last:
                done[i] = True
            else:
                rec_last[best] = i
                push(head, tail, nxt, kc * k + bs + 1, best)
        elif b & 1:
            started[i] = True
            r = n_rec
            n_rec += 1
            rec_age[r] = r
            rec_start[r] = t
            rec_last[r] = i
            push(head, tail, nxt, kc * k + 1, r)
    return pred, np.flatnonzero(done), np.flatnonzero(started)
'''


def numba_module(cache: bool, where: Path) -> Any:
    """The numba loop as a module written to ``where`` (numba caches by the file's path)."""
    path = where / "chain_loop_nb.py"
    path.write_text(SOURCE.replace("CACHE", str(cache)))
    sys.path.insert(0, str(where))
    import chain_loop_nb

    return chain_loop_nb


def first_call(cache_dir: Path, cache: bool) -> dict[str, float]:
    """In a fresh process: numba's import, then the first call (compile or cache load)."""
    code = (f"import sys, time, json; sys.path.insert(0, {str(cache_dir)!r}); "
            "t0 = time.process_time(); w0 = time.perf_counter(); import numba; "
            "t1 = time.process_time(); import numpy as np; import chain_loop_nb as m; "
            "t2 = time.process_time(); w2 = time.perf_counter(); "
            "m.loop(3, np.array([1, 4], np.int64), np.zeros(2, np.int64), np.zeros(2), 5.0); "
            "t3 = time.process_time(); w3 = time.perf_counter(); "
            "print(json.dumps({'import_s': t1 - t0, 'first_call_cpu_s': t3 - t2, "
            "'first_call_wall_s': w3 - w2}))")
    (cache_dir / "chain_loop_nb.py").write_text(SOURCE.replace("CACHE", str(cache)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "NUMBA_CACHE_DIR": str(cache_dir)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def best(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--window", type=float, default=5.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results"
                    / "numba_step_chain.json")
    args = ap.parse_args()
    try:
        import numba
    except ImportError:
        print("numba is not installed here: run this in an environment that has it")
        return 2
    result: dict = {"numba": numba.__version__, "numpy": np.__version__,
                    "load": os.getloadavg()[0], "sizes": []}
    with tempfile.TemporaryDirectory() as tmp:
        cold = first_call(Path(tmp), cache=True)  # (compiles, writes the cache)
        warm = first_call(Path(tmp), cache=True)  # (loads it)
    with tempfile.TemporaryDirectory() as tmp:
        uncached = first_call(Path(tmp), cache=False)
    result.update({"compile_first_call": cold, "cached_first_call": warm,
                   "uncached_first_call": uncached})
    with tempfile.TemporaryDirectory() as tmp:
        mod = numba_module(False, Path(tmp))
        for n in map(int, args.sizes.split(",")):
            bits, key, ts = workload(n)
            ref = python_loop(bits, key, ts, args.window)
            got = mod.loop(3, bits, key, ts, args.window)
            assert (ref[0] == got[0]).all() and (ref[1] == got[1]).all() and (
                ref[2] == got[2]).all(), n
            data = (bits, key, ts, args.window)
            py = best(lambda d=data: python_loop(*d), args.repeat)
            nb = best(lambda d=data: mod.loop(3, *d), args.repeat)
            result["sizes"].append({"events": n, "python_cpu_s": py, "numba_cpu_s": nb,
                                    "speed_up": py / nb, "matches": len(ref[1])})
            print(f"{n:>9,} events: Python {py:.3f} s, numba {nb:.4f} s ({py / nb:.0f}x), "
                  f"{len(ref[1]):,} matches")
    print(f"numba import {cold['import_s']:.2f} s CPU; first call: compile "
          f"{cold['first_call_cpu_s']:.2f} s CPU (no cache: {uncached['first_call_cpu_s']:.2f} "
          f"s), from the cache {warm['first_call_cpu_s']:.3f} s")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
