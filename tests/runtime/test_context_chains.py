"""Keyed sequences under the immediate and strict contexts, partitioned by their key or not
(CompiledPattern.context_chain: the row step Matcher._context_step, and the column kernel of a
batch), against the general token path (``fast_path=False``, every event through
``Matcher._general``): random sequences of two to four stages over ``A`` and ``B`` (types
recurring, filters on the event's own fields, one that can fail), beside a second pattern under
any of chronicle, immediate and strict; random streams that hold ``C``, a type no pattern
reads, keys equal across int and float and NaN, ties in time; fed in random steps — events one
by one, ``process_batch`` and ``Engine.run`` cut anywhere, Arrow batches through
``process_columns`` — with reads of the tokens, counts, time passing and a save/restore at
random points. Matches (ids, order, events, parameters, bindings), error records, statistics,
partial matches (with their partitions) and the saved state equal the reference's at every
point (docs/architecture.md, "Keyed sequences under immediate and strict"). Also two-stage
sequences under unrestricted (Matcher._every_step), per event."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cepflow.compiler.program import compile_module
from cepflow.events.event import Event
from cepflow.language.parser import parse
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import has_state, restore_state, save_state
from support import tokens_form

DECLS = "".join(f"atomicEvent {t}(k: Int, v: Int)\n" for t in "ABC")
#: filters on the event's own fields; ``sqrt(v - 1) > 0`` fails on ``v = 0`` (an error record)
FILTERS = ("", "", "", "v > 1", "v < 2", "not (v == 2)", "sqrt(v - 1) > 0")
NAN = math.nan


@st.composite
def sequences(draw: st.DrawFn, contexts: tuple[str, ...] = ("immediate", "strict"),
              least: int = 2, alternatives: bool = False) -> str:
    """``complexEvent``'s body: a keyed sequence of at least ``least`` stages, its context,
    partitioned by its key or not; with ``alternatives`` a stage may be an OR of two types
    (``(A(s, _) OR C(s, _))``, each with its filter) and a window may hold the whole sequence
    (0, 0.2, 1, 3 or 6 ms)."""
    kinds = ["A", "B", "A", "B", "A|C", "B|C", "A|B"] if alternatives else ["A", "B"]
    stages = draw(st.lists(st.sampled_from(kinds), min_size=least,
                           max_size=draw(st.sampled_from([2, 3, 4]))))

    def atom(t: str) -> str:
        f = draw(st.sampled_from(FILTERS))
        return f"{t}(s, _)" + (f" where {f}" if f else "")

    body = " -> ".join(f"({' OR '.join(atom(t) for t in kind.split('|'))})" if "|" in kind
                       else atom(kind) for kind in stages)
    window = draw(st.sampled_from(["", "", "[0 ms]", "[0.2 ms]", "[1 ms]", "[3 ms]", "[6 ms]"])
                  if alternatives else st.just(""))
    if window:
        body = f"({body}){window}"
    context = draw(st.sampled_from(contexts))
    parted = context != "chronicle" and draw(st.booleans())
    return f"{body} context {context}" + (" partition by s" if parted else "")


def compile_(bodies: list[str]) -> Any:
    src = DECLS + "".join(f"complexEvent P{i}(s: Int) {{ as {b} }}\n"
                          for i, b in enumerate(bodies))
    return compile_module(parse(src))


#: (type, key, v, dt): ``C`` no pattern reads, 1 and 1.0 equal, a NaN key, ties in ts
specs = st.lists(st.tuples(st.sampled_from("ABCAB"), st.sampled_from([0, 1, 1.0, 0, 2, NAN]),
                           st.sampled_from([0, 1, 2, 3, None]), st.sampled_from([0, 0, 1, 2])),
                 max_size=120)
#: specs whose times also step by 0.1 ms (float time: a span past a window whose deadline is
#: not before the event, Matcher._zones)
float_specs = st.lists(st.tuples(st.sampled_from("ABCAB"), st.sampled_from([0, 1, 1.0, 0, 2, NAN]),
                                 st.sampled_from([0, 1, 2, 3, None]),
                                 st.sampled_from([0, 0, 1, 2, 0.1])), max_size=120)
ops = st.lists(st.one_of(
    st.tuples(st.sampled_from(["events", "batch", "run", "columns"]), st.integers(0, 40)),
    st.tuples(st.sampled_from(["tokens", "save", "count"]), st.just(0)),
    st.tuples(st.just("advance"), st.integers(0, 6))), max_size=8)


class Feed:
    """Makes the same events twice (engines number them in place); without ``nan`` a NaN key
    of the spec is 3 (a partitioned sequence's batch with a NaN key goes event by event, so
    half the examples leave them out to reach the kernel)."""

    def __init__(self, spec: list, numbered: bool, nan: bool = True) -> None:
        self.spec, self.i, self.ts, self.numbered = spec, 0, 0, numbered
        if not nan:
            self.spec = [(t, 3 if k != k else k, v, dt) for t, k, v, dt in spec]

    def take(self, n: int) -> tuple[list[Event], list[Event]]:
        out: tuple[list[Event], list[Event]] = ([], [])
        for t, k, v, dt in self.spec[self.i:self.i + n]:
            self.ts += dt
            for evs in out:
                evs.append(Event(t, (k, v), self.ts, id=self.i,
                                 seq=self.i if self.numbered else -1))
            self.i += 1
        return out


def found(matches: Any) -> list:
    return [(m.type, m.ts, m.match_id, tuple(m.event_refs), repr(m.params), repr(m.bindings))
            for m in matches]


def saved(eng: Engine) -> str:
    """The saved state, a chronicle chain kernel's rows written as the tokens they stand for
    (the rows of a sequence under immediate or strict are saved as tokens)."""
    return json.dumps(tokens_form(save_state(eng)), sort_keys=True)


def partial(eng: Engine) -> list:
    """The partial matches as tokens (a reader: rows are made tokens), with partitions."""
    return [[(t.id, repr(t.part), t.created, [(th.state, repr(th.bindings),
                                               [e.ref for e in th.events]) for th in t.threads])
             for t in m.all_tokens()] for m in eng.matchers]


def errors(eng: Engine) -> list:
    return [(r.source, r.location, r.reason) for r in eng.errors]


def columns(eng: Engine, evs: list[Event]) -> list:
    """``evs`` as one Arrow batch through ``process_columns`` (event by event if declined)."""
    from cepflow.runtime.kernels import Declined
    from cepflow.spark.columns import ArrowRows, encode

    src = ArrowRows(encode(evs, 2, [None] * len(evs), [None] * len(evs)),
                    {t: 2 for t in "ABC"}, 2)
    try:
        return eng.process_columns(src).complex_events()
    except Declined:
        return eng.process_batch(evs)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sequences(), st.lists(sequences(("chronicle", "immediate", "strict"), 1), max_size=1),
       specs, ops, st.sampled_from(["events", "batch", "run", "columns"]), st.integers(1, 9),
       st.booleans())
def test_context_chains_equal_the_token_path(first: str, others: list[str], spec: list,
                                             plan: list, end: str, size: int,
                                             nan: bool) -> None:
    check([first, *others], spec, plan, end, size, nan)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sequences(alternatives=True), st.lists(sequences(("chronicle", "immediate", "strict"), 1,
                                                        True), max_size=1),
       float_specs, ops, st.sampled_from(["events", "batch", "run", "columns"]),
       st.integers(1, 9), st.booleans())
# the float span past the window: the partial match is trapped by B, which is then no noise
@example("(A(s, _) -> C(s, _) -> B(s, _))[0.2 ms] context immediate", [],
         [("A", 0, 0, 0.1), ("C", 0, 0, 0.1), ("A", 0, 0, 0), ("B", 0, 0, 0.1), ("C", 0, 0, 0),
          ("B", 0, 0, 0)], [("batch", 2)], "events", 1, True)
@example("(A(s, _) -> C(s, _) -> B(s, _))[0.2 ms] context immediate partition by s", [],
         [("A", 0, 0, 0.1), ("C", 0, 0, 0.1), ("A", 0, 0, 0), ("B", 0, 0, 0.1), ("A", 0, 0, 0),
          ("C", 0, 0, 0), ("B", 0, 0, 0)], [], "columns", 1, True)
def test_context_alternatives_equal_the_token_path(first: str, others: list[str], spec: list,
                                                   plan: list, end: str, size: int,
                                                   nan: bool) -> None:
    check([first, *others], spec, plan, end, size, nan)


@st.composite
def pairs(draw: st.DrawFn) -> str:
    """Two stages of distinct types under immediate, partitioned by the key (the column
    kernel's queued form, kernels.noise._queued_pairs), filters making noise rows."""
    a, b = draw(st.permutations("AB"))
    fa, fb = (draw(st.sampled_from(FILTERS[2:])) for _ in "ab")
    return (f"{a}(s, _)" + (f" where {fa}" if fa else "") + f" -> {b}(s, _)"
            + (f" where {fb}" if fb else "") + " context immediate partition by s")


batches = st.lists(st.tuples(st.sampled_from(["batch", "run", "columns", "events", "save",
                                              "tokens"]), st.integers(0, 40)), max_size=6)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs(), specs, batches, st.sampled_from(["batch", "run", "columns"]), st.integers(1, 9),
       st.booleans())
