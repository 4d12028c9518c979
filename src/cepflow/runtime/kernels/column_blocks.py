"""The program split's kernel matches handed over as column blocks (kernels.split.split_columns).

The split makes every match of a batch as a Python object (the per-event part and the replay
need them), but the file job writes them: as objects, each pays for its parameters and its
events' ids one by one (``outputs.records.match_batch``), as columns a few Arrow calls per
block (``arrow_rows.encode_match_table``). So, over a column source, each Esper pair plan of
the batch — a kernel pattern over the input or a pattern planned over the derived stream
(kernels.cascade.plan_higher) — also describes its matches the way the pair kernel's column
route does (kernels.pair.stage_blocks: instances begun in the batch, a select list of fields,
the time and literals), and :meth:`ColumnBlocks.table` places those blocks in the batch's
detection order beside the other matches, which stay an ``ObjectMatches`` block.

A block over a derived stream names rows of that stream; **decision — it is written in input
rows only**: each of its stages of an input type is that row's input row, each stage of a
kernel pattern's output the input rows of the match there (found by the object's identity among
that pattern's own block: a match held from an earlier batch, or made as an object, leaves the
match that reads it an object), and each select item reading such a match's parameter the item
of its own select list it is (its literals carried over; an item reading its time, which is
not a field of a row, leaves the block to objects). The events of a match are then its leaves'
input rows in order, as ``ComplexEvent.event_refs`` lists them, and its time that of the row
it completed at, as the match's last part's.

**Decision — the objects are the block's** (``StageMatches.events``): ``MatchTable.
complex_events()`` gives the very objects the split emitted (ids, bindings, parts, lazy kinds
for the Python API), and a block's place in the detection order is where its objects are in
the split's output, by identity — a plan whose matches were not emitted (a pattern the batch
left per event after planning it) contributes nothing, and its matches are objects there.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from cepflow.events.event import ComplexEvent
from cepflow.runtime.kernels.pair import stage_blocks
from cepflow.runtime.rows import CONST, EventRows, MatchTable, ObjectMatches, Rows, StageMatches

#: a kernel pattern's block by output type: its objects' ids sorted, the block's column of
#: each, the block
_Registered = tuple[np.ndarray, np.ndarray, StageMatches]


def _ids(objects: Any, n: int) -> np.ndarray:
    """The identities of ``objects`` as an int64 column."""
    return np.fromiter(map(id, objects), np.int64, count=n)


class ColumnBlocks:
    """The column blocks of one split batch's plans (:meth:`add`), and the batch's
    :class:`MatchTable` made of them and of the split's output (:meth:`table`)."""

    def __init__(self, batch: Rows, produced: set[str]) -> None:
        #: the batch, whose rows the blocks name
        self.batch = batch
        #: the types some statement produces: a stage of any other type reads input rows
        self.produced = produced
        #: every block, in input rows (``rank``: the place in its plan's matches)
        self.blocks: list[StageMatches] = []
        #: a kernel pattern's block over the input, by its output type (only when its
        #: matches are one block: a derived stage reads one layout of rows and fields)
        self.by_type: dict[str, _Registered] = {}

    def add(self, m: Any, p: dict, inst: np.ndarray, found: list[ComplexEvent],
            src: Rows) -> None:
        """Describe the matches ``found`` of the pair plan ``p`` of pattern ``m`` (instances
        ``inst``, in the same order) as blocks where they can be (kernels.pair.stage_blocks),
        in input rows when ``src`` is a derived stream (:meth:`_flat`); none when ``src`` is
        neither that nor the batch (a window block's rows, kernels.cascade.plan_cascade)."""
        if src is not self.batch and not (isinstance(src, EventRows)
                                          and src.inputs is not None):
            return
        made = stage_blocks(m, p, inst)
        if src is not self.batch:
            made = [b for b in (self._flat(b, src) for b in made)  # type: ignore[arg-type]
                    if b is not None]
        for b in made:
            b.events = list(map(found.__getitem__, b.rank.tolist()))
            self.blocks.append(b)
        if len(made) == 1 and m.name in self.produced:
            b = made[0]
            ids = _ids(b.events, len(b.at))  # type: ignore[arg-type]
            o = np.argsort(ids, kind="stable")
            self.by_type[m.name] = (ids[o], o, b)

    def _flat(self, b: StageMatches, src: EventRows) -> StageMatches | None:
        """Block ``b`` over the derived stream ``src`` in input rows (module docstring): the
        matches whose every derived part is a registered block's match; None when none is,
        or a stage reads rows of several types or a layout not registered, or a select item
        reads a derived part's time."""
        k, n = b.rows.shape
        keep = np.ones(n, bool)
        leaves: list[np.ndarray] = []
        # per stage: where its leaves begin among the match's and the kernel block it reads
        # (None: an input row)
        stages: list[tuple[int, StageMatches | None]] = []
        assert src.inputs is not None
        for j in range(k):
            r = b.rows[j]
            codes = src.codes[r]
            if bool((codes != codes[0]).any()):
                return None
            t = src.type_names[int(codes[0])]
            if t not in self.produced:
                stages.append((sum(len(x) for x in leaves), None))
                leaves.append(src.inputs[r][None, :])
                continue
            reg = self.by_type.get(t)
            if reg is None:
                return None
            ids, o, kb = reg
            want = _ids(map(src.events.__getitem__, r.tolist()), n)
            at = np.searchsorted(ids, want).clip(max=max(len(ids) - 1, 0))
            hit = ids[at] == want if len(ids) else np.zeros(n, bool)
            keep &= hit
            stages.append((sum(len(x) for x in leaves), kb))
            leaves.append(kb.rows[:, o[at]])
        consts = list(b.consts)
        fields: list[tuple[int, int] | None] = []
        for f in b.fields:
            if f is None or f[0] < 0:  # (null, a literal, the match's own time)
                fields.append(f)
                continue
            start, kb = stages[f[0]]
            if kb is None:
                fields.append((start, f[1]))
                continue
            g = kb.fields[f[1]]
            if g is not None and g[0] == CONST:
                fields.append((CONST, len(consts)))
                consts.append(kb.consts[g[1]])
            elif g is not None and g[0] < 0:  # (the derived part's time: not a row's field)
                return None
            else:
                fields.append(None if g is None else (start + g[0], g[1]))
        if not keep.any():
            return None
        return StageMatches(b.pattern, b.names, tuple(fields), src.inputs[b.at][keep],
                            b.rank[keep], np.concatenate(leaves)[:, keep], tuple(consts))

    def table(self, out: list[ComplexEvent], at: list[int], src: Rows) -> MatchTable:
        """The batch's :class:`MatchTable`: the split's complex events ``out`` (in detection
        order, each detected at row ``at``) as the blocks of the matches they hold (placed
        where their objects are in ``out``) and one ``ObjectMatches`` block of the others."""
        n = len(out)
        first = out[0].match_id if out else 0
        if not n:
            return MatchTable([], [], first, 0, src)
        rows_at = np.array(at, np.int64)
        ids = _ids(out, n)
        o = np.argsort(ids, kind="stable")
        sorted_ids = ids[o]
        free = np.ones(n, bool)
        blocks: list[Any] = []
        for b in self.blocks:
            want = _ids(b.events, len(b.at))  # type: ignore[arg-type]
            q = np.searchsorted(sorted_ids, want).clip(max=n - 1)
            hit = sorted_ids[q] == want
            pos = o[q[hit]]
            if not len(pos) or not free[pos].all():  # (not emitted: objects, as per event)
                continue
            free[pos] = False
            events = b.events if bool(hit.all()) else [
                ce for ce, h in zip(b.events, hit.tolist(), strict=True) if h]  # type: ignore[arg-type]
            blocks.append(replace(b, at=rows_at[pos], rank=pos, rows=b.rows[:, hit],
                                  events=events))
        rest = np.flatnonzero(free)
        if len(rest):
            blocks.append(ObjectMatches(rows_at[rest], rest,
                                        out if len(rest) == n else
                                        list(map(out.__getitem__, rest.tolist()))))
        return MatchTable(blocks, [], first, n, src)
