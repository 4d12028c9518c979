"""Esper's keyed pair per event with its instances as rows (EsperSteps._pair_start,
_pair_end, _alts_end: runtime.tokens.PairRows) against the token path it replaces
(``fast_path=False``: the general token path): random programs of keyed pairs ``every a =
A(f) -> b = B(g, b.k = a.k) [where timer:within(Δ)]`` — two types or one, a last stage of
alternatives, select lists or none — beside pairs that
keep tokens (a guard on ``a``'s fields) or go the general path (no key), random streams (keys
equal across types, NaN, ties), with at random points a batch (the pair kernel's rows taken
over, and given back), a read of the tokens (rows made tokens, later ones rows again), a save
and restore, a count and time passing. Matches, ids, order, statistics, partial matches,
buckets and the saved state equal the reference's at every point."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_pending_rows import Feed
from test_row_step import against_the_token_path

from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.tokens import PairRows

SCHEMA = "".join(f"create schema {t}(k int, v int);\n" for t in "ABC")
#: pairs whose instances are rows per event
ROWED = ("every a=A(a.v > 0) -> b=B(b.k = a.k) where timer:within(3 msec)",
         "every a=A -> b=B(k = a.k, b.v < 2)",
         "every a=B(a.v != 1) -> b=B(b.k = a.k) where timer:within(2 msec)",
         "every a=C -> b=A(a.k = b.k) where timer:within(1 msec)",
         # (a last stage of alternatives on the key: the one that wins completes, _alts_end)
         "every a=A -> (b=B(b.k = a.k) or c=C(c.k = a.k, c.v > 1)) where timer:within(3 msec)",
         "every a=A(a.v < 3) -> (q=A(k = a.k, q.v > 0) or p=A(k = a.k, p.v < 2))")
#: pairs that keep tokens (a guard) or go the general token path (no key)
OTHERS = ("every a=A -> b=B(b.k = a.k, b.v > a.v) where timer:within(3 msec)",
          "every a=A -> b=C")
SELECTS = ("", "select a.k as k, a.v as av ", "select a.v + 1 as s, a.k as k ")
NAN = math.nan
#: (type, key, v, dt): few keys, 1 and 1.0 equal, a NaN key, ties in ts
specs = st.lists(st.tuples(st.sampled_from("ABC"), st.sampled_from([0, 1, 1.0, 2, NAN]),
                           st.integers(0, 3), st.sampled_from([0, 0, 1, 2])), max_size=120)
ops = st.lists(st.one_of(st.tuples(st.sampled_from(["events", "batch"]), st.integers(0, 30)),
                         st.tuples(st.sampled_from(["tokens", "save", "count"]), st.just(0)),
                         st.tuples(st.just("advance"), st.integers(0, 6))), max_size=8)


def program(statements: list[tuple[str, str]]) -> Any:
    text = "".join(f"@Name('P{i}')\ninsert into P{i}\n{select}from pattern [{body}];\n"
                   for i, (body, select) in enumerate(statements))
    return load_module(parse_epl(SCHEMA + text))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# (alternatives under select *: their keys are read, so each stays its own variable — null
# when the other alternative matched — and the per-event step is the general one)
@given(st.lists(st.tuples(st.sampled_from(ROWED), st.sampled_from(SELECTS)).filter(
    lambda t: " or " not in t[0] or t[1] != ""), min_size=1, max_size=2),
       st.lists(st.tuples(st.sampled_from(OTHERS), st.sampled_from(SELECTS)), max_size=1),
       specs, ops)
# (an instance whose deadline the kernel's batch left queued expires on the engine's timer
# after the per-event step took the batch's rows over)
@example([(ROWED[0], "")], [], [("A", 0, 1, 0), ("A", 1, 1, 1), ("B", 1, 0, 1),
                                ("A", 0, 1, 1), ("B", 0, 0, 5)], [("batch", 2), ("events", 2)])
# (a B of a key with a token — made by a read — and a younger row: the token completes first)
@example([(ROWED[0], "")], [], [("A", 0, 1, 0), ("A", 0, 1, 0), ("B", 0, 0, 0)],
         [("events", 1), ("tokens", 0), ("events", 2)])
# (time passing over the deadlines of instances that completed: the token path's timers fire
# idle and move the clock to the last, 5 — per event the queue skipped them, Matcher.skipped;
# a batch never queued them, kernels.pair._skip_completed)
@example([(ROWED[0], "")], [], [("A", 0, 1, 0), ("A", 0, 1, 1), ("A", 0, 1, 1), ("B", 0, 0, 0)],
         [("events", 4), ("advance", 8)])
@example([(ROWED[0], "")], [], [("A", 0, 1, 0), ("A", 0, 1, 1), ("A", 0, 1, 1), ("B", 0, 0, 0)],
         [("batch", 4), ("advance", 8)])
def test_pair_rows_equal_the_token_path(rowed: list, others: list, spec: list,
                                        plan: list) -> None:
    prog = program([*rowed, *others])
    assert Engine(prog).matchers[0].step_for("A").__name__ in ("_pair_start", "_pair_end",
                                                               "_pair_row_step")
    against_the_token_path(prog, spec, plan)


def test_the_rows_and_their_readers() -> None:
    """Per event the keyed pair holds rows, not tokens; a reader makes them the token path's
    tokens, and the next instances are rows again, younger than those tokens."""
    prog = program([(ROWED[0], "")])
    eng = Engine(prog)
    m = eng.matchers[0]
    feed = Feed([("A", k, 1, 0) for k in range(4)] + [("B", 1, 0, 1), ("A", 2, 1, 0)])
    for e in feed.take(4)[0]:
        eng.process(e)
    assert type(m.pending) is PairRows and not m.tokens and not m.buckets
    assert m.count() == len(m.pending) == 4 and eng.partial_matches() == {"P0": 4}
    assert [t.id for t in m.all_tokens()] == [1, 2, 3, 4] and m.pending is None
    for e in feed.take(2)[0]:
        eng.process(e)  # (B(1) completes token 2, A(2) begins row 5)
    assert sorted(m.tokens[None]) == [1, 3, 4] and m.pending.ids == [5]
    assert [t.id for t in m.all_tokens()] == [1, 3, 4, 5]
