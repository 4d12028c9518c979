"""The chain kernel's plan for a keyed sequence under the unrestricted context
(CompiledPattern.unrestricted_chain; docs/architecture.md, "Keyed sequences under
unrestricted"): which rows start partial matches, move them and complete them over a batch,
in the form kernels.chain assembles for chronicle chains (``pred``, completing items, items
left waiting, starting items), plus the window timers left.

The token path (Matcher._general) under unrestricted, per event: every partial match of the
event's key with a thread waiting for one of the event's stages takes it (a thread that can
take it moves, and the thread that skips it stays), a token that completes ends, and the
event also starts a partial match. A sequence's token holds a thread at every state it reached,
and the later runs into a state merge into the first (the oldest events win), so a partial
match moves from stage m to m + 1 at the *first* row of stage m (its type, key and filter)
after the row that brought it to stage m, and completes at the first row of the last stage
after that. Partial matches do not compete for events, so each one's path is found by a binary
search per stage over the stage's rows sorted by (key, row): numpy, no loop over rows. In a
window ``[Δ]`` a partial match takes that row only if its deadline ``start + Δ`` is not before
the row's time (the timer fired first, Matcher.on_deadline) and the span does not exceed Δ
(Matcher._zones; float time); else it never moves again (every later row is later still) and
is held until its deadline. Matches come in the order of their completing rows, of one row
oldest partial match first (the token path's ``_find`` sorts its takers by token id).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cepflow.runtime.kernels.filters import chain_rows
from cepflow.runtime.rows import Rows

_EMPTY = np.zeros(0, dtype=np.int64)


def plan_every(pattern: Any, src: Rows, type_code: dict[str, int], values: list[Any],
               occupants: Any, schemas: Any, filter_cols: dict[tuple[str, int], np.ndarray]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                          dict[int, np.ndarray], np.ndarray, list[tuple[int, float]]]:
    """One unrestricted chain over the prepared batch ``src`` after the partial matches held
    before it (``occupants``, kernels.chain._occupants, oldest first): the items' batch rows
    (``positions``: each partial match's start row, then one item per step it took in the
    batch; the occupants are items ``n..``), per item the index of its key value in
    ``values`` (extended here), ``pred``, the completing items (in detection order), per
    stage the items left waiting, the starting items and the window timers still held after
    the batch (per partial match started in it: its start item and time). Raises
    kernels.Declined (from the filters) when a filter fails on a row."""
    c = pattern.unrestricted_chain
    k = len(c.stages)
    positions, bits, key, vidx, table = chain_rows(c, src, type_code, values, schemas,
                                                   filter_cols)
    order = np.argsort(positions, kind="stable")
    positions, bits, key, vidx = positions[order], bits[order], key[order], vidx[order]
    n_occ = len(occupants)
    occ_key = np.fromiter((table.setdefault(v, len(table)) for v in occupants.keys),
                          dtype=np.int64, count=n_occ)
    occ_vidx = np.arange(len(values), len(values) + n_occ, dtype=np.int64)
    values.extend(occupants.keys)
    stage_of = c.stage_of()
    w = c.window
    ts = src.ts[positions] if len(positions) else np.zeros(0, np.float64)
    span = np.int64(src.n + 1)
    # the partial matches, oldest first: the occupants, then one per starting row
    starts = np.flatnonzero(bits & 1)
    n_st = len(starts)
    tok_key = np.concatenate([occ_key, key[starts]])
    tok_at = np.concatenate([np.full(n_occ, -1, dtype=np.int64), positions[starts]])
    tok_level = np.concatenate([np.fromiter((stage_of[s] for s in occupants.states),
                                            dtype=np.int64, count=n_occ),
                                np.ones(n_st, dtype=np.int64)])
    # each one's last item: an occupant's is -2 - j until the items are counted (then n + j)
    tok_item = np.concatenate([-2 - np.arange(n_occ, dtype=np.int64),
                               np.arange(n_st, dtype=np.int64)])
    tok_vidx = np.concatenate([occ_vidx, vidx[starts]])
    tok_start = None
    if w is not None:
        occ_ts = np.fromiter((evs[0].ts for evs in occupants.events), dtype=np.float64,
                             count=n_occ)
        tok_start = np.concatenate([occ_ts, ts[starts]])
    item_pos, item_pred, item_vidx = [positions[starts]], [np.full(n_st, -1, np.int64)], \
        [vidx[starts]]
    n_items = n_st
    for m in range(1, k):
        at = np.flatnonzero(tok_level == m)
        cand = np.flatnonzero(bits >> m & 1)
        if not len(at) or not len(cand):
            continue
        cand = cand[np.argsort(key[cand], kind="stable")]  # by key, then row
        ck = key[cand] * span + positions[cand]
        j = np.searchsorted(ck, tok_key[at] * span + tok_at[at], side="right")
        found = j < len(cand)
        found[found] = key[cand[j[found]]] == tok_key[at[found]]
        at, row = at[found], cand[j[found]]
        if w is not None:
            t, start = ts[row], tok_start[at]
            ok = (start + w >= t) & ~(t - start > w)
            at, row = at[ok], row[ok]
        if not len(at):
            continue
        new = np.arange(n_items, n_items + len(at), dtype=np.int64)
        n_items += len(at)
        item_pos.append(positions[row])
        item_pred.append(tok_item[at])
        item_vidx.append(tok_vidx[at])
        tok_item[at] = new
        tok_at[at] = positions[row]
        tok_level[at] = m + 1
    n_ev = n_items
    pos_all = np.concatenate(item_pos)
    pred = np.concatenate([*item_pred, np.full(n_occ, -1, dtype=np.int64)])
    pred = np.where(pred <= -2, n_ev - 2 - pred, pred)
    tok_item = np.where(tok_item <= -2, n_ev - 2 - tok_item, tok_item)
    vidx_all = np.concatenate([*item_vidx, occ_vidx])
    done_tok = np.flatnonzero(tok_level == k)
    done_tok = done_tok[np.argsort(tok_at[done_tok], kind="stable")]  # (of a row: by age)
    last_ts = float(src.ts[-1]) if src.n else float("-inf")
    alive = (np.ones(len(tok_level), dtype=bool) if w is None
             else ~(tok_start + w < last_ts))  # (the timers before the last row fired)
    waiting = {}
    for m in range(1, k):
        its = tok_item[(tok_level == m) & alive]
        if len(its):
            waiting[m] = its
    started = np.arange(n_st, dtype=np.int64)
    timed: list[tuple[int, float]] = []
    if w is not None:
        keep = alive[n_occ:]
        timed = list(zip(started[keep].tolist(), tok_start[n_occ:][keep].tolist(),
                         strict=True))
    return (pos_all, vidx_all, pred, tok_item[done_tok], waiting, started, timed)
