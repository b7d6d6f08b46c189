"""Results per worker: whether the machines of a campaign on several workers agree.

A campaign run on a Dask cluster records in each trial's `worker` column the
worker that measured it (`<host>/<worker id>`; `<host>/local` in-process). When
workers' machines differ (a calibration off by more than its tolerance, another
CPU), the same setting can look faster on one of them; `testbed report
--by-worker` shows it:

    by_worker(trials)            # network x setting x worker: n, PLT mean, median
    worker_tests(trials)         # network x setting: Kruskal-Wallis across workers
"""

from __future__ import annotations

import pandas as pd

from analysis.schema import OK, networks_in, settings_in

METRIC = "plt_ms"
KEYS = ["network", "protocol", "worker"]


def workers(trials: pd.DataFrame) -> pd.Series:
    """Each trial's worker; missing (a store made before workers were recorded) is
    "(not recorded)"."""
    if "worker" not in trials.columns:
        return pd.Series("(not recorded)", index=trials.index, dtype="string")
    return trials["worker"].astype("string").fillna("(not recorded)")


def _ok(trials: pd.DataFrame) -> pd.DataFrame:
    ok = trials[(trials["status"] == OK) & trials[METRIC].notna()]
    return ok.assign(worker=workers(ok))


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
    nets = networks_in(df["network"])
    sets = settings_in(df["protocol"])
    return (df.assign(_n=df["network"].map(nets.index), _p=df["protocol"].map(sets.index))
            .sort_values(["_n", "_p", *(["worker"] if "worker" in df.columns else [])])
            .drop(columns=["_n", "_p"]).reset_index(drop=True))


def by_worker(trials: pd.DataFrame) -> pd.DataFrame:
    """Per network x setting x worker over ok trials: n, PLT mean and median (ms)."""
    cols = [*KEYS, "n", "plt_mean_ms", "plt_median_ms"]
    ok = _ok(trials)
    if ok.empty:
        return pd.DataFrame(columns=cols)
    out = (ok.groupby(KEYS, sort=False, observed=True)[METRIC]
           .agg(n="count", plt_mean_ms="mean", plt_median_ms="median").reset_index())
    return _sorted(out)[cols]


def worker_tests(trials: pd.DataFrame) -> pd.DataFrame:
    """Per network x setting measured by two or more workers: the Kruskal-Wallis test of
    PLT across workers (p < 0.05: the workers disagree), and the spread of their
    medians (largest minus smallest, ms)."""
    from scipy import stats

    cols = ["network", "protocol", "workers", "median_spread_ms", "p", "verdict"]
    ok = _ok(trials)
    rows = []
    for (network, protocol), g in ok.groupby(["network", "protocol"], sort=False,
                                             observed=True):
        samples = [s[METRIC].to_numpy() for _, s in g.groupby("worker", observed=True)]
        samples = [s for s in samples if len(s) >= 2]
        if len(samples) < 2:
            continue
        medians = [float(pd.Series(s).median()) for s in samples]
        try:
            p = float(stats.kruskal(*samples).pvalue)
        except ValueError:  # every value equal
            p = 1.0
        rows.append({"network": network, "protocol": protocol, "workers": len(samples),
                     "median_spread_ms": max(medians) - min(medians), "p": p,
                     "verdict": "differ" if p < 0.05 else "agree"})
    if not rows:
        return pd.DataFrame(columns=cols)
    return _sorted(pd.DataFrame(rows))[cols]


def calibrations(manifest: dict | None) -> pd.DataFrame:
    """The manifest's calibrated minimum RTT per worker and network (ms)."""
    cols = ["worker", "network", "min_rtt_ms"]
    rows = []
    for worker, info in sorted(((manifest or {}).get("workers") or {}).items()):
        cals = info.get("calibration") if isinstance(info, dict) else None
        for network, cal in sorted((cals or {}).items()):
            if isinstance(cal, dict) and isinstance(cal.get("min_rtt_ms"), (int, float)):
                rows.append({"worker": worker, "network": network,
                             "min_rtt_ms": float(cal["min_rtt_ms"])})
    df = pd.DataFrame(rows, columns=cols)
    if df.empty:
        return df
    nets = networks_in(df["network"])
    return df.assign(_n=df["network"].map(nets.index)).sort_values(["_n", "worker"]).drop(
        columns="_n").reset_index(drop=True)
