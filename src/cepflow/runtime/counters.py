"""The engine's numbering: token ids, match ids, and the input sequence numbers that order
events of one instant (docs/semantics.md, "equal timestamps"). Every path that makes tokens or
matches — the per-event step, the column kernels, a restored state — takes its numbers here,
singly or as a block (:meth:`Counters.reserve_tokens`), so the ids are those the per-event
engine would give."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Counters:
    """The last token id, the last match id and the next input sequence number given."""

    token: int = 0
    match: int = 0
    input: int = 0
    #: after a restore the saved stream's numbering goes on (see :meth:`continued`)
    renumber: bool = False
    shift: int | None = 0

    def next_token(self) -> int:
        self.token += 1
        return self.token

    def next_match(self) -> int:
        self.match += 1
        return self.match

    def reserve_tokens(self, n: int) -> int:
        """Ids for ``n`` tokens made at once: the first of them (the rest follow it)."""
        first = self.token + 1
        self.token += n
        return first

    def reserve_matches(self, n: int) -> int:
        """Ids for ``n`` complex events detected at once: the first of them."""
        first = self.match + 1
        self.match += n
        return first

    def number(self, seq: int) -> int:
        """The sequence number of an input event numbered ``seq`` by its reader (-1: none):
        the next one when it has none, its place in the whole stream after a restore; the
        counter moves past it."""
        if seq < 0:
            seq = self.input
        elif self.renumber:
            seq = self.continued(seq)
        if seq >= self.input:
            self.input = seq + 1
        return seq

    def continue_numbering(self) -> None:
        """A restored stream was numbered up to :attr:`input` (restore_state calls this):
        see :meth:`continued`."""
        if self.input > 0:
            self.renumber, self.shift = True, None

    def continued(self, seq: int) -> int:
        """The position in the whole stream of an event numbered ``seq`` by its reader, fed
        after a restore (docs/state-format.md, "Event numbers after a restore"): when the
        first numbered event is below the saved counter, its reader started again at 0 (the
        second half read from its own file), and every numbered event is shifted by the
        counter; else the numbering already goes on and stays."""
        shift = self.shift
        if shift is None:
            shift = self.shift = self.input if seq < self.input else 0
            self.renumber = shift != 0
        return seq + shift

    def snapshot(self) -> tuple[int, bool, int | None]:
        """What numbering a batch changes (:meth:`rewind` undoes it when a kernel gives the
        batch back)."""
        return self.input, self.renumber, self.shift

    def rewind(self, snap: tuple[int, bool, int | None]) -> None:
        self.input, self.renumber, self.shift = snap
