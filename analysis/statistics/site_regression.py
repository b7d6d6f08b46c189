"""What a pair's per-site effect goes with: an OLS regression across sites.

Per site of one network, the effect of setting a against b is the difference of the
mean log values (the log of the ratio of geometric means: what the across-site
estimate averages, analysis.statistics.across.site_table). It is regressed on what
the store records of the page and the machine:

- log_mb: log of the page's bytes in MB (the median over the site's ok trials of the
  network, column `bytes`);
- origins: the origins in the page's recording (median, column `origins`);
- share_gap: the busiest connection's share of a trial's bytes, a minus b (medians
  over each setting's ok trials; table `connections`): the pooling docs/quic-heavy.md
  describes;
- load_gap: the machine's CPU busy share during the loads, a minus b (column
  `cpu_busy`), where the store records it; a store without it says so (MISSING_LOAD)
  and the regression runs without the term.

statsmodels OLS with HC3 heteroscedasticity-robust standard errors (MacKinnon & White
1985: the small-sample choice); 95 % intervals and two-sided p per coefficient.

    frame = site_frame(trials, conns, "quic", "tcp-plus", "dsl")
    table, notes = fit(frame)

PAPER_LARGEST_MB and in_range give the sites whose pages are no larger than the
paper's largest page (the paper's pages ran to 4 MB).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.statistics.across import site_table
from analysis.statistics.connections import with_trials
from analysis.statistics.stats import measurements
from results_contract.load import ok_trials

PAPER_LARGEST_MB = 4.0
"""The paper's largest page: 4 MB (Wolsing et al. 2019, Sect. 3: "the largest page was
4 MB"; ../shared/PAPER.md). Pages up to this size are "pages like the paper's"."""

TERMS = ("log_mb", "origins", "share_gap", "load_gap")
"""The regressors, in the order the table shows them (the intercept first)."""
TERM_LABELS = {"const": "intercept", "log_mb": "page bytes (log MB)",
               "origins": "origins", "share_gap": "busiest connection's share, a − b",
               "load_gap": "machine load (CPU busy), a − b"}
MISSING_LOAD = "machine load: not recorded in this store"
COLUMNS = ["term", "label", "coef", "low", "high", "p", "sites"]
MIN_SITES = 8
"""Fewer sites than this (with every regressor known): no regression."""


def page_mb(trials: pd.DataFrame, network: str | None = None) -> pd.Series:
    """Per site: the median page bytes over its ok trials (of `network`, or all), in MB."""
    ok = ok_trials(trials)
    if network is not None:
        ok = ok[ok["network"] == network]
    return ok.groupby("site", observed=True)["bytes"].median().dropna() / 1e6


def in_range(trials: pd.DataFrame, network: str | None = None,
             largest_mb: float = PAPER_LARGEST_MB) -> list[str]:
    """The sites whose page bytes (median over their ok trials) are at most `largest_mb`."""
    mb = page_mb(trials, network)
    return sorted(mb[mb <= largest_mb].index.astype(str))


def busiest_share(conns: pd.DataFrame | None, trials: pd.DataFrame) -> pd.DataFrame:
    """Per network x site x setting: the median over its ok trials with connection rows
    of the share of a trial's bytes sent that its busiest connection sent (share)."""
    cols = ["network", "site", "setting", "share"]
    if conns is None or conns.empty:
        return pd.DataFrame(columns=cols)
    c = with_trials(conns, trials).dropna(subset=["bytes_sent"])
    if c.empty:
        return pd.DataFrame(columns=cols)
    g = c.groupby("trial_id")["bytes_sent"]
    per = pd.DataFrame({"top": g.max(), "total": g.sum()})
    per = per[per["total"] > 0]
    keys = c.drop_duplicates("trial_id").set_index("trial_id")[["network", "site", "setting"]]
    per = keys.join((per["top"] / per["total"]).rename("share"), how="inner")
    return (per.groupby(["network", "site", "setting"], observed=True)["share"].median()
            .reset_index())


def site_frame(trials: pd.DataFrame, conns: pd.DataFrame | None, a: str, b: str,
               network: str, metric: str = "plt") -> pd.DataFrame:
    """Per site of `network` with both settings: effect (log ratio of the geometric means
    of `metric`, a over b), log_mb, origins, share_gap and, where the store records
    cpu_busy, load_gap."""
    ok = ok_trials(trials)
    ok = ok[ok["network"] == network]
    d = site_table(measurements(ok, [metric]), [(a, b)])
    frame = d.set_index("site")[["d"]].rename(columns={"d": "effect"})
    frame["log_mb"] = np.log(page_mb(trials, network))
    frame["origins"] = ok.groupby("site", observed=True)["origins"].median()
    share = busiest_share(conns, trials)
    share = share[share["network"] == network].pivot_table(
        index="site", columns="setting", values="share", observed=True)
    if a in share and b in share:
        frame["share_gap"] = share[a] - share[b]
    if "cpu_busy" in ok.columns and ok["cpu_busy"].notna().any():
        load = ok.groupby(["site", "setting"], observed=True)["cpu_busy"].median().unstack()
        if a in load and b in load:
            frame["load_gap"] = load[a] - load[b]
    frame.index = frame.index.astype(str)
    return frame.reset_index()


def fit(frame: pd.DataFrame, terms: Sequence[str] = TERMS,
        confidence: float = 0.95) -> tuple[pd.DataFrame, list[str]]:
    """OLS of `effect` on the `terms` the frame has (HC3 standard errors): per
    coefficient (intercept first) its estimate, `confidence` interval and p, and the
    sites fitted; and notes naming the terms left out and why (MISSING_LOAD for the
    machine's load)."""
    import statsmodels.api as sm

    notes = []
    used = []
    for t in terms:
        if t not in frame or frame[t].isna().all():
            notes.append(MISSING_LOAD if t == "load_gap" else f"{TERM_LABELS[t]}: not recorded")
        elif frame[t].nunique(dropna=True) < 2:
            notes.append(f"{TERM_LABELS[t]}: the same on every site (left out)")
        else:
            used.append(t)
    data = frame.dropna(subset=["effect", *used])
    if len(data) < max(MIN_SITES, len(used) + 3):
        notes.append(f"{len(data)} sites with every term known: too few for a regression")
        return pd.DataFrame(columns=COLUMNS), notes
    x = sm.add_constant(data[used].astype(float), has_constant="add")
    res = sm.OLS(data["effect"].astype(float), x).fit(cov_type="HC3")
    ci = res.conf_int(alpha=1 - confidence)
    table = pd.DataFrame({"term": ["const", *used],
                          "label": [TERM_LABELS[t] for t in ["const", *used]],
                          "coef": res.params.to_numpy(float),
                          "low": ci.iloc[:, 0].to_numpy(float),
                          "high": ci.iloc[:, 1].to_numpy(float),
                          "p": res.pvalues.to_numpy(float), "sites": len(data)})
    return table, notes


def summary(table: pd.DataFrame, notes: Sequence[str]) -> str:
    """The regression in a line: each regressor's coefficient [95 % CI] and p, then the
    notes."""
    parts = [f"{r.label} {r.coef:+.3f} [{r.low:+.3f}, {r.high:+.3f}], p = {r.p:.2g}"
             for r in table.itertuples() if r.term != "const"]
    head = (f"Per-site OLS (HC3) of the log ratio over {int(table['sites'].iloc[0])} sites: "
            if len(table) else "Per-site OLS: ")
    return head + "; ".join([*parts, *notes]) + "."
