"""Esper's ``or`` of sequences and ``and`` of chains in the pair kernel (kernels/pair.py):
``every a = A(f) [-> b …] -> ((x = X(g) -> y = Y(h) …) or z = Z(k) …) [where
timer:within(Δ)]`` — the ``esper_or_seq`` shape, :attr:`~cepflow.runtime.shapes.EsperPair.track`
(docs/esper.md, "Alternatives that are sequences") — and the same with ``and``
(``esper_and_after``, :attr:`~cepflow.runtime.shapes.EsperPair.conj`): operands side by side,
which differ only in when an instance completes.

The compiled automaton is the product of the operands (compiler.conjunction): events are not
consumed and every operand that can take an event takes it, so each operand progresses on
its own — atom after atom the first later event of its key passing that atom's filter, a
chain search after the stages before the ``or`` (:func:`walk`) — and an instance completes by
the operand with the least completing row — of several completing at one row, the one whose
filter started first (``ProductStep.ties``, ``matcher._started``: :func:`_first_started`). What
the token path holds of an instance still open is its product thread: the events of the
stages before, then one event per step (one event for a step that moved several operands),
the track variable — per step the bit mask of the operands it moved, comma-separated
(``matcher._or_step``) — and the state of (the last step's mask, per operand its progress)
(:attr:`EsperPair.product`). :func:`progress` reads the per-operand progress of a thread
back from its state (the tokens from before a batch), :func:`open_thread` writes one
(the instances a batch leaves open), :func:`held_by` gives an operand's view of it (the
events and bindings its chain would hold: what its match keeps).

An ``and`` (compiler.conjunction: no track variable) completes when every operand has, at the
latest of their completing rows, and its match holds the events of every step — one per row,
a row two operands took once — with every operand's bindings (the token path's thread):
:func:`step_groups` sorts the matches by the order their operands' rows came in, so that each
group is one chain of steps (kernels.pair._emit_and)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cepflow.events.event import Event
from cepflow.runtime.shapes import EsperPair


def operand_edges(pr: EsperPair) -> list[tuple[Any, ...]]:
    """Per operand of the ``or``, its atoms' edges (its chain's stages after ``pr.stages``)."""
    nb = len(pr.stages)
    return [v.stages[nb:] for v in pr.alts]


def own_variables(pr: EsperPair) -> set[str]:
    """The variables the operands bind (none of the stages before binds them but the key)."""
    nb = len(pr.stages)
    return {v for view in pr.alts for new in view.new[nb:] for _, v in new}


def progress(pr: EsperPair, th: Any) -> tuple[int, ...]:
    """Per operand, how many of its atoms the thread ``th`` took: its state's (the product's
    states are (last step's mask, progress): :attr:`EsperPair.product`), none before it."""
    for (_, counts), state in pr.product.items():
        if state == th.state:
            return counts
    return (0,) * len(pr.alts)


def decode(pr: EsperPair, th: Any) -> tuple[list[tuple[Event, int]], list[int]]:
    """The steps a product thread ``th`` took — (event, operand mask), in order — and per
    operand how many of its atoms it took; no steps when it waits before the ``or``."""
    track = th.bindings.get(pr.track)
    if not track:
        return [], [0] * len(pr.alts)
    masks = [int(m) for m in track.split(",")]
    steps = list(zip(th.events[len(th.events) - len(masks):], masks, strict=True))
    return steps, [sum(m >> i & 1 for m in masks) for i in range(len(pr.alts))]


def held_by(pr: EsperPair, i: int, th: Any, own: set[str]) -> tuple[list[Event], dict[str, Any]]:
    """Operand ``i``'s view of the product thread ``th`` from before a batch: the events and
    bindings of its chain (:attr:`EsperPair.alts`) — the stages before, then its own events
    — as ``matcher._or_step`` keeps them when operand ``i`` completes the ``or``."""
    steps, _ = decode(pr, th)
    if not steps:
        return list(th.events), dict(th.bindings)
    evs = list(th.events[:len(th.events) - len(steps)])
    full = {k: v for k, v in th.bindings.items() if k != pr.track and k not in own}
    view = pr.alts[i]
    j = len(pr.stages)
    for e, mask in steps:
        if mask >> i & 1:
            evs.append(e)
            full.update((v, e.params[p]) for p, v in view.new[j])
            j += 1
    return evs, full


#: the or's start in :func:`prior_rows` and :func:`_first_started`: before any row
_START = -(1 << 62)


def prior_rows(pr: EsperPair, old: Sequence[Any], n_inst: int) -> list[np.ndarray]:
    """Per operand, (atom, instance) the place of the atoms the tokens ``old`` (the first
    instances) took before the batch, in their threads' order, as rows before the batch's
    (below -1); :data:`_START` elsewhere."""
    out = [np.full((len(edges), n_inst), _START, np.int64) for edges in operand_edges(pr)]
    for q, t in enumerate(old):
        steps, _ = decode(pr, t.threads[0])
        took = [0] * len(out)
        for s, (_, mask) in enumerate(steps):
            for i in range(len(out)):
                if mask >> i & 1:
                    out[i][took[i], q] = s - len(steps) - 1
                    took[i] += 1
    return out


def _first_started(keys: list[np.ndarray], i: int, j: int, q: int, n_i: int, n_j: int
                   ) -> bool:
    """Does operand ``i``'s filter that completes instance ``q`` start before operand ``j``'s
    (both complete it at one row; ``keys``: per operand its atoms' rows, before the batch
    :func:`prior_rows`'s)? Each operand's earlier rows latest first, then the or's start, then
    the operand (matcher._started)."""
    ki = (*(int(keys[i][k, q]) for k in range(n_i - 2, -1, -1)), _START, i)
    kj = (*(int(keys[j][k, q]) for k in range(n_j - 2, -1, -1)), _START, j)
    return ki < kj


def walk(pr: EsperPair, take: Callable[[int, np.ndarray, np.ndarray], tuple[np.ndarray,
                                                                                np.ndarray]],
         sel: np.ndarray, counts0: np.ndarray, last: np.ndarray, n: int,
         prior: list[np.ndarray] | None = None
         ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], np.ndarray]:
    """The operands' progress over the batch of the instances ``sel`` (those past the stages
    before the ``or``): per operand, atom after atom, the first later row of its key passing
    the atom's filter within Δ (``take(j, instances, after)``: edge ``j`` of the kernel's
    stages, after the rows ``after``), from its progress before the batch (``counts0``,
    (operand, instance)) and the instance's last row (``last``: -1 before the batch).
    Returns per instance the row completing it (``n`` for none) and its operand (-1), per
    operand the rows its atoms took in the batch ((atom, instance), -1 for none) and per
    (operand, instance) its progress after the batch. ``prior`` (:func:`prior_rows`) orders
    the atoms taken before the batch, for an or whose operands complete at one row."""
    n_inst = len(last)
    first = np.full(n_inst, n, np.int64)
    alt = np.full(n_inst, -1, np.int64)
    counts = counts0.copy()
    op_rows = []
    j = len(pr.stages)
    # (an and: the instances every operand completed, at the latest operand's row; alt 0)
    every = np.ones(n_inst, bool)
    latest = np.full(n_inst, -1, np.int64)
    keys: list[np.ndarray] = []  # (per operand its atoms' rows, those before the batch too)
    ops = operand_edges(pr)
    for i, edges in enumerate(ops):  # (in operand order: a tie is then checked)
        rows = np.full((len(edges), n_inst), -1, np.int64)
        after = last.copy()
        cnt = counts[i]
        for k in range(len(edges)):
            moved, row = take(j + k, sel[cnt[sel] == k], after)
            cnt[moved] = k + 1
            after[moved] = row
            rows[k, moved] = row
        op_rows.append(rows)
        j += len(edges)
        if pr.conj:
            every &= cnt == len(edges)
            np.maximum(latest, after, out=latest)
            continue
        keys.append(rows if prior is None else np.where(rows >= 0, rows, prior[i]))
        done = sel[cnt[sel] == len(edges)]
        better = after[done] < first[done]
        for q in done[after[done] == first[done]]:  # (one row completes two: Position.ties)
            better[np.searchsorted(done, q)] = _first_started(
                keys, i, int(alt[q]), int(q), len(edges), len(ops[alt[q]]))
        first[done[better]] = after[done[better]]
        alt[done[better]] = i
    if pr.conj:
        done = sel[every[sel]]
        first[done] = latest[done]
        alt[done] = 0
    return first, alt, op_rows, counts


