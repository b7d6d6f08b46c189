"""The paper's findings beside the testbed's: the table analysis/campaign/findings.toml, checked
on load, and each finding's figure, interval, corrected p and verdict computed from one
campaign's analysis (analysis.campaign.model.Analysis).

    table = load_findings()                  # the paper's findings (typed, checked)
    rows = evaluate(analysis, table)         # one row per finding x network x pair x metric
    markdown(rows, analysis)                 # what REPLICATION.md quotes

Verdicts (VERDICTS) and their rules are analysis.statistics.claims's: a directional
finding is reproduced (and said smaller or larger than the paper when the interval
excludes the paper's figure), contradicted or inconclusive; a "no difference" finding
is equivalent within a margin derived from the paper's own figures; the 1-RTT rows test
the residual after crediting TCP with one RTT against the paper's bound. Every p of the
table is corrected together (Holm). The statistics come from the report's own tables
(relative summary, per-site tests, across-site estimates, the 1-RTT table), so every
number here is one the report prints.
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

from analysis.statistics import claims, site_regression
from analysis.statistics.across import site_table, t_test
from analysis.statistics.design import welch
from analysis.statistics.stats import measurements
from analysis.statistics.wording import NO_DIFFERENCE
from results_contract import profiles_meta
from results_contract.schema import METRIC_LABELS, label

if TYPE_CHECKING:
    from analysis.campaign.model import Analysis

TABLE = Path(__file__).with_name("findings.toml")
VERDICTS = claims.VERDICTS
KINDS = ("relative", "difference", "site_tests", "same", "one_rtt", "load_order")
"""Kinds of finding; HOW says in a line how each is computed and decided."""
EXPECT = ("faster", "slower")
PAIRED = ("relative", "difference", "site_tests", "load_order")
"""Kinds whose figures come from the report's tables of its compared pairs."""
TESTED = ("relative", "difference", "same", "one_rtt")
"""Kinds whose rows carry one p each, corrected together across the table (Holm)."""
HOW = {
    "relative": "median over sites of (mean_a − mean_b) / mean_b (the paper's CDFs); across "
                "sites the geometric-mean ratio − 1 with its 95 % t interval; the t test "
                "(Holm-corrected) decides the direction, the interval the size",
    "difference": "mean over sites of mean_a − mean_b (ms); across sites the geometric-mean "
                  "ratio in ms with its 95 % t interval; the t test (Holm-corrected) "
                  "decides the direction, the interval the size",
    "site_tests": "per-site one-way ANOVA at p < alpha (the paper's): sites faster, equal, "
                  "slower; the shares of faster and slower sites decide (a count, outside "
                  "the correction)",
    "same": "across sites: two one-sided t tests on the sites' log ratios within the margin "
            "the paper's own figures give (Holm-corrected) decide",
    "one_rtt": "single-origin sites: residual = (TCP setting − RTT − QUIC setting) / RTT, "
               "Welch intervals; two one-sided tests against the paper's bound (Holm-"
               "corrected) and the residual's sign decide",
    "load_order": "per-site ANOVA verdicts on PLT against SI / VC85 (a pointer only)",
}
"""How each kind of finding is computed and decided, in a line (shown with each row)."""
LINKS = ("relative", "anova", "site-tests", "across", "bbr", "design", "paired")
"""Report sections a finding may link to (their anchors in report.html.j2)."""
MIN_RUNS = 10
"""Fewer ok runs than this in a group: the row says its tests see only large differences."""

COLUMNS = ["id", "kind", "claim", "cite", "network", "a", "b", "metric", "paper", "figure",
           "testbed", "estimate", "interval", "p", "p_holm", "verdict", "why", "runs", "link",
           "note", "evidence", "value", "low", "high", "by_size", "regression"]


class FindingsError(ValueError):
    """The findings table is not as expected: one line naming the file, key and what."""


@dataclass(frozen=True)
class Finding:
    id: str
    claim: str
    cite: str
    paper: str | dict[str, str]
    kind: str
    networks: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]
    metrics: tuple[str, ...]
    link: str
    expect: str = "faster"
    min_win_share: float = 0.5
    max_loss_share: float = 0.2
    margin: float = math.nan
    """The equivalence margin of a `same` finding, derived on load from `margin_from`."""
    margin_from: tuple[tuple[str, str], ...] = ()
    or_faster: bool = False
    bound_rtt: float = 1.0
    note: str = ""
    evidence: str = ""
    by_page_size: tuple[str, ...] = ()
    """Metrics whose rows also show the verdict on the pages within the paper's range
    (site_regression.PAPER_LARGEST_MB) beside the one on all pages."""
    paper_values: dict[str, dict[str, float]] | None = None
    """Network -> metric -> the paper's figure, in the estimate's unit (a fraction for
    relative, ms for difference), as the paper prints it."""

    def paper_for(self, network: str, metric: str) -> str:
        """The paper's number for a row: its figure where the paper gives one, else the
        table's entry for the network or the metric, or its one text."""
        figure = self.figure(network, metric)
        if math.isfinite(figure):
            return _paper_figure(figure, self.kind)
        if isinstance(self.paper, str):
            return self.paper
        return self.paper.get(network) or self.paper.get(metric) or "–"

    def figure(self, network: str, metric: str) -> float:
        """The paper's figure for a network and metric (NaN: the paper gives none)."""
        return float((self.paper_values or {}).get(network, {}).get(metric, math.nan))


