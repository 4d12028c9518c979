"""Stepping through a marked net forwards and backwards (``cepflow petri`` interactive and
its step-through page): next, back, run to a step or until a transition fires, show a place.

Going back takes the last step back (:meth:`~cepflow.petri.simulator.Simulator.undo`);
going forward again re-fires the steps taken back before drawing new ones, so moving back and
forth shows one run.
"""

from __future__ import annotations

from collections.abc import Callable

from cepflow.petri.multiset import Multiset
from cepflow.petri.simulator import Firing, Simulator


class Stepper:
    def __init__(self, sim: Simulator) -> None:
        if not sim.record:
            raise ValueError("stepping needs a simulator that records its steps")
        self.sim = sim
        self.redo: list[Firing] = []

    @property
    def at(self) -> int:
        """The number of steps fired so far."""
        return self.sim.steps

    def next(self, k: int = 1) -> list[Firing]:
        out = []
        for _ in range(k):
            if self.redo:
                out.append(self.sim.redo(self.redo.pop()))
                continue
            s = self.sim.step()
            if s is None:
                break
            out.append(s)
        return out

    def back(self, k: int = 1) -> int:
        n = 0
        while n < k and self.sim.trace:
            self.redo.append(self.sim.undo())
            n += 1
        return n

    def goto(self, step: int) -> None:
        """Forward or back to ``step`` steps fired (or as far as the net goes)."""
        if step < self.at:
            self.back(self.at - step)
        elif step > self.at:
            self.next(step - self.at)

    def until(self, transition: str, limit: int = 1_000_000) -> Firing | None:
        """Forward until ``transition`` fires (None: it did not within ``limit`` steps)."""
        for _ in range(limit):
            got = self.next()
            if not got:
                return None
            if got[0].transition == transition:
                return got[0]
        return None

    def place(self, name: str) -> Multiset:
        return self.sim.marking[name]


def interact(stepper: Stepper, read: Callable[[str], str], write: Callable[[str], None],
             show_step: Callable[[Firing], str], show_place: Callable[[str], str],
             summary: Callable[[], str]) -> None:
    """The terminal loop: one command a line (``h`` lists them) until ``q`` or end of input."""
    help_text = ("n [k]  next k steps (Enter: one)   b [k]  back k steps   g N  go to step N\n"
                 "t NAME  run until transition NAME fires   p PLACE  show a place\n"
                 "m  the complex events   e  the enabled binding elements   q  quit")
    write(help_text)
    while True:
        try:
            line = read(f"[step {stepper.at}] > ").strip()
        except EOFError:
            return
        cmd, _, arg = line.partition(" ")
        arg = arg.strip()
        try:
            if cmd in ("", "n"):
                steps = stepper.next(int(arg) if arg else 1)
                for s in steps:
                    write(show_step(s))
                if not steps:
                    write("no enabled binding element: the marking is dead")
            elif cmd == "b":
                taken = stepper.back(int(arg) if arg else 1)
                write(f"back {taken} step(s), at step {stepper.at}")
            elif cmd == "g":
                stepper.goto(int(arg))
                write(f"at step {stepper.at}")
            elif cmd == "t":
                s = stepper.until(arg)
                write(show_step(s) if s is not None else f"{arg} did not fire")
            elif cmd == "p":
                write(show_place(arg))
            elif cmd == "m":
                write(summary())
            elif cmd == "e":
                for t, b in stepper.sim.enabled():
                    write(f"{t} {b}")
            elif cmd == "q":
                return
            else:
                write(help_text)
        except (ValueError, KeyError) as e:
            write(f"? {e}")
