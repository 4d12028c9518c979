"""gc_paused (runtime/collector.py): the collector is back after the block, what the block
made went to the oldest generation without a walk, and objects the program froze itself stay
frozen."""

import gc

from cepflow.runtime.collector import gc_paused


class _Node:
    def __init__(self) -> None:
        self.next: list = []


def test_what_a_batch_made_is_not_walked_by_the_young_collection() -> None:
    gc.collect()
    with gc_paused():
        assert not gc.isenabled()
        made = [_Node() for _ in range(5000)]
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert gc.get_count()[0] < 1000  # (no young collection of the 5,000 is due)
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(o) in oldest for o in made[::500])


def test_objects_the_program_froze_stay_frozen() -> None:
    # (asked of one object, not of the freeze count: an object frozen with it that another
    # thread of the test run frees — the Spark gateway's, a reader's — leaves the count)
    sentinel = _Node()
    gc.collect()
    gc.freeze()
    try:
        assert gc.get_freeze_count() > 0 and not _in_a_generation(sentinel)
        with gc_paused():
            made = [_Node() for _ in range(100)]
        assert gc.isenabled() and gc.get_freeze_count() > 0
        assert not _in_a_generation(sentinel)  # (thawed, it would be in one again)
        assert made
    finally:
        gc.unfreeze()
    assert _in_a_generation(sentinel)


def _in_a_generation(obj: object) -> bool:
    """Whether the collector walks ``obj`` (frozen objects are in none of its generations)."""
    return any(o is obj for g in range(3) for o in gc.get_objects(generation=g))


def test_a_paused_collector_stays_paused() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
