"""The column kernel for Esper's ``every a = A(f) -> b = B(g, a.k = b.k) [within Δ]`` and the
longer chains ``every a = A(f) -> b = B(g, …) -> c = …`` on one key
(runtime/kernels/pair.py, ``process_esper_batch``) equals the per-event token path: the same complex
events (parts, parameters, bindings, match ids), rule firings, statistics, saved state and
open instances, across batches cut anywhere and with per-event processing after them. Also:
the vectorized filters (runtime/vector_expr.py) equal the compiled closures."""

import itertools
import json
import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cepflow.compiler.evaluator import compile_expr
from cepflow.events.event import Event
from cepflow.language import ast as A
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels import Declined
from cepflow.runtime.rows import EventRows
from cepflow.runtime.state import StateError, save_state
from cepflow.runtime.vector_expr import filter_mask

SCHEMA = ("create schema A(k integer, v integer, x double, s string);\n"
          "create schema B(k integer, v integer, x double, s string);\n")

FILTERS = ["", "{a}.v >= 2", "{a}.v < 3 and {a}.x > 0.5", "not ({a}.v = 1)",
           "{a}.v + {a}.x * 2 > 3", "{a}.s = 'x'", "{a}.v = 0 or {a}.x <= 1", "-{a}.v < -1",
           "{a}.v * {a}.v - 1 >= 3", "{a}.v != 2"]


@st.composite
def statements(draw: st.DrawFn) -> str:
    """``every a = T(f) -> b = T(g, key) [-> c = T(h, key) [-> d = …]] [where within]``: a
    pair, or a chain of three or four stages (whose filters read only their own event), or a
    single stage ``every a = T(f)``."""
    n = draw(st.sampled_from([1, 2, 2, 3, 4]))
    tags = "abcd"[:n]
    steps = []
    for j, tag in enumerate(tags):
        t = draw(st.sampled_from(["A", "B"]))
        f = draw(st.sampled_from(FILTERS + (PAIR_FILTERS if n == 2 and j else []))).format(
            a=tag)
        if j:
            key = draw(st.sampled_from([f"a.k = {tag}.k", f"{tag}.k = a.k"]
                                       + ([""] if n == 2 else [])))  # (a pair without a key)
            f = f"({f}) and {key}" if f and key else f or key
        steps.append(f"{tag} = {t}({f})")
    within = draw(st.sampled_from(["", " where timer:within(3 msec)",
                                   " where timer:within(0 msec)",
                                   " where timer:within(10 milliseconds)"]))
    last, second = tags[-1], tags[min(1, n - 1)]
    select = draw(st.sampled_from(["", f"select a.v as av, {last}.x as bx, "
                                       f"current_timestamp() as t, {second}.k as key ",
                                   f"select a.v + {last}.v as total, {second}.s as s "]))
    name = draw(st.sampled_from(["P", "Q"]))
    if n == 1:  # (a window around one event is no kernel's shape)
        return (f"@Name('{name}')\ninsert into {name}\n{select}from pattern [every "
                f"{steps[0]}];\n")
    body = " -> ".join(steps[1:])
    if n > 2:
        body = f"({body})"  # (the guard binds to the parenthesised chain; without, to c only)
    return (f"@Name('{name}')\ninsert into {name}\n{select}from pattern [every "
            f"{steps[0]} -> {body}{within}];\n")


# conditions of b on a's fields: the matcher's pair step takes them, the column kernel checks
# them per candidate (kernels.pair._first_guarded)
PAIR_FILTERS = ["b.v > a.v", "b.x < a.x + 1 and b.v >= 1"]

KEYS = [0, 1, 2, 1.0, True, "1", None, 2.5, float("nan"), 10**20]
VALUES = [0, 1, 2, 3, 4, -1, 0.5, 1.5, None, True]


def events(spec) -> list[Event]:
    ts, out = 0, []
    for i, (t, k, v, x, dt) in enumerate(spec):
        ts += dt
        out.append(Event(t, (k, v, x, "x" if i % 3 else "y"), ts, id=f"e{i}"))
    return out


