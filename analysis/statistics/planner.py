"""How many runs a campaign needs: from a pilot's variance, the runs per setting (at
each site) that detect a difference of X %, X ms or X RTTs with a two-sided
two-sample t test (the ANOVA with two groups) at alpha with power 0.8.

The pilot's within-site variance is pooled over its sites and settings per
network: in ms (the median over site x setting groups of their SD, since the
spread grows with the load time) and on the log scale (differences in %). The
same variance gives `power`: the chance that n runs find a difference of a
given size (statsmodels' TTestIndPower, Cohen 1988).

Across sites (analysis.statistics.across: a one-sample t test over the sites' log ratios)
the replicates are the sites: `across_power`, `sites_needed` and
`across_runs_needed` (more runs shrink only the run noise in each site's log
ratio, not the sites' own spread), per pair and network by `across_plan`.
For `testbed compare`'s equivalence test (TOST at ±2 %): `equivalence_runs`
and `equivalence_power`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.power import TTestIndPower, TTestPower

from analysis.statistics.inference import POWER_TARGET
from analysis.statistics.stats import sort_pairs, sort_table
from results_contract.schema import METRICS, OK

MAX_RUNS = 100_000


def pilot_spread(trials: pd.DataFrame, metric: str = "plt") -> pd.DataFrame:
    """Per network of a pilot: groups (site x setting with two runs or more), the median
    within-group SD in ms, the pooled within-group SD of log values, the median
    mean (ms) and the network's RTT (ms)."""
    col = METRICS[metric]
    ok = trials[(trials["status"] == OK) & (trials[col] > 0)]
    rows = []
    for network, g in ok.groupby("network", observed=True):
        by = g.groupby(["site", "setting"], observed=True)[col]
        n, sd, mean = by.count(), by.std(), by.mean()
        keep = n >= 2
        logv = np.log(g[col].astype(float))
        res = logv - logv.groupby([g["site"], g["setting"]], observed=True).transform("mean")
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
    """The chance that the across-site test (analysis.statistics.across: a one-sample t test over
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


def equivalence_runs(sd_one: float, sites: int, margin: float, alpha: float,
                     power: float = POWER_TARGET) -> float:
    """Runs per setting and site, in each of two campaigns, for `testbed compare`'s
    equivalence test (two one-sided t tests across `sites` sites at `alpha`, margin
    ±`margin`, analysis.statistics.across.equivalence) to say "equivalent" with probability
    `power` when the two campaigns measure the same thing. `sd_one`: the SD over
    sites of the difference of the campaigns' log ratios with one run per setting
    (2 x a pilot's within-site SD of log values: four means of one run each; or an
    observed SD of the per-site differences times the square root of its runs). The
    shift's SE is sd_one / sqrt(sites x runs), and TOST succeeds when the shift
    plus t(1 - alpha, sites - 1) SEs lies within the margin: with a true shift of 0
    that has probability about 2 Phi(bound / SE - t) - 1 (the SE's own error is
    left out, so it is a little optimistic with few sites; checked on synthetic
    campaigns in tests/unit/test_compare.py)."""
    if not (sd_one > 0) or sites < 2 or not (margin > 0):
        return float("nan")
    quantiles = stats.t.isf(alpha, sites - 1) + stats.norm.isf((1 - power) / 2)
    runs = (sd_one * quantiles / np.log1p(margin)) ** 2 / sites
    return float(min(np.ceil(runs), MAX_RUNS))


def equivalence_power(sd_one: float, sites: int, runs: float, margin: float,
                      alpha: float) -> float:
    """The chance that `equivalence_runs`'s test says "equivalent" with `runs` runs per
    setting and site in each campaign when both measure the same thing (its
    approximation, the other way round)."""
    if not (sd_one > 0) or sites < 2 or not (runs > 0):
        return float("nan")
    se = sd_one / np.sqrt(sites * runs)
    reach = np.log1p(margin) / se - stats.t.isf(alpha, sites - 1)
    return float(max(2 * stats.norm.cdf(reach) - 1, 0.0))


def across_runs_needed(sites: int, difference: float, between: float, within: float,
                       alpha: float, power: float = POWER_TARGET) -> float:
    """Runs per setting and site for the across-site test on `sites` sites to find
    `difference` (log) with probability `power`, when the sites' true effects spread
    with SD `between` and one run's log value with SD `within` (a site's log ratio
    then has variance between^2 + 2 within^2 / runs). NaN when no number of runs
    does: the sites' own spread alone is too large, more sites are needed."""
    if not (within > 0) or sites < 2 or not (difference > 0):
        return float("nan")
    between = between if between > 0 else 0.0
    if across_power(sites, difference, max(between, 1e-12), alpha) < power:
        return float("nan")
    low, high = 1, 2
    while across_power(sites, difference, np.hypot(between, within * np.sqrt(2 / high)),
                       alpha) < power:
        low, high = high, high * 2
        if high > MAX_RUNS:
            return float("nan")
    while high - low > 1:  # smallest runs with enough power, by bisection
        mid = (low + high) // 2
        enough = across_power(sites, difference, np.hypot(between, within * np.sqrt(2 / mid)),
                              alpha) >= power
        low, high = (low, mid) if enough else (mid, high)
    return float(high)


