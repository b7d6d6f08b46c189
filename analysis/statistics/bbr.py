"""Where BBR beats CUBIC: per site and network, and per connection by object size.

Two views of the same question, each BBR setting against its CUBIC twin on the
same stack (`pairs_in`: the BBR twins of profiles/comparisons.toml, TCP+BBR vs TCP+
and QUIC+BBR vs QUIC):

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
low-loss paths. Every verdict is a test across sites on log(BBR / CUBIC), each
site summarised first (its runs, or its connections per trial, then per site),
two-sided at the analysis's alpha: the sites are the replicates, so "BBR helped
on DA2GC" speaks of sites in general, not of "some site somewhere". The
per-site tests stay as description. `findings` says in sentences where BBR
helped and where it hurt.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.statistics import across
from analysis.statistics.connections import with_trials
from analysis.statistics.stats import compare, measurements, sort_table
from analysis.statistics.wording import DASH, NO_DIFFERENCE, finite, interval, pct
from results_contract import profiles_meta, trial_folder
from results_contract.load import ResultsError
from results_contract.schema import OK, label, networks_in

SIZE_BUCKETS = ((0, 100_000, "< 100 kB"), (100_000, 1_000_000, "100 kB – 1 MB"),
                (1_000_000, np.inf, "> 1 MB"))
"""Object size buckets, bytes (1 kB = 1000 B): [low, high)."""

LONG_RTT_MS = 100.0
"""A path's minimum RTT from which it counts as long."""
LOW_RTT_MS = 50.0
"""A path's minimum RTT below which it counts as low."""

SEED_CLAIMS = (
    ("lossy", "BBR helps on lossy paths (loss > 0)"),
    ("long-rtt", f"BBR helps on long-RTT paths (RTT ≥ {LONG_RTT_MS:.0f} ms)"),
    ("large-files", "BBR helps large files (> 100 kB: higher delivery rate)"),
    ("small-files-fast-paths", (f"BBR hurts small files (< 100 kB) on low-RTT "
                               f"(< {LOW_RTT_MS:.0f} ms), loss-free paths")),
)
"""What the CDN study (seed 004) reported; `claims` says whether these results agree."""


def pairs_in(settings: Iterable[str]) -> list[tuple[str, str, str]]:
    """(stack, BBR setting, CUBIC setting) of each BBR twin (profiles_meta) whose two
    settings are both among `settings`."""
    settings = set(settings)
    return [p for p in profiles_meta.current().bbr_pairs()
            if p[1] in settings and p[2] in settings]


def page_sizes(trials: pd.DataFrame, largest: dict[str, float] | None = None) -> pd.DataFrame:
    """Per site: the page's bytes (median over its ok trials of the bytes the replay
    servers sent) and its largest object (`largest`: site -> bytes, from a HAR)."""
    ok = trials[trials["status"] == OK]
    out = (ok.groupby("site", observed=True)["bytes"].median().astype("float64")
           .rename("page_bytes").reset_index())
    out["largest_bytes"] = out["site"].map(largest or {}).astype("float64")
    return out


def largest_object(har: dict[str, Any]) -> float | None:
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


def path_losses(manifest: dict[str, Any] | None) -> dict[str, float]:
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
    ok runs, rel = (BBR - CUBIC) / CUBIC, d = mean log BBR - mean log CUBIC (what the
    test across sites uses), the per-site one-way ANOVA's p and verdict (helped:
    p < alpha and BBR faster; hurt: p < alpha and slower; otherwise no difference;
    a description of each site, not the network's verdict), the page's bytes and
    largest object, the path's RTT and loss (%)."""
    columns = ["stack", "bbr", "cubic", "network", "site", "metric", "n_bbr", "n_cubic",
               "bbr_ms", "cubic_ms", "rel", "d", "p", "verdict", "page_bytes", "largest_bytes",
               "rtt_ms", "loss_percent"]
    pairs = pairs_in(trials["setting"])
    meas = measurements(trials, [metric])
    if not pairs or meas.empty:
        return pd.DataFrame(columns=columns)
    tests = compare(meas, [(b, c) for _, b, c in pairs], alpha)
    logs = across.site_table(meas, [(b, c) for _, b, c in pairs])
    tests = tests.merge(logs[["a", "b", "network", "metric", "site", "d"]],
                        on=["a", "b", "network", "metric", "site"], how="left")
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


