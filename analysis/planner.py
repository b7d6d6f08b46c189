"""How many runs a campaign needs: from a pilot's variance, the runs per setting (at
each site) that detect a difference of X %, X ms or X RTTs with a two-sided
two-sample t test (the ANOVA with two groups) at alpha with power 0.8.

The pilot's within-site variance is pooled over its sites and settings per
network: in ms (the median over site x setting groups of their SD, since the
spread grows with the load time) and on the log scale (differences in %). The
same variance gives `power`: the chance that n runs find a difference of a
given size (statsmodels' TTestIndPower, Cohen 1988).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from statsmodels.stats.power import TTestIndPower, TTestPower

from analysis.inference import POWER_TARGET
from analysis.schema import METRICS, OK
from analysis.stats import sort_table

MAX_RUNS = 100_000


def pilot_spread(trials: pd.DataFrame, metric: str = "plt") -> pd.DataFrame:
    """Per network of a pilot: groups (site x setting with two runs or more), the median
    within-group SD in ms, the pooled within-group SD of log values, the median
    mean (ms) and the network's RTT (ms)."""
    col = METRICS[metric]
    ok = trials[(trials["status"] == OK) & (trials[col] > 0)]
    rows = []
    for network, g in ok.groupby("network", observed=True):
        by = g.groupby(["site", "protocol"], observed=True)[col]
        n, sd, mean = by.count(), by.std(), by.mean()
        keep = n >= 2
        logv = np.log(g[col].astype(float))
        res = logv - logv.groupby([g["site"], g["protocol"]], observed=True).transform("mean")
        dof = int(n[keep].sum() - keep.sum())
        rows.append((network, int(keep.sum()), float(sd[keep].median()),
                     float(np.sqrt((res**2).sum() / dof)) if dof > 0 else np.nan,
                     float(mean.median()), float(g["rtt_ms"].median())))
    return sort_table(pd.DataFrame(rows, columns=["network", "groups", "sd_ms", "sd_log",
                                                  "mean_ms", "rtt_ms"]))


def runs_needed(difference: float, sd: float, alpha: float,
                power: float = POWER_TARGET) -> float:
    """Runs per setting for a two-sided two-sample t test at `alpha` to find `difference`
    (in the unit of `sd`) with probability `power`; NaN without a spread."""
    if not (sd > 0) or not (difference > 0):
        return float("nan")
    n = TTestIndPower().solve_power(effect_size=difference / sd, alpha=alpha, power=power,
                                    ratio=1.0, alternative="two-sided")
    return float(min(np.ceil(np.asarray(n).item()), MAX_RUNS))


def power(runs: int, difference: float, sd: float, alpha: float) -> float:
    """The chance that `runs` runs per setting find `difference` (unit of `sd`)."""
    return float(TTestIndPower().power(effect_size=difference / sd, nobs1=runs, alpha=alpha,
                                       ratio=1.0, alternative="two-sided"))


def across_power(sites: int, difference: float, sd_sites: float, alpha: float) -> float:
    """The chance that the across-site test (analysis.across: a one-sample t test over
    the sites' log ratios) finds a true across-site `difference` (log scale) with
    `sites` sites, when the sites' log ratios spread with SD `sd_sites` (their own
    reactions and each site's run noise together, as a pilot's site table shows)."""
    if not (sd_sites > 0) or sites < 2:
        return float("nan")
    return float(TTestPower().power(effect_size=difference / sd_sites, nobs=sites, alpha=alpha,
                                    alternative="two-sided"))


def sites_needed(difference: float, sd_sites: float, alpha: float,
                 power: float = POWER_TARGET) -> float:
    """Sites for the across-site test to find `difference` (log) with probability
    `power`; NaN without a spread."""
    if not (sd_sites > 0) or not (difference > 0):
        return float("nan")
    n = TTestPower().solve_power(effect_size=difference / sd_sites, alpha=alpha, power=power,
                                 alternative="two-sided")
    return float(min(np.ceil(np.asarray(n).item()), MAX_RUNS))


def plan(trials: pd.DataFrame, alpha: float = 0.01, percent: float = 0.05,
         ms: float | None = None, rtts: float = 1.0, metric: str = "plt",
         target: float = POWER_TARGET) -> pd.DataFrame:
    """Per network of the pilot `trials`: runs per setting to detect `rtts` RTTs (in ms
    at the network's RTT), `percent` (a ratio - 1) and, if given, `ms`, at `alpha` with
    power `target`, beside the pilot's spread."""
    spread = pilot_spread(trials, metric)
    spread["runs_rtt"] = [runs_needed(rtts * r, s, alpha, target)
                          for r, s in zip(spread["rtt_ms"], spread["sd_ms"])]
    spread["runs_percent"] = [runs_needed(np.log1p(percent), s, alpha, target)
                              for s in spread["sd_log"]]
    if ms is not None:
        spread["runs_ms"] = [runs_needed(ms, s, alpha, target) for s in spread["sd_ms"]]
    spread.attrs.update(alpha=alpha, percent=percent, ms=ms, rtts=rtts, power=target)
    return spread