# a partial match from before the batch, disposed by a noise row of its key in it
@example("A(s, _) where v > 1 -> B(s, _) context immediate partition by s",
         [("A", 0, 2, 0), ("A", 1, 2, 0), ("A", 0, 0, 1)], [("events", 2)], "batch", 1, True)
def test_partitioned_pairs_equal_the_token_path(first: str, spec: list, plan: list, end: str,
                                                size: int, nan: bool) -> None:
    check([first], spec, plan, end, size, nan)


@st.composite
def unrestricted(draw: st.DrawFn) -> str:
    """A keyed sequence under unrestricted (CompiledPattern.unrestricted_chain) of two to four
    stages, the first of any type and the later ones of distinct types (the first's may
    recur), filters, a window around the last atom alone or around the whole sequence (0,
    0.2, 1, 3 or 6 ms), partitioned by the key or not."""
    n = draw(st.sampled_from([2, 2, 3, 4]))
    later = draw(st.permutations("ABC"))[:n - 1]
    stages = [(t, draw(st.sampled_from(FILTERS))) for t in (draw(st.sampled_from("ABC")),
                                                             *later)]
    atoms = [f"{t}(s, _)" + (f" where {f}" if f else "") for t, f in stages]
    where = draw(st.sampled_from(["", "last", "whole", "whole"]))
    window = draw(st.sampled_from(["[3 ms]", "[0 ms]", "[0.2 ms]", "[1 ms]", "[6 ms]"]))
    if where == "last":
        atoms[-1] = f"({atoms[-1]}){window}"
    body = " -> ".join(atoms)
    if where == "whole":
        body = f"({body}){window}"
    parted = draw(st.booleans())
    return body + " context unrestricted" + (" partition by s" if parted else "")




