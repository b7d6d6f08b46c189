"""Empirical CDFs of the relative difference over sites (the paper's figure)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from analysis.statistics.stats import sort_table


def ecdf(values: Any) -> pd.DataFrame:
    """The empirical CDF of `values` (NaN ignored): each distinct value x and P(X <= x)."""
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if values.size == 0:
        return pd.DataFrame({"x": np.array([], dtype=float), "p": np.array([], dtype=float)})
    cdf = stats.ecdf(values).cdf
    return pd.DataFrame({"x": cdf.quantiles, "p": cdf.probabilities})


def relative_cdfs(rel: pd.DataFrame) -> pd.DataFrame:
    """ECDF points of `rel` (from stats.relative_difference) per network x metric x setting."""
    parts = []
    for (network, metric, protocol), group in rel.groupby(["network", "metric", "setting"],
                                                          sort=False, observed=True):
        points = ecdf(group["rel"])
        points.insert(0, "setting", protocol)
        points.insert(0, "metric", metric)
        points.insert(0, "network", network)
        points.insert(3, "sites", int(group["rel"].notna().sum()))
        parts.append(points)
    if not parts:
        return pd.DataFrame(columns=["network", "metric", "setting", "sites", "x", "p"])
    return sort_table(pd.concat(parts, ignore_index=True))
