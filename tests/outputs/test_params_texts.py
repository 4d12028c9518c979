"""``params_texts`` — the ``params`` column the match writer makes — equals ``dumps`` of each
match's ``bindings_for_output()``, whether the matches are lazy rows of one parameter list
(written column by column), of several lists, plain complex events, or lazy matches whose
bindings were read (and may have been changed) since: whatever values, names (internal ``_``
ones, a name given twice) and lengths they hold."""

from __future__ import annotations

import math
from datetime import date

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cepflow.events.event import ComplexEvent
from cepflow.outputs.encoding import dumps
from cepflow.outputs.records import match_batch, params_texts
from cepflow.runtime.rows import LazyBindings, lazy_kind

#: values of each kind the fast paths take, and those they must leave to ``dumps``
VALUES = (st.integers() | st.integers(-5, 5) | st.floats(allow_nan=True, allow_infinity=True)
          | st.sampled_from([0.0, -0.0, 1e16, 1e-7, 2.5, math.nan, math.inf, -math.inf])
          | st.text(st.sampled_from(['"', "\\", "\x00", "\x1f", " ", "é", "€", "a", "\u2028"]),
                    max_size=4)
          | st.none() | st.booleans() | st.just(date(2026, 11, 27))
          | st.lists(st.integers(0, 3) | st.floats(allow_nan=True), max_size=2))
NAMES = st.lists(st.sampled_from(["k", "m", "_t", "x", "é\"n"]), max_size=4)


@st.composite
def columns(draw: st.DrawFn) -> tuple:
    """A column's values: one kind (with nulls or not) or any mix."""
    kind = draw(st.sampled_from(["int", "float", "text", "mixed"]))
    one = {"int": st.integers(), "float": st.floats(allow_nan=True, allow_infinity=True),
           "text": st.text(max_size=3), "mixed": VALUES}[kind]
    nulls = draw(st.booleans())
    return one | st.none() if nulls else one


@st.composite
def matches(draw: st.DrawFn) -> list:
    """Matches of a few parameter lists (shared name tuples, as a kernel's), some plain, some
    lazy with their bindings read (and changed)."""
    lists = draw(st.lists(NAMES, min_size=1, max_size=3))
    kinds = [tuple(n) for n in lists]
    cols = [[draw(columns()) for _ in names] for names in kinds]
    out = []
    for _ in range(draw(st.integers(0, 12))):
        i = draw(st.integers(0, len(kinds) - 1))
        names = kinds[i]
        params = tuple(draw(c) for c in cols[i])
        if draw(st.integers(0, 9)) == 0:  # (a row shorter or longer than its names)
            params = params[:-1] if params and draw(st.booleans()) else (*params, 1)
        how = draw(st.sampled_from(["lazy", "lazy", "kind", "plain", "read"]))
        if how == "kind":
            m = lazy_kind("P", names)(params, 0, ())
        elif how == "plain":
            m = ComplexEvent("P", params, 0, dict(zip(names, params, strict=False)), ())
        else:
            m = LazyBindings("P", params, 0, names, ())
            if how == "read":  # (its bindings made, and changed: not its parameters now)
                m.bindings["k"] = 9
        out.append(m)
    return out


@settings(deadline=None, max_examples=300)
@given(matches())
@example([LazyBindings("P", (1, 2.5), 0, ("k", "m"), ()),
          LazyBindings("P", (None, math.nan), 0, ("k", "m"), ())])
@example([LazyBindings("P", (1, 2, 3), 0, ("k", "_t", "k"), ())])  # (first place, last value)
def test_params_texts_equal_dumps_of_the_bindings(ms: list) -> None:
    assert params_texts(ms) == [dumps(m.bindings_for_output()) for m in ms]


def test_a_lazy_match_written_keeps_its_bindings_unmade() -> None:
    """The writer reads a lazy match's parameters, not its bindings (which it would make)."""
    names = ("k", "m")
    ms = [lazy_kind("P", names)((i, i / 2), i, ()) for i in range(3)]
    assert match_batch(ms).column("params").to_pylist() == [
        '{"k":0,"m":0.0}', '{"k":1,"m":0.5}', '{"k":2,"m":1.0}']
    assert all(m.output_columns() is not None for m in ms)
