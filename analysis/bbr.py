"""Where BBR beats CUBIC: per site and network, and per connection by object size.

Two views of the same question, each BBR setting against its CUBIC twin on the
same stack (PAIRS: TCP+BBR vs TCP+, QUIC+BBR vs QUIC):

- per site and network (`site_effects`): BBR's relative difference to CUBIC,
  (mean_BBR - mean_CUBIC) / mean_CUBIC of a metric (negative: BBR faster), with
  the per-site test's outcome, beside the page's bytes and largest object and
  the path's RTT and loss;
- per connection (`delivery_by_size`, from table `connections`): the delivery
  rate with BBR and with CUBIC by object size (SIZE_BUCKETS), where a
  connection's object size is the bytes it sent per request it served (all its
  bytes when the count of requests is unknown).

`claims` checks them against what a CDN reported for BBR (SEED_CLAIMS): it
helped lossy, long-RTT paths and large files, and hurt small files on low-RTT,
low-loss paths. A claim holds only when the groups' own tests, combined, show
its direction at the analysis's alpha (`directed`); a median on the right side
alone is 'inconclusive'. `findings` says in sentences where BBR helped and where
it hurt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, NullFormatter, PercentFormatter

from analysis.connections import with_trials
from analysis.load import ResultsError
from analysis.plots import plot_label
from analysis.schema import OK, label, networks_in
from analysis.stats import compare, measurements, sort_table

PAIRS = (("tcp", "tcp-plus-bbr", "tcp-plus"), ("quic", "quic-bbr", "quic"))
"""(stack, BBR setting, CUBIC setting)."""

SIZE_BUCKETS = ((0, 100_000, "< 100 kB"), (100_000, 1_000_000, "100 kB – 1 MB"),
                (1_000_000, np.inf, "> 1 MB"))
"""Object size buckets, bytes (1 kB = 1000 B): [low, high)."""

LONG_RTT_MS = 100.0
"""A path's minimum RTT from which it counts as long."""
LOW_RTT_MS = 50.0
"""A path's minimum RTT below which it counts as low."""
CLEAR = 0.01
"""A median relative difference smaller than this (1 %) is no clear difference."""

SEED_CLAIMS = (
    ("lossy", "BBR helps on lossy paths (loss > 0)"),
    ("long-rtt", f"BBR helps on long-RTT paths (RTT ≥ {LONG_RTT_MS:.0f} ms)"),
    ("large-files", "BBR helps large files (> 100 kB: higher delivery rate)"),
    ("small-files-fast-paths", (f"BBR hurts small files (< 100 kB) on low-RTT "
                               f"(< {LOW_RTT_MS:.0f} ms), loss-free paths")),
)
"""What the CDN study (seed 004) reported; `claims` says whether these results agree."""


def pairs_in(settings) -> list[tuple[str, str, str]]:
    settings = set(settings)
    return [p for p in PAIRS if p[1] in settings and p[2] in settings]


def page_sizes(trials: pd.DataFrame, largest: dict[str, float] | None = None) -> pd.DataFrame:
    """Per site: the page's bytes (median over its ok trials of the bytes the replay
    servers sent) and its largest object (`largest`: site -> bytes, from a HAR)."""
    ok = trials[trials["status"] == OK]
    out = (ok.groupby("site", observed=True)["bytes"].median().astype("float64")
           .rename("page_bytes").reset_index())
    out["largest_bytes"] = out["site"].map(largest or {}).astype("float64")
    return out


def largest_object(har: dict) -> float | None:
    """The largest response of a HAR, in bytes (its body, else what was transferred)."""
    best = None
    for e in (har or {}).get("log", {}).get("entries", []):
        res = e.get("response", {}) if isinstance(e, dict) else {}
        content = res.get("content", {}) if isinstance(res, dict) else {}
        sizes = [v for v in (content.get("size") if isinstance(content, dict) else None,
                             res.get("bodySize"), res.get("_transferSize"))
                 if isinstance(v, int | float) and not isinstance(v, bool) and v > 0]
        if sizes:
            best = max(best or 0, max(sizes))
    return best