def _paper_figure(figure: float, kind: str) -> str:
    """The paper's figure as it prints it: a fraction as a percentage (-0.05: −5 %),
    ms with thousands separated (-8364.8: −8,364.8 ms)."""
    if kind == "relative":
        return f"{figure * 100:+.{max(0, claims.decimals(figure) - 2)}f} %".replace("-", "−")
    return f"{figure:+,.{claims.decimals(figure)}f} ms".replace("-", "−")


REQUIRED = ("id", "claim", "cite", "paper", "kind", "networks", "pairs", "metrics", "link")
OPTIONAL = {"expect": str, "min_win_share": float, "max_loss_share": float,
            "margin_from": list, "or_faster": bool, "bound_rtt": float, "note": str,
            "evidence": str, "paper_values": dict, "by_page_size": list}
EVIDENCE = ("busiest_connection", "busiest_delivery", "site_regression")
"""Mechanism evidence a finding's rows may show from table connections, per setting over
its ok trials (medians):
busiest_connection: the share of the trial's bytes its busiest connection sent, and the
connections per trial (the pooling that docs/quic-heavy.md found behind QUIC's losses
under DSL);
busiest_delivery: the busiest connection's delivery rate and the share of its bytes it
sent again (how a congestion controller used the bottleneck, and what its losses cost).
The rate is, over TCP, the highest sample tcp_info gave during the trial and, over
QUIC, quiche's estimate when the connection closed: compare it within one stack, as
the BBR rows do;
site_regression: what the per-site effect goes with (analysis.statistics.site_regression:
OLS with HC3 errors of the sites' log ratios on page bytes, origins, the busiest
connection's share gap and the machine's load where recorded), fitted on the row's own
network and metric."""


def load_findings(path: Path | str = TABLE) -> tuple[Finding, ...]:
    """The findings of `path`, each checked, `same` findings with the margin their
    `margin_from` derives; FindingsError (one line: file, key, what was expected) on the
    first problem."""
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
    by_id = {f.id: f for f in out}
    return tuple(_with_margin(f, by_id, f"{path}: finding[{i}]") for i, f in enumerate(out))


def derived_margin(pairs: Collection[tuple[str, str]],
                   findings: Mapping[str, Finding]) -> float:
    """The largest gap between two figures the paper calls alike: over each pair of
    finding ids (both against the same setting) and each network and metric both give
    a figure for, |(1 + f1) / (1 + f2) − 1| (the ratio of the two settings the figures
    imply). NaN when no pair has figures in common."""
    gaps = []
    for one, two in pairs:
        f1, f2 = findings[one].paper_values or {}, findings[two].paper_values or {}
        for network in set(f1) & set(f2):
            for metric in set(f1[network]) & set(f2[network]):
                gaps.append(abs((1 + f1[network][metric]) / (1 + f2[network][metric]) - 1))
    return max(gaps) if gaps else math.nan


def _with_margin(f: Finding, by_id: Mapping[str, Finding], where: str) -> Finding:
    if f.kind != "same":
        return f
    if not f.margin_from:
        raise FindingsError(f"{where}.margin_from: expected the pairs of findings whose "
                            "figures the paper calls alike (a `same` finding's margin)")
    missing = [i for p in f.margin_from for i in p if i not in by_id]
    if missing or any(by_id[i].kind != "relative" for p in f.margin_from for i in p):
        raise FindingsError(f"{where}.margin_from: expected ids of relative findings of this "
                            f"table, got {missing[0] if missing else 'another kind'!r}")
    margin = derived_margin(f.margin_from, by_id)
    if not math.isfinite(margin) or margin <= 0:
        raise FindingsError(f"{where}.margin_from: expected findings with figures on a "
                            "common network and metric, and some gap between them")
    from dataclasses import replace
    return replace(f, margin=margin)


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
    for key in ("claim", "cite"):
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
    extra: dict[str, Any] = {}
    for key, kind in OPTIONAL.items():
        if key not in raw:
            continue
        value = raw[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if key == "paper_values":
            value = _paper_values(value, bad)
        elif key == "by_page_size":
            if not (isinstance(value, list) and value and all(m in raw["metrics"]
                                                               for m in value)):
                raise bad(key, "a list of the finding's metrics")
            value = tuple(value)
        elif key == "margin_from":
            if not (isinstance(value, list) and value and all(
                    isinstance(p, list) and len(p) == 2 and all(isinstance(i, str) for i in p)
                    for p in value)):
                raise bad(key, "a list of [id, id] of findings whose figures the paper "
                               "calls alike")
            value = tuple((a, b) for a, b in value)
        elif not isinstance(value, kind) or (kind is float and isinstance(value, float)
                                                and not 0 <= value <= 10):
            raise bad(key, kind.__name__ + (" from 0 to 10" if kind is float else ""))
        extra[key] = value
    if extra.get("expect", "faster") not in EXPECT:
        raise bad("expect", f"one of {', '.join(EXPECT)}")
    if extra.get("evidence", EVIDENCE[0]) not in EVIDENCE:
        raise bad("evidence", f"one of {', '.join(EVIDENCE)}")
    negative = extra.get("expect", "faster") == "faster"
    for network, figures in (extra.get("paper_values") or {}).items():
        if network not in networks or any(m not in metrics for m in figures):
            raise bad("paper_values", "figures only for the finding's networks and metrics")
        if raw["kind"] in ("relative", "difference") and any(
                (v < 0) != negative for v in figures.values()):
            raise bad("paper_values", f"figures of the sign `expect` ({'faster' if negative else 'slower'}) says")
    return Finding(id=raw["id"], claim=raw["claim"].strip(), cite=raw["cite"], paper=paper,
                   kind=raw["kind"], networks=networks, metrics=metrics,
                   pairs=tuple((a, b) for a, b in pairs), link=raw["link"], **extra)


def _paper_values(value: Any, bad: Callable[[str, str], Exception]
                  ) -> dict[str, dict[str, float]]:
    def number(x: Any) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)

    ok = isinstance(value, dict) and value and all(
        k in profiles_meta.current().network_labels and isinstance(v, dict) and v
        and all(m in METRIC_LABELS and number(x) for m, x in v.items())
        for k, v in value.items())
    if not ok:
        raise bad("paper_values", "a table network -> { metric = the paper's figure }")
    return {k: {m: float(x) for m, x in v.items()} for k, v in value.items()}


