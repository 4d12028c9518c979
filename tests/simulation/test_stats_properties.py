"""Listing 31's statistics, Table 3's numbers of runs, Wilson intervals (values and coverage),
estimates, ratios and the sequential mode."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.simulation.monte_carlo import RunResult
from cepflow.simulation.properties import (
    convergence,
    estimate,
    ratios,
    required_runs,
    run_until_precise,
    wilson_interval,
    z_value,
)
from cepflow.simulation.stats import Summary, stats_csv, summarise

CONFIDENCES = (0.80, 0.85, 0.90, 0.95, 0.98, 0.99)


def result(run: int, seconds: float = 1.0, **counts: int) -> RunResult:
    return RunResult(run, counts, seconds, seconds / 4, 3 * seconds / 4)


def test_statistics_of_a_hand_computed_example() -> None:
    runs = [result(0, 2.0, A=10, B=2), result(1, 1.0, A=12, B=0), result(2, 4.0, A=11, B=5),
            result(3, 3.0, A=11, B=1)]
    rows = summarise(["A", "B"], runs)
    # B: 2, 0, 5, 1 → median (1 + 2) / 2, mean 2, sample sd √(14/3)
    assert rows[1] == Summary("B", 0, 5, 1.5, 2.0, math.sqrt(14 / 3))
    assert stats_csv(rows) == (
        "Event,Min,Max,Median,Mean,Std.Dev\n"
        "A,10,12,11,11,0.816497\n"
        "B,0,5,1.5,2,2.16025\n"
        "Duration,1,4,2.5,2.5,1.29099\n")


def test_listing_31_number_format() -> None:
    # C's %g, six significant digits: Listing 31 prints 4207.64, 301.152, 0.269531
    row = Summary("Motorbike", 2834, 4570, 4320, 4207.640625, 301.15234).row()
    assert row == ("Motorbike", "2834", "4570", "4320", "4207.64", "301.152")
    assert Summary("x", 0, 2, 0, 0.26953125, 0.516911).row()[4] == "0.269531"
    assert Summary.of("one run", [7]).std == 0.0


@pytest.mark.parametrize(("p", "expected"), [
    (0.5, [455, 576, 747, 1067, 1508, 1849]),
    (0.05, [86, 109, 142, 203, 287, 351]),
])
def test_table_3_is_reproduced_exactly(p: float, expected: list[int]) -> None:
    assert [required_runs(c, 0.03, p, formula="seed") for c in CONFIDENCES] == expected
    # (p·q is symmetric: the seed's "p = 0.95" row is the same)
    assert [required_runs(c, 0.03, 1 - p, formula="seed") for c in CONFIDENCES] == expected


def test_the_exact_formula_rounds_up_with_the_exact_z() -> None:
    assert [required_runs(c, 0.03) for c in CONFIDENCES] == [457, 576, 752, 1068, 1504, 1844]
    assert [round(z_value(c), 2) for c in CONFIDENCES] == [1.28, 1.44, 1.64, 1.96, 2.33, 2.58]
    # n is the least number of runs whose normal-approximation half-width is at most d
    for c in CONFIDENCES:
        n = required_runs(c, 0.03, 0.3)
        z = z_value(c)
        assert z * math.sqrt(0.3 * 0.7 / n) <= 0.03 < z * math.sqrt(0.3 * 0.7 / (n - 1))
    with pytest.raises(ValueError):
        required_runs(0.95, 0.03, 0.0)


def test_wilson_interval_known_values() -> None:
    low, high = wilson_interval(5, 10, 0.95)
    assert (round(low, 4), round(high, 4)) == (0.2366, 0.7634)
    low, high = wilson_interval(0, 10, 0.95)
    assert low == 0 and high == pytest.approx(1.96**2 / (10 + 1.96**2), rel=1e-3)
    assert wilson_interval(0, 0, 0.95) == (0.0, 1.0)


REPLICATIONS = 4000


def simulated_coverage(interval, p: float, n: int, confidence: float, seed: int) -> float:
    """The share of ``REPLICATIONS`` simulated sets of ``n`` Bernoulli(``p``) runs whose
    ``interval(hits, n, confidence)`` contains ``p``."""
    hits = np.random.default_rng(seed).binomial(n, p, REPLICATIONS)
    bounds = [interval(k, n, confidence) for k in range(n + 1)]
    return sum(bounds[k][0] <= p <= bounds[k][1] for k in hits) / REPLICATIONS


def sampling_error(confidence: float) -> float:
    """Four standard errors of a simulated coverage near ``confidence``."""
    return 4 * math.sqrt(confidence * (1 - confidence) / REPLICATIONS)


def wald_interval(hits: int, runs: int, confidence: float) -> tuple[float, float]:
    """The normal approximation's interval, which the coverage tests must reject."""
    p, z = hits / runs, z_value(confidence)
    half = z * math.sqrt(p * (1 - p) / runs)
    return (max(0.0, p - half), min(1.0, p + half))