def stream(keys):
    return st.lists(st.tuples(st.sampled_from(["A", "B"]), st.sampled_from(keys),
                              st.sampled_from(VALUES), st.sampled_from([0.0, 0.7, 1.2, 2.0]),
                              st.integers(0, 3)), max_size=70)


def rows(found) -> list:
    # (values by repr, which tells 1 from 1.0 and True)
    return [(m.type, m.ts, tuple(m.event_refs), repr(tuple(map(_nan, m.params))), m.match_id,
             repr(sorted(((k, _nan(v)) for k, v in m.bindings.items()), key=lambda kv: kv[0])))
            for m in found]


def _nan(v):
    """NaN as a marker (a NaN a column source read back is another float object, and NaN
    equals nothing, not even itself)."""
    return "NaN" if isinstance(v, float) and v != v else v


def state(engine: Engine) -> tuple:
    """Open instances (ids, states, bindings, events, zone entries) and the saved state (when
    JSON can hold it: a NaN key cannot be saved, save_state says so)."""
    tokens = [(m.name, t.id, t.created, [(th.state, repr(sorted(th.bindings.items())),
                                          [e.ref for e in th.events], th.zstart)
                                         for th in t.threads])
              for m in engine.matchers for t in m.all_tokens()]
    try:
        saved = json.dumps(save_state(engine), sort_keys=True)
    except StateError:
        saved = None
    return repr(tokens), saved


def check(text: str, spec, cuts, tail: int) -> None:
    prog = load_module(parse_epl(SCHEMA + text))
    prog.rules.append(A.RuleDecl("r", tuple(A.PatternRef(a.name) for a in prog.automata),
                                 "rec"))
    fired: dict[str, list] = {"one": [], "many": [], "fast": []}

    def engine(tag: str, fast_path: bool = True) -> Engine:
        return Engine(prog, actions={"rec": lambda act: fired[tag].append(
            (act.event.type, act.event.match_id))}, fast_path=fast_path)

    # the reference: the general token path; the pair step per event; the column kernel
    one, fast, many = engine("one", fast_path=False), engine("fast"), engine("many")
    assert many._pairs is not None and one._pairs is None
    assert all(m.pattern.pair is not None for m in fast.matchers)
    evs_one, evs_many = events(spec), events(spec)
    cut = len(spec) - min(tail, len(spec))
    ref = rows([m for e in evs_one for m in one.process(e)])
    assert rows([m for e in events(spec) for m in fast.process(e)]) == ref
    assert fired["fast"] == fired["one"]
    assert state(fast) == state(one) and fast.stats == one.stats
    got = []
    bounds = sorted({0, cut, *(min(c, cut) for c in cuts)})
    for n, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        if n % 2 and hi > lo:  # one event on its own between batches: tokens and pending mix
            got += rows(many.process(evs_many[lo]))
            lo += 1
        got += rows(many.process_batch(evs_many[lo:hi]))
    assert many.partial_matches() == engine_at(prog, evs_one[:cut]).partial_matches()
    for e in evs_many[cut:]:  # timers and tokens left by the kernel work per event
        got += rows(many.process(e))
    assert got == ref
    assert fired["many"] == fired["one"]
    assert many.stats == one.stats
    assert state(many) == state(one)
    # the column route (Engine.process_columns, no registered action: rules only count)
    cols = Engine(prog, strict_actions=False)
    assert cols.columnar
    evs_cols = events(spec)
    got = []
    for n, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        if n % 2 and hi > lo:
            got += rows(cols.process(evs_cols[lo]))
            lo += 1
        try:
            got += rows(cols.process_columns(EventRows(evs_cols[lo:hi])).complex_events())
        except Declined:  # (a NaN key: the batch goes event by event)
            got += rows(cols.process_batch(evs_cols[lo:hi]))
    for e in evs_cols[cut:]:
        got += rows(cols.process(e))
    assert got == ref
    assert cols.stats == one.stats
    assert state(cols) == state(one)
    closed = rows(one.finish(close_windows=True))
    assert rows(many.finish(close_windows=True)) == closed == []
    assert rows(fast.finish(close_windows=True)) == closed
    assert many.partial_matches() == one.partial_matches() == fast.partial_matches()