@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unrestricted(), st.lists(sequences(("chronicle", "immediate", "unrestricted"), 1),
                                max_size=1), float_specs, batches,
       st.sampled_from(["events", "batch", "run", "columns"]), st.integers(1, 9),
       st.booleans())
# A@0.1, B@0.1+0.1+0.1: the span 0.20000000000000004 exceeds the window, its deadline
# 0.1 + 0.2 = 0.30000000000000004 is not before B: the partial match stays, unmatched
@example("(A(s, _) -> C(s, _) -> B(s, _))[0.2 ms] context unrestricted", [],
         [("A", 0, 0, 0.1), ("C", 0, 0, 0.1), ("B", 0, 0, 0.1), ("B", 0, 0, 0)],
         [("events", 2)], "events", 1, True)
@example("(A(s, _) -> B(s, _))[0.2 ms] context unrestricted", [],
         [("A", 0, 0, 0.1), ("C", 0, 0, 0.1), ("B", 0, 0, 0.1), ("A", 0, 0, 0), ("B", 0, 0, 0)],
         [("tokens", 0)], "events", 1, True)
# the second B fails the filter (an error record): the token path evaluates it, as the
# partial match waiting for C holds a thread waiting for B too
@example("A(s, _) -> B(s, _) where sqrt(v - 1) > 0 -> C(s, _) context unrestricted", [],
         [("A", 0, 0, 0), ("B", 0, 2, 1), ("B", 0, 0, 1), ("C", 0, 0, 1)], [], "events", 1,
         True)
def test_unrestricted_chains_equal_the_token_path(first: str, others: list[str], spec: list,
                                                  plan: list, end: str, size: int,
                                                  nan: bool) -> None:
    check([first, *others], spec, plan, end, size, nan, shape="unrestricted_chain")