def path_losses(manifest: dict | None) -> dict[str, float]:
    """Network -> its downlink loss in percent, from a campaign manifest's profiles
    (the last session's, then the first's); empty without a manifest."""
    found: dict[str, float] = {}
    if not isinstance(manifest, dict):
        return found
    sessions = [manifest, *(manifest.get("sessions") or [])]
    for s in sessions:
        nets = s.get("networks") if isinstance(s, dict) else None
        for name, info in (nets or {}).items() if isinstance(nets, dict) else ():
            profile = info.get("profile") if isinstance(info, dict) else None
            loss = profile.get("downlink_loss_percent") if isinstance(profile, dict) else None
            if isinstance(loss, int | float) and not isinstance(loss, bool):
                found[name] = float(loss)
    return found


def site_effects(trials: pd.DataFrame, sizes: pd.DataFrame, losses: dict[str, float],
                 metric: str = "plt", alpha: float = 0.01) -> pd.DataFrame:
    """Per stack, network and site: the BBR and CUBIC settings' mean `metric` (ms) and
    ok runs, rel = (BBR - CUBIC) / CUBIC, the one-way ANOVA's p and verdict (helped:
    p < alpha and BBR faster; hurt: p < alpha and slower; otherwise no difference),
    the page's bytes and largest object, the path's RTT and loss (%)."""
    columns = ["stack", "bbr", "cubic", "network", "site", "metric", "n_bbr", "n_cubic",
               "bbr_ms", "cubic_ms", "rel", "p", "verdict", "page_bytes", "largest_bytes",
               "rtt_ms", "loss_percent"]
    pairs = pairs_in(trials["protocol"])
    meas = measurements(trials, [metric])
    if not pairs or meas.empty:
        return pd.DataFrame(columns=columns)
    tests = compare(meas, [(b, c) for _, b, c in pairs], alpha)
    stack = {(b, c): s for s, b, c in pairs}
    t = tests.assign(stack=[stack[(a, b)] for a, b in zip(tests["a"], tests["b"])])
    t = t.rename(columns={"a": "bbr", "b": "cubic", "n_a": "n_bbr", "n_b": "n_cubic",
                          "mean_a": "bbr_ms", "mean_b": "cubic_ms"})
    t["rel"] = (t["bbr_ms"] - t["cubic_ms"]) / t["cubic_ms"]
    t["verdict"] = np.select([(t["outcome"] == "win"), (t["outcome"] == "loss")],
                             ["helped", "hurt"], "no difference")
    rtt = trials.groupby("network", observed=True)["rtt_ms"].first()
    t["rtt_ms"] = t["network"].map(rtt).astype("float64")
    t["loss_percent"] = t["network"].map(losses).astype("float64")
    t = t.merge(sizes, on="site", how="left")
    return sort_table(t[columns])


def bucket_of(size: pd.Series) -> pd.Series:
    out = pd.Series(pd.NA, index=size.index, dtype="string")
    for low, high, name in SIZE_BUCKETS:
        out[(size >= low) & (size < high)] = name
    return out