def engine_at(prog, evs) -> Engine:
    eng = Engine(prog, actions={"rec": lambda act: None}, fast_path=False)
    for e in evs:
        eng.process(e)
    return eng


@settings(max_examples=150, deadline=None)
@given(st.lists(statements(), min_size=1, max_size=2), stream([0, 1, 2]),
       st.lists(st.integers(0, 70), max_size=4), st.integers(0, 8))
# (after the batch the engine's timer is the first pending row's, due before every queued
# deadline: it fired at 10 and expired the chain's instance due at 15 — found 2026-11-27)
@example(["@Name('P')\ninsert into P\nfrom pattern [every a = B() -> (b = B(a.k = b.k) -> "
          "c = A(a.k = c.k)) where timer:within(10 milliseconds)];\n"],
         [("A", 0, 0, 0.0, 0), ("B", 0, 0, 0.0, 0), ("A", 0, 0, 0.0, 3), ("B", 2, 0, 0.0, 2),
          ("B", 2, 0, 0.0, 2), ("A", 2, 0, 0.0, 3)], [], 1)
def test_kernel_equals_event_by_event(stmts, spec, cuts, tail) -> None:
    names = [s.split("'")[1] for s in stmts]
    if len(set(names)) != len(names):
        stmts = stmts[:1]
    check("".join(stmts), spec, cuts, tail)


@settings(max_examples=80, deadline=None)
@given(statements(), stream(KEYS), st.lists(st.integers(0, 70), max_size=2), st.integers(0, 5))
# (text keys, coded column-wise (kernels.pair.column_key_codes): instances from before the
# batch keyed "1" and None, completed by the batch's rows; a NaN key in the batch's column
# unifies with nothing, not even the same NaN object)
@example("@Name('P')\ninsert into P\nfrom pattern [every a = A() -> b = B(a.k = b.k)];\n",
         [("A", "1", 0, 0.0, 0), ("A", None, 0, 0.0, 1), ("A", 2, 0, 0.0, 1),
          ("B", "1", 1, 0.0, 1), ("B", None, 2, 0.0, 0), ("A", "1", 0, 0.0, 1),
          ("B", 1, 0, 0.0, 1), ("B", "1", 3, 0.0, 1)], [1], 0)
@example("@Name('P')\ninsert into P\nfrom pattern [every a = A() -> b = B(a.k = b.k)];\n",
         [("A", "1", 0, 0.0, 0), ("A", KEYS[8], 0, 0.0, 1), ("B", KEYS[8], 0, 0.0, 1),
          ("B", "1", 1, 0.0, 1)], [], 0)
def test_kernel_with_mixed_keys(stmt, spec, cuts, tail) -> None:
    """Keys that unify across types (1, 1.0, True), that never unify (NaN), strings, None and
    integers beyond int64: the codes of the kernel agree with Python's ``==``."""
    check(stmt, spec, cuts, tail)


@st.composite
def guarded(draw: st.DrawFn) -> str:
    """``every a = A(f) -> b = T(g(a, b), key) [within]``: BlowOutTire's shape, an instance
    passing over several candidates of its key before the one its guard accepts."""
    f = draw(st.sampled_from(FILTERS)).format(a="a")
    g = draw(st.sampled_from([*PAIR_FILTERS, "b.v >= a.v + 2", "b.x > a.x or b.v = a.v + 3"]))
    t = draw(st.sampled_from(["A", "B"]))
    within = draw(st.sampled_from(["", " where timer:within(6 msec)"]))
    return (f"@Name('P')\ninsert into P\nfrom pattern [every a = A({f}) -> "
            f"b = {t}(({g}) and a.k = b.k){within}];\n")


@settings(max_examples=100, deadline=None)
@given(guarded(), stream([0, 1]), st.lists(st.integers(0, 70), max_size=3), st.integers(0, 8))
def test_guarded_pairs_equal_event_by_event(stmt, spec, cuts, tail) -> None:
    """The kernel's per-candidate guard (kernels.pair._first_guarded) takes, per instance, the
    first row of its key its guard accepts, as the per-event step does."""
    check(stmt, spec, cuts, tail)


