"""Esper's ``until`` after a stage in the pair kernel: ``every a = A(f) -> ([m:n] b = B(g,
key) until c = C(h, key)) [where timer:within(Δ)]`` (also ``[m:]``, ``[:n]``, no bound and
``[n] b until c``; runtime.shapes.esper_until_of, ``EsperPair.until``; docs/esper.md).

Per event the token path (Matcher._process_esper) traps an instance at a ``C`` of its key while
it holds fewer than ``m`` ``b`` (the ``NOT C`` in every gap), and holds one thread per
instance, Esper's one until instance that takes each ``B`` up to ``n`` (CompiledPattern.greedy,
Matcher._try_edges); a ``C`` completes it with the first ``min(count, n)`` ``b`` of its key
after its ``A``. ``[n] b until c`` completes at the n-th ``b`` unless a ``C`` came first.
Events are not consumed, so instances do not compete and one search per instance decides it:
the first ``C`` of its key after its last row within its window (:func:`until_rows`), the count
of its key's ``B`` before that ``C`` (one range of the ``B`` rows sorted by (key, row)), and
the count it held before the batch (its token's winning thread). Its match is then the chain of
``a``, that many ``b`` and ``c`` (``EsperUntil.view``), which the pair kernel's emission makes
(kernels.pair._emit_pair) — grouped by count, each group with its own view (:func:`emit`). An
instance left open after the batch holding a ``b`` becomes a token stepped by the token path
itself over its own ``B`` rows (:func:`leave_open`: the threads, their order, bindings and
timers are the token path's); one holding none stays a pending row, as a pair's. The pair
kernel's helpers come in as ``kp`` (kernels.pair.UNTIL_KIT: that module dispatches here, so
this one does not import it — no import cycle).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cepflow.automaton.automaton import INITIAL
from cepflow.runtime.kernels import inner_every
from cepflow.runtime.kernels.filters import passing
from cepflow.runtime.matcher import _age
from cepflow.runtime.rows import TypeColumns
from cepflow.runtime.shapes import EsperPair
from cepflow.runtime.tokens import PairRows, Thread, Token


def until_rows(kp: Any, m: Any, pr: EsperPair, cols: TypeColumns) -> dict | None:
    """The plan of pattern ``m`` (an until: ``pr.until``) over the batch, in the keys of
    kernels.pair.pair_rows' (instances, ``match``, ``alive``, ``end_row``, ``age`` …) and
    per instance ``held`` (the ``b`` it held before the batch), ``k`` (the ``b`` its match
    holds), ``lo``/``hi`` (its key's ``B`` rows it sees: positions in ``b_rows``, the ``B``
    rows sorted by (key, row)); None when a key cannot be coded exactly. ``kp``: the pair
    kernel's helpers (kernels.pair.UNTIL_KIT)."""
    u = pr.until
    assert u is not None
    src = cols.src
    n = src.n
    a = pr.stages[0]
    edges = [a, u.b_edge, u.c_at]
    locs = [passing(e, cols) for e in edges]
    rows = [cols.rows(e.position.type)[loc] for e, loc in zip(edges, locs, strict=True)]
    new_rows = rows[0]
    if m.pending.__class__ is PairRows:  # (the per-event rows, their deadlines queued)
        m.materialize()
    old = m.registered_tokens()
    pend_ids, pend_events = (m.pending.ids, m.pending.events) if m.pending else ([], [])
    span = n + 2
    try:
        i_code, code = kp.keyed_codes(pr, cols, edges,
                                      [pr.keys[0], u.b_edge.position.binds[0][0], u.c_key],
                                      locs, old, pend_events, span)
    except kp.Uncodable:
        return None
    b_code, c_code = code[:len(rows[1])], code[len(rows[1]):]
    n_real = len(old)
    n_old = n_real + len(pend_ids)
    n_inst = n_old + len(new_rows)
    z = pr.zone
    ts = src.ts
    i_ts = np.concatenate([np.array([kp._zone_start(t, z) for t in old]
                                    + [e.ts for e in pend_events], dtype=np.float64),
                           ts[new_rows].astype(np.float64)])
    first = np.concatenate([np.full(n_old, -1, np.int64), new_rows])  # (the A's row)
    # the first C of each instance's key after its A (the batch's start: before it), in its
    # window — Esper's timer fires before an event at the deadline
    c_row = _first_after(kp, c_code, rows[2], i_code, first, span, n)
    if z is not None:
        found = c_row < n
        found[found] = ts[c_row[found]] - i_ts[found] < pr.window
        c_row = np.where(found, c_row, n)
        cut = inner_every.window_cut(ts, i_ts, pr.window)
    else:
        cut = np.full(n_inst, n, np.int64)
    end = np.minimum(c_row, cut)
    order = kp.stable_order(b_code)
    b_rows = rows[1][order]
    comb = (b_code * span + rows[1] + 1)[order]
    lo = kp.sorted_search(comb, i_code, first, span, "right")
    hi = np.maximum(kp.sorted_search(comb, i_code, end - 1, span, "right"), lo)
    count = b_count(u)
    unused = m.pattern.auto.unused
    winners = [min(t.threads, key=lambda th: _age(th, unused)) for t in old]
    held = np.zeros(n_inst, np.int64)
    held[:n_real] = [w.bindings.get(count, 0) for w in winners]
    total = held + hi - lo
    has_c = c_row < n
    if u.closes:
        match = has_c & (total >= u.low)
        trapped = has_c & ~match
        k = total if u.high is None else np.minimum(total, u.high)
        end_row = c_row
    else:  # ([n] b until c: the n-th b completes, unless a C came first)
        assert u.high is not None
        k = np.full(n_inst, u.high, np.int64)
        match = total >= u.high
        trapped = has_c & ~match
        at = np.where(match, lo + u.high - held - 1, 0)
        end_row = np.where(match, b_rows[at] if len(b_rows) else 0, n)
    last_ts, last_row = ts[-1], n - 1
    deadline = i_ts + pr.window
    alive = ~match & ~trapped & ((deadline > last_ts)
                                 | ((deadline == last_ts) & (first >= last_row)))
    return {"old": old, "pend_ids": pend_ids, "pend_events": pend_events,
            "new_rows": new_rows, "n_old": n_old, "winners": winners, "held": held,
            "k": k, "lo": lo, "hi": hi, "b_rows": b_rows, "c_row": c_row,
            "taken": np.stack([first, np.where(match, end_row, -1)]),
            "end_row": end_row, "match": match, "alive": alive, "trapped": trapped,
            "age": kp._ages(old, pend_ids, n_old, n_inst), "cols": cols, "zstart": i_ts,
            "seen": None, "forked": None, "more_rows": lambda objects: _rows_held(
                pr, lo, hi, held, k, match & objects, alive, b_rows)}


