"""The intervals Compare reports: published values, scipy's, and a plain bootstrap loop."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from dashboard import intervals

NEWCOMBE_TABLE_II = [  # (k_b, n_b, k_a, n_a) -> method 10 interval, Newcombe (1998) Stat Med 17:873, Table II
    ((56, 70, 48, 80), (0.0524, 0.3339)),
    ((9, 10, 3, 10), (0.1705, 0.8090)),
    ((6, 7, 2, 7), (0.0582, 0.8062)),
    ((5, 56, 0, 29), (-0.0381, 0.1926)),
    ((0, 10, 0, 20), (-0.1611, 0.2775)),
    ((10, 10, 0, 20), (0.6791, 1.0000)),
]


@pytest.mark.parametrize(("counts", "expected"), NEWCOMBE_TABLE_II)
def test_newcombe_interval_reproduces_the_published_table(counts, expected):
    k_b, n_b, k_a, n_a = counts
    delta, low, high = intervals.newcombe_difference(k_a, n_a, k_b, n_b)
    assert delta == pytest.approx(k_b / n_b - k_a / n_a)
    assert (round(float(low), 4), round(float(high), 4)) == expected


def test_wilson_and_clopper_pearson_match_scipy():
    ks = np.array([0, 1, 7, 19, 20])
    low_w, high_w = intervals.wilson_interval(ks, 20)
    low_e, high_e = intervals.clopper_pearson_interval(ks, 20)
    for i, k in enumerate(ks):
        w = binomtest(int(k), 20).proportion_ci(method="wilson")
        e = binomtest(int(k), 20).proportion_ci(method="exact")
        assert (low_w[i], high_w[i]) == pytest.approx((w.low, w.high), abs=1e-12)
        assert (low_e[i], high_e[i]) == pytest.approx((e.low, e.high), abs=1e-12)
    assert np.isnan(intervals.wilson_interval(0, 0)[0]) and np.isnan(intervals.clopper_pearson_interval(0, 0)[1])


def test_bootstrap_equals_a_plain_loop_with_the_same_draws():
    rng = np.random.default_rng(3)
    values = rng.random((37, 3))
    values[[2, 5, 11], 1] = np.nan  # a component some units lack
    values[:, 2] = np.nan
    values[0, 2] = 0.5  # one value only: no interval
    mean, low, high, method = intervals.bootstrap_means(values, resamples=200, seed=[7, 1])
    picks = np.random.default_rng([7, 1]).integers(0, 37, size=(200, 37))
    for j in range(2):
        means = [np.nanmean(values[p, j]) for p in picks]
        assert (low[j], high[j]) == pytest.approx(tuple(np.quantile(means, [0.025, 0.975])), rel=1e-12)
        assert mean[j] == pytest.approx(np.nanmean(values[:, j]))
    assert mean[2] == 0.5 and np.isnan(low[2]) and np.isnan(high[2])
    assert method == "paired bootstrap (200)"


def test_normal_approximation_agrees_with_the_bootstrap_on_large_slices():
    values = np.random.default_rng(0).beta(0.5, 0.5, size=3000) - np.random.default_rng(1).random(3000)
    _, low_b, high_b, _ = intervals.bootstrap_means(values, max_units=10_000)
    _, low_n, high_n, method = intervals.bootstrap_means(values, max_units=100)
    width = high_b[0] - low_b[0]
    assert method == "normal approximation"
    assert abs(low_b[0] - low_n[0]) < 0.05 * width and abs(high_b[0] - high_n[0]) < 0.05 * width
