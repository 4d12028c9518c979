"""Columns of a batch's matches put in detection order (runtime.arrow_rows.encode_match_table):
the blocks of a batch come one after the other, each in its own order; their ranks say where
each match goes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

#: up to this many runs of consecutive rows, the columns are put in order slice by slice
RUNS = 256


def in_order(columns: list[list[pa.Array]], ranks: np.ndarray) -> list[pa.Array]:
    """Per column, its blocks' arrays joined and taken so that the row of rank ``r`` comes
    ``r``-th (``ranks``: the rows' places, a permutation). A batch's matches are mostly one
    block in detection order with a few matches from before the batch between them: then the
    order is a few runs of consecutive rows, copied slice by slice — a gather of every value
    (``take``) of a column of lists of texts costs several times that."""
    order = np.argsort(ranks, kind="stable")
    cuts = (np.flatnonzero(order[1:] != order[:-1] + 1) + 1).tolist()
    joined = [parts[0] if len(parts) == 1 else pa.concat_arrays(parts) for parts in columns]
    if not cuts:  # (one run of a permutation: the rows in order already)
        return joined
    if len(cuts) >= RUNS:
        at = pa.array(order)
        return [c.take(at) for c in joined]
    starts, ends = [0, *cuts], [*cuts, len(order)]
    runs = [(int(order[s]), e - s) for s, e in zip(starts, ends, strict=True)]
    return [pa.concat_arrays([c.slice(first, n) for first, n in runs]) for c in joined]