def delivery_by_size(conns: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """Per stack, network and object size bucket, over the connections of ok trials of
    each pair's settings: how many with BBR and CUBIC, their median delivery rate
    (Mbit/s), ratio = median_BBR / median_CUBIC - 1 (positive: BBR delivered faster)
    and the Mann-Whitney U test's p."""
    from scipy.stats import mannwhitneyu

    columns = ["stack", "network", "bucket", "n_bbr", "n_cubic", "bbr_mbps", "cubic_mbps",
               "ratio", "p"]
    pairs = pairs_in(trials["protocol"])
    c = with_trials(conns, trials)
    c = c[c["delivery_rate_bps"].notna() & c["bytes_sent"].notna()]
    if c.empty or not pairs:
        return pd.DataFrame(columns=columns)
    per_request = c["bytes_sent"] / c["requests"].where(c["requests"] > 0)
    c = c.assign(bucket=bucket_of(per_request.fillna(c["bytes_sent"])),
                 mbps=c["delivery_rate_bps"] / 1e6)
    rows = []
    for stack, bbr, cubic in pairs:
        for network in networks_in(c["network"]):
            for _, _, bucket in SIZE_BUCKETS:
                here = c[(c["network"] == network) & (c["bucket"] == bucket)]
                xb = here.loc[here["protocol"] == bbr, "mbps"].to_numpy()
                xc = here.loc[here["protocol"] == cubic, "mbps"].to_numpy()
                if not len(xb) and not len(xc):
                    continue
                mb = float(np.median(xb)) if len(xb) else np.nan
                mc = float(np.median(xc)) if len(xc) else np.nan
                p = (float(mannwhitneyu(xb, xc).pvalue) if len(xb) >= 2 and len(xc) >= 2
                     and not (np.all(xb == xb[0]) and np.all(xc == xb[0])) else np.nan)
                rows.append({"stack": stack, "network": network, "bucket": bucket,
                             "n_bbr": len(xb), "n_cubic": len(xc), "bbr_mbps": mb,
                             "cubic_mbps": mc, "ratio": mb / mc - 1 if mc > 0 else np.nan,
                             "p": p})
    return pd.DataFrame(rows, columns=columns)


def directed(groups: pd.DataFrame, effect: str, want_negative: bool,
             alpha: float) -> tuple[str, float]:
    """Whether `groups` (one row per site × network × stack, or per size group: a signed
    `effect` and its test's two-sided `p`) show the claimed direction as a whole: the
    groups' one-sided p-values combined by Stouffer's method, once for the claimed
    direction and once against it. 'holds' (combined p < alpha in the claimed
    direction), 'contradicted' (p < alpha against it) or 'inconclusive', with the
    smaller combined p."""
    from scipy.stats import combine_pvalues

    g = groups[groups[effect].notna()]
    p = g["p"].fillna(1.0).clip(1e-300, 1.0).to_numpy()
    towards = (g[effect] < 0) if want_negative else (g[effect] > 0)
    one_sided = np.where(towards.to_numpy(), p / 2, 1 - p / 2).clip(1e-300, 1 - 1e-16)
    p_for = float(combine_pvalues(one_sided, method="stouffer").pvalue)
    p_against = float(combine_pvalues(1 - one_sided, method="stouffer").pvalue)
    if p_for < alpha:
        return "holds", p_for
    if p_against < alpha:
        return "contradicted", p_against
    return "inconclusive", min(p_for, p_against)


def claims(effects: pd.DataFrame, delivery: pd.DataFrame, alpha: float = 0.01) -> pd.DataFrame:
    """Each of SEED_CLAIMS with what these results say: 'holds' or 'contradicted' when
    the groups' tests taken together (`directed`) show it or its opposite at alpha,
    'inconclusive' when they do not (the median's direction alone is no verdict), or
    'no data' (with why); the evidence gives the medians, counts and combined p."""
    rows = []

    def add(key, text, verdict, evidence):
        rows.append({"claim": key, "statement": text, "verdict": verdict, "evidence": evidence})

    def trial_claim(key, text, where, want_negative=True):
        sub = effects[where] if len(effects) else effects
        sub = sub[sub["rel"].notna()] if len(sub) else sub
        if sub.empty:
            add(key, text, "no data", "no site × network with both settings of a pair here")
            return
        med = float(sub["rel"].median())
        helped = int((sub["verdict"] == "helped").sum())
        hurt = int((sub["verdict"] == "hurt").sum())
        verdict, p = directed(sub, "rel", want_negative, alpha)
        add(key, text, verdict,
            f"median {label(str(sub['metric'].iloc[0]))} difference {med:+.1%} over "
            f"{len(sub)} site × network × stack ({helped} helped, {hurt} hurt at the per-site "
            f"test); the per-site tests combined: p = {p:.2g}")

    def size_claim(key, text, mask, want_positive):
        sub = delivery[mask] if len(delivery) else delivery
        sub = sub[sub["ratio"].notna()] if len(sub) else sub
        if sub.empty:
            add(key, text, "no data", "no connection figures for these object sizes and paths"
                if len(delivery) else "no per-connection figures (table connections) in "
                "these results")
            return
        med = float(sub["ratio"].median())
        verdict, p = directed(sub, "ratio", not want_positive, alpha)
        add(key, text, verdict,
            f"median delivery rate BBR vs CUBIC {med:+.1%} over {len(sub)} stack × network × "
            f"size groups ({int(sub['n_bbr'].sum())} BBR, {int(sub['n_cubic'].sum())} CUBIC "
            f"connections); the groups' tests combined: p = {p:.2g}")

    e = effects
    trial_claim(*SEED_CLAIMS[0], (e["loss_percent"] > 0) if len(e) else None)
    trial_claim(*SEED_CLAIMS[1], (e["rtt_ms"] >= LONG_RTT_MS) if len(e) else None)
    d = delivery
    size_claim(*SEED_CLAIMS[2], d["bucket"].isin([b[2] for b in SIZE_BUCKETS[1:]])
               if len(d) else None, True)
    fast = set(e.loc[(e["rtt_ms"] < LOW_RTT_MS) & (e["loss_percent"] == 0), "network"]) \
        if len(e) else set()
    size_claim(*SEED_CLAIMS[3], (d["bucket"] == SIZE_BUCKETS[0][2]) & d["network"].isin(fast)
               if len(d) else None, False)
    return pd.DataFrame(rows, columns=["claim", "statement", "verdict", "evidence"])


def findings(effects: pd.DataFrame, delivery: pd.DataFrame, alpha: float = 0.01) -> list[str]:
    """Sentences: where BBR helped and where it hurt, per stack and network: 'helped' or
    'hurt' only when the sites' tests combined show it at alpha (`directed`)."""
    out = []
    if effects.empty:
        return [("No campaign setting pairs BBR with CUBIC on one stack (TCP+BBR with TCP+, "
                "QUIC+BBR with QUIC): nothing to compare.")]
    for (stack, network), g in effects.groupby(["stack", "network"], sort=False):
        g = g[g["rel"].notna()]
        if g.empty:
            continue
        med = g["rel"].median()
        verdict, p = directed(g, "rel", True, alpha)
        word = {"holds": "helped", "contradicted": "hurt"}.get(
            verdict, "made no clear difference" if abs(med) < CLEAR
            else "made no significant difference")
        helped = ", ".join(f"{s} ({r:+.0%})" for s, r in zip(g["site"], g["rel"])
                           if r < 0)
        hurt = ", ".join(f"{s} ({r:+.0%})" for s, r in zip(g["site"], g["rel"]) if r > 0)
        loss = g["loss_percent"].iloc[0]
        path = (f"RTT {g['rtt_ms'].iloc[0]:.0f} ms, "
                + ("loss unknown" if pd.isna(loss) else f"loss {loss:g} %"))
        metric = label(str(g["metric"].iloc[0]))
        out.append(f"{'TCP' if stack == 'tcp' else 'QUIC'} on {label(network)} "
                   f"({path}): BBR {word} (median {metric} {med:+.1%} over {len(g)} sites, "
                   f"combined p = {p:.2g}; "
                   f"faster with BBR: {helped or 'none'}; slower: {hurt or 'none'}; "
                   f"significant at the per-site test: "
                   f"{int((g['verdict'] != 'no difference').sum())}).")
    if delivery.empty:
        out.append("Per connection: no delivery rates (no table connections in these "
                   "results), so nothing by object size.")
    else:
        for r in delivery.itertuples(index=False):
            if pd.isna(r.ratio):
                continue
            out.append(f"Per connection, {'TCP' if r.stack == 'tcp' else 'QUIC'} on "
                       f"{label(r.network)}, objects {r.bucket}: BBR delivered "
                       f"{r.bbr_mbps:.2f} Mbit/s vs CUBIC {r.cubic_mbps:.2f} "
                       f"({r.ratio:+.0%}; {r.n_bbr} vs {r.n_cubic} connections"
                       + ("" if pd.isna(r.p) else f"; p = {r.p:.2g}") + ").")
    return out


def largest_objects(folder, trials: pd.DataFrame, tries: int = 3) -> dict[str, float]:
    """Site -> its largest object in bytes, from the HAR of its first ok trial that kept
    a readable one (at most `tries` trials a site are looked at; an unsafe or broken
    file is passed over, never followed); sites without one are left out."""
    from analysis.trialfiles import TrialFiles

    out: dict[str, float] = {}
    ok = trials[trials["status"] == OK]
    for site, group in ok.groupby("site", observed=True, sort=True):
        for trial_id in list(group["trial_id"])[:tries]:
            try:
                with TrialFiles(folder, str(trial_id)) as files:
                    har = files.json("browsertime.har.gz")
            except ResultsError:
                continue
            if har is not None:
                size = largest_object(har)
                if size:
                    out[site] = float(size)
                break
    return out


@dataclass(frozen=True)
class BbrAnalysis:
    """The BBR-vs-CUBIC tables of one campaign (see each function)."""

    effects: pd.DataFrame
    by_path: pd.DataFrame
    delivery: pd.DataFrame
    claims: pd.DataFrame
    findings: tuple[str, ...]
    missing: tuple[str, ...]
    """What the results lack for this analysis, as sentences."""


def analyse_bbr(trials: pd.DataFrame, conns: pd.DataFrame, manifest: dict | None = None,
                largest: dict[str, float] | None = None, alpha: float = 0.01,
                metric: str = "plt") -> BbrAnalysis:
    losses = path_losses(manifest)
    effects = site_effects(trials, page_sizes(trials, largest), losses, metric, alpha)
    delivery = delivery_by_size(conns, trials)
    missing = []
    if not pairs_in(trials["protocol"]):
        missing.append("no pair of a BBR setting with its CUBIC twin (TCP+BBR and TCP+, "
                       "QUIC+BBR and QUIC) in this campaign")
    if conns.empty:
        missing.append("no per-connection figures (table connections): results stored "
                       "before they were recorded, or an export; no delivery rates by "
                       "object size")
    elif delivery.empty:
        missing.append("the connections have no delivery rates for the BBR and CUBIC "
                       "settings")
    if len(effects) and effects["loss_percent"].isna().all():
        missing.append("no path loss (no manifest with the network profiles)")
    if len(effects) and effects["largest_bytes"].isna().all():
        missing.append("no largest object per site (no HAR kept)")
    return BbrAnalysis(effects, summary_by_path(effects), delivery,
                       claims(effects, delivery, alpha),
                       tuple(findings(effects, delivery, alpha)), tuple(missing))


# -- figures -------------------------------------------------------------------------

MARKERS = {"tcp": "o", "quic": "s"}
FACTORS = (("page_bytes", "page bytes", True), ("largest_bytes", "largest object", True),
           ("rtt_ms", "path RTT (ms)", False), ("loss_percent", "path loss (%)", False))


def effects_figure(effects: pd.DataFrame) -> Figure:
    """BBR's relative difference to CUBIC per site and network against the page's bytes,
    its largest object, the path's RTT and loss: one panel each, one marker per stack."""
    fig = Figure(figsize=(12, 3.4))
    axes = fig.subplots(1, len(FACTORS), sharey=True)
    colors = {n: f"C{i}" for i, n in enumerate(networks_in(effects["network"]))}
    for ax, (column, title, log) in zip(axes, FACTORS):
        data = effects[effects[column].notna() & effects["rel"].notna()]
        for (stack, network), g in data.groupby(["stack", "network"], sort=False):
            ax.scatter(g[column], g["rel"], marker=MARKERS.get(stack, "o"),
                       color=colors.get(network), s=28, alpha=0.8,
                       label=f"{'TCP' if stack == 'tcp' else 'QUIC'} · {plot_label(network)}")
        if data.empty:
            ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", color="#888")
        elif log and (data[column] > 0).all():
            ax.set_xscale("log")
        if log:
            ax.xaxis.set_major_formatter(EngFormatter(unit="B", sep=" "))
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.axhline(0, color="black", linewidth=0.8, alpha=0.6)
        ax.set_xlabel(title, fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=8)
    axes[0].yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    axes[0].set_ylabel("(BBR − CUBIC) / CUBIC\n(< 0: BBR faster)", fontsize=9)
    handles, labels = axes[0].get_legend_handles_labels()
    for ax in axes[1:]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if handles:
        fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 6),
                   frameon=False, fontsize=8)
    fig.subplots_adjust(left=0.08, right=0.99, bottom=0.17, top=0.84, wspace=0.08)
    return fig


