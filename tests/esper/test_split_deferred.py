"""The program split's matches nothing reads, not made over Arrow batches
(kernels/column_blocks.py, ``ColumnBlocks.defer`` and ``Deferred``): a kernel pair pattern
whose complex events only the output reads hands ``Engine.process_columns`` a block of rows
instead of objects, made only by ``MatchTable.complex_events()`` (or at a row the per-event
part steps). Over random split programs (test_split's and test_split_higher's: kernel
patterns beside window statements, patterns over their output, patterns per event, rules
reading some of them), random streams, batches cut anywhere and a save/restore in the middle,
the column route equals ``Engine.run`` over the same events: the complex events (type, time,
events, parameters, match ids, bindings; lazy or not), the rows ``encode_match_table`` writes
(= ``match_batch`` of Engine.run's list), the statistics, the saved state and the end of
input; and hand-derived rows and ids."""

import itertools
from unittest.mock import patch

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.esper.test_esper_kernel import SCHEMA, state
from tests.esper.test_split import PROGRAMS, program, restored, rows
from tests.esper.test_split_column_blocks import _kind, esper_rows, numbered
from tests.esper.test_split_higher import DENSE, STREAMS, program_of, programs

from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.outputs.records import match_batch
from cepflow.runtime.engine import Engine
from cepflow.runtime.kernels import Declined
from cepflow.runtime.kernels.column_blocks import Deferred
from cepflow.runtime.rows import StageMatches
from cepflow.spark.columns import encode_match_table


def check_deferred(prog, spec, cuts, restore_at) -> int:
    """``Engine.process_columns`` over Arrow batches of ``spec`` (cut at ``cuts`` and at
    ``restore_at``, where both engines are saved and restored) against ``Engine.run`` over
    the same events, batch by batch; how many matches came unmade (deferred blocks)."""
    cols, ref = Engine(prog), Engine(prog)
    if cols._split is None:
        return 0
    restore_at = min(restore_at, len(spec))
    mine, theirs = numbered(spec, restore_at), numbered(spec, restore_at)
    unmade = 0
    for lo, hi in itertools.pairwise(sorted({0, len(spec), restore_at,
                                             *(min(c, len(spec)) for c in cuts)})):
        if lo == restore_at and lo:
            cols, ref = restored(cols, prog), restored(ref, prog)
        expected = list(ref.run(theirs[lo:hi]))
        src = esper_rows(mine[lo:hi])
        try:
            table = cols.process_columns(src)
        except Declined:
            found = list(cols.run(mine[lo:hi]))
        else:
            unmade += sum(len(b.rank) for b in table.blocks
                          if isinstance(b, StageMatches) and b.events is None)
            written = encode_match_table(table, src).to_pylist()
            assert written == (match_batch(expected).to_pylist() if expected else [])
            found = table.complex_events()
            assert table.count == len(expected)
        assert rows(found) == rows(expected)
        assert [_kind(m) for m in found] == [_kind(m) for m in expected]
    assert cols.stats == ref.stats
    assert state(cols) == state(ref)
    assert rows(cols.finish(close_windows=True)) == rows(ref.finish(close_windows=True))
    return unmade


@settings(max_examples=60, deadline=None)
@given(*PROGRAMS)
def test_split_programs_against_engine_run(kernel_stmts, others, spec, cuts, restore_at,
                                           ruled) -> None:
    """test_split's programs: pair, restart and consecutive kernel patterns beside window
    statements, patterns over their rows, time batches, patterns per event, rules."""
    check_deferred(program(kernel_stmts, others, ruled), spec, cuts, restore_at)


@settings(max_examples=80, deadline=None)
@given(st.one_of(programs(), programs(most=0)), st.one_of(STREAMS, DENSE),
       st.lists(st.integers(0, 80), max_size=4), st.integers(0, 80))
def test_patterns_over_kernel_output_against_engine_run(prog_spec, spec, cuts,
                                                        restore_at) -> None:
    """test_split_higher's programs: kernel patterns, some read by patterns over their output
    (made), some by nothing (deferred); without statements per event beside them (``most=0``:
    no input row stepped, so an unread pattern's matches stay unmade) or with some, rules."""
    check_deferred(program_of(*prog_spec), spec, cuts, restore_at)


#: P nothing reads (deferred), Q read by H (made), S per event beside them reading B
UNREAD = ("@Name('P')\ninsert into P\nselect a.k as k, b.v as v, 7 as seven\nfrom pattern "
          "[every a = A -> b = B(b.k = a.k) where timer:within(6 msec)];\n"
          "@Name('Q')\ninsert into Q\nselect a.k as k\nfrom pattern [every a = A(a.v = 9)];\n"
          "@Name('H')\ninsert into H\nselect q.k as k\nfrom pattern "
          "[every q = Q -> c = B(c.k = q.k)];\n")


def _events(spec: list) -> list:
    """``(type, k, v, time)`` as events one time unit apart (the times 1, 2, …)."""
    assert [ts for *_, ts in spec] == list(range(1, len(spec) + 1))
    return numbered([(t, k, v, 0.5, 1) for t, k, v, _ts in spec], 0)


