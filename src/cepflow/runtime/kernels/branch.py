"""Alternatives before more stages in the pair kernel (kernels/pair.py): ``every a = A(f)
[-> b = B(g) …] -> (x = X(h) or y = Y(k) …) -> d = D(l) [where timer:within(Δ)]``, every
stage on ``a``'s key (:attr:`~cepflow.runtime.shapes.EsperPair.branch`, the ``esper_or_mid``
shape; docs/esper.md, "Alternatives before more stages").

The token path (Matcher._try_edges) keeps an instance at the state of the alternatives after
one of them took an event — under Esper the operands of an ``or`` run side by side, and
``_others_wait`` sees an edge of that state that did not fire —, so each later event of an
alternative (of the key, passing its filter) adds a thread at that alternative's state, and
every such thread waits for ``d``. Threads at one state with equal bindings and zone entries
are one (``_dedupe``: the older stays). The first ``d`` after the first alternative event
completes the instance, and of the final threads the least by ``matcher._age`` is the match:
the one through the earliest alternative event (a tie of two alternatives on one event goes
as for a last stage of alternatives, :func:`~cepflow.runtime.shapes._preference`). So the
matches are those of a chain whose stage of alternatives takes the first row of any of them
(:func:`first_of`), and each alternative's matches are those of its own chain
(``EsperPair.paths``); what differs is what an instance still open holds: its threads, made
here (:func:`open_threads`) as the token path would have them, in its order — one per
alternative event kept, oldest first, then the thread still waiting for the alternatives."""

from __future__ import annotations

from collections.abc import Callable
from itertools import groupby
from operator import itemgetter
from typing import Any

import numpy as np

from cepflow.automaton.automaton import FINAL
from cepflow.events.event import Event
from cepflow.runtime.binding import bind
from cepflow.runtime.matcher import _age, _key_of
from cepflow.runtime.shapes import EsperPair
from cepflow.runtime.tokens import Thread, Token


def edges_of(pr: EsperPair) -> list[int]:
    """The kernel's edge index of each alternative (pair_rows' ``stages``: the chain through
    the first, then the other alternatives' edges after it), in the order of ``pr.paths``."""
    nb = len(pr.stages)
    return [pr.branch, *range(nb, nb + len(pr.paths) - 1)]


def alternative_of(pr: EsperPair, old: list[Token], n_inst: int) -> np.ndarray:
    """Per instance, the alternative it took (its place in ``pr.paths``), -1 for none yet:
    for a token from before the batch, its oldest thread's (the first alternative event:
    :func:`open_threads` keeps that order)."""
    at = {v.states[pr.branch]: i for i, v in enumerate(pr.paths)}
    alt = np.full(n_inst, -1, np.int64)
    for q, t in enumerate(old):
        alt[q] = at.get(t.threads[0].state, -1)
    return alt


def first_of(pr: EsperPair, take: Callable[..., tuple[np.ndarray, np.ndarray]],
             sel: np.ndarray, alt: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The instances ``sel`` (waiting for the alternatives) that take one and the rows they
    take: the first later row of any alternative (``take``: pair_rows' search of one edge),
    a row two alternatives share going to the first in ``pr.paths`` (the order that wins a
    tie); ``alt`` gets which one."""
    first = np.full(len(alt), n, np.int64)
    for i, j in enumerate(edges_of(pr)):
        moved, row = take(j, sel)
        better = row < first[moved]
        first[moved[better]] = row[better]
        alt[moved[better]] = i
    won = sel[first[sel] < n]
    return won, first[won]


def rows_after(pr: EsperPair, auto: Any, stages: list[Any], stage_rows: list[np.ndarray],
               b_code: np.ndarray, bounds: np.ndarray, i_code: np.ndarray, span: int
               ) -> Callable[[int, int], list[tuple[int, int, int]]]:
    """For an instance ``q`` and a row ``after``: the rows after it of any alternative, of
    its key, passing that alternative's filter (pair_rows' ``stage_rows``, keys coded as
    ``b_code``/``i_code``), as (row, the edge's place among its state's edges of the row's
    type — the order the token path tries them in —, alternative), in that order."""
    found = []
    for i, j in enumerate(edges_of(pr)):
        edge = stages[j]
        rank = next(k for k, e in enumerate(auto.edges[edge.source][edge.position.type])
                    if e is edge)
        code_j = b_code[bounds[j - 1]:bounds[j]]
        order = np.argsort(code_j, kind="stable")  # (by key, then row)
        found.append(((code_j * span + stage_rows[j] + 1)[order], stage_rows[j][order], rank,
                      i))

    def rows(q: int, after: int) -> list[tuple[int, int, int]]:
        c = int(i_code[q]) * span
        out = []
        for comb, rows_j, rank, i in found:
            lo, hi = np.searchsorted(comb, [c + after + 1, c + span], side="right").tolist()
            out += [(r, rank, i) for r in rows_j[lo:hi].tolist()]
        out.sort()
        return out

    return rows


def open_threads(pr: EsperPair, base: Thread | None, kept: list[Thread],
                 rows: list[tuple[int, int, int]], event: Callable[[int], Event]
                 ) -> list[Thread]:
    """The threads of an instance left open after the batch past its first alternative
    event: the alternative threads it held before the batch (``kept``, oldest first), then
    one per row of an alternative in the batch (``rows``: :func:`rows_after`, in the order
    the token path makes them) — unless a thread at that alternative's state with the same
    bindings and zone entries is held (``_dedupe`` keeps the older) —, then ``base``, the
    thread still waiting for the alternatives (the token path moves it after the threads
    it makes at each event). A row that every alternative takes ends ``base`` (no edge of
    its state is left to wait: ``Matcher._others_wait``), and with it the threads later rows
    would make; None: it ended before the batch. ``event(row)`` gives a row's event."""
    out = list(kept)
    if base is None:
        return out
    seen = {_key_of(th) for th in out}
    for r, group in groupby(rows, key=itemgetter(0)):
        e = event(r)
        fired = 0
        for _, _, i in group:
            edge = pr.paths[i].stages[pr.branch]
            b = bind(edge.position, e.params, base.bindings)
            if b is None:  # (unification: the key alone, which the codes decided)
                continue
            fired += 1
            th = Thread(edge.target, b, [*base.events, e],
                        dict(base.zstart) if base.zstart else None, e)
            k = _key_of(th)
            if k not in seen:
                seen.add(k)
                out.append(th)
        if fired == len(pr.paths):
            return out
    out.append(base)
    return out


def held_winner(tok: Token, rest: tuple[tuple[int, str], ...], events: list[Event],
                unused: frozenset[str]) -> tuple[list[Event], dict[str, Any]]:
    """The events and bindings of the thread of ``tok`` (from before the batch) that
    completes it with ``events`` binding ``rest`` (the last stage's (param, variable)):
    of its threads through its first alternative event (the oldest, and those one event
    made with it), the one whose final thread ``matcher._age`` puts first."""
    first = tok.threads[0]
    at = [(e.ts, e.seq) for e in first.events]
    ties = [th for th in tok.threads if [(e.ts, e.seq) for e in th.events] == at]
    if len(ties) == 1:
        return list(first.events), dict(first.bindings)

    def final(th: Thread) -> Thread:
        b = dict(th.bindings)
        for e in events:
            b.update((v, e.params[i]) for i, v in rest)
        return Thread(FINAL, b, [*th.events, *events], None, None)

    best = min(ties, key=lambda th: _age(final(th), unused))
    return list(best.events), dict(best.bindings)