def _names(raw: dict[str, Any], key: str, known: Mapping[str, Any],
           bad: Callable[[str, str], Exception]) -> tuple[str, ...]:
    value = raw[key]
    if not (isinstance(value, list) and value and all(v in known for v in value)):
        raise bad(key, f"a list of names of {', '.join(known)}")
    return tuple(value)


# -- evaluation -------------------------------------------------------------------------


Decide = Callable[[float], tuple[str, str]]
"""A row's verdict and why, from its corrected p."""


def evaluate(a: Analysis, findings: tuple[Finding, ...] | None = None,
             connections: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per finding x network x pair x metric of `findings` (default: the
    table's) on the campaign analysed in `a` (analysis.campaign.model.Analysis): the paper's
    number, the testbed's computed the same way, the estimate and its interval where
    one applies, the row's p and its Holm-corrected p (over every tested row of the
    table), the verdict and why, the ok runs per group, the report section, and the
    mechanism evidence from `connections` (table connections) where a finding asks
    for it."""
    findings = load_findings() if findings is None else findings
    ctx = _Context(a, connections)
    rows, decide = [], []
    for f in findings:
        for network in f.networks:
            for x, y in f.pairs:
                for metric in f.metrics:
                    row = _row(f, network, x, y, metric, ctx)
                    decide.append(row.pop("_decide", None))
                    rows.append(row)
    extra = [s for r in rows for s in r["by_size"] or [] if s.get("_decide")]
    corrected_all = claims.holm([r["p"] for r in rows] + [s["p"] for s in extra])
    corrected, tests = corrected_all[:len(rows)], int(np.isfinite(corrected_all).sum())
    for s, p_holm in zip(extra, corrected_all[len(rows):]):
        s["p_holm"] = float(p_holm)
        s["verdict"], _ = s.pop("_decide")(float(p_holm))
    for row, p_holm, judge in zip(rows, corrected, decide):
        row["p_holm"] = float(p_holm)
        if judge is None:
            continue
        row["verdict"], why = judge(float(p_holm))
        row["why"] = f"{why} Raw p = {_p(row['p'])} ({tests} tests, Holm)." + row["why"]
    for row in rows:
        for s in row["by_size"] or []:
            if s["pages"] == "all":  # the row itself
                s.update(p_holm=row["p_holm"], verdict=row["verdict"])
    return pd.DataFrame(rows, columns=COLUMNS)


class _Context:
    """What the rows read from one analysis, computed once."""

    def __init__(self, a: Analysis, connections: pd.DataFrame | None = None) -> None:
        self.a = a
        self.busiest = busiest_connection(connections, a.trials)
        self.connections = connections
        self._regressions: dict[tuple[str, str, str, str], tuple[pd.DataFrame, list[str]]] = {}
        ok = a.trials[a.trials["status"] == "ok"]
        self.present = {(n, p) for n, p in zip(ok["network"], ok["setting"])}
        self.networks = set(ok["network"])
        self.summary = a.summary
        self.across = a.reviewer.get("across_sites", pd.DataFrame())
        self.alpha = a.config.alpha
        self._meas: pd.DataFrame | None = None

    def meas(self) -> pd.DataFrame:
        if self._meas is None:
            self._meas = measurements(self.a.trials, ("plt", "si", "vc85", "fvc"))
        return self._meas

    def regression(self, network: str, x: str, y: str,
                   metric: str) -> tuple[pd.DataFrame, list[str]]:
        key = (network, x, y, metric)
        if key not in self._regressions:
            frame = site_regression.site_frame(self.a.trials, self.connections, x, y,
                                               network, metric)
            self._regressions[key] = site_regression.fit(frame)
        return self._regressions[key]

    def runs(self, network: str, x: str, y: str, metric: str) -> tuple[int, int]:
        s = self.summary
        s = s[(s["network"] == network) & (s["metric"] == metric) & s["setting"].isin([x, y])]
        return (int(s["n"].min()), int(s["n"].max())) if len(s) else (0, 0)

    def has_metric(self, network: str, setting: str, metric: str) -> bool:
        s = self.summary
        return bool(((s["network"] == network) & (s["setting"] == setting)
                     & (s["metric"] == metric) & (s["n"] > 0)).any())


def _base(f: Finding, network: str, x: str, y: str, metric: str) -> dict[str, Any]:
    return {"id": f.id, "kind": f.kind, "claim": f.claim, "cite": f.cite,
            "network": network, "a": x, "b": y, "metric": metric,
            "paper": f.paper_for(network, metric), "figure": f.figure(network, metric),
            "testbed": "–", "estimate": "–", "interval": "–", "p": math.nan,
            "p_holm": math.nan, "verdict": claims.NOT_TESTED, "why": "", "runs": "–",
            "link": f.link, "note": f.note, "evidence": "", "value": math.nan,
            "low": math.nan, "high": math.nan, "by_size": None, "regression": None}


def _row(f: Finding, network: str, x: str, y: str, metric: str,
         ctx: _Context) -> dict[str, Any]:
    row = _base(f, network, x, y, metric)
    lacking = _lacking(network, (x, y), ctx) or _no_metric(f, network, (x, y), metric, ctx)
    if lacking:
        row["why"] = lacking
        return row
    lo, hi = ctx.runs(network, x, y, "plt" if f.kind == "load_order" else metric)
    row["runs"] = f"{lo}" if lo == hi else f"{lo}–{hi}"
    compared = {tuple(p) for p in ctx.a.pairs}
    if f.kind in PAIRED and (x, y) not in compared:
        row["why"] = (f"{label(x)} vs {label(y)} is not among the pairs this report compares "
                      "(--pair).")
        return row
    row.update(JUDGES[f.kind](f, network, x, y, metric, ctx))
    if f.evidence == "site_regression":
        table, notes = ctx.regression(network, x, y, metric)
        row["evidence"] = site_regression.summary(table, notes)
        row["regression"] = {"table": table.to_dict("records"), "notes": notes}
    elif f.evidence:
        row["evidence"] = EVIDENCE_TEXT[f.evidence](ctx.busiest, network, x, y)
    if lo < MIN_RUNS and (row["verdict"] != claims.NOT_TESTED or row.get("_decide")):
        row["why"] += (f" Fewer than {MIN_RUNS} ok runs in some groups (fewest {lo}; "
                       "the paper had 31): the tests see only large differences.")
    return row


def _lacking(network: str, settings: Collection[str], ctx: _Context) -> str:
    """Why the campaign cannot test this row ('' if it can)."""
    if network not in ctx.networks:
        return (f"The campaign has no ok trials on {label(network)} (its networks so far: "
                f"{', '.join(label(n) for n in sorted(ctx.networks)) or 'none'}).")
    missing = [s for s in settings if (network, s) not in ctx.present]
    if missing:
        return f"No ok {', '.join(label(s) for s in missing)} trials on {label(network)}."
    return ""


def _no_metric(f: Finding, network: str, settings: Collection[str], metric: str,
               ctx: _Context) -> str:
    """Why the campaign has no values of the row's metric ('' if it has them)."""
    if f.kind == "load_order":
        return ""
    missing = [s for s in settings if not ctx.has_metric(network, s, metric)]
    if not missing:
        return ""
    why = (" (the visual metrics come from the video Browsertime records: a campaign "
           "that records none has no FVC, VC85 or SI)" if metric in ("fvc", "vc85", "si")
           else "")
    return (f"No {label(metric)} values of {', '.join(label(s) for s in missing)} on "
            f"{label(network)} in this campaign{why}.")


def _p(p: float) -> str:
    return "–" if not np.isfinite(p) else f"{p:.2g}"


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
    wide = s.pivot_table(index="site", columns="setting", values="mean", observed=True)
    return wide[[x, y]].dropna() if x in wide and y in wide else pd.DataFrame(columns=[x, y])


def _directional(f: Finding, network: str, metric: str, ctx: _Context, estimate: float,
                 low: float, high: float) -> dict[str, Any]:
    """The `_decide` of a directional row: the corrected p decides the direction, the
    95 % interval against the paper's figure (if it gives one) the size."""
    figure = f.figure(network, metric)
    size = claims.magnitude(low, high, figure) if math.isfinite(figure) else ""
    paper = f.paper_for(network, metric)
    negative = f.expect == "faster"

    def decide(p_holm: float) -> tuple[str, str]:
        verdict = claims.direction_verdict(estimate, p_holm, ctx.alpha, negative, size)
        where = {"reaches": f"The 95 % interval reaches the paper's {paper}.",
                 "smaller": f"The 95 % interval excludes the paper's {paper}: nearer zero.",
                 "larger": f"The 95 % interval excludes the paper's {paper}: beyond it.",
                 "": "The paper gives no figure here: direction only."}[size]
        if verdict in (claims.REPRODUCED, claims.SMALLER, claims.LARGER):
            return verdict, f"The paper's direction ({f.expect}), significant. {where}"
        if verdict == claims.CONTRADICTED:
            return verdict, (f"The opposite of the paper ({'slower' if negative else 'faster'}"
                             f"), significant. {where}")
        return verdict, f"Not significant. {where}"

    return {"_decide": decide}


def _relative(f: Finding, network: str, x: str, y: str, metric: str,
              ctx: _Context) -> dict[str, Any]:
    means = _site_means(ctx, network, x, y, metric)
    rel = (means[x] - means[y]) / means[y]
    out = {"testbed": f"median {_pct(rel.median())} over {len(rel)} sites"}
    t = _across(ctx, network, x, y, metric)
    if t is None or pd.isna(t["estimate"]):
        return {**out, "verdict": claims.INCONCLUSIVE,
                "why": "Fewer than 3 sites with both settings."}
    est, lo, hi = float(t["estimate"]), float(t["low"]), float(t["high"])
    by_size = None
    if metric in f.by_page_size:
        by_size = [{"pages": "all", "question": QUESTIONS["all"].format(
                        a=label(x), b=label(y), network=label(network)),
                    "sites": len(rel), "estimate": _pct(est),
                    "interval": f"[{_pct(lo)}, {_pct(hi)}]", "p": float(t["p"])},
                   _in_range(f, network, x, y, metric, ctx)]
    return {**out, "estimate": _pct(est), "interval": f"[{_pct(lo)}, {_pct(hi)}]",
            "p": float(t["p"]), "value": est, "low": lo, "high": hi, "by_size": by_size,
            **_directional(f, network, metric, ctx, est, lo, hi)}


QUESTIONS = {"all": "does {a} beat {b} on today's pages under {network}",
             "in_range": "does the paper's claim hold on pages like the paper's"}
"""The question each page-size line of a `by_page_size` finding answers."""


def _in_range(f: Finding, network: str, x: str, y: str, metric: str,
              ctx: _Context) -> dict[str, Any]:
    """The row's test on the sites whose pages are no larger than the paper's largest
    (site_regression.PAPER_LARGEST_MB, by the store's page bytes)."""
    limit = site_regression.PAPER_LARGEST_MB
    sites = set(site_regression.in_range(ctx.a.trials, network, limit))
    meas = ctx.meas()
    d = site_table(meas[meas["site"].isin(sites)], [(x, y)])
    d = d[(d["network"] == network) & (d["metric"] == metric)]["d"].dropna()
    out: dict[str, Any] = {"pages": f"≤ {limit:g} MB", "question": QUESTIONS["in_range"],
                           "sites": len(d), "estimate": "–", "interval": "–", "p": math.nan,
                           "p_holm": math.nan, "verdict": claims.INCONCLUSIVE}
    if len(d) < 3:
        return out
    t = t_test(d.to_numpy(float))
    est, lo, hi = (math.expm1(float(t[k])) for k in ("mean", "low", "high"))
    return {**out, "estimate": _pct(est), "interval": f"[{_pct(lo)}, {_pct(hi)}]",
            "p": float(t["p"]), **_directional(f, network, metric, ctx, est, lo, hi)}


def _difference(f: Finding, network: str, x: str, y: str, metric: str,
                ctx: _Context) -> dict[str, Any]:
    means = _site_means(ctx, network, x, y, metric)
    diff = means[x] - means[y]
    out = {"testbed": f"mean {_ms(diff.mean())} over {len(diff)} sites"}
    t = _across(ctx, network, x, y, metric)
    if t is None or pd.isna(t["estimate"]):
        return {**out, "verdict": claims.INCONCLUSIVE,
                "why": "Fewer than 3 sites with both settings."}
    est, lo, hi = float(t["estimate_ms"]), float(t["low_ms"]), float(t["high_ms"])
    return {**out, "estimate": f"{_ms(est)} ({_pct(t['estimate'])})",
            "interval": f"[{_ms(lo)}, {_ms(hi)}]", "p": float(t["p"]), "value": est,
            "low": lo, "high": hi,
            **_directional(f, network, metric, ctx, est, lo, hi)}


def _site_tests(f: Finding, network: str, x: str, y: str, metric: str,
                ctx: _Context) -> dict[str, Any]:
    w = ctx.a.win_tie_loss
    m = w[(w["a"] == x) & (w["b"] == y) & (w["network"] == network) & (w["metric"] == metric)]
    if m.empty:
        return {"verdict": claims.INCONCLUSIVE, "why": "No per-site test of this pair."}
    r = m.iloc[0]
    wins, ties, losses, untested, sites = (int(r[k]) for k in ("wins", "ties", "losses",
                                                                 "untested", "sites"))
    out = {"testbed": f"{wins} faster, {ties} equal, {losses} slower of {sites}"
                      + (f" ({untested} untested)" if untested else ""), "value": float(wins)}
    if untested == sites:
        return {**out, "verdict": claims.INCONCLUSIVE,
                "why": "No site has two ok runs of both settings yet: no per-site test."}
    if wins >= f.min_win_share * sites and losses <= f.max_loss_share * sites:
        return {**out, "verdict": claims.REPRODUCED,
                "why": f"Faster on at least {f.min_win_share:.0%} of the sites, slower on at "
                       f"most {f.max_loss_share:.0%}."}
    if losses > wins and losses > f.max_loss_share * sites:
        return {**out, "verdict": claims.CONTRADICTED,
                "why": f"Slower on more sites than faster, and on more than "
                       f"{f.max_loss_share:.0%} of them."}
    return {**out, "verdict": claims.INCONCLUSIVE,
            "why": f"Faster on fewer than {f.min_win_share:.0%} of the sites"
                   + (f" or slower on more than {f.max_loss_share:.0%}" if wins else "")
                   + f" (ties: {NO_DIFFERENCE} on that site)."}


def _same(f: Finding, network: str, x: str, y: str, metric: str,
          ctx: _Context) -> dict[str, Any]:
    d = site_table(ctx.meas(), [(x, y)])
    d = d[(d["network"] == network) & (d["metric"] == metric)]["d"].dropna()
    if len(d) < 3:
        return {"verdict": claims.INCONCLUSIVE, "why": "Fewer than 3 sites with both settings."}
    t = t_test(d.to_numpy(float))
    mean, se, df = float(t["mean"]), float(t["se"]), float(t["sites"]) - 1
    bound = math.log1p(f.margin)
    shift, low, high = math.expm1(mean), math.expm1(float(t["low"])), math.expm1(float(t["high"]))
    out = {"testbed": f"shift {_pct(shift)} over {len(d)} sites", "estimate": _pct(shift),
           "interval": f"[{_pct(low)}, {_pct(high)}]", "value": shift, "low": low,
           "high": high}
    margin = f"±{f.margin:.1%} (the paper's own figures: findings.toml's margin_from)"
    if f.or_faster:  # not slower than b by more than the margin
        p_holds, p_fails = claims.noninferior(mean, se, df, bound)
    else:
        p_holds, p_fails = claims.tost(mean, se, df, bound), claims.beyond(mean, se, df, bound)
    by_holds = not (p_fails < p_holds)
    p = p_holds if by_holds else p_fails

    def decide(p_holm: float) -> tuple[str, str]:
        if not p_holm < ctx.alpha:
            return claims.INCONCLUSIVE, (f"Neither shown within {margin} nor beyond it "
                                         f"({'not slower' if f.or_faster else 'equivalence'}"
                                         " tests).")
        if by_holds and f.or_faster:
            return claims.REPRODUCED, (f"{label(x)} not slower than {label(y)} by more than "
                                       f"{margin} (non-inferiority test).")
        if by_holds:
            return claims.EQUIVALENT, (f"Equivalent within {margin} (two one-sided tests).")
        return claims.CONTRADICTED, (f"Different by more than {margin} "
                                     f"({'slower' if mean > 0 else 'faster'}).")

    return {**out, "p": p, "_decide": decide}


def residuals(ctx_summary: pd.DataFrame, design: pd.DataFrame) -> pd.DataFrame:
    """`design` (the 1-RTT table's rows of one pair, network and metric) with each
    site's residual's standard error and Welch degrees of freedom, in RTTs
    (residual_se, residual_df), from the groups' n and std in `ctx_summary`."""
    se, df = welch(design, ctx_summary)
    with np.errstate(divide="ignore", invalid="ignore"):
        se = se / design["rtt_ms"].to_numpy(float)
    return design.assign(residual_se=se, residual_df=df)


def _one_rtt(f: Finding, network: str, x: str, y: str, metric: str,
             ctx: _Context) -> dict[str, Any]:
    d = ctx.a.design
    if d is None or d.empty:
        return {"verdict": claims.NOT_TESTED, "why": "No single-origin site with both settings."}
    m = d[(d["tcp"] == x) & (d["quic"] == y) & (d["network"] == network) & (d["metric"] == metric)]
    if m.empty:
        return {"verdict": claims.NOT_TESTED,
                "why": f"No single-origin site with both settings on {label(network)}."}
    m = residuals(ctx.summary, m)
    r = m["diff_rtt"].to_numpy(float)
    low, high = m["diff_rtt_low"].to_numpy(float), m["diff_rtt_high"].to_numpy(float)
    se, df = m["residual_se"].to_numpy(float), m["residual_df"].to_numpy(float)
    b = f.bound_rtt
    within = [claims.tost(*v, b) for v in zip(r, se, df)]
    outside = [claims.beyond(*v, b) for v in zip(r, se, df)]
    # all sites within the bound (intersection-union: the largest p); any site beyond it
    # (Bonferroni over the sites)
    p_within = max(within)
    p_beyond = min(1.0, len(r) * min(outside))
    deciding = int(np.nanargmax(within)) if np.isfinite(within).any() else 0
    by_within = not (p_beyond < p_within)
    mean = float(np.mean(r))
    # the paper's sign: QUIC still slightly faster; TCP minus one RTT shown faster (a
    # site's 95 % interval below zero) is the paper's "three cases", not its rule
    negative = [s for s, hi in zip(m["site"], high) if hi < 0]
    out = {"testbed": "residual " + ", ".join(
               f"{s} {v:+.2f} RTT [{lo:+.2f}, {hi:+.2f}]"
               for s, v, lo, hi in zip(m["site"], r, low, high)),
           "estimate": f"{r[deciding]:+.2f} RTT ({m['site'].iloc[deciding]})",
           "interval": (f"[{low[deciding]:+.2f}, {high[deciding]:+.2f}]"
                        if np.isfinite(low[deciding]) else "–"),
           "value": float(r[deciding]), "low": float(low[deciding]),
           "high": float(high[deciding]), "p": p_within if by_within else p_beyond}

    def decide(p_holm: float) -> tuple[str, str]:
        bound = f"±{b:g} RTT"
        if not np.isfinite(se).all():
            return claims.INCONCLUSIVE, "Fewer than two ok runs of a setting on a site: no test."
        if not p_holm < ctx.alpha:
            return claims.INCONCLUSIVE, (f"A site's residual is neither shown within {bound} "
                                         "nor beyond it.")
        if not by_within:
            return claims.CONTRADICTED, (f"A site's residual lies beyond {bound}: more than "
                                         "the 1-RTT handshake separates the stacks.")
        if not negative:
            return claims.REPRODUCED, (f"Every site's residual within {bound} (two one-sided "
                                       f"tests), none shown negative (mean {mean:+.2f} RTT): "
                                       "QUIC's lead is its saved round trip and a little.")
        return claims.EQUIVALENT, (f"Every site's residual within {bound} (two one-sided "
                                   f"tests), but TCP minus one RTT is shown faster on "
                                   f"{', '.join(negative)}, as in three of the paper's cases.")

    return {**out, "_decide": decide}


def _load_order(f: Finding, network: str, x: str, y: str, metric: str,
                ctx: _Context) -> dict[str, Any]:
    c = ctx.a.comparisons
    c = c[(c["a"] == x) & (c["b"] == y) & (c["network"] == network)]
    wide = c.pivot_table(index="site", columns="metric", values="outcome", aggfunc="first",
                         observed=True)
    if "plt" not in wide or metric not in wide:
        return {"verdict": claims.NOT_TESTED,
                "why": f"No per-site tests of PLT and {label(metric)}."}
    opposite = {("win", "loss"), ("loss", "win")}
    flips = [s for s, p, m in zip(wide.index, wide["plt"], wide[metric]) if (p, m) in opposite]
    return {"testbed": f"{len(flips)} of {len(wide)} sites where {label(metric)} and PLT "
                       "disagree" + (f" ({', '.join(flips[:5])})" if flips else ""),
            "value": float(len(flips)), "verdict": claims.NOT_TESTED,
            "why": "The claim is about the order page parts load in, which needs the videos; "
                   "the reference campaign keeps none (keep_video = false). The count of "
                   "sites whose verdicts disagree is only a pointer."}


def busiest_connection(conns: pd.DataFrame | None, trials: pd.DataFrame) -> pd.DataFrame:
    """Per network x setting over its ok trials with connection rows, medians over the
    trials of: the share of a trial's bytes sent that its busiest connection sent
    (share), the number of connections (connections), the busiest connection's delivery
    rate in bit/s (delivery_bps) and the share of its bytes sent that were sent again
    (retrans)."""
    columns = ["network", "setting", "trials", "share", "connections", "delivery_bps",
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
    keys = ["network", "setting", "trial_id"]
    g = c.groupby(keys, observed=True)["bytes_sent"]
    c = c.assign(total=g.transform("sum"), n=g.transform("count"))
    top = c.loc[g.idxmax()]
    top = top[top["total"] > 0].assign(
        share=lambda d: d["bytes_sent"] / d["total"],
        retrans=lambda d: (d["bytes_retrans"] / d["bytes_sent"]).where(d["bytes_sent"] > 0))
    return (top.groupby(["network", "setting"], observed=True)
            .agg(trials=("trial_id", "count"), share=("share", "median"),
                 connections=("n", "median"), delivery_bps=("delivery_rate_bps", "median"),
                 retrans=("retrans", "median")).reset_index())


def _busiest(busiest: pd.DataFrame, network: str, x: str, y: str) -> pd.DataFrame | None:
    b = busiest[busiest["network"] == network].set_index("setting")
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
        out.append({"id": r.id, "claim": r.claim, "cite": r.cite,
                    "network": label(r.network),
                    "comparison": f"{label(r.a)} vs {label(r.b)} · {label(r.metric)}",
                    "how": HOW[r.kind],
                    "paper": r.paper, "testbed": r.testbed, "estimate": r.estimate,
                    "interval": r.interval, "p_holm": _p(r.p_holm), "verdict": r.verdict,
                    "verdict_class": verdict_class(r.verdict),
                    "why": r.why.strip(), "runs": r.runs, "links": _links(r),
                    "note": r.note, "evidence": r.evidence,
                    "by_size": _by_size_shown(r.by_size),
                    "regression": _regression_shown(r.regression)})
    return out


def _by_size_shown(by_size: Any) -> list[dict[str, str]]:
    """A row's verdicts on all pages and on the pages within the paper's range."""
    if not isinstance(by_size, list):
        return []
    return [{"pages": s["pages"], "question": s["question"], "sites": str(s["sites"]),
             "estimate": s["estimate"] if s["interval"] == "–"
             else f"{s['estimate']} {s['interval']}",
             "p_holm": _p(s.get("p_holm", math.nan)), "verdict": s["verdict"],
             "verdict_class": verdict_class(s["verdict"])} for s in by_size]


def _regression_shown(regression: Any) -> dict[str, Any] | None:
    """A row's per-site regression: its coefficients as text, and its notes."""
    if not isinstance(regression, dict):
        return None
    table = regression["table"]
    return {"rows": [{"term": r["label"], "coef": f"{r['coef']:+.3f}",
                      "interval": f"[{r['low']:+.3f}, {r['high']:+.3f}]", "p": _p(r["p"])}
                     for r in table],
            "sites": int(table[0]["sites"]) if table else 0,
            "notes": list(regression["notes"])}


def verdict_class(verdict: str) -> str:
    """A verdict as an HTML class suffix ("reproduced, smaller than the paper" ->
    "reproduced-smaller-than-the-paper")."""
    return re.sub(r"[^a-z]+", "-", verdict).strip("-")


def correction_note(rows: pd.DataFrame, alpha: float) -> str:
    """The sentence that states the table's multiple-comparison correction."""
    tests = int(np.isfinite(rows["p_holm"].to_numpy(float)).sum()) if len(rows) else 0
    subsets = sum(1 for b in rows.get("by_size", [])
                  if isinstance(b, list) for s in b
                  if s["pages"] != "all" and np.isfinite(s.get("p_holm", math.nan)))
    extra = (f" and {subsets} on the pages within the paper's range" if subsets else "")
    return (f"p (Holm): every row with a test ({tests + subsets} here: the across-site t "
            "tests, the equivalence tests and the 1-RTT residual tests" + extra + ") "
            "corrected together by Holm's "
            "step-down method (statsmodels multipletests), against alpha "
            f"{alpha:g}; the per-site ANOVA counts are outside it. Intervals are 95 %, "
            "uncorrected.")


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
               "p (Holm) | verdict | why |")
    lines = [head, "", correction_note(rows, a.config.alpha), ""]
    for verdict in VERDICTS:
        ids = [f"{r['id']} ({r['network']}{', ' + r['comparison'] if _many(rows, r) else ''})"
               for r in shown(rows) if r["verdict"] == verdict]
        lines.append(f"- **{verdict}** ({len(ids)}): {'; '.join(ids) if ids else 'none'}")
    lines += ["", columns, "|---|---|---|---|---|---|---|---|---|"]
    for r in shown(rows):
        est = r["estimate"] if r["interval"] == "–" else f"{r['estimate']} {r['interval']}"
        why = f"{r['why']} {r['evidence']}".strip()
        cells = [r["id"], r["network"], r["comparison"], r["paper"], r["testbed"], est,
                 r["p_holm"], f"**{r['verdict']}**", why]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines + _size_markdown(rows) + _regression_markdown(rows)) + "\n"