@st.composite
def computed(draw: st.DrawFn) -> str:
    """A pair or guarded pair whose select list computes: arithmetic over both events'
    fields and the match's time (kernels.pair._computed_select, column-wise where exact),
    beside a copied variable."""
    items = draw(st.lists(st.sampled_from(
        ["b.v - a.v", "a.x * 2 + b.k", "-a.v", "b.x - a.x * b.v", "current_timestamp() - a.k",
         "a.v + 1.5", "b.v * a.k - 3", "a.s", "current_timestamp()", "b.k * 0.5"]),
        min_size=1, max_size=3, unique=True))
    select = ", ".join(f"{e} as c{i}" for i, e in enumerate(items))
    g = draw(st.sampled_from(["", "b.v > a.v and ", "b.x < a.x + 1 and "]))
    within = draw(st.sampled_from(["", " where timer:within(6 msec)"]))
    return (f"@Name('P')\ninsert into P\nselect a.k as k, {select}\nfrom pattern [every "
            f"a = A -> b = {draw(st.sampled_from(['A', 'B']))}({g}a.k = b.k){within}];\n")


def typed_stream() -> st.SearchStrategy:
    """Streams whose ``v`` (and keys) are all ints, all floats, or ints mixed with floats, a
    boolean or a null: each kind of column the column-wise select list takes or leaves."""
    kinds = [[0, 1, 2, 3, -1], [0.5, 1.5, 2.0, -1.0], [0, 1, 2, 0.5, 2.0], [0, 1, 2, True],
             [0, 1, 2, None]]
    return st.tuples(st.sampled_from(kinds), st.sampled_from([[0, 1], [0.0, 1.0], [0, 1.0]])
                     ).flatmap(lambda vk: st.lists(st.tuples(
                         st.sampled_from(["A", "A", "B"]), st.sampled_from(vk[1]),
                         st.sampled_from(vk[0]), st.sampled_from([0.0, 0.7, 1.2, 2.0]),
                         st.integers(0, 3)), max_size=60))


@settings(max_examples=150, deadline=None)
@given(computed(), st.one_of(stream([0, 1]), typed_stream()),
       st.lists(st.integers(0, 70), max_size=3), st.integers(0, 8))
# (a key column of an int and a float, which numpy makes floats: the copied ``a.k`` is the
# event's own value, gathered as the object it is — rows.TypeColumns.pick)
@example("@Name('P')\ninsert into P\nselect a.k as k, b.v - a.v as c0\nfrom pattern [every "
         "a = A -> b = B(a.k = b.k)];\n",
         [("A", 0, 1, 0.0, 0), ("A", 1.0, 2, 0.0, 1), ("B", 0, 3, 0.0, 1),
          ("B", 1.0, 5, 0.0, 1)], [], 0)
def test_computed_select_lists_equal_event_by_event(stmt, spec, cuts, tail) -> None:
    """A select list with arithmetic (Duration's ``a2.ts - a1.ts``): the kernel's values,
    computed column-wise where every value read is an int, or every one a float, are the
    closure's to the type (an int stays an int beside a float, a boolean is not summed as a
    number); other values are computed match by match."""
    check(stmt, spec, cuts, tail)


