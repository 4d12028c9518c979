"""Esper's inner ``every`` after one stage in the pair kernel: ``every a = A(f) -> every b =
B(g, key) [where timer:within(Δ)]`` (runtime.shapes.EsperPair.fork; docs/esper.md, "Pattern
operators"). The token path forks such an instance at each ``B`` it takes (Matcher._spawn):
the fork takes a token id and completes at once, the instance keeps waiting as it was until
its deadline. Events are not consumed, so an instance's matches are every row of its key
passing ``g`` after its ``A`` and less than Δ after it — found here per instance as one range
of that stage's rows sorted by (key, row) — and it is open after the batch exactly as a
pair's instance waiting for its second stage (kernels.pair.leave_open keeps it so). Each match
is then handed to the pair kernel's emission as an instance of a pair that completed
(:func:`match_plan`), and its fork's token id counted (kernels.pair._esper_batch).
"""

from __future__ import annotations

import numpy as np


def window_cut(ts: np.ndarray, i_ts: np.ndarray, window: float) -> np.ndarray:
    """Per instance of a pattern with a window (its window's start ``i_ts``), the first row
    of the batch (times ``ts``, ascending) at or after its deadline: every row before it has
    ``ts - i_ts < window`` — Esper's timer fires before an event at the deadline — in the
    float arithmetic the pair kernel's ``take`` checks it in (``ts - i_ts`` rounds
    monotonically in ``ts``, so the rows that pass are a prefix; the search by ``i_ts +
    window`` is corrected where rounding moved its end, by whole instants)."""
    t = ts.astype(np.float64)
    n = len(t)
    cut = np.searchsorted(t, i_ts + window, "left").astype(np.int64)
    while True:  # (a row past the cut that passes: its whole instant is in)
        up = cut < n
        up[up] = t[cut[up]] - i_ts[up] < window
        if not up.any():
            break
        cut[up] = np.searchsorted(t, t[cut[up]], "right")
    while True:  # (a row before the cut that fails: its whole instant is out)
        down = cut > 0
        down[down] = ~(t[cut[down] - 1] - i_ts[down] < window)
        if not down.any():
            break
        cut[down] = np.searchsorted(t, t[cut[down] - 1], "left")
    return cut


def ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every position in ``lo[i] .. hi[i] - 1`` for each ``i`` (the later rows of instance
    ``i``'s key, as positions in its stage's rows sorted by (key, row)): the instance of each
    and the positions, by instance then position."""
    counts = np.maximum(hi - lo, 0)
    inst = np.repeat(np.arange(len(lo), dtype=np.int64), counts)
    starts = np.cumsum(counts) - counts
    return inst, np.arange(len(inst), dtype=np.int64) - np.repeat(starts - lo, counts)


def match_plan(p: dict, inst: np.ndarray, rows: np.ndarray) -> dict:
    """The pair kernel's plan ``p`` (kernels.pair.pair_rows) seen with one instance per
    match — instance ``inst[k]`` forked at row ``rows[k]`` —, each completed at that row: what
    kernels.pair._emit makes the complex events of (the instance's ``A`` and bindings, then
    the row's). ``inst`` ascends (as :func:`ranges` gives it), so its instances keep the
    plan's order (tokens from before the batch, pending rows, then those begun in it), which
    the emission reads each one's ``A`` by."""
    old, pend_ids, pend = p["old"], p["pend_ids"], p["pend_events"]
    n_real = len(old)
    n_old = n_real + len(pend_ids)
    q_old = inst[inst < n_real].tolist()
    q_pend = (inst[(inst >= n_real) & (inst < n_old)] - n_real).tolist()
    k = len(inst)
    return {"old": [old[q] for q in q_old], "pend_ids": [pend_ids[q] for q in q_pend],
            "pend_events": [pend[q] for q in q_pend],
            "n_old": len(q_old) + len(q_pend), "stage0": p["stage0"][inst],
            "stage": np.full(k, 2, np.int64), "taken": np.stack([p["taken"][0][inst], rows]),
            "end_row": rows, "match": np.ones(k, bool), "alive": np.zeros(k, bool),
            "age": p["age"][inst], "cols": p["cols"], "alt": None,
            "zstart": p["zstart"][inst], "seen": None}


def token_ids(first_token: int, n_pairs: int, starts: list[np.ndarray],
              forks: list[np.ndarray]) -> list[np.ndarray]:
    """Per pattern (slot), the token ids of the instances its ``starts`` rows open, when some
    pattern forks (``forks``: per slot the row of each fork): at a row the engine steps the
    patterns in order, each forking its instances (a token id each, Matcher._spawn) before it
    opens one (Matcher._process_esper) — so an id is ``first_token`` plus the forks and
    starts before it in (row, slot, forks first) order."""
    s_keys = [(r * n_pairs + slot) * 2 + 1 for slot, r in enumerate(starts)]
    f_keys = [(r * n_pairs + slot) * 2 for slot, r in enumerate(forks)]
    every = np.sort(np.concatenate([*s_keys, *f_keys]))
    return [first_token + np.searchsorted(every, k, "left") for k in s_keys]
