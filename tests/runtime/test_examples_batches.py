"""``Engine.run`` over the example programs every, cps and motorbike in batches of well over
256 rows (where the kernels sort small key codes by radix and search ascending queries,
kernels.pair.stable_order / sorted_search, and read a type's columns from one flat list), with
the events numbered by their reader or not and a save/restore in the middle, equals the
per-event engine: the same complex events (parameters, parts, match ids), statistics, open
instances, saved state and end of input; and no batch goes event by event."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from tests.esper.test_esper_kernel import state
from tests.esper.test_split import rows

from cepflow.events.event import Event
from cepflow.inputs import read_events
from cepflow.loader import load
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import restore_state, save_state
from support import load_script

EX = Path(__file__).resolve().parents[2] / "examples"
N = 4000


def records(name: str) -> list[dict[str, Any]]:
    """The example's stream as examples_cpu.py draws it, N events (seeded)."""
    rng = random.Random(29)
    if name == "every":  # ME events, id A/B/C uniformly
        return [{"type": "ME", "ts": i * 1000, "params": [rng.choice("ABC"), i]}
                for i in range(N)]
    if name == "cps":  # invalidModel at random, validModel now and then, 100 hosts
        return [{"type": "invalidModel" if rng.random() < 0.8 else "validModel",
                 "ts": i * 1000, "params": [f"h{rng.randrange(100)}"]} for i in range(N)]
    gen = load_script(EX / "motorbike" / "generate.py", "motorbike_generate")
    # (examples_cpu.py's scaling of the generator's defaults, and more crashes and accidents
    # so that the derived statements see several)
    out, _ = gen.generate(N, bikes=40, days=0.1, accidents=6, crashes=30)
    return out


FILES = {"every": "every/every.epl", "cps": "cps/cps.vepl", "motorbike": "motorbike/motorbike.epl"}


@pytest.mark.parametrize("numbered", [True, False])
@pytest.mark.parametrize("name", ["every", "cps", "motorbike"])
def test_example_batches_equal_event_by_event(name: str, numbered: bool,
                                              tmp_path: Path) -> None:
    prog = load(EX / FILES[name])
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records(name)))

    def stream() -> list[Any]:
        evs = list(read_events(str(path), prog.schemas))
        if not numbered:  # (events made by a program: the engine numbers them)
            for e in evs:
                e.seq = -1
        return evs

    one, many = Engine(prog, strict_actions=False), Engine(prog, strict_actions=False)
    assert many._split or many._chains is not None
    ref = rows([m for e in stream() for m in one.process(e)])

    def no_step(*_: object) -> None:
        raise AssertionError("a batch went event by event")

    evs = stream()
    many._one_by_one = no_step  # type: ignore[method-assign]
    got = rows(list(many.run(evs[:N // 2], batch_size=1500)))
    # (through JSON, as a state file: the chain kernel's rows save parameter tuples, which
    # restore_state takes as JSON gives them, lists)
    again = restore_state(Engine(prog, strict_actions=False),
                          json.loads(json.dumps(save_state(many))))
    again.host.stats, many = many.stats, again  # (statistics are no part of the state)
    many._one_by_one = no_step  # type: ignore[method-assign]
    got += rows(list(many.run(evs[N // 2:], batch_size=1300)))
    assert got == ref and len(ref) > 10
    assert many.stats == one.stats
    assert list(many.stats.by_pattern) == list(one.stats.by_pattern)
    assert state(many) == state(one)
    assert rows(many.finish(close_windows=True)) == rows(one.finish(close_windows=True))
    assert many.partial_matches() == one.partial_matches()


@pytest.mark.parametrize("name", ["every", "cps"])
def test_run_reads_a_batch_only_when_its_first_match_is_asked_for(name: str) -> None:
    """``Engine.run`` hands out each batch's matches from its list (one C-level iterator), and
    stays lazy: nothing is read before the first match is asked for, then one batch at a time."""
    prog = load(EX / FILES[name])
    evs = [Event("ME", ("AB"[i % 2], i), i * 1000) if name == "every"
           else Event("invalidModel", ("h1",), i * 1000) for i in range(40)]
    one, eng = Engine(prog, strict_actions=False), Engine(prog, strict_actions=False)
    ref = [m for e in evs for m in one.process(e)]
    it = eng.run(evs, batch_size=16)
    assert eng.stats.events == 0
    first = next(it)
    assert eng.stats.events == 16
    got = rows([first, *it])
    assert got == rows(ref) and len(ref) > 5 and eng.stats == one.stats