def test_crash_uses_the_kernel_and_other_shapes_do_not() -> None:
    crash = ("@Name('Crash')\ninsert into Crash\nfrom pattern [every a = A(a.v >= 2) -> "
             "b = B(b.v = 0 and a.k = b.k) where timer:within(3 seconds)];\n")
    assert Engine(load_module(parse_epl(SCHEMA + crash)))._pairs is not None
    guard = ("@Name('G')\ninsert into G\nfrom pattern [every a = A(a.v >= 2) -> "
             "b = B(b.v > a.v and a.k = b.k)];\n")  # (a guard on a's fields)
    assert Engine(load_module(parse_epl(SCHEMA + guard)))._pairs is not None
    unkeyed = "@Name('U')\ninsert into U\nfrom pattern [every a = A -> b = B];\n"
    assert Engine(load_module(parse_epl(SCHEMA + unkeyed)))._pairs is not None
    for c in ["a.k = c.k", "b.k = c.k"]:  # (b.k is a.k: b unified with a on it)
        three = ("@Name('T')\ninsert into T\nfrom pattern [every a = A -> (b = B(a.k = b.k) -> "
                 f"c = A({c})) where timer:within(3 seconds)];\n")
        assert Engine(load_module(parse_epl(SCHEMA + three)))._pairs is not None
    # the guard binds to c alone: its window opens at b's event (EsperPair.zone_at,
    # tests/esper/test_esper_chain_guard.py)
    late = ("@Name('L')\ninsert into L\nfrom pattern [every a = A -> b = B(a.k = b.k) -> "
            "c = A(a.k = c.k) where timer:within(3 sec)];\n")
    assert Engine(load_module(parse_epl(SCHEMA + late))).matchers[0].pattern.pair.zone_at == 1
    for text in [
        "from pattern [every (a = A(a.v >= 2) -> b = B(a.k = b.k))];",  # restart
        "from pattern [a = A(a.v >= 2) -> b = B(a.k = b.k)];",  # once
        "from pattern [every a = A -> b = B(a.k = b.k) -> c = A(c.v > b.v and a.k = c.k)];",
        "from pattern [every a = A -> b = B(a.k = b.k) -> c = A(a.v = c.k)];",  # another key
        "from pattern [every a = A -> b = B(a.k = b.k) -> every c = A(a.k = c.k)];",  # inner
    ]:
        prog = load_module(parse_epl(SCHEMA + "@Name('P')\ninsert into P\n" + text + "\n"))
        assert Engine(prog)._pairs is None, text


EXPRS = st.recursive(
    st.one_of(st.sampled_from([A.Name("v"), A.Name("x"), A.Name("w")]),
              st.sampled_from([A.Const(0), A.Const(1), A.Const(2.5), A.Const(True),
                               A.Const(-3), A.Const(2**40), A.Const("a"), A.Const(None)])),
    lambda inner: st.one_of(
        st.builds(A.Binary, st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "+", "-", "*",
                                             "and", "or", "/"]), inner, inner),
        st.builds(A.Unary, st.sampled_from(["not", "-"]), inner)),
    max_leaves=6)
COLUMN = st.lists(st.one_of(st.integers(-5, 5), st.floats(-4, 4), st.booleans(),
                            st.sampled_from([2**40, 2**62, math.nan, None, "a"])), min_size=1,
                  max_size=12)


@settings(max_examples=300, deadline=None)
@given(EXPRS, st.data())
def test_vectorized_filter_equals_the_closure(expr, data) -> None:
    v = data.draw(COLUMN)
    n = len(v)
    x = data.draw(st.lists(st.floats(-3, 3) | st.integers(-3, 3), min_size=n, max_size=n))
    w = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    params = list(zip(v, x, w, strict=True))
    fields = {"v": 0, "x": 1, "w": 2}
    mask = filter_mask(expr, fields, lambda i: [p[i] for p in params])
    if mask is None:
        return
    flt = compile_expr(expr, fields)

    class Ev:
        def __init__(self, p):
            self.params = p

    assert mask.tolist() == [bool(flt(Ev(p), {})) for p in params]


@pytest.mark.parametrize(("values", "text"), [([1, "1", 2], "1"), (["1", 1.0, None], "1"),
                                              ([True, "True"], "True"), (["a", "b"], "a")])
def test_text_equality_is_pythons_on_mixed_values(values, text) -> None:
    """``v = 'text'`` over a list of numbers beside texts (numpy would make them all text,
    1 as "1"): Python's == on each value, as the closure compares them."""
    for op in ("==", "!="):
        mask = filter_mask(A.Binary(op, A.Name("v"), A.Const(text)), {"v": 0},
                           lambda i: values)
        assert mask is not None
        assert mask.tolist() == [(v == text) == (op == "==") for v in values]


@pytest.mark.parametrize("values", [[2**53 + 1, 0.5], [math.nan, 2**53 + 1, 0.5],
                                    [-(2**53) - 1, 0.5], [0.5, math.nan, -(2**53) - 1]])
