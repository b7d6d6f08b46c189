"""The paper's findings beside the testbed's: the table analysis/campaign/findings.toml, checked
on load, and each finding's figure, interval and verdict computed from one campaign's
analysis (analysis.campaign.model.Analysis).

    table = load_findings()                  # the paper's findings (typed, checked)
    rows = evaluate(analysis, table)         # one row per finding x network x pair x metric
    markdown(rows, analysis)                 # what REPLICATION.md quotes

Verdicts: reproduced, contradicted, inconclusive, not tested (VERDICTS). Each kind of
finding (KINDS) says how its figure is computed and what decides; the statistics come
from the report's own tables (relative summary, per-site tests, across-site estimates,
the 1-RTT table), so every number here is one the report prints.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysis.statistics.across import equivalence_table, site_table
from analysis.statistics.stats import measurements
from results_contract import profiles_meta
from results_contract.schema import METRIC_LABELS, label

if TYPE_CHECKING:
    from analysis.campaign.model import Analysis

TABLE = Path(__file__).with_name("findings.toml")
VERDICTS = ("reproduced", "contradicted", "inconclusive", "not tested")
KINDS = ("relative", "difference", "site_tests", "same", "one_rtt", "load_order")
"""Kinds of finding; HOW says in a line how each is computed and decided."""
EXPECT = ("faster", "slower")
PAIRED = ("relative", "difference", "site_tests", "load_order")
"""Kinds whose figures come from the report's tables of its compared pairs."""
HOW = {
    "relative": "median over sites of (mean_a − mean_b) / mean_b (the paper's CDFs); across "
                "sites the geometric-mean ratio − 1, t interval, t test at alpha decides",
    "difference": "mean over sites of mean_a − mean_b (ms); across sites the geometric-mean "
                  "ratio in ms, t interval, t test at alpha decides",
    "site_tests": "per-site one-way ANOVA at p < alpha (the paper's): sites faster, equal, "
                  "slower; the shares of faster and slower sites decide",
    "same": "across sites: two one-sided t tests on the sites' log ratios (equivalence "
            "within the margin) decide",
    "one_rtt": "single-origin sites: (TCP setting − QUIC setting) / RTT, Welch intervals; "
               "the one-sided upper bound against the paper's bound decides",
    "load_order": "per-site ANOVA verdicts on PLT against SI / VC85 (a pointer only)",
}
"""How each kind of finding is computed and decided, in a line (shown with each row)."""
LINKS = ("relative", "anova", "site-tests", "across", "bbr", "design", "paired")
"""Report sections a finding may link to (their anchors in report.html.j2)."""
MIN_RUNS = 10
"""Fewer ok runs than this in a group: the row says its tests see only large effects."""

COLUMNS = ["id", "kind", "claim", "figure", "network", "a", "b", "metric", "paper", "testbed",
           "estimate", "interval", "verdict", "why", "runs", "link", "note", "evidence",
           "value", "low", "high"]


class FindingsError(ValueError):
    """The findings table is not as expected: one line naming the file, key and what."""


@dataclass(frozen=True)
class Finding:
    id: str
    claim: str
    figure: str
    paper: str | dict[str, str]
    kind: str
    networks: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]
    metrics: tuple[str, ...]
    link: str
    expect: str = "faster"
    min_win_share: float = 0.5
    max_loss_share: float = 0.2
    margin: float = 0.02
    or_faster: bool = False
    max_lead_rtt: float = 1.0
    note: str = ""
    evidence: str = ""
    paper_values: dict[str, tuple[float, float]] | None = None
    """Network -> the paper's figure as [low, high], in the estimate's unit (a fraction,
    or ms): the row says whether the interval reaches it."""

    def paper_for(self, network: str, metric: str) -> str:
        """The paper's number for a row: the table's entry for the network or the
        metric, or its one text."""
        if isinstance(self.paper, str):
            return self.paper
        return self.paper.get(network) or self.paper.get(metric) or "–"