ACROSS_COLUMNS = ["a", "b", "network", "sites", "runs", "sd_sites", "sd_between",
                  "power_now", "sites_needed", "runs_needed"]


def across_plan(sites: pd.DataFrame, spread: pd.DataFrame, alpha: float = 0.01,
                percent: float = 0.03, target: float = POWER_TARGET,
                metric: str = "plt") -> pd.DataFrame:
    """Per pair x network of a pilot, for the across-site test (analysis.statistics.across) to find
    a true across-site effect of `percent`: the sites, their runs (median), the SD of
    the sites' log ratios (sd_sites) and of their true effects once the run noise is
    taken out (sd_between, from the pilot's within-site SD: `spread`, pilot_spread),
    the power with these sites and runs, the sites needed at these runs and the runs
    per setting needed with these sites (NaN: more sites needed). `sites`:
    analysis.statistics.across.site_table."""
    d = sites[sites["metric"] == metric]
    within = spread.set_index("network")["sd_log"]
    diff = float(np.log1p(percent))
    rows = []
    for (a, b, network), g in d.groupby(["a", "b", "network"], sort=False, observed=True):
        if len(g) < 3 or network not in within.index:
            continue
        sd = float(g["d"].std(ddof=1))
        noise = float(np.mean(within[network] ** 2 * (1 / g["n_a"] + 1 / g["n_b"])))
        between = float(np.sqrt(max(sd**2 - noise, 0.0)))
        rows.append((a, b, network, len(g), float(np.median(np.r_[g["n_a"], g["n_b"]])), sd,
                     between, across_power(len(g), diff, sd, alpha),
                     sites_needed(diff, sd, alpha, target),
                     across_runs_needed(len(g), diff, between, float(within[network]), alpha,
                                        target)))
    out = pd.DataFrame(rows, columns=ACROSS_COLUMNS)
    if len(out):
        out = sort_pairs(out, list(dict.fromkeys(zip(d["a"], d["b"]))))
    out.attrs.update(alpha=alpha, percent=percent, power=target)
    return out


def plan(trials: pd.DataFrame, alpha: float = 0.01, percent: float = 0.05,
         ms: float | None = None, rtts: float = 1.0, metric: str = "plt",
         target: float = POWER_TARGET, margin: float = 0.02) -> pd.DataFrame:
    """Per network of the pilot `trials`: runs per setting to detect `rtts` RTTs (in ms
    at the network's RTT), `percent` (a ratio - 1) and, if given, `ms`, at `alpha` with
    power `target`, and the runs per setting each of two campaigns of the pilot's
    sites needs for `testbed compare` to call them equivalent within ±`margin`
    (runs_equivalence), beside the pilot's spread."""
    spread = pilot_spread(trials, metric)
    ok = trials[trials["status"] == OK]
    site_count = ok.groupby("network", observed=True)["site"].nunique()
    spread["runs_equivalence"] = [
        equivalence_runs(2 * s, int(site_count.get(n, 0)), margin, alpha, target)
        for n, s in zip(spread["network"], spread["sd_log"])]
    spread["runs_rtt"] = [runs_needed(rtts * r, s, alpha, target)
                          for r, s in zip(spread["rtt_ms"], spread["sd_ms"])]
    spread["runs_percent"] = [runs_needed(np.log1p(percent), s, alpha, target)
                              for s in spread["sd_log"]]
    if ms is not None:
        spread["runs_ms"] = [runs_needed(ms, s, alpha, target) for s in spread["sd_ms"]]
    spread["runs_equivalence"] = spread.pop("runs_equivalence")  # last
    spread.attrs.update(alpha=alpha, percent=percent, ms=ms, rtts=rtts, power=target,
                        margin=margin)
    return spread
