"""``rows.lazy_kind``: the lazy complex events of one pattern made as a kind that holds their
type and parameter names once (the chain kernel's matches) read, compare, pickle and copy as
``LazyBindings`` made one by one, and as the plain complex event they stand for."""

from __future__ import annotations

import copy
import pickle

from hypothesis import given
from hypothesis import strategies as st

from cepflow.events.event import ComplexEvent, Event
from cepflow.runtime.rows import LazyBindings, lazy_kind

values = st.one_of(st.integers(), st.text(max_size=3), st.none(), st.booleans())


@given(st.lists(values, min_size=1, max_size=3), st.sampled_from(["P", "Q"]),
       st.integers(0, 5))
def test_a_kind_reads_as_lazy_bindings(params: list, name: str, match_id: int) -> None:
    names = tuple(f"p{j}" for j in range(len(params)))
    parts = (Event("A", (1,), 1.0, seq=0), Event("B", (2,), 2.0, id="b"))
    make = lazy_kind(name, names)
    kinded = make(tuple(params), 2.0, parts, match_id)
    plain = LazyBindings(name, tuple(params), 2.0, names, parts, match_id)
    eager = ComplexEvent(name, tuple(params), 2.0, dict(zip(names, params, strict=True)),
                         parts, match_id)
    seen = [(e.type, e.params, e.ts, e.parts, e.match_id, e.id, e.seq, e.bindings,
             e.event_refs) for e in (kinded, plain, eager)]
    assert seen[0] == seen[1] == seen[2]
    assert kinded == eager and hash(kinded) == hash(eager)
    assert isinstance(kinded, LazyBindings) and lazy_kind(name, names) is make  # one kind
    kinded.seq, kinded.match_id = 4, match_id + 1  # (the engine's numbers can be set)
    for twin in (pickle.loads(pickle.dumps(kinded)), copy.copy(kinded)):
        assert type(twin) is ComplexEvent
        assert (twin.seq, twin.match_id, twin.params, twin.bindings) == (
            4, match_id + 1, tuple(params), eager.bindings)