def test_hand_derived_rows_of_a_deferred_pattern() -> None:
    """A1(k=1) A2(k=2, v=9) B3(k=1, v=4) B4(k=2, v=5) A5(k=1) B6(k=1, v=6): P (nothing
    reads it) completes at B3 (A1 B3), B4 (A2 B4) and B6 (A5 B6: A1's instance ended at B3);
    Q at A2; H (over Q) at B4 (Q(2) then B4). Detection order and ids: Q#1 at A2, P#2 at B3,
    P#3 then H#4 at B4 (engine order: P before H), P#5 at B6. P's matches come as one block
    without objects, made by complex_events() with those ids and values."""
    prog = load_module(parse_epl(SCHEMA + UNREAD))
    engine = Engine(prog)
    spec = [("A", 1, 0, 1), ("A", 2, 9, 2), ("B", 1, 4, 3), ("B", 2, 5, 4), ("A", 1, 0, 5),
            ("B", 1, 6, 6), ("A", 3, 0, 7)]
    table = engine.process_columns(esper_rows(_events(spec)))
    # (A7 is left open: its event made for the instance, as per event)
    ref = Engine(prog)
    assert rows(list(ref.run(_events(spec)))) == rows(table.complex_events())
    assert state(engine) == state(ref) and engine.stats == ref.stats
    unmade = [b for b in table.blocks if isinstance(b, StageMatches) and b.events is None]
    assert len(unmade) == 1 and unmade[0].pattern == "P"
    assert unmade[0].rank.tolist() == [1, 2, 4]  # (places in the batch's output)
    assert unmade[0].at.tolist() == [2, 3, 5]  # (the rows B3, B4, B6)
    assert unmade[0].rows.tolist() == [[0, 1, 4], [2, 3, 5]]
    found = table.complex_events()
    assert [(m.type, m.match_id, m.ts, m.params) for m in found] == [
        ("Q", 1, 2, (2,)), ("P", 2, 3, (1, 4, 7)), ("P", 3, 4, (2, 5, 7)), ("H", 4, 4, (2,)),
        ("P", 5, 6, (1, 6, 7))]
    assert found[1].bindings == {"k": 1, "v": 4, "seven": 7}
    assert [e.ts for e in found[4].parts] == [5, 6]
    assert engine.stats.by_pattern == {"Q": 1, "P": 3, "H": 1}


def test_a_plan_of_several_blocks_or_held_instances_is_made() -> None:
    """Deferred only when one block holds every match of the plan: P's instances A1 and A2
    begun in the first batch (cut after A2) complete in the second (A1 B3, A2 B4: events held
    from before, no rows), so all P's matches there are made, A5 B6 too; an unread pattern
    whose last stage has alternatives is made when both complete in the batch (a block per
alternative: A1 A2 by c, A3 B4 by b), deferred when one alone does."""
    prog = load_module(parse_epl(SCHEMA + UNREAD))
    spec = [("A", 1, 0, 1), ("A", 2, 9, 2), ("B", 1, 4, 3), ("B", 2, 5, 4), ("A", 1, 0, 5),
            ("B", 1, 6, 6)]
    assert check_deferred(prog, [(t, k, v, 0.5, 1) for t, k, v, _ts in spec], [2], 0) == 0
    alts = load_module(parse_epl(SCHEMA + UNREAD.replace(
        "b = B(b.k = a.k)", "(b = B(b.k = a.k) or c = A(c.k = a.k and c.v = 7))")))
    spec2 = [("A", 1, 0, 0.5, 1), ("A", 1, 7, 0.5, 1), ("A", 2, 0, 0.5, 1), ("B", 2, 3, 0.5, 1)]
    assert check_deferred(alts, spec2, [], 0) == 0
    # (one alternative's matches alone: one block, deferred — and equal)
    assert check_deferred(alts, spec2[:2], [], 0) == 1


def test_a_stepped_row_makes_the_deferred_matches_at_it() -> None:
    """S runs per event (``and not``: no kernel) and reads A and B, so every row is stepped:
    P's matches at B3, B4 and B6 are emitted by the per-event part's replay as objects, each
    made by the Deferred when its row asks (three made, none left unmade), with the per-event
    ids."""
    prog = load_module(parse_epl(SCHEMA + UNREAD + (
        "@Name('S')\ninsert into S\nselect b.k as k\nfrom pattern [b = B(b.v = 5) and not A];\n")))
    made: list[int] = []
    real = Deferred.__getitem__

    def spy(self, i):
        got = real(self, i)
        made.extend([1] * (len(got) if isinstance(got, list) else 1))
        return got

    spec = [("A", 1, 0, 1), ("A", 2, 9, 2), ("B", 1, 4, 3), ("B", 2, 5, 4), ("A", 1, 0, 5),
            ("B", 1, 6, 6)]
    with patch.object(Deferred, "__getitem__", spy):
        table = Engine(prog).process_columns(esper_rows(_events(spec)))
    ref = list(Engine(prog).run(_events(spec)))
    assert rows(table.complex_events()) == rows(ref)
    assert [m.type for m in ref] == ["Q", "P", "P", "H", "P"]
    assert not [b for b in table.blocks if isinstance(b, StageMatches) and b.events is None]
    assert len(made) == 3


def test_a_read_pattern_is_made() -> None:
    """A rule on P: its matches go somewhere but the output, so they are made (no
    Deferred), and they are the column blocks of the split's objects (kernels.column_blocks)."""
    prog = load_module(parse_epl(SCHEMA + UNREAD))
    from cepflow.language import ast as A

    prog.rules.append(A.RuleDecl("r", (A.PatternRef("P"),), None))
    spec = [("A", 1, 0, 1), ("B", 1, 4, 2)]
    engine = Engine(prog)
    table = engine.process_columns(esper_rows(_events(spec)))
    assert all(b.events is not None for b in table.blocks)
    assert np.array_equal(table.blocks[0].at, [1])