def b_count(u: Any) -> str:
    """The variable counting an instance's ``b`` (the repeated tag's ``Collect``)."""
    return u.b_edge.position.collect.count


def _first_after(kp: Any, code: np.ndarray, rows: np.ndarray, i_code: np.ndarray, after: np.ndarray,
                 span: int, n: int) -> np.ndarray:
    """Per instance (its key's code ``i_code``) the first of ``rows`` (codes ``code``) of its
    key after row ``after``, else ``n``."""
    if not len(rows):
        return np.full(len(i_code), n, np.int64)
    order = kp.stable_order(code)
    comb = (code * span + rows + 1)[order]
    q = kp.sorted_search(comb, i_code, after, span, "right")
    has = q < len(comb)
    cand = order[np.where(has, q, 0)]
    has &= code[cand] == i_code
    return np.where(has, rows[cand], n)


def _rows_held(pr: EsperPair, lo: np.ndarray, hi: np.ndarray, held: np.ndarray,
               k: np.ndarray, objects: np.ndarray, alive: np.ndarray, b_rows: np.ndarray
               ) -> np.ndarray:
    """The ``B`` rows whose events are needed (a column source makes only these): those the
    matches made as objects (``objects``) take, and those the instances left open step over."""
    take = np.where(objects, lo + np.maximum(k - held, 0), np.where(alive, hi, lo))
    _, pos = inner_every.ranges(lo, take)
    return b_rows[pos]


