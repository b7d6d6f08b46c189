"""Tests that use the design: the settings of one site and network run back to back in
each run, so a run is a block whose shocks (the replay's, the machine's) all its
settings share.

`paired_tests` pairs each run of setting a with the same run of setting b (runs
missing on either side are left out) and tests the per-run differences: the
paired t test (direction: the mean difference) and the Wilcoxon signed-rank
test (direction: the Hodges-Lehmann pseudo-median of the differences, the
location the test is about). Beside them, on all ok runs, Welch's t test
(unequal variances; direction: the means) and the paper's one-way ANOVA, which
stays the default of the replication table. Batched over sites with the same
number of runs.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from analysis.statistics.inference import pvalues
from analysis.statistics.stats import DEFAULT_ALPHA, sort_pairs

TESTS = {"anova": "one-way ANOVA (paper)", "welch": "Welch's t test",
         "paired_t": "paired t test on the run blocks",
         "wilcoxon": "Wilcoxon signed-rank test on the run blocks"}
COLUMNS = ["a", "b", "network", "metric", "site", "pairs", "mean_diff_ms", "pseudo_median_ms",
           *(f"p_{t}" for t in TESTS), *(f"outcome_{t}" for t in TESTS)]


def walsh_median(d: np.ndarray) -> np.ndarray:
    """Per row: the Hodges-Lehmann pseudo-median, the median of the Walsh averages
    (d_i + d_j) / 2, i <= j."""
    n = d.shape[1]
    i, j = np.triu_indices(n)
    result: np.ndarray = np.median((d[:, i] + d[:, j]) / 2, axis=1)
    return result


def _blocks(meas: pd.DataFrame, pairs: Sequence[tuple[str, str]]) -> Any:
    """Yield (a, b, keys, xa, xb, ya, yb): per pair and group of sites with the same number
    of paired runs: xa, xb the paired runs (same run on both sides, one row a site);
    ya, yb every ok run of each side (for Welch and ANOVA) as lists of arrays."""
    wide = meas.pivot_table(index=["network", "metric", "site", "run"], columns="setting",
                            values="value", aggfunc="first", observed=True)
    for a, b in pairs:
        if a not in wide.columns or b not in wide.columns:
            continue
        sub = wide[[a, b]].dropna(how="all")
        buckets: dict[int, list[Any]] = defaultdict(list)
        for key, g in sub.groupby(level=["network", "metric", "site"], sort=False,
                                  observed=True):
            both = g.dropna()
            buckets[len(both)].append((key, both[a].to_numpy(), both[b].to_numpy(),
                                       g[a].dropna().to_numpy(), g[b].dropna().to_numpy()))
        for n, items in buckets.items():
            if n == 0:  # no run with a value on both sides: nothing to pair
                continue
            yield (a, b, [k for k, *_ in items], np.array([x[1] for x in items]).reshape(-1, n),
                   np.array([x[2] for x in items]).reshape(-1, n), [x[3] for x in items],
                   [x[4] for x in items])


def _unpaired(ya: list[Any], yb: list[Any], test: str) -> np.ndarray:
    """p of `test` per site on all ok runs, batched by the sides' sizes."""
    out = np.full(len(ya), np.nan)
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    for i, (x, y) in enumerate(zip(ya, yb)):
        groups[(len(x), len(y))].append(i)
    for (na, nb), idx in groups.items():
        if na >= 2 and nb >= 2:
            out[idx] = pvalues(np.array([ya[i] for i in idx]), np.array([yb[i] for i in idx]),
                               test)
    return out


def _paired_p(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k, n = d.shape
    if n < 2:
        return np.full(k, np.nan), np.full(k, np.nan)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        t = np.asarray(stats.ttest_1samp(d, 0.0, axis=1).pvalue, dtype=float)
        w = np.full(k, np.nan)
        a = np.abs(d)
        s = np.sort(a, axis=1)
        exact = (n <= 50) & ~(a == 0).any(axis=1) & ~(np.diff(s, axis=1) == 0).any(axis=1)
        for mask, method in ((exact, "exact"), (~exact, "approx")):
            if mask.any():  # with ties or zeros the normal approximation (scipy's
                # permutation fallback takes seconds a site)
                w[mask] = stats.wilcoxon(d[mask], axis=1, zero_method="wilcox",
                                         method=method).pvalue
    flat = np.ptp(d, axis=1) == 0
    t[flat & (d[:, 0] == 0)] = np.nan
    w[np.all(d == 0, axis=1)] = np.nan
    return t, w


def _outcome(p: np.ndarray, direction: np.ndarray, alpha: float, tested: np.ndarray) -> list[Any]:
    sig = np.nan_to_num(p, nan=1.0) < alpha
    result: list[Any] = np.where(~tested, "untested", np.where(sig & (direction < 0), "win",
                                 np.where(sig & (direction > 0), "loss", "tie"))).tolist()
    return result


def paired_tests(meas: pd.DataFrame, pairs: Sequence[tuple[str, str]],
                 alpha: float = DEFAULT_ALPHA) -> pd.DataFrame:
    """Per pair x network x metric x site: runs paired, the mean and pseudo-median of the
    per-run differences a - b (ms), the p of each test in TESTS and its outcome for a
    (win / tie / loss / untested) at `alpha`, each in the direction of its own
    estimate."""
    rows = []
    for a, b, keys, xa, xb, ya, yb in _blocks(meas, pairs):
        d = xa - xb
        n = d.shape[1]
        mean_d = d.mean(axis=1) if n else np.full(len(keys), np.nan)
        pseudo = walsh_median(d) if n else np.full(len(keys), np.nan)
        p_t, p_w = _paired_p(d)
        p_an, p_we = _unpaired(ya, yb, "anova"), _unpaired(ya, yb, "welch")
        diff = np.array([x.mean() - y.mean() if len(x) and len(y) else np.nan
                         for x, y in zip(ya, yb)])
        unpaired_ok = np.array([len(x) >= 2 and len(y) >= 2 for x, y in zip(ya, yb)])
        paired_ok = np.full(len(keys), n >= 2)
        outcomes = [_outcome(p_an, diff, alpha, unpaired_ok),
                    _outcome(p_we, diff, alpha, unpaired_ok),
                    _outcome(p_t, mean_d, alpha, paired_ok),
                    _outcome(p_w, pseudo, alpha, paired_ok)]
        for i, (network, metric, site) in enumerate(keys):
            rows.append((a, b, network, metric, site, n, mean_d[i], pseudo[i], p_an[i],
                         p_we[i], p_t[i], p_w[i], *(o[i] for o in outcomes)))
    out = pd.DataFrame(rows, columns=COLUMNS)
    return sort_pairs(out, list(pairs)) if len(out) else out


def paired_counts(tests: pd.DataFrame) -> pd.DataFrame:
    """Per pair x network x metric: 'wins/ties/losses' of a under each test in TESTS."""
    keys = ["a", "b", "network", "metric"]
    if tests.empty:
        return pd.DataFrame(columns=keys + ["sites", *TESTS])
    g = tests.groupby(keys, sort=False, observed=True)
    out = g.size().rename("sites").reset_index()
    for t in TESTS:
        c = g[f"outcome_{t}"].agg(lambda o: f"{(o == 'win').sum()}/{(o == 'tie').sum()}/"
                                  f"{(o == 'loss').sum()}").rename(t).reset_index()
        out = out.merge(c, on=keys)
    return out
