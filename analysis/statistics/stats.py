"""Statistics over ok trials: per-group summaries, relative differences, ANOVA.

Everything starts from `measurements()`, the one place where trials are
filtered to status 'ok' and turned into one row per (trial, metric) value.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from analysis.statistics import inference
from results_contract import profiles_meta
from results_contract.load import ok_trials
from results_contract.schema import ANALYSED_METRICS, METRICS, networks_in, ordered, settings_in

GROUP = ["site", "network", "setting", "metric"]
"""The keys of one statistics group: a site loaded under one network, setting and metric."""

DEFAULT_ALPHA = 0.01
"""The paper's significance level for the per-site ANOVA."""


def measurements(trials: pd.DataFrame, metrics: Iterable[str] = ANALYSED_METRICS) -> pd.DataFrame:
    """One row per ok trial and metric: site, network, protocol, run, metric, value (ms).

    Failed trials are dropped here, explicitly; a metric an ok trial lacks is
    dropped for that trial only.
    """
    metrics = list(metrics)
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metric(s) {', '.join(unknown)}; known: {', '.join(METRICS)}")
    ok = ok_trials(trials)
    long = ok.melt(id_vars=["site", "network", "setting", "run"],
                   value_vars=[METRICS[m] for m in metrics], var_name="metric", value_name="value")
    long["metric"] = long["metric"].map({METRICS[m]: m for m in metrics}).astype("string")
    return long.dropna(subset=["value"]).reset_index(drop=True)


def timeouts(trials: pd.DataFrame, metrics: Iterable[str] = ANALYSED_METRICS) -> pd.DataFrame:
    """Rows as `measurements` makes them for the failed trials whose reason is a timeout,
    with value +inf: a load that never finished is slower than every one that did.
    Rank tests take them as their worst value instead of losing them (dropping them
    makes the setting that times out more look faster); tests on means cannot."""
    metrics = list(metrics)
    kind = trials["reason"].astype("string").str.split(":").str[0].str.strip()
    t = trials[(trials["status"] != "ok") & (kind == "timeout").fillna(False)]
    rows = t[["site", "network", "setting", "run"]].merge(
        pd.DataFrame({"metric": pd.array(metrics, dtype="string")}), how="cross")
    return rows.assign(value=np.inf)


def rank_input(meas: pd.DataFrame, timed_out: pd.DataFrame | None, test: str) -> pd.DataFrame:
    """`meas` with the timeouts (`timeouts`) of its site x network x setting x metric
    groups added when `test` is a rank test; `meas` otherwise."""
    if test not in inference.RANK_TESTS or timed_out is None or timed_out.empty:
        return meas
    keys = ["site", "network", "setting", "metric"]
    present = meas[keys].drop_duplicates()
    extra = timed_out.merge(present, on=keys, how="inner")
    return pd.concat([meas, extra[meas.columns]], ignore_index=True)


def sort_table(df: pd.DataFrame) -> pd.DataFrame:
    """Rows in the paper's order: network, then site, setting(s), metric."""
    keys, rank = [], {}
    for column, order in (("network", networks_in(df.get("network", ()))),
                          ("site", sorted(set(df.get("site", ())))),
                          ("a", settings_in(df.get("a", ()))),
                          ("b", settings_in(df.get("b", ()))),
                          ("setting", settings_in(df.get("setting", ()))),
                          ("metric", ordered(df.get("metric", ()), METRICS))):
        if column in df.columns:
            keys.append(column)
            rank[column] = {name: i for i, name in enumerate(order)}
    if not keys:
        return df.reset_index(drop=True)
    return df.sort_values(keys, key=lambda s: s.map(rank[s.name]), kind="stable",
                          ignore_index=True)