@settings(max_examples=30, deadline=None)
@given(p=st.floats(0.2, 0.8), n=st.integers(60, 400), confidence=st.sampled_from((0.9, 0.95)),
       seed=st.integers(0, 2**32 - 1))
def test_wilson_coverage_is_close_to_nominal(p: float, n: int, confidence: float,
                                             seed: int) -> None:
    """Simulated Bernoulli runs with known p: the interval covers p about as often as its
    confidence says. Wilson's exact coverage stays within 3 points of nominal here (computed
    over the whole range: 0.875-0.926 at 90 %, 0.934-0.966 at 95 %); the 4,000 replications
    add sampling error (4 standard errors). An interval built with the wrong z or the normal
    approximation's variance misses this."""
    covered = simulated_coverage(wilson_interval, p, n, confidence, seed)
    assert abs(covered - confidence) < 0.03 + sampling_error(confidence), covered


#: Wilson's exact coverage for p in [0.01, 0.2] and n in [60, 400] (computed from the binomial
#: distribution on a grid of n by 20 and 150 values of p): it oscillates with n·p but stays in
#: these bounds; its mean over the grid is the nominal level within 0.005
RARE_COVERAGE = {0.90: (0.854, 0.969), 0.95: (0.917, 0.980)}


@settings(max_examples=30, deadline=None)
@given(p=st.floats(0.01, 0.2), n=st.integers(60, 400), confidence=st.sampled_from((0.9, 0.95)),
       seed=st.integers(0, 2**32 - 1))
def test_wilson_coverage_for_rare_properties(p: float, n: int, confidence: float,
                                             seed: int) -> None:
    """The properties worth checking are rare (Table 2: one accident day in hundreds of
    runs): there Wilson's coverage oscillates more around the nominal level, within
    ``RARE_COVERAGE`` (plus sampling error), where the normal approximation's falls far below
    it (next test)."""
    low, high = RARE_COVERAGE[confidence]
    covered = simulated_coverage(wilson_interval, p, n, confidence, seed)
    error = sampling_error(confidence)
    assert low - error < covered < high + error, covered


@pytest.mark.parametrize(("p", "n"), [(0.02, 100), (0.05, 60), (0.01, 200), (0.03, 100)])
def test_the_coverage_tests_reject_the_normal_approximation(p: float, n: int) -> None:
    """The same simulation with Wald's interval fails the rare-property bounds: they are a
    test that can fail."""
    covered = simulated_coverage(wald_interval, p, n, 0.95, seed=1)
    assert covered < RARE_COVERAGE[0.95][0] - sampling_error(0.95), covered
    assert simulated_coverage(wilson_interval, p, n, 0.95, seed=1) > RARE_COVERAGE[0.95][0]


def test_estimates_and_ratios() -> None:
    runs = [result(0, M=100, P=0, C=1), result(1, M=300, P=2, C=0), result(2, M=100, P=1, C=0)]
    e = estimate("P", runs, ["M"], 0.95)
    assert (e.runs, e.hits, e.occurrences, e.simple_events) == (3, 2, 3, 500)
    assert e.probability == 2 / 3 and e.ratio == 3 / 500
    assert (e.low, e.high) == wilson_interval(2, 3, 0.95)
    assert ratios(runs, ["M"], ["P", "C"]) == {"P": 3 / 500, "C": 1 / 500}
    assert convergence("P", runs, 0.95)[:2] == ([1, 2, 3], [0.0, 0.5, 2 / 3])


def test_sequential_mode_stops_at_the_precision() -> None:
    rng = np.random.default_rng(3)
    made: list[range] = []

    def batch(numbers: range) -> list[RunResult]:
        made.append(numbers)
        return [result(r, P=int(rng.random() < 0.2)) for r in numbers]

    results, reached = run_until_precise(batch, ["P"], 0.05, 0.95, 25, 10_000)
    assert reached and made[0] == range(0, 25) and made[1] == range(25, 50)
    hits = sum(r.counts["P"] for r in results)
    low, high = wilson_interval(hits, len(results), 0.95)
    assert (high - low) / 2 <= 0.05
    before = results[:-25]
    b_hits = sum(r.counts["P"] for r in before)
    low, high = wilson_interval(b_hits, len(before), 0.95)
    assert (high - low) / 2 > 0.05  # one batch fewer was not enough
    results, reached = run_until_precise(batch, ["P"], 0.001, 0.95, 25, 60)
    assert not reached and len(results) == 60