DELIVERY_SITE_COLUMNS = ["stack", "network", "bucket", "site", "n_bbr", "n_cubic", "log_bbr",
                         "log_cubic", "d"]


def delivery_per_site(conns: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """Per stack, network, object size bucket and site: the connections' delivery rates
    summarised per trial first (mean log rate of the trial's connections in the
    bucket), then per site and setting (mean over its trials), so every site counts
    once whatever its connections; n_bbr, n_cubic: connections; d = log_bbr -
    log_cubic (NaN without both)."""
    pairs = pairs_in(trials["setting"])
    c = with_trials(conns, trials)
    c = c[c["delivery_rate_bps"].notna() & (c["delivery_rate_bps"] > 0)
          & c["bytes_sent"].notna()]
    if c.empty or not pairs:
        return pd.DataFrame(columns=DELIVERY_SITE_COLUMNS)
    per_request = c["bytes_sent"] / c["requests"].where(c["requests"] > 0)
    c = c.assign(bucket=bucket_of(per_request.fillna(c["bytes_sent"])),
                 logr=np.log(c["delivery_rate_bps"] / 1e6))
    keys = ["network", "bucket", "site", "setting"]
    per_trial = c.groupby(keys + ["trial_id"], observed=True).agg(
        logr=("logr", "mean"), n=("logr", "size")).reset_index()
    per_site = per_trial.groupby(keys, observed=True).agg(
        logr=("logr", "mean"), n=("n", "sum")).reset_index()
    parts = []
    for stack, bbr, cubic in pairs:
        sides = [per_site[per_site["setting"] == s].drop(columns="setting")
                 .rename(columns={"logr": f"log_{n}", "n": f"n_{n}"})
                 for s, n in ((bbr, "bbr"), (cubic, "cubic"))]
        both = sides[0].merge(sides[1], on=keys[:3], how="outer").assign(stack=stack)
        parts.append(both)
    out = pd.concat(parts, ignore_index=True)
    out[["n_bbr", "n_cubic"]] = out[["n_bbr", "n_cubic"]].fillna(0).astype(int)
    out["d"] = out["log_bbr"] - out["log_cubic"]
    return out[DELIVERY_SITE_COLUMNS]


def delivery_by_size(conns: pd.DataFrame, trials: pd.DataFrame,
                     per_site: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per stack, network and object size bucket, from `delivery_per_site` (connections
    summarised per trial, then per site): connections with BBR and CUBIC, sites with
    both, the geometric mean over sites of each setting's delivery rate (Mbit/s),
    ratio = the geometric mean over sites of BBR / CUBIC - 1 (positive: BBR delivered
    faster) and the two-sided p of the t test across sites on log(BBR / CUBIC)."""
    columns = ["stack", "network", "bucket", "sites", "n_bbr", "n_cubic", "bbr_mbps",
               "cubic_mbps", "ratio", "p"]
    s = delivery_per_site(conns, trials) if per_site is None else per_site
    rows = []
    for stack in dict.fromkeys(s["stack"]):
        for network in networks_in(s.loc[s["stack"] == stack, "network"]):
            for _, _, bucket in SIZE_BUCKETS:
                g = s[(s["stack"] == stack) & (s["network"] == network) & (s["bucket"] == bucket)]
                if g.empty:
                    continue
                t = across.t_test(g["d"].dropna().to_numpy(dtype=float))
                rows.append({"stack": stack, "network": network, "bucket": bucket,
                             "sites": int(t["sites"]), "n_bbr": int(g["n_bbr"].sum()),
                             "n_cubic": int(g["n_cubic"].sum()),
                             "bbr_mbps": _gmean(g["log_bbr"]), "cubic_mbps": _gmean(g["log_cubic"]),
                             "ratio": float(np.expm1(t["mean"])) if t["sites"] else np.nan,
                             "p": float(t["p"])})
    return pd.DataFrame(rows, columns=columns)


def _gmean(logs: pd.Series) -> float:
    logs = logs.dropna()
    return float(np.exp(logs.mean())) if len(logs) else np.nan


def signed_z(effect: Any, p: Any) -> np.ndarray:
    """A two-sided p as a z score signed by its effect: sign(effect) * Φ⁻¹(1 - p/2),
    computed with the inverse survival function (norm.isf), so p = 1e-20 gives 9.3,
    not the infinity 1 - p/2 rounds to."""
    from scipy.stats import norm

    p = np.clip(np.nan_to_num(np.asarray(p, dtype=float), nan=1.0), 1e-300, 1.0)
    result: np.ndarray = np.sign(np.asarray(effect, dtype=float)) * norm.isf(p / 2)
    return result


def directed(groups: pd.DataFrame, effect: str, want_negative: bool,
             alpha: float) -> tuple[str, float]:
    """Whether `groups` (rows with a signed `effect` and its test's two-sided `p`) show
    the claimed direction: their signed z scores (`signed_z`) combined by Stouffer's
    method into one two-sided test at `alpha`; 'holds' (p < alpha, in the claimed
    direction), 'contradicted' (p < alpha, against it) or 'inconclusive', with that p.
    Rewording the claim (its opposite, with the sign of the effects flipped) gives the
    mirrored verdict with the same p. Claims pass one row, their test across sites."""
    from scipy.stats import norm

    g = groups[groups[effect].notna()]
    if g.empty:
        return "inconclusive", float("nan")
    z = float(signed_z(g[effect], g["p"]).sum() / np.sqrt(len(g)))
    p = float(2 * norm.sf(abs(z)))
    if p >= alpha or z == 0:
        return "inconclusive", p
    return ("holds" if (z < 0) == want_negative else "contradicted"), p


def across_site_test(rows: pd.DataFrame, value: str = "d") -> dict[str, Any]:
    """The test across sites of rows holding a per-site log ratio `value` (several
    rows a site, e.g. networks or stacks, are averaged first, so each site counts
    once): t test of mean 0; estimate = exp(mean) - 1 with its 95 % interval."""
    per_site = rows.groupby("site", observed=True)[value].mean().dropna()
    t = across.t_test(per_site.to_numpy(dtype=float))
    return {"sites": int(t["sites"]), "estimate": float(np.expm1(t["mean"])),
            "low": float(np.expm1(t["low"])), "high": float(np.expm1(t["high"])),
            "p": float(t["p"])}


def _interval(t: dict[str, Any]) -> str:
    """The estimate with its 95 % t interval and p; a dash for what cannot be had
    (fewer than 3 sites, no spread), never nan."""
    p = f"p = {t['p']:.2g}" if finite(t["p"]) else f"p {DASH}"
    return (f"geometric mean {pct(t['estimate'])}, 95 % CI {interval(t['low'], t['high'])} "
            f"over {t['sites']} sites, t test across sites {p}")


def claims(effects: pd.DataFrame, delivery: pd.DataFrame, alpha: float = 0.01,
           delivery_sites: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each of SEED_CLAIMS with what these results say: 'holds' or 'contradicted' when
    the test across sites (per site, the log ratio BBR / CUBIC averaged over the
    claim's networks and stacks, or size groups) shows it or its opposite, two-sided
    at alpha (`directed`), 'inconclusive' when it does not, or 'no data' (with why).
    The lossy and long-RTT claims are one result when they select the same networks
    (loss and RTT confounded in this campaign): the second says so."""
    rows = []

    def add(key: str, text: str, verdict: str, evidence: str, networks: str = "") -> None:
        rows.append({"claim": key, "statement": text, "verdict": verdict,
                     "networks": networks, "evidence": evidence})

    def test_claim(key: str, text: str, sub: pd.DataFrame, want_negative: bool,
                   what: str) -> Any:
        sub = sub[sub["d"].notna()] if len(sub) else sub
        if sub.empty:
            add(key, text, "no data", f"no {what}")
            return None
        t = across_site_test(sub)
        verdict, _ = directed(pd.DataFrame([t]), "estimate", want_negative, alpha)
        nets = ", ".join(label(n) for n in networks_in(sub["network"]))
        add(key, text, verdict, f"{_interval(t)} ({len(sub)} site × network × stack "
            f"{'× size ' if 'bucket' in sub.columns else ''}values)", nets)
        return frozenset(sub["network"])

    e = effects
    lossy = test_claim(*SEED_CLAIMS[0], e[e["loss_percent"] > 0] if len(e) else e, True,
                       "site × network with both settings of a pair on a lossy path")
    long_rtt = test_claim(*SEED_CLAIMS[1], e[e["rtt_ms"] >= LONG_RTT_MS] if len(e) else e, True,
                          "site × network with both settings of a pair on a long-RTT path")
    if lossy is not None and lossy == long_rtt:
        rows[-1]["verdict"] = rows[-2]["verdict"]
        rows[-1]["evidence"] = ("the same networks as the lossy claim: one result, not two "
                                "(loss and RTT go together in this campaign). "
                                + rows[-1]["evidence"])
    d = delivery_sites if delivery_sites is not None else pd.DataFrame(
        columns=DELIVERY_SITE_COLUMNS)
    no_conns = ("connection figures for these object sizes and paths" if len(delivery)
                else "per-connection figures (table connections) in these results")
    test_claim(*SEED_CLAIMS[2], d[d["bucket"].isin([b[2] for b in SIZE_BUCKETS[1:]])],
               False, no_conns)  # helps: a higher delivery rate with BBR
    fast = set(e.loc[(e["rtt_ms"] < LOW_RTT_MS) & (e["loss_percent"] == 0), "network"]) \
        if len(e) else set()
    test_claim(*SEED_CLAIMS[3], d[(d["bucket"] == SIZE_BUCKETS[0][2]) & d["network"].isin(fast)],
               True, no_conns)  # hurts: a lower delivery rate with BBR
    return pd.DataFrame(rows, columns=["claim", "statement", "verdict", "networks", "evidence"])


def findings(effects: pd.DataFrame, delivery: pd.DataFrame, alpha: float = 0.01) -> list[str]:
    """Sentences: per stack and network, 'helped' or 'hurt' only when the t test across
    sites on log(BBR / CUBIC) shows it, two-sided at alpha; the per-site tests' counts
    as description."""
    if effects.empty:
        twins = ", ".join(f"{label(b)} with {label(c)}"
                          for b, c in profiles_meta.current().bbr_twins)
        twins = twins or "profiles/comparisons.toml names no BBR twins"
        return [(f"No campaign setting pairs BBR with CUBIC on one stack ({twins}): "
                "nothing to compare.")]
    out = []
    for r in summary_by_path(effects, alpha).itertuples(index=False):
        if r.sites == 0:
            continue
        word = {"helped": "helped", "hurt": "hurt"}.get(r.verdict, f"made {NO_DIFFERENCE}")
        g = effects[(effects["stack"] == r.stack) & (effects["network"] == r.network)]
        loss = r.loss_percent
        path = (f"RTT {r.rtt_ms:.0f} ms, " + ("loss unknown" if pd.isna(loss)
                                               else f"loss {loss:g} %"))
        metric = label(str(g["metric"].iloc[0]))
        out.append(f"{'TCP' if r.stack == 'tcp' else 'QUIC'} on {label(r.network)} ({path}): "
                   f"BBR {word} ({metric} {_interval(r._asdict())}; per-site tests: "
                   f"{r.helped} helped, {r.hurt} hurt of {len(g)}).")
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
                       f"({r.ratio:+.0%} over {r.sites} sites; {r.n_bbr} vs {r.n_cubic} "
                       "connections, summarised per trial and site"
                       + ("" if pd.isna(r.p) else f"; p = {r.p:.2g}") + ").")
    return out


def largest_objects(folder: Path, trials: pd.DataFrame, tries: int = 3) -> dict[str, float]:
    """Site -> its largest object in bytes, from the HAR of its first ok trial that kept
    a readable one (at most `tries` trials a site are looked at; an unsafe or broken
    file is passed over, never followed); sites without one are left out."""
    from results_contract.trialfiles import TrialFiles

    out: dict[str, float] = {}
    ok = trials[trials["status"] == OK]
    for site, group in ok.groupby("site", observed=True, sort=True):
        for trial_id in list(group["trial_id"])[:tries]:
            try:
                with TrialFiles(folder, str(trial_id)) as files:
                    har = files.json(trial_folder.HAR)
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
    delivery_sites: pd.DataFrame | None = None
    """Delivery rates per stack, network, size bucket and site (`delivery_per_site`)."""


def analyse_bbr(trials: pd.DataFrame, conns: pd.DataFrame, manifest: dict[str, Any] | None = None,
                largest: dict[str, float] | None = None, alpha: float = 0.01,
                metric: str = "plt") -> BbrAnalysis:
    losses = path_losses(manifest)
    effects = site_effects(trials, page_sizes(trials, largest), losses, metric, alpha)
    per_site = delivery_per_site(conns, trials)
    delivery = delivery_by_size(conns, trials, per_site)
    missing = []
    if not pairs_in(trials["setting"]):
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
    return BbrAnalysis(effects, summary_by_path(effects, alpha), delivery,
                       claims(effects, delivery, alpha, per_site),
                       tuple(findings(effects, delivery, alpha)), tuple(missing), per_site)


BY_PATH_COLUMNS = ["stack", "network", "rtt_ms", "loss_percent", "sites", "median_rel",
                   "estimate", "low", "high", "p", "z", "verdict", "helped", "no_difference",
                   "hurt"]


def summary_by_path(effects: pd.DataFrame, alpha: float = 0.01) -> pd.DataFrame:
    """Per stack and network: the test across sites on log(BBR / CUBIC) (estimate =
    geometric-mean ratio - 1 with its 95 % t interval, two-sided p, z signed by the
    estimate, verdict helped / hurt / no difference at alpha); as description the
    median relative difference and the per-site tests' helped / no difference / hurt
    counts; the path's RTT and loss."""
    rows = []
    for (stack, network), g in effects.groupby(["stack", "network"], sort=False):
        t = across_site_test(g)
        verdict = across.verdict(np.log1p(t["estimate"]), t["p"], alpha)
        rows.append({"stack": stack, "network": network, "rtt_ms": g["rtt_ms"].iloc[0],
                     "loss_percent": g["loss_percent"].iloc[0], "sites": t["sites"],
                     "median_rel": g["rel"].median(), **{k: t[k] for k in
                                                         ("estimate", "low", "high", "p")},
                     "z": float(signed_z(t["estimate"], t["p"])),
                     "verdict": {"faster": "helped", "slower": "hurt"}.get(str(verdict),
                                                                             "no difference"),
                     **{k.replace(" ", "_"): int((g["verdict"] == k).sum())
                        for k in ("helped", "no difference", "hurt")}})
    return pd.DataFrame(rows, columns=BY_PATH_COLUMNS)


__all__ = [
    "SEED_CLAIMS",
    "SIZE_BUCKETS",
    "BbrAnalysis",
    "analyse_bbr",
    "claims",
    "delivery_by_size",
    "findings",
    "largest_object",
    "largest_objects",
    "page_sizes",
    "path_losses",
    "site_effects",
    "summary_by_path",
]