def summarize(meas: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per site x network x setting x metric: n, mean, median, std and the mean's CI.

    The CI is Student's t interval, mean +- t(n-1) * std / sqrt(n) (std with
    ddof=1); it is NaN for groups of one value.
    """
    g = meas.groupby(GROUP, sort=False, observed=True)["value"]
    s = g.agg(n="count", mean="mean", median="median", std="std").reset_index()
    n = s["n"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = stats.t.ppf(0.5 + confidence / 2, n - 1)
        half = t * s["std"].to_numpy() / np.sqrt(n)
    s["ci_low"] = s["mean"] - half
    s["ci_high"] = s["mean"] + half
    return sort_table(s)


def relative_difference(summary: pd.DataFrame, baseline: str | None = None) -> pd.DataFrame:
    """Per site x network x metric x setting: (mean_X - mean_base) / mean_base; baseline
    None: the profiles' (profiles/comparisons.toml).

    Negative means faster than the baseline. Baseline rows are left out, and so
    are sites without baseline trials in that network.
    """
    settings = set(summary["setting"])
    baseline = baseline or profiles_meta.current().baseline
    if baseline not in settings:
        raise ValueError(f"baseline setting {baseline!r} has no ok trials; "
                         f"settings present: {', '.join(sorted(settings)) or 'none'}")
    keys = ["site", "network", "metric"]
    means = summary[keys + ["setting", "mean"]]
    base = (means[means["setting"] == baseline].drop(columns="setting")
            .rename(columns={"mean": "baseline_mean"}))
    rel = means[means["setting"] != baseline].merge(base, on=keys, how="inner")
    rel["rel"] = (rel["mean"] - rel["baseline_mean"]) / rel["baseline_mean"]
    rel.insert(rel.columns.get_loc("baseline_mean"), "baseline", baseline)
    return sort_table(rel[["network", "site", "setting", "metric", "mean", "baseline",
                           "baseline_mean", "rel"]])


def relative_summary(rel: pd.DataFrame) -> pd.DataFrame:
    """Per network x metric x setting, over sites: median and mean relative difference,
    and the share of sites faster than the baseline (rel < 0)."""
    g = rel.groupby(["network", "metric", "setting"], sort=False, observed=True)["rel"]
    out = g.agg(sites="count", median="median", mean="mean",
                faster=lambda r: float((r < 0).mean())).reset_index()
    return sort_table(out)


def default_pairs(settings: Iterable[str], baseline: str | None = None) -> list[tuple[str, str]]:
    """Each setting vs the baseline (None: the profiles'), then each stack twin's QUIC
    setting vs its TCP one (QUIC vs TCP+, QUIC+BBR vs TCP+BBR), when both are present:
    profiles/comparisons.toml."""
    meta = profiles_meta.current()
    baseline = baseline or meta.baseline
    settings = settings_in(settings)
    pairs = [(s, baseline) for s in settings if s != baseline and baseline in settings]
    for b, a in meta.stack_twins:
        if a in settings and b in settings and (a, b) not in pairs:
            pairs.append((a, b))
    return pairs


def compare(meas: pd.DataFrame, pairs: Sequence[tuple[str, str]],
            alpha: float = DEFAULT_ALPHA, test: str = "anova",
            correction: str = "none") -> pd.DataFrame:
    """A per-site test between settings a and b (default: the paper's one-way ANOVA,
    scipy.stats.f_oneway, uncorrected).

    One row per pair x network x metric x site: n and mean of each side,
    diff_ms = mean_a - mean_b, the test statistic (F, t, U or H; for the ANOVA
    with df_between and df_within degrees of freedom), the p-value, p_adj (corrected across the sites
    of one pair, network and metric; equal to p without a correction) and the
    outcome for a: 'win' (p_adj < alpha and a's mean smaller; for the rank tests,
    which compare locations, not means, the Hodges-Lehmann shift a - b negative),
    'loss' (p_adj < alpha,
    larger), 'tie' (p_adj >= alpha, or both sides constant and
    equal), or 'untested' (fewer than two values on a side). `test` and
    `correction` are names from analysis.statistics.inference.TESTS and CORRECTIONS.
    """
    if test not in inference.TESTS:
        raise ValueError(f"unknown test {test!r}; known: {', '.join(inference.TESTS)}")
    if correction not in inference.CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; "
                         f"known: {', '.join(inference.CORRECTIONS)}")
    rows = []
    for a, b, keys, xa, xb in paired_groups(meas, pairs):
        na, nb = xa.shape[1], xb.shape[1]
        if na >= 2 and nb >= 2:
            f, p = inference.tested(xa, xb, test)  # batched: one call per group size
        else:
            f, p = np.full(len(keys), np.nan), np.full(len(keys), np.nan)
        ma, mb = _finite_mean(xa), _finite_mean(xb)  # timeouts (inf) count in rank tests only
        ca, cb = ((inference.hodges_lehmann(xa, xb), np.zeros(len(keys)))
                  if test in inference.RANK_TESTS else (ma, mb))
        for i, (site, network, metric) in enumerate(keys):
            rows.append((a, b, network, metric, site, na, nb, ma[i], mb[i], f[i], p[i],
                         ca[i], cb[i]))
    out = pd.DataFrame(rows, columns=["a", "b", "network", "metric", "site", "n_a", "n_b",
                                      "mean_a", "mean_b", "statistic", "p", "_ca", "_cb"])
    # The ANOVA's F has 1 and n_a + n_b - 2 degrees of freedom (two groups).
    anova = test == "anova"
    out.insert(out.columns.get_loc("p"), "df_between", 1 if anova else pd.NA)
    out.insert(out.columns.get_loc("p"), "df_within",
               out["n_a"] + out["n_b"] - 2 if anova else pd.NA)
    out.insert(out.columns.get_loc("p"), "diff_ms", out["mean_a"] - out["mean_b"])
    out["p_adj"] = out["p"]
    if correction != "none" and len(out):
        p_adj = out["p_adj"].to_numpy(dtype=float, copy=True)
        for idx in out.groupby(["a", "b", "network", "metric"], sort=False).indices.values():
            p_adj[idx] = inference.adjust(p_adj[idx], correction)
        out["p_adj"] = p_adj
    out["outcome"] = [_outcome(na, nb, ca, cb, p, alpha) for na, nb, ca, cb, p in
                      zip(out["n_a"], out["n_b"], out.pop("_ca"), out.pop("_cb"), out["p_adj"])]
    return sort_pairs(out, pairs)


def effect_sizes(meas: pd.DataFrame, pairs: Sequence[tuple[str, str]],
                 alpha: float = DEFAULT_ALPHA, mde: float = inference.DEFAULT_MDE,
                 confidence: float = 0.95, resamples: int = 2000,
                 seed: int = 0) -> pd.DataFrame:
    """Per pair x network x metric x site: how large the difference is and what the
    runs could have seen.

    rel = (mean_a - mean_b) / mean_b with its percentile bootstrap CI
    (rel_low, rel_high; `resamples` resamples of the runs within each side,
    seeded), Hedges' g, power (probability that a test at `alpha` finds a
    relative difference of `mde` at the observed pooled variance) and
    detectable (the relative difference found with 80 % power).
    """
    rows = []
    for k, (a, b, keys, xa, xb) in enumerate(paired_groups(meas, pairs)):
        low, high = inference.relative_ci(xa, xb, confidence, resamples, seed + k)
        g = inference.hedges_g(xa, xb)
        pw = inference.power(xa, xb, alpha, mde)
        det = inference.detectable(xa, xb, alpha)
        ma, mb = xa.mean(axis=1), xb.mean(axis=1)
        for i, (site, network, metric) in enumerate(keys):
            rows.append((a, b, network, metric, site, xa.shape[1], xb.shape[1],
                         (ma[i] - mb[i]) / mb[i] if mb[i] else np.nan,
                         low[i], high[i], g[i], pw[i], det[i]))
    out = pd.DataFrame(rows, columns=["a", "b", "network", "metric", "site", "n_a", "n_b",
                                      "rel", "rel_low", "rel_high", "hedges_g", "power",
                                      "detectable"])
    return sort_pairs(out, pairs)


def paired_groups(meas: pd.DataFrame, pairs: Sequence[tuple[str, str]]) -> Any:
    """Yield (a, b, keys, xa, xb): per pair and per (runs of a, runs of b), the
    (site, network, metric) keys with both settings and their values stacked
    (one row per key), so tests run batched."""
    groups = _value_arrays(meas)
    for a, b in pairs:
        buckets: dict[tuple[int, int], list[Any]] = defaultdict(list)
        for (site, network, protocol, metric), xa in groups.items():
            if protocol != a:
                continue
            xb = groups.get((site, network, b, metric))
            if xb is None:
                continue
            buckets[(len(xa), len(xb))].append(((site, network, metric), xa, xb))
        for items in buckets.values():
            yield (a, b, [k for k, _, _ in items], np.stack([x for _, x, _ in items]),
                   np.stack([x for _, _, x in items]))


def _finite_mean(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result: np.ndarray = np.nanmean(np.where(np.isfinite(x), x, np.nan), axis=1)
        return result


def _value_arrays(meas: pd.DataFrame) -> dict[tuple[Any, ...], np.ndarray]:
    values = meas["value"].to_numpy(dtype=float)
    indices = meas.groupby(["site", "network", "setting", "metric"], sort=False,
                           observed=True).indices
    return {key: values[idx] for key, idx in indices.items()}


def _outcome(na: int, nb: int, mean_a: float, mean_b: float, p: float, alpha: float) -> str:
    if na < 2 or nb < 2:
        return "untested"
    if np.isnan(p) or p >= alpha or mean_a == mean_b:
        return "tie"
    return "win" if mean_a < mean_b else "loss"


def sort_pairs(df: pd.DataFrame, pairs: Sequence[tuple[str, str]]) -> pd.DataFrame:
    """Pairs in the order given, then network, metric and site in the paper's order."""
    pair_rank = {p: i for i, p in enumerate(dict.fromkeys(pairs))}
    df = sort_table(df.drop(columns=["a", "b"]).assign(_a=df["a"], _b=df["b"]))
    df["_pair"] = [pair_rank[(a, b)] for a, b in zip(df["_a"], df["_b"])]
    df = df.sort_values("_pair", kind="stable", ignore_index=True)
    df.insert(0, "a", df.pop("_a"))
    df.insert(1, "b", df.pop("_b"))
    return df.drop(columns="_pair")


def win_tie_loss(comparisons: pd.DataFrame) -> pd.DataFrame:
    """Per pair x network x metric: how many sites a wins, ties, loses (and untested),
    and the mean over sites of mean_a - mean_b in ms."""
    keys = ["a", "b", "network", "metric"]
    counts = (comparisons.groupby(keys + ["outcome"], sort=False, observed=True).size()
              .unstack("outcome", fill_value=0)
              .reindex(columns=["win", "tie", "loss", "untested"], fill_value=0))
    counts.columns = ["wins", "ties", "losses", "untested"]
    counts = counts.reset_index()
    diff = (comparisons.groupby(keys, sort=False, observed=True)["diff_ms"].mean()
            .rename("mean_diff_ms").reset_index())
    out = counts.merge(diff, on=keys, how="left")
    out.insert(4, "sites", out[["wins", "ties", "losses", "untested"]].sum(axis=1))
    pairs = list(dict.fromkeys(zip(comparisons["a"], comparisons["b"])))
    return sort_pairs(out, pairs)