def emit(kp: Any, m: Any, pr: EsperPair, p: dict, inst: np.ndarray, rank: np.ndarray, first_id: int,
         events: Any, fields: Any, arity: dict[str, int], objects: bool = True) -> list[Any]:
    """The matches of instances ``inst`` (their places ``rank``) as kernels.pair._emit_pair
    makes a chain's: grouped by how many ``b`` they hold, each group seen as the chain of
    its view (``EsperUntil.view``) — the ``A`` row, the rows of the ``b`` taken in the batch
    (those held before: the token's winning thread's events and bindings), then the ``C``'s."""
    u = pr.until
    assert u is not None
    old, pend_ids, pend = p["old"], p["pend_ids"], p["pend_events"]
    n_real, n_old = len(old), p["n_old"]
    k_of = p["k"][inst]
    blocks: list[Any] = []
    for k in np.unique(k_of).tolist():
        w = k_of == k
        view = u.view(k)
        qs = np.unique(inst[w])
        sub = np.searchsorted(qs, inst[w])
        held, lo = p["held"][qs], p["lo"][qs]
        taken = np.full((len(view.stages), len(qs)), -1, np.int64)
        taken[0] = p["taken"][0][qs]
        for i in range(k):
            new = i >= held
            taken[1 + i] = np.where(new, p["b_rows"][np.where(new, lo + i - held, 0)]
                                    if len(p["b_rows"]) else -1, -1)
        if u.closes:
            taken[k + 1] = p["c_row"][qs]
        q_old = qs[qs < n_real].tolist()
        q_pend = [q - n_real for q in qs[(qs >= n_real) & (qs < n_old)].tolist()]
        winners = [p["winners"][q] for q in q_old]
        plan = {"old": [old[q] for q in q_old], "pend_ids": [pend_ids[q] for q in q_pend],
                "pend_events": [pend[q] for q in q_pend], "n_old": len(q_old) + len(q_pend),
                "taken": taken, "end_row": p["end_row"][qs], "as_rows": p["as_rows"][qs],
                "stage0": np.where(qs < n_real, 1 + held, 1),
                "stage": np.full(len(qs), len(view.stages), np.int64), "cols": p["cols"],
                "held_old": lambda j, ws=winners: (list(ws[j].events), dict(ws[j].bindings))}
        vf = None if fields is None else kp._select_fields(m, view)
        if vf is None:
            plan["as_rows"] = np.zeros(len(qs), bool)
        blocks += kp._emit_pair(m, view, plan, sub, rank[w], first_id, events, vf, arity,
                                objects)
    return blocks


def leave_open(kp: Any, m: Any, pr: EsperPair, p: dict, new_ids: np.ndarray, events: Any
               ) -> tuple[list[int], list[Any]]:
    """kernels.pair.leave_open for an until: tokens from before the batch that completed,
    were trapped or expired are dropped; every instance left open that holds a ``b`` is a
    token stepped by the token path over the ``B`` rows of its key it saw (Matcher._plan,
    Matcher._apply: its threads, bindings and timers as per event), oldest first; those
    holding none stay (or become) the pattern's pending rows (ids, ``A`` events)."""
    old, pend_ids, pend_events = p["old"], p["pend_ids"], p["pend_events"]
    new_rows, alive = p["new_rows"], p["alive"]
    n_real = len(old)
    lo, hi, b_rows = p["lo"], p["hi"], p["b_rows"]
    moved = alive & (hi > lo)
    for q in np.flatnonzero(~alive[:n_real]).tolist():
        m.unregister(old[q])
    for q in np.flatnonzero(moved[:n_real]).tolist():
        _step(m, old[q], b_rows[lo[q]:hi[q]], events)
    ids, evs = kp.pending_left(p, alive & ~moved, new_ids, events)
    all_ids = [*pend_ids, *new_ids.tolist()]
    initial = m.pattern.initial
    for q in np.flatnonzero(moved[n_real:]).tolist():
        a = pend_events[q] if q < len(pend_ids) else events[int(new_rows[q - len(pend_ids)])]
        tok = Token(all_ids[q], None, a.ts, [])
        root = Thread(INITIAL, {}, [], None, None)
        m._apply(tok, [(root, m._try_edges(root, initial[a.type], a))], a, _no_match,
                 new=True)
        _step(m, tok, b_rows[lo[n_real + q]:hi[n_real + q]], events)
    if pr.zone is not None:  # (the deadlines of the instances that ended in the batch)
        ended = (p["match"] | p["trapped"]) & np.isfinite(p["zstart"])
        last = float(p["cols"].src.ts[-1])
        due = np.sort(p["zstart"][ended] + pr.window)
        kp.skip_idle(m, due[due > last].tolist(), last)
    return ids, evs


def _step(m: Any, tok: Token, rows: np.ndarray, events: Any) -> None:
    """The token path's steps of ``tok`` over the events of ``rows`` (its key's ``B`` rows
    passing ``g``, in its window, before any ``C`` of its key: none completes or traps it)."""
    for r in rows.tolist():
        e = events[r]
        plan = m._plan(tok, e)
        if plan is not None:
            m._apply(tok, plan, e, _no_match)


def _no_match(ce: Any) -> None:
    """The emit of a step that cannot complete (:func:`_step`'s events take no ``C``)."""
    raise AssertionError(f"an until's B row completed an instance: {ce}")