def open_thread(pr: EsperPair, evs: list[Event], full: dict[str, Any], q: int,
                op_rows: Sequence[np.ndarray], counts: np.ndarray, events: Any
                ) -> tuple[int, list[Event], dict[str, Any]]:
    """Instance ``q``'s product thread after the batch, as the token path leaves it: its
    events and bindings before the batch's steps (``evs``, ``full``: the stages before and
    any steps it took earlier), then one step per row the operands took in the batch
    (``op_rows``), ascending, with the mask of the operands that took it — the step's
    variables in operand order, the track after the first step's (``matcher._or_step``) —
    and the state of (its last step's mask, ``counts``) — an and's without the track.
    Returns (state, events, bindings)."""
    steps: dict[int, list[tuple[int, int]]] = {}  # row -> (operand, its atom)
    for i, rows in enumerate(op_rows):
        for k in np.flatnonzero(rows[:, q] >= 0).tolist():
            steps.setdefault(int(rows[k, q]), []).append((i, k))
    nb = len(pr.stages)
    track = full.get(pr.track, "") if pr.track else ""
    mask = 0
    for r in sorted(steps):
        e = events[r]
        mask = 0
        for i, k in steps[r]:
            mask |= 1 << i
            for p, v in pr.alts[i].new[nb + k]:
                full.setdefault(v, e.params[p])
        if pr.track:
            track = f"{track},{mask}" if track else str(mask)
            full[pr.track] = track
        evs.append(e)
    if not steps:  # (an or's: an and's thread reaches here only after a step in the batch)
        mask = int(track.rsplit(",", 1)[-1])
    return pr.product[(mask, tuple(int(c) for c in counts[:, q]))], evs, full