def test_a_column_numpy_would_round_is_left_to_the_closure(values) -> None:
    """Ints and floats in one column become float64, which rounds an int of 2**53 and more
    (NaN elsewhere in the column, or the sign, must not hide it): not evaluated column-wise."""
    for op in (">", "<"):
        expr = A.Binary(op, A.Name("v"), A.Const(float(2**53)) if op == ">" else
                        A.Const(-float(2**53)))
        assert filter_mask(expr, {"v": 0}, lambda i: values) is None


@settings(max_examples=80, deadline=None)
@given(statements(), st.sampled_from(FILTERS), st.sampled_from(["A", "B"]), stream([0, 1, 2]))
def test_single_event_step_equals_the_token_path(pair, flt, t, spec) -> None:
    """``every e = T(f)`` (GhostRider) next to a pair pattern: the matcher's direct step gives
    the same matches, token ids (seen in the pair's open instances) and statistics."""
    cond = flt.format(a="e")
    text = pair + (f"@Name('G')\ninsert into G\nselect e.v as v\nfrom pattern "
                   f"[every e = {t}({cond})];\n")
    prog = load_module(parse_epl(SCHEMA + text))
    one, fast = Engine(prog, fast_path=False), Engine(prog)
    assert any(m.pattern.single is not None for m in fast.matchers)
    ref = rows([m for e in events(spec) for m in one.process(e)])
    assert rows([m for e in events(spec) for m in fast.process(e)]) == ref
    assert state(fast) == state(one) and fast.stats == one.stats


@settings(max_examples=60, deadline=None)
@given(statements(), stream([k for k in KEYS if k != 10**20]),  # (Arrow's int64 holds no 10**20)
       st.lists(st.integers(0, 70), max_size=3))
def test_arrow_columns_equal_event_by_event(stmt, spec, cuts) -> None:
    """The column entry point over Arrow batches of the Spark layout (spark.columns.ArrowRows:
    events made only for the rows in matches and open instances): the same complex events,
    rows written, statistics and saved state as the per-event engine."""
    prog = load_module(parse_epl(SCHEMA + stmt))
    prog.rules.append(A.RuleDecl("r", tuple(A.PatternRef(a.name) for a in prog.automata),
                                 "unregistered"))
    one, many = Engine(prog, strict_actions=False), Engine(prog, strict_actions=False)
    if not many.columnar:  # (a pair whose g reads a's fields)
        return
    def numbered() -> list[Event]:  # (the readers number the rows the Spark layout carries)
        evs = events(spec)
        for i, e in enumerate(evs):
            e.seq = i
        return evs

    ref = [m for e in numbered() for m in one.process(e)]
    arities = {"A": 4, "B": 4}
    got, written = [], []
    evs = numbered()
    for lo, hi in itertools.pairwise(sorted({0, len(spec), *(min(c, len(spec)) for c in cuts)})):
        found, rows_written = fed_columns(many, evs[lo:hi], arities)
        got += found
        written += rows_written
    assert_alike(one, ref, many, got, written)


def fed_columns(engine: Engine, chunk: list[Event], arities: dict[str, int]
                ) -> tuple[list, list]:
    """``chunk`` through Engine.process_columns over an Arrow batch of the layout (event by
    event when the engine declines it — a NaN key, a failing filter — as the Spark worker's
    feed and the file job do): its complex events and the rows written of them."""
    from cepflow.spark.columns import ArrowRows, encode, encode_match_table, encode_matches

    src = ArrowRows(encode(chunk, 4, [None] * len(chunk), [None] * len(chunk)), arities, 4)
    try:
        table = engine.process_columns(src)
    except Declined:
        found = engine.process_batch(chunk)
        return found, encode_matches(found).to_pylist() if found else []
    assert table.positions() == sorted(table.positions())  # (rows in detection order)
    return (table.complex_events(),
            encode_match_table(table, src).to_pylist() if table.count else [])


