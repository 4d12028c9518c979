"""Alternatives before more stages in the pair kernel (kernels/pair.py): ``every a = A(f)
[-> b = B(g) …] -> (x = X(h) or y = Y(k) …) -> d = D(l) [where timer:within(Δ)]``, every
stage on ``a``'s key (:attr:`~cepflow.runtime.shapes.EsperPair.branch`, the ``esper_or_mid``
shape; docs/esper.md, "Alternatives before more stages").

Esper's ``or`` quits when one operand reports (EvalOrStateNode): the token path
(Matcher._try_edges, Position.alt) moves an instance at the state of the alternatives by the
first later event of any of them (of the key, passing its filter) and keeps no thread there;
an event that fits several goes to the one written first
(:func:`~cepflow.runtime.shapes._preference`). So the matches are those of a chain whose
stage of alternatives takes the first row of any of them (:func:`first_of`), and each
alternative's matches are those of its own chain (``EsperPair.paths``); an instance still
open holds one thread, made here (:func:`open_threads`) as the token path would have it.

From the start, ``every (x = X(f) or y = Y(g) …) -> d = D(h)`` on no key (``branch`` 0): a
row begins one instance holding the thread of the first alternative it fits
(:func:`fitting`, :func:`start_threads`), completed at the first later ``d``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from cepflow.automaton.automaton import INITIAL
from cepflow.events.event import Event
from cepflow.runtime.binding import bind
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
    :func:`open_threads` keeps that order) — past the states of the alternatives, where
    they meet, any (0: the match is its winning thread's, kernels.pair._emit)."""
    at = {v.states[pr.branch]: i for i, v in enumerate(pr.paths)}
    before = set(pr.states[:pr.branch])
    alt = np.full(n_inst, -1, np.int64)
    for q, t in enumerate(old):
        s = t.threads[0].state
        alt[q] = -1 if s in before else at.get(s, 0)
    return alt


def fitting(pr: EsperPair, stage_rows: list[np.ndarray], n: int) -> np.ndarray:
    """Per alternative (``pr.paths``' order) whether each of the ``n`` rows passes its filter
    (pair_rows' ``stage_rows`` of its edge)."""
    fits = np.zeros((len(pr.paths), n), bool)
    for i, j in enumerate(edges_of(pr)):
        fits[i, stage_rows[j]] = True
    return fits


def start_threads(pr: EsperPair, auto: Any, e: Event, fits: np.ndarray) -> list[Thread]:
    """The thread an instance from the start (``pr.branch`` 0) holds until it completes: that
    of the first alternative (in writing order, Position.alt) its event ``e`` fits
    (``fits``, per ``pr.paths``), as Matcher._start makes it."""
    at = {id(v.stages[0]): i for i, v in enumerate(pr.paths)}
    edges = [edge for edge in auto.edges[INITIAL][e.type]
             if (i := at.get(id(edge))) is not None and fits[i]]
    edge = min(edges, key=lambda x: x.position.id)
    return [Thread(edge.target, bind(edge.position, e.params, {}), [e], None, e)]


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
               ) -> Callable[[int, int], list[tuple[int, list[int], set[int]]]]:
    """For an instance ``q`` and a row ``after``: the rows after it of its key that an
    alternative or a later stage takes (pair_rows' ``stage_rows``: passing the filter; keys
    coded as ``b_code``/``i_code``), ascending, each with the alternatives it fits — in the
    order the token path tries their edges (their state's edges of the row's type) — and
    the later stages it fits (their edge index in ``pr.stages``)."""
    found = []
    later = range(pr.branch + 1, len(pr.stages))
    for i, j in [*enumerate(edges_of(pr)), *((None, j) for j in later)]:
        edge = stages[j]
        rank = (-1 if i is None else  # (a later stage: one edge out of each state)
                next(k for k, e in enumerate(auto.edges[edge.source][edge.position.type])
                     if e is edge))
        code_j = b_code[bounds[j - 1]:bounds[j]]
        order = np.argsort(code_j, kind="stable")  # (by key, then row)
        found.append(((code_j * span + stage_rows[j] + 1)[order], stage_rows[j][order], rank,
                      i, j))

    def rows(q: int, after: int) -> list[tuple[int, list[int], set[int]]]:
        c = int(i_code[q]) * span
        hits: dict[int, tuple[list[tuple[int, int]], set[int]]] = {}
        for comb, rows_j, rank, i, j in found:
            lo, hi = np.searchsorted(comb, [c + after + 1, c + span], side="right").tolist()
            for r in rows_j[lo:hi].tolist():
                alts, then = hits.setdefault(r, ([], set()))
                if i is None:
                    then.add(j)
                else:
                    alts.append((rank, i))
        return [(r, [i for _, i in sorted(alts)], then)
                for r, (alts, then) in sorted(hits.items())]

    return rows


def open_threads(pr: EsperPair, base: Thread | None, kept: list[Thread],
                 rows: list[tuple[int, list[int], set[int]]], event: Callable[[int], Event]
                 ) -> list[Thread]:
    """The thread of an instance left open after the batch, as the token path's steps leave
    it (Matcher._try_edges, _apply): from the thread it held past the alternatives before the
    batch (``kept``) or ``base``, the thread still waiting for the alternatives (None: it
    moved on before the batch), stepped over the ``rows`` of :func:`rows_after` — ``base``
    takes the first row of any alternative, by the one written first (the lowest in
    ``pr.paths``) of those it fits, and is gone; a thread past the alternatives moves on if
    the row fits its next stage. None completes (the instance would have). ``event(row)``
    gives a row's event."""
    threads = [*kept, base] if base is not None else list(kept)
    # (each state past the alternatives: its one edge and that stage's index)
    later = {e.source: (e, j) for v in pr.paths
             for j, e in enumerate(v.stages[pr.branch + 1:], pr.branch + 1)}
    for r, alts, then in rows:
        e = event(r)
        out = []
        for th in threads:
            if th is base:
                if alts:
                    out.append(_step(pr.paths[min(alts)].stages[pr.branch], th, e))
                    base = None
                else:
                    out.append(th)
                continue
            edge, j = later[th.state]
            out.append(_step(edge, th, e) if j in then else th)
        threads = out
    return threads


def _step(edge: Any, th: Thread, e: Event) -> Thread:
    """The thread ``th`` makes by ``edge`` on ``e`` (its key unifies: the codes decided)."""
    b = bind(edge.position, e.params, th.bindings)
    assert b is not None and not edge.final
    return Thread(edge.target, b, [*th.events, e], dict(th.zstart) if th.zstart else None, e)


def held_winner(tok: Token) -> tuple[list[Event], dict[str, Any]]:
    """The events and bindings of the thread of ``tok`` (from before the batch) that completes
    it: its one thread past the alternatives (:func:`open_threads`)."""
    first = tok.threads[0]
    return list(first.events), dict(first.bindings)
