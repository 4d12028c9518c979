"""kernels.filters.key_codes (the chain kernel's keys: per row its value's code, codes given
in the order values first come, equal codes iff equal as dict keys) against the definition
— one ``setdefault`` per value, in row order — over mixed values (1, 1.0 and True one key;
each NaN object its own; the same NaN object one), a table filled by earlier types, and rows
that index the values in any order."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.runtime.kernels.filters import key_codes

NAN = float("nan")
VALUES = st.sampled_from([0, 1, 1.0, True, False, "1", "a", "b", None, NAN, 2.5, -0.0, 0.0])
FRESH_NAN = st.builds(lambda: float("nan"))


def reference(table: dict, uniq: list, local: np.ndarray) -> np.ndarray:
    codes = [table.setdefault(v, len(table)) for v in uniq]
    return np.array(codes, dtype=np.int64)[local] if codes else np.zeros(0, np.int64)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(VALUES, FRESH_NAN), max_size=12),
       st.lists(st.one_of(VALUES, FRESH_NAN), max_size=40), st.data())
def test_key_codes_are_setdefaults_in_row_order(before: list, uniq: list, data) -> None:
    table: dict = {}
    for v in before:
        table.setdefault(v, len(table))
    local = np.array(data.draw(st.lists(st.integers(0, max(len(uniq) - 1, 0)),
                                        max_size=30 if uniq else 0)), dtype=np.int64)
    want_table = dict(table)
    want = reference(want_table, uniq, local)
    got = key_codes(table, uniq, local)
    assert got.tolist() == want.tolist()
    assert list(table.items()) == list(want_table.items())  # (same keys, codes and order)
    assert [type(k) for k in table] == [type(k) for k in want_table]
    assert all(a is b or (isinstance(a, float) and math.isnan(a) and a is b)
               for a, b in zip(table, want_table, strict=True))