def check_columns(prog, make, cuts: list[int]) -> None:
    """The events ``make()`` builds (numbered as read), fed in Arrow batches cut at ``cuts``
    through the column route (:func:`fed_columns`), against event by event
    (:func:`assert_alike`); nothing to check when the engine does not take columns."""
    one, many = Engine(prog, strict_actions=False), Engine(prog, strict_actions=False)
    if not many.columnar:
        return

    def numbered() -> list:
        evs = make()
        for i, e in enumerate(evs):
            e.seq = i
        return evs

    ref = [m for e in numbered() for m in one.process(e)]
    evs, got, written = numbered(), [], []
    n = len(evs)
    for lo, hi in itertools.pairwise(sorted({0, n, *(min(c, n) for c in cuts)})):
        found, rows_written = fed_columns(many, evs[lo:hi], {"A": 4, "B": 4})
        got += found
        written += rows_written
    assert_alike(one, ref, many, got, written)


def assert_alike(one: Engine, ref: list, many: Engine, got: list, written: list) -> None:
    """The complex events ``got`` and rows ``written`` by the column route (fed_columns) of
    engine ``many``, its statistics and state are those of the per-event engine ``one``
    (which found ``ref``)."""
    from cepflow.spark.columns import encode_matches

    assert rows(got) == rows(ref)
    assert written == (encode_matches(ref).to_pylist() if ref else [])
    assert many.stats == one.stats
    assert state(many) == state(one)


SELECTS = ["a.v as av", "b.x as bx", "current_timestamp() as t", "b.k as key", "a.s as s",
           "b.s as bs", "a.x as ax", "b.v as bv"]
TEXTS = ["x", "y\"q", "tab\t", "é", "\\", "", None]


@settings(max_examples=80, deadline=None)
@given(st.permutations(SELECTS), st.integers(1, len(SELECTS)), st.booleans(),
       st.lists(st.tuples(st.sampled_from(["A", "B"]), st.sampled_from([0, 1]),
                          st.sampled_from(VALUES), st.sampled_from(VALUES),
                          st.sampled_from(TEXTS), st.sampled_from([0, 0.25, 1, 2])),
                max_size=40),
       st.integers(2, 40), st.booleans())
@example(SELECTS, len(SELECTS), True,  # (several matches of a batch, whole times, every item)
         [("A", 0, 1, 0.5, "x", 1), ("B", 0, True, None, "é", 1)] * 4, 40, True)
def test_matches_written_column_wise(items, n, ids, spec, cut, whole) -> None:
    """The pair kernel's matches written column-wise (StageMatches through
    encode_match_table: each select item's JSON text read from the batch's columns) are the
    rows the per-event engine's complex events give: values of every kind (numbers, booleans,
    None, text needing escapes, mixed in one column), the match's time whole or fractional,
    ids named or numbered."""
    from cepflow.spark.columns import ArrowRows, encode, encode_match_table, encode_matches

    stmt = (f"@Name('P')\ninsert into P\nselect {', '.join(items[:n])}\nfrom pattern "
            "[every a = A -> b = B(a.k = b.k) where timer:within(3 msec)];\n")
    prog = load_module(parse_epl(SCHEMA + stmt))

    def made() -> list[Event]:
        ts, out = 0, []
        for i, (t, k, v, x, text, dt) in enumerate(spec):
            ts += math.ceil(dt) if whole else dt
            out.append(Event(t, (k, v, x, text), ts, id=f"e{i}" if ids else None, seq=i))
        return out

    one, many = Engine(prog, strict_actions=False), Engine(prog, strict_actions=False)
    assert many.columnar
    ref = [m for e in made() for m in one.process(e)]
    evs, written = made(), []
    for lo in range(0, len(evs), cut):
        chunk = evs[lo:lo + cut]
        src = ArrowRows(encode(chunk, 4, [None] * len(chunk), [None] * len(chunk)),
                        {"A": 4, "B": 4}, 4)
        table = many.process_columns(src)
        if table.count:
            written += encode_match_table(table, src).to_pylist()
    assert written == (encode_matches(ref).to_pylist() if ref else [])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["A", "B"]), min_size=2, max_size=4),
       st.sampled_from([None, 0, 3, 10]),
       st.lists(st.tuples(st.sampled_from(["A", "B"]), st.sampled_from([0, 1, 2]),
                          st.integers(0, 3)), max_size=60),
       st.integers(1, 60))