@st.composite
def unrestricted_dense(draw: st.DrawFn) -> str:
    """:func:`unrestricted` for the column kernel (kernels/every.py): filters that cannot fail
    (one that fails declines the batch), windows wide enough to hold partial matches."""
    n = draw(st.sampled_from([2, 3, 4]))
    later = draw(st.permutations("ABC"))[:n - 1]
    stages = [(t, draw(st.sampled_from(FILTERS[:-1]))) for t in (draw(st.sampled_from("ABC")),
                                                                 *later)]
    body = " -> ".join(f"{t}(s, _)" + (f" where {f}" if f else "") for t, f in stages)
    window = draw(st.sampled_from(["", "[3 ms]", "[6 ms]", "[20 ms]", "[0.2 ms]"]))
    if window:
        body = f"({body}){window}"
    return body + " context unrestricted" + (" partition by s" if draw(st.booleans()) else "")


#: denser streams for the kernel: two keys (1 and 1.0 equal), rarely a NaN
dense_specs = st.lists(st.tuples(st.sampled_from("ABCAB"), st.sampled_from([0, 1, 1.0, 0, NAN]),
                                 st.sampled_from([0, 1, 2, 3]), st.sampled_from([0, 0, 1, 0.1])),
                       min_size=10, max_size=120)
kernel_ops = st.lists(st.tuples(st.sampled_from(["batch", "run", "columns", "columns", "save",
                                                 "tokens", "events"]), st.integers(5, 60)),
                      max_size=5)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(unrestricted_dense(), st.lists(sequences(("chronicle", "immediate", "strict"), 2),
                                      max_size=1), dense_specs, kernel_ops,
       st.sampled_from(["batch", "run", "columns"]), st.integers(5, 60), st.booleans())
# two partial matches of a key completed by one row: the older first
@example("A(s, _) -> B(s, _) context unrestricted", [],
         [("A", 0, 0, 0), ("A", 0, 0, 1), ("B", 0, 0, 1), ("B", 0, 0, 0)], [], "batch", 9, True)
# the float span past the window (test_unrestricted_chains_equal_the_token_path) in a batch
@example("(A(s, _) -> C(s, _) -> B(s, _))[0.2 ms] context unrestricted", [],
         [("A", 0, 0, 0.1), ("C", 0, 0, 0.1), ("B", 0, 0, 0.1), ("B", 0, 0, 0), ("A", 0, 0, 0),
          ("B", 0, 0, 0.1), ("C", 0, 0, 0), ("B", 0, 0, 0)], [], "columns", 9, True)
def test_unrestricted_batches_equal_the_token_path(first: str, others: list[str], spec: list,
                                                   plan: list, end: str, size: int,
                                                   nan: bool) -> None:
    check([first, *others], spec, plan, end, size, nan, shape="unrestricted_chain")


def check(bodies: list[str], spec: list, plan: list, end: str, size: int,
          nan: bool = True, shape: str = "context_chain") -> None:
    """Feeds ``spec`` in the steps of ``plan`` (then the rest by ``end``) to the engine and
    to the token path, comparing everything at every step (the module docstring)."""
    prog = compile_(bodies)
    fast, ref = Engine(prog), Engine(prog, fast_path=False)
    assert getattr(fast.matchers[0].pattern, shape) is not None
    assert all(m.pattern.context_plan is None for m in ref.matchers)
    numbered = end == "columns" or any(op == "columns" for op, _ in plan)
    feed = Feed(spec, numbered, nan)
    for op, n in [*plan, (end, len(spec))]:
        if op in ("events", "batch", "run", "columns"):
            mine, theirs = feed.take(n)
            expected = found(x for e in theirs for x in ref.process(e))
            if op == "batch":
                got = found(fast.process_batch(mine))
            elif op == "run":
                got = found(fast.run(mine, batch_size=size))
            elif op == "columns" and fast.columnar:
                got = found(columns(fast, mine))
            else:
                got = found(x for e in mine for x in fast.process(e))
            assert got == expected
            assert errors(fast) == errors(ref)
        elif op == "tokens":
            assert partial(fast) == partial(ref)
        elif op == "save":
            assert saved(fast) == saved(ref)
            state = json.loads(json.dumps(save_state(fast)))
            fast = restore_state(Engine(prog), state)
            ref = restore_state(Engine(prog, fast_path=False), state)
        elif op == "count":
            assert fast.partial_matches() == ref.partial_matches()
            assert has_state(fast) == has_state(ref)
        else:
            feed.ts += n
            assert found(fast.advance_to(feed.ts)) == found(ref.advance_to(feed.ts))
    assert fast.partial_matches() == ref.partial_matches()
    assert fast.stats == ref.stats
    assert saved(fast) == saved(ref)
    assert partial(fast) == partial(ref)
    assert found(fast.finish(True)) == found(ref.finish(True))
