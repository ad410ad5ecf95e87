"""Confidence intervals for comparing runs: Wilson and Clopper-Pearson intervals of a proportion,
Newcombe's interval of a difference of two, and a vectorised paired bootstrap of means.

Pure numpy and scipy: :mod:`dashboard.compare` applies them per slice and component.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from scipy import stats

BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0
CONFIDENCE = 0.95
#: Slices with more instances than this use the normal approximation (mean ± z·sd/√n),
#: which the percentile bootstrap of a mean converges to.
BOOTSTRAP_MAX_UNITS = 2000


def _z(confidence: float) -> float:
    return float(stats.norm.ppf(0.5 + confidence / 2.0))


def wilson_interval(successes, trials, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for proportions (vectorised; NaN where there are no trials)."""
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    z = _z(confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denom = 1.0 + z * z / n
        centre = (p + z * z / (2.0 * n)) / denom
        half = z * np.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n)) / denom
    low = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    high = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return low, high


def clopper_pearson_interval(successes, trials, confidence: float = CONFIDENCE) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper-Pearson) binomial interval, vectorised with ``scipy.stats.beta``."""
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    alpha = 1.0 - confidence
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, stats.beta.ppf(alpha / 2.0, k, n - k + 1.0), 0.0)
        high = np.where(k < n, stats.beta.ppf(1.0 - alpha / 2.0, k + 1.0, n - k), 1.0)
    return np.where(n > 0, low, np.nan), np.where(n > 0, high, np.nan)


def newcombe_difference(k_a, n_a, k_b, n_b, confidence: float = CONFIDENCE):
    """Difference of two independent proportions ``p_b - p_a`` with Newcombe's hybrid
    score interval (method 10 of Newcombe 1998, from the two Wilson intervals)."""
    k_a, n_a, k_b, n_b = (np.asarray(x, dtype=np.float64) for x in (k_a, n_a, k_b, n_b))
    with np.errstate(invalid="ignore", divide="ignore"):
        p_a, p_b = k_a / n_a, k_b / n_b
    l_a, u_a = wilson_interval(k_a, n_a, confidence)
    l_b, u_b = wilson_interval(k_b, n_b, confidence)
    delta = p_b - p_a
    low = delta - np.sqrt((p_b - l_b) ** 2 + (u_a - p_a) ** 2)
    high = delta + np.sqrt((u_b - p_b) ** 2 + (p_a - l_a) ** 2)
    return delta, low, high


def bootstrap_means(
    values: np.ndarray,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int | Sequence[int] = BOOTSTRAP_SEED,
    confidence: float = CONFIDENCE,
    max_units: int = BOOTSTRAP_MAX_UNITS,
    normal: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """Percentile bootstrap CIs of the column means of ``values`` (units x columns, NaN skipped).

    All columns share the same resampled units (a paired bootstrap). Vectorised: one
    ``resamples x units`` weight matrix (multinomial counts), then two matrix products.
    Returns (mean, low, high, method); low/high are NaN for columns with < 2 values.
    ``normal`` forces (True) or forbids (False) the normal approximation; by default
    it is used above ``max_units`` units.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    n, _ = values.shape
    valid = ~np.isnan(values)
    counts = valid.sum(axis=0)
    filled = np.where(valid, values, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(axis=0) / counts
    alpha = 1.0 - confidence
    if normal is None:
        normal = n > max_units
    if normal:
        centred = np.where(valid, values - mean, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            sd = np.sqrt((centred**2).sum(axis=0) / (counts - 1))
            half = _z(confidence) * sd / np.sqrt(counts)
        low, high = mean - half, mean + half
        method = "normal approximation"
    else:
        rng = np.random.default_rng(seed)
        picks = rng.integers(0, n, size=(resamples, n)) if n else np.zeros((resamples, 0), dtype=np.int64)
        flat = (np.arange(resamples, dtype=np.int64)[:, None] * n + picks).ravel()
        weights = np.bincount(flat, minlength=resamples * n).reshape(resamples, n).astype(np.float64)
        sums = weights @ filled
        taken = weights @ valid.astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = sums / taken
        if n:
            with warnings.catch_warnings():  # a component with no value at all: NaN interval, said below
                warnings.simplefilter("ignore", RuntimeWarning)
                low, high = np.nanquantile(means, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
        else:
            low, high = mean, mean
        method = f"paired bootstrap ({resamples:,})"
    few = counts < 2
    low = np.where(few, np.nan, low)
    high = np.where(few, np.nan, high)
    return mean, low, high, method


__all__ = [
    "BOOTSTRAP_MAX_UNITS",
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "CONFIDENCE",
    "bootstrap_means",
    "clopper_pearson_interval",
    "newcombe_difference",
    "wilson_interval",
]