def test_chains_match_esper_by_definition(types, within, spec, cut) -> None:
    """Against Esper's definition rather than the token path (docs/esper.md): each ``A`` (the
    first stage) opens an instance; it takes, stage after stage, the first later event of the
    stage's type with its key, and completes at the last stage if that event comes less than
    Δ after the ``A`` (the timer fires before the events of its instant). Per event and
    through the kernel in batches of ``cut`` events; matches in the order of their last event,
    then of their A."""
    tags = "abcd"[:len(types)]
    steps = [f"a = {types[0]}"] + [f"{g} = {t}(a.k = {g}.k)" for g, t in zip(tags[1:], types[1:],
                                                                          strict=True)]
    guard = "" if within is None else f" where timer:within({within} msec)"
    rest = " -> ".join(steps[1:])
    body = f"({rest})" if len(steps) > 2 else rest
    prog = load_module(parse_epl(SCHEMA + f"@Name('P')\ninsert into P\nfrom pattern [every "
                                 f"{steps[0]} -> {body}{guard}];\n"))
    times = itertools.accumulate(dt for _, _, dt in spec)
    evs = [Event(t, (k, 0, 0.0, "x"), ts, id=f"e{i}")
           for i, ((t, k, _), ts) in enumerate(zip(spec, times, strict=True))]
    expected = []
    for i, e in enumerate(evs):
        if e.type != types[0]:
            continue
        rows = [i]
        for t in types[1:]:
            nxt = next((r for r in range(rows[-1] + 1, len(evs))
                        if evs[r].type == t and evs[r].params[0] == e.params[0]), None)
            if nxt is None or (within is not None and evs[nxt].ts - e.ts >= within):
                break
            rows.append(nxt)
        else:
            expected.append((rows[-1], i, [evs[r].id for r in rows]))
    expected = [refs for _, _, refs in sorted(expected)]
    one = Engine(prog)
    assert [m.event_refs for e in evs for m in one.process(e)] == expected
    many = Engine(prog)
    assert many._pairs is not None
    got = []
    for lo in range(0, len(evs), cut):
        got += [m.event_refs for m in many.process_batch(evs[lo:lo + cut])]
    assert got == expected


def test_completed_instances_fire_no_timer() -> None:
    """A pair's instances mostly complete within Δ: the one engine timer its deadline queue
    keeps (Matcher._expire_queued) skips those, so time passing stops the engine about once
    per Δ of the stream, not once per instance begun (the per-event rate of
    benchmarks/pattern_shapes.py's esper_pair, whose every event has its own timestamp) —
    and the matches, open instances and saved state are the token path's."""
    text = ("@Name('P')\ninsert into P\nfrom pattern [every a = A -> b = B(a.k = b.k) "
            "where timer:within(1 sec)];\n")
    prog = load_module(parse_epl(SCHEMA + text))
    evs = []
    for i in range(300):  # (every A met by a B of its key 5 ms later, but the last 20)
        evs.append(Event("A", (i % 4, 0, 0.0, "x"), 10 * i))
        if i < 280:
            evs.append(Event("B", (i % 4, 0, 0.0, "x"), 10 * i + 5))
    ref = Engine(prog, fast_path=False)
    expected = rows([m for e in evs for m in ref.process(
        Event(e.type, e.params, e.ts))])
    engine = Engine(prog)
    m = engine.matchers[0]
    fired = []
    on_deadline = m.on_deadline

    def counted(*args) -> None:
        fired.append(args)
        on_deadline(*args)

    m.on_deadline = counted
    assert rows([c for e in evs for c in engine.process(e)]) == expected
    assert len(fired) <= 3 + (evs[-1].ts - evs[0].ts) // 1000, len(fired)
    assert state(engine) == state(ref) and engine.stats == ref.stats
    # (the open instances still expire: time runs past the last ones' deadlines)
    assert rows(engine.advance_to(10_000)) == rows(ref.advance_to(10_000)) == []
    assert engine.partial_matches() == ref.partial_matches() == {"P": 0}
