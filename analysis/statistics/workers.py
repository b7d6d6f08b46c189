"""Results per worker: whether the machines of a campaign on several workers agree.

A campaign run on a Dask cluster records in each trial's `worker` column the
worker that measured it (`<host>/<worker id>`; `<host>/local` in-process). When
workers' machines differ (a calibration off by more than its tolerance, another
CPU), the same setting can look faster on one of them; `testbed report
--by-worker` shows it:

    by_worker(trials)            # network x setting x worker: n, PLT mean, median
    worker_tests(trials)         # network x setting: do the workers agree (within sites)
    worker_shifts(ok)            # each worker against the others, site by site: TOST
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.statistics.across import DEFAULT_MARGIN, EQUIVALENCE_COLUMNS, equivalence
from analysis.statistics.stats import DEFAULT_ALPHA
from results_contract.manifest import Manifest
from results_contract.schema import OK, networks_in, settings_in

METRIC = "plt_ms"
KEYS = ["network", "setting", "worker"]


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
    sets = settings_in(df["setting"])
    return (df.assign(_n=df["network"].map(nets.index), _p=df["setting"].map(sets.index))
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


def residuals(ok: pd.DataFrame) -> pd.Series:
    """log PLT minus its site's mean log PLT for the same network and setting: what is
    left once the site is accounted for (the test stratifies by site)."""
    logv = np.log(ok[METRIC].astype(float))
    return logv - logv.groupby([ok["site"], ok["network"], ok["setting"]],
                               observed=True).transform("mean")


def worker_shifts(ok: pd.DataFrame, margin: float = DEFAULT_MARGIN,
                  alpha: float = DEFAULT_ALPHA) -> pd.DataFrame:
    """Per network x setting x worker: per site, the worker's mean log residual minus the
    other workers' (sites both measured); across those sites the shift (ratio - 1)
    and two one-sided tests at ±margin (analysis.statistics.across.equivalence)."""
    cols = ["network", "setting", "worker", *EQUIVALENCE_COLUMNS]
    ok = ok.assign(res=residuals(ok))
    rows = []
    for (network, protocol), g in ok.groupby(["network", "setting"], sort=False,
                                             observed=True):
        means = g.groupby(["site", "worker"], observed=True)["res"].agg(["sum", "count"])
        site_sum = means.groupby(level="site")["sum"].transform("sum")
        site_n = means.groupby(level="site")["count"].transform("sum")
        others = (site_sum - means["sum"]) / (site_n - means["count"])
        d = (means["sum"] / means["count"] - others).dropna()
        for worker, dw in d.groupby(level="worker"):
            if dw.index.get_level_values("site").nunique() < 2:
                continue
            e = equivalence(dw.to_numpy(dtype=float), margin, alpha)
            rows.append((network, protocol, worker, *(e[c].item() if hasattr(e[c], "item")
                                                      else e[c] for c in EQUIVALENCE_COLUMNS)))
    return pd.DataFrame(rows, columns=cols)


def worker_tests(trials: pd.DataFrame, alpha: float = DEFAULT_ALPHA,
                 margin: float = DEFAULT_MARGIN) -> pd.DataFrame:
    """Per network x setting measured by two or more workers: a one-way ANOVA across
    workers of the log PLT residuals within sites (site-stratified: a worker that
    measured slower sites is not called slower), p < alpha: 'differ', else 'agree';
    the spread of the workers' medians (ms); the largest worker shift (ratio - 1) and
    the equivalence verdict of the worst worker at ±margin (`worker_shifts`):
    'different' if any is, else 'inconclusive' if any is, else 'equivalent'."""
    from scipy import stats

    cols = ["network", "setting", "workers", "median_spread_ms", "p", "verdict",
            "largest_shift", "equivalence", "margin"]
    ok = _ok(trials)
    shifts = worker_shifts(ok, margin, alpha)
    ok = ok.assign(res=residuals(ok))
    rows = []
    for (network, protocol), g in ok.groupby(["network", "setting"], sort=False,
                                             observed=True):
        groups = [s for _, s in g.groupby("worker", observed=True) if len(s) >= 2]
        if len(groups) < 2:
            continue
        medians = [float(s[METRIC].median()) for s in groups]
        with np.errstate(all="ignore"):
            p = float(stats.f_oneway(*[s["res"].to_numpy() for s in groups]).pvalue)
        sh = shifts[(shifts["network"] == network) & (shifts["setting"] == protocol)]
        worst = next((v for v in ("different", "inconclusive", "equivalent")
                      if (sh["verdict"] == v).any()), "inconclusive")
        rows.append({"network": network, "setting": protocol, "workers": len(groups),
                     "median_spread_ms": max(medians) - min(medians),
                     "p": p if np.isfinite(p) else 1.0,
                     "verdict": "differ" if np.isfinite(p) and p < alpha else "agree",
                     "largest_shift": (sh["shift"].iloc[sh["shift"].abs().argmax()]
                                       if len(sh) else np.nan),
                     "equivalence": worst, "margin": margin})
    if not rows:
        return pd.DataFrame(columns=cols)
    return _sorted(pd.DataFrame(rows))[cols]


def calibrations(manifest: Manifest | None) -> pd.DataFrame:
    """The manifest's calibrated minimum RTT per worker and network (ms)."""
    cols = ["worker", "network", "min_rtt_ms"]
    rows = []
    workers = manifest.workers if manifest is not None else {}
    for worker, info in sorted(workers.items()):
        for network, cal in sorted(info.calibration.items()):
            if cal.min_rtt_ms is not None:
                rows.append({"worker": worker, "network": network,
                             "min_rtt_ms": float(cal.min_rtt_ms)})
    df = pd.DataFrame(rows, columns=cols)
    if df.empty:
        return df
    nets = networks_in(df["network"])
    return df.assign(_n=df["network"].map(nets.index)).sort_values(["_n", "worker"]).drop(
        columns="_n").reset_index(drop=True)
