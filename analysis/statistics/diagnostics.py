"""Checks of the tests' assumptions beside each effect (on PLT by default).

Each trial's log value minus its site's mean log value for the same network and
setting (its residual) carries what the site does not explain. Per network x
setting: failures (failed trials are left out of every statistic: the setting
that fails more loses its slowest loads), the share of outliers (|robust z| >
3.5 on the residuals, Iglewicz & Hoaglin 1993), the within-site SD, and drift:
the residuals' slope over `started_at` (% per hour, OLS). Per network: position
within the run block (the settings of a site run back to back; does the first
or the last load differ?), a one-way ANOVA of the residuals by position. Per
pair x network: Brown-Forsythe's test of equal variances (Brown & Forsythe
1974; Levene's test centred on the median) on the two settings' residuals,
and the ratio of their SDs: where it is far from 1, Welch's test, not the
ANOVA, is the one to read.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from analysis.statistics.stats import sort_pairs, sort_table
from results_contract.schema import METRICS, OK

OUTLIER_Z = 3.5
"""|robust z| above which a residual counts as an outlier (Iglewicz & Hoaglin)."""

GROUP_COLUMNS = ["network", "setting", "trials", "failed", "failed_share", "outlier_share",
                 "sd_within", "drift_per_hour", "drift_p"]


def with_residuals(trials: pd.DataFrame, metric: str = "plt") -> pd.DataFrame:
    """The ok trials with a value of `metric`, with columns res (log residual within
    site x network x setting), hours (since the campaign's first start) and position
    (0-based place of the trial in its site x network x run block, by started_at)."""
    col = METRICS[metric]
    ok = trials[(trials["status"] == OK) & (trials[col] > 0)].copy()
    logv = np.log(ok[col].astype(float))
    ok["res"] = logv - logv.groupby([ok["site"], ok["network"], ok["setting"]],
                                    observed=True).transform("mean")
    started = pd.to_datetime(trials["started_at"], utc=True, errors="coerce")
    ok["hours"] = (started.loc[ok.index] - started.min()).dt.total_seconds() / 3600
    ok["position"] = ok.groupby(["site", "network", "run"], observed=True)["hours"].rank(
        method="first") - 1
    return ok


def group_checks(trials: pd.DataFrame, metric: str = "plt") -> pd.DataFrame:
    """Per network x setting: trials, failed (count, share), outlier share, within-site SD
    of log values, drift (slope of the residuals over time, % per hour) and its p."""
    ok = with_residuals(trials, metric)
    counts = trials.groupby(["network", "setting"], observed=True)["status"].agg(
        trials="size", failed=lambda s: int((s != OK).sum()))
    rows = []
    for (network, protocol), g in ok.groupby(["network", "setting"], observed=True):
        res = g["res"].to_numpy()
        mad = np.median(np.abs(res - np.median(res)))
        z = 0.6745 * (res - np.median(res)) / mad if mad > 0 else np.zeros_like(res)
        slope, p = np.nan, np.nan
        if g["hours"].nunique() > 2:
            fit = stats.linregress(g["hours"], res)
            slope, p = float(np.expm1(fit.slope)), float(fit.pvalue)
        rows.append((network, protocol, float(np.mean(np.abs(z) > OUTLIER_Z)),
                     float(np.sqrt(np.sum(res**2) / max(len(res) - g["site"].nunique(), 1))),
                     slope, p))
    out = pd.DataFrame(rows, columns=["network", "setting", "outlier_share", "sd_within",
                                      "drift_per_hour", "drift_p"])
    out = counts.reset_index().merge(out, on=["network", "setting"], how="left")
    out["failed_share"] = out["failed"] / out["trials"]
    return sort_table(out[GROUP_COLUMNS])


def position_checks(trials: pd.DataFrame, metric: str = "plt") -> pd.DataFrame:
    """Per network: the mean residual (ratio - 1) of the first and the last trial of the
    run blocks, the largest |mean| over positions, and the one-way ANOVA p across
    positions."""
    ok = with_residuals(trials, metric)
    rows = []
    for network, g in ok.groupby("network", observed=True):
        by = g.groupby("position")["res"]
        means = by.mean()
        samples = [s.to_numpy() for _, s in by if len(s) >= 2]
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            p = float(stats.f_oneway(*samples).pvalue) if len(samples) >= 2 else np.nan
        rows.append((network, len(means), float(np.expm1(means.iloc[0])),
                     float(np.expm1(means.iloc[-1])), float(np.expm1(means.abs().max())), p))
    return sort_table(pd.DataFrame(rows, columns=["network", "positions", "first", "last",
                                                  "largest", "p"]))


def variance_checks(trials: pd.DataFrame, pairs: Sequence[tuple[str, str]],
                    metric: str = "plt") -> pd.DataFrame:
    """Per pair x network: the within-site SDs of log values of a and b, their ratio and
    the Brown-Forsythe test's p (equal variances)."""
    ok = with_residuals(trials, metric)
    rows = []
    for a, b in pairs:
        for network, g in ok.groupby("network", observed=True):
            ra = g.loc[g["setting"] == a, "res"].to_numpy()
            rb = g.loc[g["setting"] == b, "res"].to_numpy()
            if len(ra) < 3 or len(rb) < 3:
                continue
            p = float(stats.levene(ra, rb, center="median").pvalue)
            sa, sb = float(np.std(ra, ddof=1)), float(np.std(rb, ddof=1))
            rows.append((a, b, network, sa, sb, sa / sb if sb > 0 else np.nan, p))
    out = pd.DataFrame(rows, columns=["a", "b", "network", "sd_a", "sd_b", "sd_ratio", "p"])
    return sort_pairs(out, list(pairs)) if len(out) else out


def failures_beside(table: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """`table` (columns a, b, network, ...: an effect per row) with the failed trials of
    each side beside each effect: failed_a, failed_b (counts of trials that did not
    end ok, so are left out of the effect) and their shares of the side's trials, after
    the keys (a, b, network, metric)."""
    if table is None or table.empty or "network" not in table.columns:
        return table
    counts = trials.groupby(["network", "setting"], observed=True)["status"].agg(
        trials="size", failed=lambda x: int((x != OK).sum()))
    out = table.copy()
    at = list(out.columns).index("metric") + 1 if "metric" in out.columns else 3
    for side in ("a", "b"):
        key = pd.MultiIndex.from_arrays([out["network"], out[side]])
        found = counts.reindex(key)
        failed = found["failed"].fillna(0).astype(int).to_numpy()
        total = found["trials"].to_numpy(dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = failed / total
        out.insert(at, f"failed_share_{side}", share)
        out.insert(at, f"failed_{side}", failed)
        at += 2
    return out