def _size_markdown(rows: pd.DataFrame) -> list[str]:
    """The verdicts of the `by_page_size` rows on all pages and on pages within the
    paper's range, each with the question it answers."""
    shown_rows = [r for r in shown(rows) if r["by_size"]]
    if not shown_rows:
        return []
    head = (f"Page size: each row below on all pages and on the pages no larger than the "
            f"paper's largest ({site_regression.PAPER_LARGEST_MB:g} MB, by the store's page "
            "bytes); the subsets' p are corrected with the table's.")
    columns = ("| finding | network | comparison | pages | question it answers | sites | "
               "estimate [95 % CI] | p (Holm) | verdict |")
    lines = ["", head, "", columns, "|---|---|---|---|---|---|---|---|---|"]
    for r in shown_rows:
        for s in r["by_size"]:
            lines.append(f"| {r['id']} | {r['network']} | {r['comparison']} | {s['pages']} | "
                         f"{s['question']} | {s['sites']} | {s['estimate']} | {s['p_holm']} | "
                         f"**{s['verdict']}** |")
    return lines


def _regression_markdown(rows: pd.DataFrame) -> list[str]:
    """The per-site regressions of the `site_regression` rows, once per network, pair
    and metric."""
    lines: list[str] = []
    seen = set()
    for r in shown(rows):
        reg = r["regression"]
        key = (r["network"], r["comparison"])
        if reg is None or key in seen:
            continue
        seen.add(key)
        lines += ["", f"Per-site regression, {r['network']}, {r['comparison']} "
                  f"({reg['sites']} sites; OLS, HC3 standard errors; effect: the site's "
                  "log ratio of geometric means)" + "".join(f"; {n}" for n in reg["notes"])
                  + ":", "", "| term | coefficient | 95 % CI | p |", "|---|---|---|---|"]
        lines += [f"| {t['term']} | {t['coef']} | {t['interval']} | {t['p']} |"
                  for t in reg["rows"]]
    return lines
