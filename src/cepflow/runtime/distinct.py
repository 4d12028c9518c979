"""Esper's ``every-distinct(keys[, Δ])`` in the spawn form (``every-distinct(a.k) a = A ->
…``): an instance begins at an event only if its distinct key was not seen — within Δ when
given. The seen keys are a dict key -> the time it was first accepted, in insertion order
(that is time order: a key is noted at the event that begins an instance); it is the
matcher's saved state (``Matcher.seen``). :func:`seen_before` is the one check, shared by the
per-event start (``EsperSteps._distinct_seen``) and the batch filter over the rows a batch
could open instances at (:func:`distinct_openings`, kernels.pair.pair_rows), so both note,
expire and refuse keys alike."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def seen_before(seen: dict[tuple, Any], key: tuple, ts: Any, expiry: float | None) -> bool:
    """Whether ``key`` was seen (within ``expiry`` ms of ``ts``); else note it at ``ts``.
    With an expiry, the keys noted at ``ts - expiry`` or earlier are dropped first, oldest
    first (a key expires when now >= its time + expiry: Esper's timer fires first)."""
    if expiry is not None:
        while seen:
            k, t0 = next(iter(seen.items()))
            if ts - t0 < expiry:
                break
            del seen[k]
    if key in seen:
        return True
    if any(v != v for v in key) and any(_same(k, key) for k in seen):
        return True  # (a NaN: rare, so looked for by a walk)
    seen[key] = ts
    return False


def _same(a: tuple, b: tuple) -> bool:
    """Keys equal with every NaN equal to NaN, as Esper's (Java's ``Double.equals``): a NaN
    key is one key whichever float object holds it (the event's, a restored state's)."""
    return len(a) == len(b) and all(x == y or (x != x and y != y)
                                    for x, y in zip(a, b, strict=True))


def distinct_openings(seen: dict[tuple, Any], keys: Callable[[int], tuple],
                      times: Sequence[Any], expiry: float | None
                      ) -> tuple[np.ndarray, dict[tuple, Any]]:
    """Of the rows that could open an instance, in order (``times[i]`` the i-th one's time,
    ``keys(i)`` its distinct key), which do — the mask — and the seen keys after them: the
    per-event start's :func:`seen_before`, row after row, on a copy of ``seen`` (the batch
    may still be declined; the caller keeps the copy when it commits)."""
    after = dict(seen)
    keep = np.fromiter((not seen_before(after, keys(i), ts, expiry)
                        for i, ts in enumerate(times)), dtype=bool, count=len(times))
    return keep, after
