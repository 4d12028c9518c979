"""The interface every data window offers its runner, sliding and batch alike."""

from __future__ import annotations

from cepflow.windows.held import Record
from cepflow.windows.processor import Rows


class WindowView:
    """What every window offers its runner (sliding and batch alike).

    ``due`` is the earliest time at which :meth:`advance` has something to do (the next
    expiry or batch boundary; infinity for windows that time does not change), so the runner
    skips the call for events that arrive before it.
    """

    due: float = float("inf")

    def insert(self, rec: Record) -> Rows:
        """An accepted event enters; returns the rows it causes."""
        raise NotImplementedError

    def advance(self, t: float) -> Rows:
        """Time passes up to and including ``t``; returns the rows expiries/batches cause."""
        return []

    def finish(self, now: float, flush_batches: bool) -> Rows:
        """End of input (``flush_batches``: close an incomplete batch now)."""
        return []

    def __len__(self) -> int:
        """Events the window holds (the bound its memory use follows)."""
        raise NotImplementedError