def delivery_figure(delivery: pd.DataFrame) -> Figure:
    """Median delivery rate per object size bucket, one panel per network, bars for
    CUBIC and BBR on each stack."""
    networks = networks_in(delivery["network"])
    fig = Figure(figsize=(12, 3.2))
    axes = fig.subplots(1, max(len(networks), 1), squeeze=False)[0]
    bars = [(s, side) for s in ("tcp", "quic") for side in ("cubic", "bbr")]
    names = [b[2] for b in SIZE_BUCKETS]
    width = 0.8 / len(bars)
    for ax, network in zip(axes, networks):
        here = delivery[delivery["network"] == network]
        for i, (stack, side) in enumerate(bars):
            g = here[here["stack"] == stack].set_index("bucket")
            values = [g[f"{side}_mbps"].get(b, np.nan) for b in names]
            setting = {p[0]: p[1 if side == "bbr" else 2] for p in PAIRS}[stack]
            ax.bar(np.arange(len(names)) + (i - 1.5) * width, values, width,
                   label=plot_label(setting), hatch="//" if side == "bbr" else None,
                   color="#1f77b4" if stack == "tcp" else "#d62728",
                   alpha=0.9 if side == "bbr" else 0.55)
        ax.set_xticks(np.arange(len(names)), names, fontsize=8)
        ax.set_title(plot_label(network), fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("median delivery rate (Mbit/s)", fontsize=9)
    h, lab = axes[0].get_legend_handles_labels()
    if h:
        fig.legend(h, lab, loc="upper center", ncol=4, frameon=False, fontsize=8)
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.12, top=0.82, wspace=0.15)
    return fig


def summary_by_path(effects: pd.DataFrame) -> pd.DataFrame:
    """Per stack and network: median relative difference, sites helped / no difference /
    hurt, the path's RTT and loss."""
    if effects.empty:
        return pd.DataFrame(columns=["stack", "network", "rtt_ms", "loss_percent", "sites",
                                     "median_rel", "helped", "no_difference", "hurt"])
    g = effects.groupby(["stack", "network"], sort=False)
    out = g.agg(rtt_ms=("rtt_ms", "first"), loss_percent=("loss_percent", "first"),
                sites=("site", "nunique"), median_rel=("rel", "median"),
                helped=("verdict", lambda v: int((v == "helped").sum())),
                no_difference=("verdict", lambda v: int((v == "no difference").sum())),
                hurt=("verdict", lambda v: int((v == "hurt").sum()))).reset_index()
    return out


__all__ = [
    "PAIRS",
    "SEED_CLAIMS",
    "SIZE_BUCKETS",
    "BbrAnalysis",
    "analyse_bbr",
    "claims",
    "delivery_by_size",
    "delivery_figure",
    "effects_figure",
    "findings",
    "largest_object",
    "largest_objects",
    "page_sizes",
    "path_losses",
    "site_effects",
    "summary_by_path",
]