REQUIRED = ("id", "claim", "figure", "paper", "kind", "networks", "pairs", "metrics", "link")
OPTIONAL = {"expect": str, "min_win_share": float, "max_loss_share": float, "margin": float,
            "or_faster": bool, "max_lead_rtt": float, "note": str, "evidence": str,
            "paper_values": dict}
EVIDENCE = ("busiest_connection", "busiest_delivery")
"""Mechanism evidence a finding's rows may show from table connections, per setting over
its ok trials (medians):
busiest_connection: the share of the trial's bytes its busiest connection sent, and the
connections per trial (the pooling that docs/quic-heavy.md found behind QUIC's losses
under DSL);
busiest_delivery: the busiest connection's delivery rate and the share of its bytes it
sent again (how a congestion controller used the bottleneck, and what its losses cost).
The rate is, over TCP, the highest sample tcp_info gave during the trial and, over
QUIC, quiche's estimate when the connection closed: compare it within one stack, as
the BBR rows do."""


def load_findings(path: Path | str = TABLE) -> tuple[Finding, ...]:
    """The findings of `path`, each checked; FindingsError (one line: file, key, what was
    expected) on the first problem."""
    path = Path(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise FindingsError(f"{path}: expected a TOML file of [[finding]] tables ({e})") from None
    unknown = sorted(set(doc) - {"finding"})
    if unknown or not isinstance(doc.get("finding"), list) or not doc["finding"]:
        raise FindingsError(f"{path}: expected only [[finding]] tables, at least one"
                            + (f" (unknown key {unknown[0]})" if unknown else ""))
    out, seen = [], set()
    for i, raw in enumerate(doc["finding"]):
        f = _finding(raw, f"{path}: finding[{i}]")
        if f.id in seen:
            raise FindingsError(f"{path}: finding[{i}].id: {f.id!r} given twice")
        seen.add(f.id)
        out.append(f)
    return tuple(out)


def _finding(raw: dict[str, Any], where: str) -> Finding:
    def bad(key: str, expected: str) -> FindingsError:
        return FindingsError(f"{where}.{key}: expected {expected}, got {raw.get(key)!r}")

    unknown = sorted(set(raw) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise FindingsError(f"{where}: unknown key {unknown[0]!r}; known: "
                            f"{', '.join((*REQUIRED, *OPTIONAL))}")
    for key in REQUIRED:
        if key not in raw:
            raise FindingsError(f"{where}: missing key {key!r}")
    if not isinstance(raw["id"], str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,63}", raw["id"]):
        raise bad("id", "lower-case letters, digits and '-'")
    for key in ("claim", "figure"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise bad(key, "a text")
    paper = raw["paper"]
    if not (isinstance(paper, str) or (isinstance(paper, dict) and paper and all(
            isinstance(k, str) and isinstance(v, str) for k, v in paper.items()))):
        raise bad("paper", "a text or a table of texts (by network or metric)")
    if raw["kind"] not in KINDS:
        raise bad("kind", f"one of {', '.join(KINDS)}")
    known = profiles_meta.current()  # the profiles' settings and networks
    networks = _names(raw, "networks", known.network_labels, bad)
    metrics = _names(raw, "metrics", METRIC_LABELS, bad)
    pairs = raw["pairs"]
    if not (isinstance(pairs, list) and pairs and all(
            isinstance(p, list) and len(p) == 2 and all(s in known.setting_labels for s in p)
            and p[0] != p[1] for p in pairs)):
        raise bad("pairs", "a list of [a, b] of two settings of "
                           f"{', '.join(known.setting_labels)}")
    if raw["link"] not in LINKS:
        raise bad("link", f"one of {', '.join(LINKS)}")
    extra = {}
    for key, kind in OPTIONAL.items():
        if key not in raw:
            continue
        value = raw[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if key == "paper_values":
            value = _paper_values(value, bad)
        elif not isinstance(value, kind) or (kind is float and isinstance(value, float)
                                                and not 0 <= value <= 10):
            raise bad(key, kind.__name__ + (" from 0 to 10" if kind is float else ""))
        extra[key] = value
    if extra.get("expect", "faster") not in EXPECT:
        raise bad("expect", f"one of {', '.join(EXPECT)}")
    if extra.get("evidence", EVIDENCE[0]) not in EVIDENCE:
        raise bad("evidence", f"one of {', '.join(EVIDENCE)}")
    return Finding(id=raw["id"], claim=raw["claim"].strip(), figure=raw["figure"], paper=paper,
                   kind=raw["kind"], networks=networks, metrics=metrics,
                   pairs=tuple((a, b) for a, b in pairs), link=raw["link"], **extra)


def _paper_values(value: Any, bad: Callable[[str, str], Exception]
                  ) -> dict[str, tuple[float, float]]:
    ok = isinstance(value, dict) and value and all(
        k in profiles_meta.current().network_labels and isinstance(v, list) and len(v) == 2
        and all(isinstance(x, int | float) and not isinstance(x, bool) for x in v)
        and v[0] <= v[1] for k, v in value.items())
    if not ok:
        raise bad("paper_values", "a table network -> [low, high] (numbers, low <= high)")
    return {k: (float(v[0]), float(v[1])) for k, v in value.items()}


def _names(raw: dict[str, Any], key: str, known: Mapping[str, Any],
           bad: Callable[[str, str], Exception]) -> tuple[str, ...]:
    value = raw[key]
    if not (isinstance(value, list) and value and all(v in known for v in value)):
        raise bad(key, f"a list of names of {', '.join(known)}")
    return tuple(value)


# -- evaluation -------------------------------------------------------------------------


def evaluate(a: Analysis, findings: tuple[Finding, ...] | None = None,
             connections: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per finding x network x pair x metric of `findings` (default: the
    table's) on the campaign analysed in `a` (analysis.campaign.model.Analysis): the paper's
    number, the testbed's computed the same way, the estimate and its interval where
    one applies, the verdict and why, the ok runs per group, the report section, and
    the mechanism evidence from `connections` (table connections) where a finding
    asks for it."""
    findings = load_findings() if findings is None else findings
    ctx = _Context(a, connections)
    rows = []
    for f in findings:
        for network in f.networks:
            for x, y in f.pairs:
                for metric in f.metrics:
                    rows.append(_row(f, network, x, y, metric, ctx))
    return pd.DataFrame(rows, columns=COLUMNS)


class _Context:
    """What the rows read from one analysis, computed once."""

    def __init__(self, a: Analysis, connections: pd.DataFrame | None = None) -> None:
        self.a = a
        self.busiest = busiest_connection(connections, a.trials)
        ok = a.trials[a.trials["status"] == "ok"]
        self.present = {(n, p) for n, p in zip(ok["network"], ok["protocol"])}
        self.networks = set(ok["network"])
        self.summary = a.summary
        self.across = a.reviewer.get("across_sites", pd.DataFrame())
        self.alpha = a.config.alpha
        self._meas: pd.DataFrame | None = None

    def meas(self) -> pd.DataFrame:
        if self._meas is None:
            self._meas = measurements(self.a.trials, ("plt", "si", "vc85", "fvc"))
        return self._meas

    def runs(self, network: str, x: str, y: str, metric: str) -> tuple[int, int]:
        s = self.summary
        s = s[(s["network"] == network) & (s["metric"] == metric) & s["protocol"].isin([x, y])]
        return (int(s["n"].min()), int(s["n"].max())) if len(s) else (0, 0)


def _base(f: Finding, network: str, x: str, y: str, metric: str) -> dict[str, Any]:
    return {"id": f.id, "kind": f.kind, "claim": f.claim, "figure": f.figure,
            "network": network, "a": x,
            "b": y, "metric": metric, "paper": f.paper_for(network, metric), "testbed": "–",
            "estimate": "–", "interval": "–", "verdict": "not tested", "why": "", "runs": "–",
            "link": f.link, "note": f.note, "evidence": "", "value": math.nan, "low": math.nan,
            "high": math.nan}


def _row(f: Finding, network: str, x: str, y: str, metric: str,
         ctx: _Context) -> dict[str, Any]:
    row = _base(f, network, x, y, metric)
    lacking = _lacking(network, (x, y), ctx)
    if lacking:
        row["why"] = lacking
        return row
    lo, hi = ctx.runs(network, x, y, "plt" if f.kind in ("one_rtt", "load_order") else metric)
    row["runs"] = f"{lo}" if lo == hi else f"{lo}–{hi}"
    compared = {tuple(p) for p in ctx.a.pairs}
    if f.kind in PAIRED and (x, y) not in compared:
        row["why"] = (f"{label(x)} vs {label(y)} is not among the pairs this report compares "
                      "(--pair).")
        return row
    row.update(JUDGES[f.kind](f, network, x, y, metric, ctx))
    row["why"] += _size(f, network, row)
    if f.evidence:
        row["evidence"] = EVIDENCE_TEXT[f.evidence](ctx.busiest, network, x, y)
    if lo < MIN_RUNS and row["verdict"] != "not tested":
        row["why"] += (f" Fewer than {MIN_RUNS} ok runs in some groups (fewest {lo}; "
                       "the paper had 31): the tests see only large differences.")
    return row


def _size(f: Finding, network: str, row: dict[str, Any]) -> str:
    """Whether the row's 95 % interval reaches the paper's figure ('' when either is
    unknown)."""
    want = (f.paper_values or {}).get(network)
    if want is None or not (np.isfinite(row["low"]) and np.isfinite(row["high"])):
        return ""
    reaches = row["low"] <= want[1] and want[0] <= row["high"]
    return (" The interval " + ("reaches" if reaches else "excludes")
            + " the paper's figure.")


def _lacking(network: str, settings: Collection[str], ctx: _Context) -> str:
    """Why the campaign cannot test this row ('' if it can)."""
    if network not in ctx.networks:
        return (f"The campaign has no ok trials on {label(network)} (its networks so far: "
                f"{', '.join(label(n) for n in sorted(ctx.networks)) or 'none'}).")
    missing = [s for s in settings if (network, s) not in ctx.present]
    if missing:
        return f"No ok {', '.join(label(s) for s in missing)} trials on {label(network)}."
    return ""


def _direction(verdict: str, expect: str, p: float, alpha: float) -> tuple[str, str]:
    """The across-site t test's verdict ('faster', 'slower', 'no difference') against the
    paper's direction."""
    test = f"t test across sites p = {p:.2g}" if pd.notna(p) else "no t test"
    if verdict == "no difference":
        return "inconclusive", f"Not significant across sites ({test}, not < {alpha:g})."
    if verdict == expect:
        return "reproduced", f"The paper's direction, significant across sites ({test})."
    return "contradicted", f"The opposite of the paper ({verdict}), significant across sites ({test})."


def _across(ctx: _Context, network: str, x: str, y: str, metric: str) -> pd.Series | None:
    t = ctx.across
    if t is None or t.empty:
        return None
    m = t[(t["a"] == x) & (t["b"] == y) & (t["network"] == network) & (t["metric"] == metric)]
    return None if m.empty else m.iloc[0]


def _pct(v: float) -> str:
    return "–" if pd.isna(v) else f"{v:+.1%}"


def _ms(v: float) -> str:
    return "–" if pd.isna(v) else f"{v:+.0f} ms"


def _site_means(ctx: _Context, network: str, x: str, y: str, metric: str) -> pd.DataFrame:
    s = ctx.summary
    s = s[(s["network"] == network) & (s["metric"] == metric)]
    wide = s.pivot_table(index="site", columns="protocol", values="mean", observed=True)
    return wide[[x, y]].dropna() if x in wide and y in wide else pd.DataFrame(columns=[x, y])


def _relative(f: Finding, network: str, x: str, y: str, metric: str,
              ctx: _Context) -> dict[str, Any]:
    means = _site_means(ctx, network, x, y, metric)
    rel = (means[x] - means[y]) / means[y]
    out = {"testbed": f"median {_pct(rel.median())} over {len(rel)} sites"}
    t = _across(ctx, network, x, y, metric)
    if t is None or pd.isna(t["estimate"]):
        return {**out, "verdict": "inconclusive", "why": "Fewer than 3 sites with both settings."}
    verdict, why = _direction(str(t["verdict"]), f.expect, t["p"], ctx.alpha)
    return {**out, "estimate": _pct(t["estimate"]),
            "interval": f"[{_pct(t['low'])}, {_pct(t['high'])}]", "verdict": verdict,
            "why": why, "value": float(t["estimate"]), "low": float(t["low"]),
            "high": float(t["high"])}


def _difference(f: Finding, network: str, x: str, y: str, metric: str,
                ctx: _Context) -> dict[str, Any]:
    means = _site_means(ctx, network, x, y, metric)
    diff = means[x] - means[y]
    out = {"testbed": f"mean {_ms(diff.mean())} over {len(diff)} sites"}
    t = _across(ctx, network, x, y, metric)
    if t is None or pd.isna(t["estimate"]):
        return {**out, "verdict": "inconclusive", "why": "Fewer than 3 sites with both settings."}
    verdict, why = _direction(str(t["verdict"]), f.expect, t["p"], ctx.alpha)
    return {**out, "estimate": f"{_ms(t['estimate_ms'])} ({_pct(t['estimate'])})",
            "interval": f"[{_ms(t['low_ms'])}, {_ms(t['high_ms'])}]", "verdict": verdict,
            "why": why, "value": float(t["estimate_ms"]), "low": float(t["low_ms"]),
            "high": float(t["high_ms"])}


def _site_tests(f: Finding, network: str, x: str, y: str, metric: str,
                ctx: _Context) -> dict[str, Any]:
    w = ctx.a.win_tie_loss
    m = w[(w["a"] == x) & (w["b"] == y) & (w["network"] == network) & (w["metric"] == metric)]
    if m.empty:
        return {"verdict": "inconclusive", "why": "No per-site test of this pair."}
    r = m.iloc[0]
    wins, ties, losses, untested, sites = (int(r[k]) for k in ("wins", "ties", "losses",
                                                                 "untested", "sites"))
    out = {"testbed": f"{wins} faster, {ties} equal, {losses} slower of {sites}"
                      + (f" ({untested} untested)" if untested else ""), "value": float(wins)}
    if untested == sites:
        return {**out, "verdict": "inconclusive",
                "why": "No site has two ok runs of both settings yet: no per-site test."}
    if wins >= f.min_win_share * sites and losses <= f.max_loss_share * sites:
        return {**out, "verdict": "reproduced",
                "why": f"Faster on at least {f.min_win_share:.0%} of the sites, slower on at "
                       f"most {f.max_loss_share:.0%}."}
    if losses > wins and losses > f.max_loss_share * sites:
        return {**out, "verdict": "contradicted",
                "why": f"Slower on more sites than faster, and on more than "
                       f"{f.max_loss_share:.0%} of them."}
    return {**out, "verdict": "inconclusive",
            "why": f"Faster on fewer than {f.min_win_share:.0%} of the sites"
                   + (f" or slower on more than {f.max_loss_share:.0%}" if wins else "")
                   + " (ties: no significant difference on that site)."}


def _same(f: Finding, network: str, x: str, y: str, metric: str,
          ctx: _Context) -> dict[str, Any]:
    d = site_table(ctx.meas(), [(x, y)])
    d = d[(d["network"] == network) & (d["metric"] == metric)]
    if d["site"].nunique() < 3:
        return {"verdict": "inconclusive", "why": "Fewer than 3 sites with both settings."}
    e = equivalence_table(d, ["network"], f.margin, ctx.alpha).iloc[0]
    out = {"testbed": f"shift {_pct(e['shift'])} over {int(e['sites'])} sites",
           "estimate": _pct(e["shift"]),
           "interval": f"[{_pct(e['shift_low'])}, {_pct(e['shift_high'])}]",
           "value": float(e["shift"]), "low": float(e["shift_low"]),
           "high": float(e["shift_high"])}
    level = f"{1 - 2 * ctx.alpha:.0%}"
    if e["verdict"] == "equivalent":
        return {**out, "verdict": "reproduced",
                "why": f"Equivalent within ±{f.margin:.0%} (TOST; {level} interval)."}
    if e["verdict"] == "different":
        if f.or_faster and e["shift"] < 0:
            return {**out, "verdict": "reproduced", "why": f"{label(x)} significantly faster."}
        return {**out, "verdict": "contradicted",
                "why": f"Different: not equivalent within ±{f.margin:.0%} and significant "
                       f"across sites ({level} interval)."}
    return {**out, "verdict": "inconclusive",
            "why": f"Neither shown equivalent within ±{f.margin:.0%} nor different "
                   f"({level} interval)."}


def _one_rtt(f: Finding, network: str, x: str, y: str, metric: str,
             ctx: _Context) -> dict[str, Any]:
    d = ctx.a.design
    if d is None or d.empty:
        return {"verdict": "not tested", "why": "No single-origin site with both settings."}
    m = d[(d["tcp"] == x) & (d["quic"] == y) & (d["network"] == network) & (d["metric"] == metric)]
    if m.empty:
        return {"verdict": "not tested",
                "why": f"No single-origin site with both settings on {label(network)}."}
    # QUIC's lead (TCP - QUIC) in RTTs is the table's difference / RTT plus the one RTT
    # credited to TCP; its 95 % interval likewise
    lead = (m["diff_rtt"] + 1).to_numpy(float)
    low, high = (m["diff_rtt_low"] + 1).to_numpy(float), (m["diff_rtt_high"] + 1).to_numpy(float)
    upper = m["lead_rtt_upper"].to_numpy(float)
    worst = int(lead.argmax())
    out = {"testbed": "lead " + ", ".join(f"{s} {v:+.2f} RTT" for s, v in zip(m["site"], lead)),
           "estimate": f"{lead[worst]:+.2f} RTT",
           "interval": (f"[{low[worst]:+.2f}, {high[worst]:+.2f}]" if np.isfinite(low[worst])
                        else "–"),
           "value": float(lead[worst]), "low": float(low[worst]), "high": float(high[worst])}
    if (upper < f.max_lead_rtt).all():
        return {**out, "verdict": "reproduced",
                "why": f"Every site's one-sided 95 % upper bound of the lead is under "
                       f"{f.max_lead_rtt:g} RTT."}
    if (low > f.max_lead_rtt).any():
        return {**out, "verdict": "contradicted",
                "why": f"A site's lead is above {f.max_lead_rtt:g} RTT (95 % interval)."}
    if not np.isfinite(upper).all():
        return {**out, "verdict": "inconclusive",
                "why": "Fewer than two ok runs of a setting on a site: no interval."}
    return {**out, "verdict": "inconclusive",
            "why": f"A site's interval reaches {f.max_lead_rtt:g} RTT."}


def _load_order(f: Finding, network: str, x: str, y: str, metric: str,
                ctx: _Context) -> dict[str, Any]:
    c = ctx.a.comparisons
    c = c[(c["a"] == x) & (c["b"] == y) & (c["network"] == network)]
    wide = c.pivot_table(index="site", columns="metric", values="outcome", aggfunc="first",
                         observed=True)
    if "plt" not in wide or metric not in wide:
        return {"verdict": "not tested", "why": f"No per-site tests of PLT and {label(metric)}."}
    opposite = {("win", "loss"), ("loss", "win")}
    flips = [s for s, p, m in zip(wide.index, wide["plt"], wide[metric]) if (p, m) in opposite]
    return {"testbed": f"{len(flips)} of {len(wide)} sites where {label(metric)} and PLT "
                       "disagree" + (f" ({', '.join(flips[:5])})" if flips else ""),
            "value": float(len(flips)), "verdict": "not tested",
            "why": "The claim is about the order page parts load in, which needs the videos; "
                   "the reference campaign keeps none (keep_video = false). The count of "
                   "sites whose verdicts disagree is only a pointer."}


def busiest_connection(conns: pd.DataFrame | None, trials: pd.DataFrame) -> pd.DataFrame:
    """Per network x setting over its ok trials with connection rows, medians over the
    trials of: the share of a trial's bytes sent that its busiest connection sent
    (share), the number of connections (connections), the busiest connection's delivery
    rate in bit/s (delivery_bps) and the share of its bytes sent that were sent again
    (retrans)."""
    columns = ["network", "protocol", "trials", "share", "connections", "delivery_bps",
               "retrans"]
    if conns is None or conns.empty:
        return pd.DataFrame(columns=columns)
    from analysis.statistics.connections import with_trials

    c = with_trials(conns, trials).dropna(subset=["bytes_sent"])
    if c.empty:
        return pd.DataFrame(columns=columns)
    for col in ("delivery_rate_bps", "bytes_retrans"):
        if col not in c:
            c[col] = np.nan
    keys = ["network", "protocol", "trial_id"]
    g = c.groupby(keys, observed=True)["bytes_sent"]
    c = c.assign(total=g.transform("sum"), n=g.transform("count"))
    top = c.loc[g.idxmax()]
    top = top[top["total"] > 0].assign(
        share=lambda d: d["bytes_sent"] / d["total"],
        retrans=lambda d: (d["bytes_retrans"] / d["bytes_sent"]).where(d["bytes_sent"] > 0))
    return (top.groupby(["network", "protocol"], observed=True)
            .agg(trials=("trial_id", "count"), share=("share", "median"),
                 connections=("n", "median"), delivery_bps=("delivery_rate_bps", "median"),
                 retrans=("retrans", "median")).reset_index())


def _busiest(busiest: pd.DataFrame, network: str, x: str, y: str) -> pd.DataFrame | None:
    b = busiest[busiest["network"] == network].set_index("protocol")
    return b if x in b.index and y in b.index else None


def _busiest_text(busiest: pd.DataFrame, network: str, x: str, y: str) -> str:
    b = _busiest(busiest, network, x, y)
    if b is None:
        return ""
    return (f"Busiest connection's share of a trial's bytes (median): {label(x)} "
            f"{b.at[x, 'share']:.0%}, {label(y)} {b.at[y, 'share']:.0%}; connections per "
            f"trial {b.at[x, 'connections']:.0f} and {b.at[y, 'connections']:.0f} (table "
            "connections).")


def _delivery_text(busiest: pd.DataFrame, network: str, x: str, y: str) -> str:
    b = _busiest(busiest, network, x, y)
    if b is None or b.loc[[x, y], ["delivery_bps", "retrans"]].isna().to_numpy().any():
        return ""
    return (f"Busiest connection (median): delivery rate {label(x)} "
            f"{b.at[x, 'delivery_bps'] / 1e6:.1f} Mbit/s, {label(y)} "
            f"{b.at[y, 'delivery_bps'] / 1e6:.1f} Mbit/s; bytes sent again "
            f"{b.at[x, 'retrans']:.0%} and {b.at[y, 'retrans']:.0%} (table connections).")


EVIDENCE_TEXT = {"busiest_connection": _busiest_text, "busiest_delivery": _delivery_text}


JUDGES = {"relative": _relative, "difference": _difference, "site_tests": _site_tests,
          "same": _same, "one_rtt": _one_rtt, "load_order": _load_order}


# -- presentation ---------------------------------------------------------------------


def shown(rows: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows as the report's template shows them: labels for names, every text."""
    out = []
    for r in rows.itertuples(index=False):
        out.append({"id": r.id, "claim": r.claim, "figure": r.figure,
                    "network": label(r.network),
                    "comparison": f"{label(r.a)} vs {label(r.b)} · {label(r.metric)}",
                    "how": HOW[r.kind],
                    "paper": r.paper, "testbed": r.testbed, "estimate": r.estimate,
                    "interval": r.interval, "verdict": r.verdict, "why": r.why.strip(),
                    "runs": r.runs, "links": _links(r), "note": r.note,
                    "evidence": r.evidence})
    return out


def _links(r: Any) -> list[tuple[str, str]]:
    """(anchor, text) of the report sections a row's figures come from: its own, and
    the across-site table where its estimate is that table's."""
    links = [(r.link, r.link)]
    if r.kind in ("relative", "difference") and r.link != "across" and r.estimate != "–":
        links.append(("across", "across"))
    return links


def campaign_status(a: Analysis) -> dict[str, Any]:
    """How far the campaign is: trials, ok, failed, networks, ok runs per group."""
    o = a.overview
    n = a.summary[a.summary["metric"] == "plt"]["n"] if len(a.summary) else pd.Series(dtype=int)
    low, high = (int(n.min()), int(n.max())) if len(n) else (0, 0)
    return {"trials": int(o["trials"]), "ok": int(o["ok"]), "failed": int(o["failed"]),
            "sites": int(o["sites"]),
            "networks": ", ".join(label(x) for x in sorted(set(a.trials["network"]))),
            "runs_low": low, "runs_high": high,
            "runs": f"{low}" if low == high else f"{low}–{high}",
            "last": str(a.trials["started_at"].max()) if len(a.trials) else "–"}


def _many(rows: pd.DataFrame, r: dict[str, Any]) -> bool:
    """Whether finding r's id has several rows on its network (then its comparison is named)."""
    return int(((rows["id"] == r["id"]) & (rows["network"].map(label) == r["network"])).sum()) > 1


def markdown(rows: pd.DataFrame, a: Analysis) -> str:
    """The findings as a Markdown block (what REPLICATION.md quotes between its markers)."""
    s = campaign_status(a)
    head = (f"Campaign as analysed: {s['trials']} trials ({s['ok']} ok, {s['failed']} "
            f"failed), {s['sites']} sites, networks {s['networks']}, {s['runs']} ok runs per "
            f"site × network × setting; last trial started {s['last']}.")
    columns = ("| finding | network | comparison | paper | testbed | estimate [95 % CI] | "
               "verdict | why |")
    lines = [head, ""]
    for verdict in VERDICTS:
        ids = [f"{r['id']} ({r['network']}{', ' + r['comparison'] if _many(rows, r) else ''})"
               for r in shown(rows) if r["verdict"] == verdict]
        lines.append(f"- **{verdict}** ({len(ids)}): {'; '.join(ids) if ids else 'none'}")
    lines += ["", columns, "|---|---|---|---|---|---|---|---|"]
    for r in shown(rows):
        est = r["estimate"] if r["interval"] == "–" else f"{r['estimate']} {r['interval']}"
        why = f"{r['why']} {r['evidence']}".strip()
        cells = [r["id"], r["network"], r["comparison"], r["paper"], r["testbed"], est,
                 f"**{r['verdict']}**", why]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines) + "\n"