def step_groups(pr: EsperPair, op_rows: Sequence[np.ndarray], inst: np.ndarray,
                before: np.ndarray) -> tuple[list[tuple[int, list[list[tuple[int, int]]]]],
                                             np.ndarray]:
    """The completed instances ``inst`` of an and grouped by the chain of steps their
    operands' rows in the batch make (``op_rows``: per operand (atom, instance), -1 for an
    atom taken before the batch): per group the steps the instance's thread took before the
    batch (``before``, per instance: a token's product steps) and its steps in the batch —
    per row, ascending, the (operand, atom) pairs that took it, in operand order (one step
    moving every operand whose atom the row is, as the product's maximal step) —, and per
    instance its group."""
    owner = [(i, k) for i, rows in enumerate(op_rows) for k in range(len(rows))]
    rows = np.concatenate(op_rows)[:, inst]
    order = np.argsort(rows, axis=0, kind="stable")  # (atoms before the batch first, -1)
    ordered = np.take_along_axis(rows, order, axis=0)
    joins = np.zeros_like(ordered, dtype=bool)
    joins[1:] = (ordered[1:] == ordered[:-1]) & (ordered[1:] >= 0)
    keys = np.vstack([order, joins, ordered < 0, before[inst][None, :]])
    n_atoms = len(owner)
    # (each instance's key as one int, its digits below n_atoms + 1 — a token's steps before
    # the batch are fewer than the atoms —, which fits int64 for the and's at most
    # shapes.MAX_AND_ATOMS atoms: one sort of ints)
    codes = np.zeros(keys.shape[1], np.int64)
    for row in keys:
        codes = codes * (n_atoms + 1) + row
    _, first, group = np.unique(codes, return_index=True, return_inverse=True)
    uniq = keys[:, first].T
    groups = []
    for key in uniq.tolist():
        steps: list[list[tuple[int, int]]] = []
        for at, joined, held in zip(key[:n_atoms], key[n_atoms:2 * n_atoms],
                                    key[2 * n_atoms:3 * n_atoms], strict=True):
            if held:
                continue
            if joined:
                steps[-1].append(owner[at])
            else:
                steps.append([owner[at]])
        groups.append((key[-1], steps))
    return groups, group.reshape(-1)
