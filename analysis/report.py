"""The whole analysis of one campaign, and its report folder.

    analysis = analyse(load("results/paper"))
    write_report(analysis, Path("reports/paper"))

The folder holds index.html (tables inline, figures referenced relatively,
readable from file:// without a server), plots/*.png and plots/*.svg,
tables/*.csv with every table in full, and findings.md, the paper's findings with
their verdicts as Markdown (what REPLICATION.md quotes).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
import pandas as pd
from markupsafe import Markup

from analysis import pages, report_stats, trial_folder
from analysis.bbr import BbrAnalysis, analyse_bbr
from analysis.cdf import relative_cdfs
from analysis.cells import spreadsheet_safe
from analysis.connections import empty as empty_connections
from analysis.connections import transport_summary
from analysis.design import DESIGN_METRICS, DESIGN_PAIRS, design_impact
from analysis.findings import campaign_status
from analysis.findings import evaluate as evaluate_findings
from analysis.findings import markdown as markdown_findings
from analysis.findings import shown as shown_findings
from analysis.health import failures_by_reason, overview, trial_health
from analysis.inference import CORRECTIONS, DEFAULT_MDE, TESTS
from analysis.plots import cdf_row_figure, save
from analysis.report_inspect import inspect_sections
from analysis.report_sections import (
    distribution,
    distribution_figures,
    drift_figures,
    setup_tables,
    site_tests,
)
from analysis.schema import (
    ANALYSED_METRICS,
    METRIC_NAMES,
    OK,
    PLOTTED_METRICS,
    full_name,
    label,
    networks_in,
    ordered,
    settings_in,
)
from analysis.stats import (
    DEFAULT_ALPHA,
    compare,
    default_pairs,
    effect_sizes,
    measurements,
    rank_input,
    relative_difference,
    relative_summary,
    sort_pairs,
    sort_table,
    summarize,
    timeouts,
    win_tie_loss,
)
from analysis.trial_page import examples
from analysis.visits import has_warm, resumption, visit_means, visit_pivot
from analysis.workers import by_worker, calibrations, worker_tests


@dataclass(frozen=True)
class Config:
    """What to compute; the defaults are the paper's choices and `testbed report`'s."""

    baseline: str | None = None
    """Setting the relative differences are taken against; None: `tcp` when the
    campaign has it, otherwise its first setting (in the paper's order)."""
    alpha: float = DEFAULT_ALPHA
    """Significance level of the per-site test: p < alpha decides, otherwise a tie."""
    test: str = "anova"
    """Per-site test deciding wins and losses (analysis.inference.TESTS); the paper's ANOVA."""
    correction: str = "none"
    """Correction across the per-site tests (analysis.inference.CORRECTIONS); the paper: none."""
    mde: float = DEFAULT_MDE
    """Relative difference whose detection power is reported."""
    resamples: int = 2000
    """Bootstrap resamples per site for the relative difference's CI."""
    metrics: tuple[str, ...] = ANALYSED_METRICS
    """Metrics with statistics."""
    plot_metrics: tuple[str, ...] = PLOTTED_METRICS
    """Metrics with CDF figures (LVC is computed but not plotted, as in the paper)."""
    pairs: tuple[tuple[str, str], ...] | None = None
    """(a, b) settings compared by ANOVA; None: each vs the baseline, QUIC vs TCP+,
    QUIC+BBR vs TCP+BBR."""
    design_pairs: tuple[tuple[str, str], ...] = DESIGN_PAIRS
    """(TCP setting, QUIC setting) pairs of the 1-RTT table."""
    by_worker: bool = False
    """Also show results per worker (`testbed report --by-worker`, analysis.workers)."""
    mixed_metrics: tuple[str, ...] = ("plt",)
    """Metrics with a mixed model across sites (about 2 s a cell on 38 sites x 31 runs);
    () for none."""


@dataclass(frozen=True)
class Analysis:
    """Every table of one campaign's analysis (see each function for its columns)."""

    trials: pd.DataFrame
    config: Config
    pairs: tuple[tuple[str, str], ...]
    overview: dict[str, Any]
    health: pd.DataFrame
    failures: pd.DataFrame
    summary: pd.DataFrame
    relative: pd.DataFrame
    relative_summary: pd.DataFrame
    cdfs: pd.DataFrame
    comparisons: pd.DataFrame
    win_tie_loss: pd.DataFrame
    design: pd.DataFrame
    effects: pd.DataFrame
    robustness: pd.DataFrame
    visits: pd.DataFrame = field(default_factory=pd.DataFrame)
    """First vs warm visits: network x setting x visit x metric (analysis.visits)."""
    resumption: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Per network x setting x visit: trials that resumed, used early data / 0-RTT."""
    baseline: str = ""
    """The setting actually used as baseline."""
    baseline_why: str = ""
    notes: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())
    """Why the numbers deserve caution (few runs, failures): shown as a banner."""
    bbr: BbrAnalysis | None = None
    """Where BBR beats CUBIC (analysis.bbr)."""
    transport: pd.DataFrame | None = None
    """Per network and setting, from table connections (analysis.connections)."""
    connections: int = 0
    """Connection rows the transport figures come from."""
    examples: pd.DataFrame | None = None
    """Fastest, median and slowest trial per network and setting (by PLT)."""
    workers: pd.DataFrame | None = None
    """With config.by_worker: network x setting x worker PLT (analysis.workers.by_worker)."""
    worker_tests: pd.DataFrame | None = None
    """With config.by_worker: do the workers agree (analysis.workers.worker_tests)."""
    worker_calibrations: pd.DataFrame | None = None
    """With config.by_worker: the manifest's minimum RTT per worker and network."""
    reviewer: dict[str, pd.DataFrame] = field(default_factory=dict)
    """Across sites, paired tests, diagnostics, planner (analysis.report_stats.TABLES)."""
    distribution: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Per network x setting x metric over all ok trials: n, mean, percentiles (ms)
    (analysis.report_sections.distribution)."""
    findings: pd.DataFrame = field(default_factory=pd.DataFrame)
    """The paper's findings beside this campaign's, with verdicts (analysis.findings)."""

    def tables(self) -> dict[str, pd.DataFrame]:
        """name -> table, as written to tables/<name>.csv."""
        extra = {}
        if self.bbr is not None:
            extra = {"bbr_vs_cubic": self.bbr.effects, "bbr_by_path": self.bbr.by_path,
                     "bbr_delivery": self.bbr.delivery, "bbr_claims": self.bbr.claims}
        if self.transport is not None:
            extra["transport"] = self.transport
        if self.examples is not None:
            extra["examples"] = self.examples
        if self.workers is not None:
            extra.update(by_worker=self.workers, worker_tests=self.worker_tests,
                         worker_calibrations=self.worker_calibrations)
        extra.update(self.reviewer)
        return {**extra, "summary": self.summary, "relative": self.relative,
                "relative_summary": self.relative_summary, "cdf": self.cdfs,
                "tests": self.comparisons, "win_tie_loss": self.win_tie_loss,
                "effects": self.effects, "robustness": self.robustness,
                "design_impact": self.design, "health": self.health, "failures": self.failures,
                "visits": self.visits, "resumption": self.resumption,
                "distribution": self.distribution, "findings": self.findings}


MIN_RUNS = 10
"""Fewer ok runs than this in a group: the report warns that its tests say little."""


def choose_baseline(settings: Iterable[str], wanted: str | None = None) -> tuple[str, str]:
    """(baseline, why): `wanted` if given, else tcp when present, else the first setting."""
    settings = settings_in(settings)
    if wanted is not None:
        return wanted, "chosen with --baseline"
    if "tcp" in settings:
        return "tcp", "the default"
    if not settings:
        return "tcp", "the default"
    return settings[0], "the campaign has no tcp setting: its first setting"


def pairs_of(settings: Iterable[str], baseline: str, config: Config) -> tuple[tuple[str, str], ...]:
    """The (a, b) settings compared: config.pairs, or by default each setting vs the
    baseline, QUIC vs TCP+ and QUIC+BBR vs TCP+BBR."""
    if config.pairs is not None:
        return tuple(config.pairs)
    return tuple(default_pairs(settings, baseline))


def verdicts(meas: pd.DataFrame, pairs: Sequence[tuple[str, str]], config: Config,
             timed_out: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per pair x network x metric x site of `meas` (analysis.stats.measurements): the
    per-site test's outcome (analysis.stats.compare; a rank test counts the
    `timed_out` trials, analysis.stats.timeouts, as its worst values) and the relative
    difference with its bootstrap CI and power (analysis.stats.effect_sizes), as
    `config` says."""
    comparisons = compare(rank_input(meas, timed_out, config.test), pairs, config.alpha,
                          config.test, config.correction)
    effects = effect_sizes(meas, pairs, config.alpha, config.mde, resamples=config.resamples)
    return comparisons, effects


def analyse(trials: pd.DataFrame, config: Config = Config(),
            connections: pd.DataFrame | None = None, manifest: dict[str, Any] | None = None,
            largest: dict[str, float] | None = None) -> Analysis:
    """Run every statistic on `trials` (from analysis.load); only ok trials enter them.
    `connections` (analysis.connections.connections_of; None: none), the campaign's
    `manifest` (path loss) and each site's `largest` object feed the transport and
    BBR-vs-CUBIC sections."""
    if config.test not in TESTS:
        raise ValueError(f"unknown test {config.test!r}; known: {', '.join(TESTS)}")
    if config.correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {config.correction!r}; "
                         f"known: {', '.join(CORRECTIONS)}")
    notes = []
    baseline, why = choose_baseline(set(trials["protocol"]), config.baseline)
    meas = measurements(trials, config.metrics)
    empty = [m for m in config.metrics if m not in set(meas["metric"])]
    if empty and len(meas):
        notes.append(f"No ok trial has {', '.join(label(m) for m in empty)}: left out of "
                     "every table (results stored before the metric was recorded, or the "
                     "browser never reported it).")
    summary = summarize(meas)
    if baseline in set(summary["protocol"]):
        rel = relative_difference(summary, baseline)
    else:
        notes.append(f"No ok trials of the baseline setting {baseline!r}: "
                     "no relative differences or CDFs.")
        rel = pd.DataFrame(columns=["network", "site", "protocol", "metric", "mean", "baseline",
                                    "baseline_mean", "rel"])
    pairs = pairs_of(set(trials["protocol"]), baseline, config)
    timed_out = timeouts(trials, config.metrics)
    comparisons, effects = verdicts(meas, pairs, config, timed_out)
    design_metrics = [m for m in DESIGN_METRICS if m in config.metrics]
    design = design_impact(trials, summary, config.design_pairs, design_metrics)
    if design.empty:
        notes.append("No single-origin site with both settings of a 1-RTT pair: "
                     "the protocol design impact table is empty.")
    health = trial_health(trials)
    conns = connections if connections is not None else empty_connections()
    per_worker = {}
    if config.by_worker:
        per_worker = {"workers": by_worker(trials), "worker_tests": worker_tests(trials, config.alpha),
                      "worker_calibrations": calibrations(manifest)}
    analysis = Analysis(
        trials=trials, config=config, pairs=pairs, overview=overview(trials),
        health=health, failures=failures_by_reason(trials), summary=summary,
        relative=rel, relative_summary=relative_summary(rel), cdfs=relative_cdfs(rel),
        comparisons=comparisons, win_tie_loss=win_tie_loss(comparisons), design=design,
        effects=effects, robustness=robustness(meas, pairs, effects, config, timed_out),
        visits=visit_means(trials) if has_warm(trials) else visit_means(trials.iloc[:0]),
        resumption=resumption(trials) if has_warm(trials) else resumption(trials.iloc[:0]),
        baseline=baseline, baseline_why=why, notes=tuple(notes),
        warnings=tuple(caution(summary, health) + mixed_versions(manifest)),
        bbr=analyse_bbr(trials, conns, manifest, largest, config.alpha),
        transport=transport_summary(conns, trials), connections=len(conns),
        examples=examples(trials), distribution=distribution(meas),
        reviewer=report_stats.compute(trials, meas, pairs, config.alpha, config.resamples,
                                      config.mixed_metrics), **per_worker)
    return replace(analysis, findings=evaluate_findings(analysis, connections=conns))


def caution(summary: pd.DataFrame, health: pd.DataFrame) -> list[str]:
    """Banner lines: groups with fewer than MIN_RUNS ok runs, groups with failed trials."""
    out = few_runs(summary)
    failing = health[health["failed"] > 0]
    if len(failing):
        groups = ", ".join(f"{label(n)}/{label(p)} ({f})" for n, p, f in
                           zip(failing["network"], failing["protocol"], failing["failed"]))
        out.append(f"Failed trials in {len(failing)} of {len(health)} network × setting "
                   f"groups: {groups}. They are left out of the statistics; see Trial health.")
    return out


VERSIONED = ("testbed", "chromium", "firefox", "browsertime", "h3server", "h3quinn", "nginx",
             "kernel")
"""The versions (manifest.json, each session's `versions`) that a campaign's trials
should share: what measured them."""


def mixed_versions(manifest: dict[str, Any] | None) -> list[str]:
    """A banner line when the campaign's sessions (each `testbed run`, a resume
    included) ran with more than one version of what measures: the testbed's own
    commit, a browser, Browsertime, a server or the kernel; the trials of different
    runs may then differ by more than chance."""
    sessions = (manifest or {}).get("sessions") or []
    seen: dict[str, set[str]] = {}
    for s in sessions:
        versions = s.get("versions") if isinstance(s, dict) else None
        for key in VERSIONED:
            value = versions.get(key) if isinstance(versions, dict) else None
            if isinstance(value, str) and value:
                seen.setdefault(key, set()).add(value)
    mixed = {k: v for k, v in seen.items() if len(v) > 1}
    if not mixed:
        return []
    what = "; ".join(f"{k}: {len(v)} ({', '.join(sorted(x[:60] for x in v))})"
                     for k, v in mixed.items())
    line = (f"Mixed versions: the campaign's {len(sessions)} sessions did not all run the "
            f"same {', '.join(mixed)} ({what}). Trials of different sessions may differ by "
            "more than chance; manifest.json's sessions say which session ran when, and "
            "`testbed run --rerun-runs` measures runs again.")
    return [line]


def few_runs(summary: pd.DataFrame) -> list[str]:
    """A banner line when a group of `summary` has fewer than MIN_RUNS ok runs."""
    if not len(summary) or int(summary["n"].min()) >= MIN_RUNS:
        return []
    fewest = int(summary["n"].min())
    low = summary.groupby(["site", "network", "protocol"], observed=True)["n"].max()
    line = (f"Few runs: {int((low < MIN_RUNS).sum())} of {len(low)} groups "
            f"(site × network × setting) have fewer than {MIN_RUNS} ok runs "
            f"(fewest: {fewest}). The per-site tests can then only see large "
            "differences; the paper used 31 runs.")
    return [line]


def robustness(meas: pd.DataFrame, pairs: Sequence[tuple[str, str]], effects: pd.DataFrame,
               config: Config,
               timed_out: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per pair x network x metric: the verdicts under each test and correction
    ('wins/ties/losses'), the median relative difference over sites, the share of
    sites whose bootstrap CI excludes 0, median power to see config.mde and the
    median difference detectable with 80 % power."""
    keys = ["a", "b", "network", "metric"]
    variants = {"anova": ("anova", "none"), "anova_bh": ("anova", "bh"),
                "mannwhitney_bh": ("mannwhitney", "bh")}
    out = None
    for name, (test, correction) in variants.items():
        w = win_tie_loss(compare(rank_input(meas, timed_out, test), pairs, config.alpha, test,
                                 correction))
        w[name] = [f"{x}/{y}/{z}" for x, y, z in zip(w["wins"], w["ties"], w["losses"])]
        w = w[keys + ([] if out is not None else ["sites"]) + [name]]
        out = w if out is None else out.merge(w, on=keys, how="outer")
    if out is None or out.empty:
        return pd.DataFrame(columns=keys + ["sites", *variants, "median_rel",
                                            "ci_excludes_0", "median_power",
                                            "median_detectable"])
    e = effects.assign(excl=(effects["rel_low"] > 0) | (effects["rel_high"] < 0))
    agg = (e.groupby(keys, sort=False, observed=True)
           .agg(median_rel=("rel", "median"), ci_excludes_0=("excl", "mean"),
                median_power=("power", "median"), median_detectable=("detectable", "median"))
           .reset_index())
    return sort_pairs(out.merge(agg, on=keys, how="left"), list(pairs))


# -- the report folder ---------------------------------------------------------------

PCT = "{:+.1%}"

FORMATS = {
    "rel": PCT, "rel_low": PCT, "rel_high": PCT, "median_rel": PCT, "faster": "{:.0%}",
    "p": "{:.2g}", "p_adj": "{:.2g}", "diff_rtt": "{:+.2f}", "diff_rtt_low": "{:+.2f}",
    "diff_rtt_high": "{:+.2f}", "lead_rtt_upper": "{:.2f}", "mean_diff_ms": "{:+.1f}",
    "diff_ms": "{:+.1f}", "hedges_g": "{:+.2f}", "power": "{:.0%}", "median_power": "{:.0%}",
    "detectable": "{:.1%}", "median_detectable": "{:.1%}", "ci_excludes_0": "{:.0%}",
}
"""Column -> format in HTML tables: relative values in percent; other floats (times in
ms) get one decimal."""


def _html_table(df: pd.DataFrame, formats: dict[str, str] | None = None,
                rename: dict[str, str] | None = None) -> str:
    """`df` as an HTML table: names shown as labels (TCP+, DSL, PLT), numbers formatted."""
    formats = {**FORMATS, **(formats or {})}
    shown = df.copy()
    for column in ("network", "protocol", "metric", "a", "b", "tcp", "quic", "baseline"):
        if column in shown.columns:
            shown[column] = shown[column].map(label)
    formatters = {}
    for column in shown.columns:
        if column in formats:
            formatters[column] = formats[column].format
        elif pd.api.types.is_float_dtype(shown[column]):
            formatters[column] = "{:.1f}".format
    shown = shown.rename(columns=rename or {})
    formatters = {(rename or {}).get(k, k): v for k, v in formatters.items()}
    result: str = shown.to_html(index=False, formatters=formatters, na_rep="–", border=0,
                                classes="table", escape=True)
    return result


def _relative_pivot(a: Analysis) -> pd.DataFrame:
    """Rows network x metric, one column per setting: median relative difference over
    sites and how many sites were faster than the baseline."""
    rs = a.relative_summary
    if rs.empty:
        return pd.DataFrame()
    rs = rs.assign(cell=[f"{m:+.1%} ({round(f * n)}/{n} faster)" for m, f, n in
                         zip(rs["median"], rs["faster"], rs["sites"])])
    pivot = rs.pivot(index=["network", "metric"], columns="protocol", values="cell")
    pivot = pivot.reindex(columns=settings_in(pivot.columns))
    pivot = sort_table(pivot.reset_index().rename_axis(columns=None))
    pivot["network"] = pivot["network"].map(label)
    pivot["metric"] = pivot["metric"].map(label)
    return pivot.rename(columns={s: label(s) for s in pivot.columns})


def _wtl_pivot(a: Analysis) -> pd.DataFrame:
    """Rows pair x network, one column per metric: 'wins / ties / losses' of a vs b."""
    w = a.win_tie_loss
    if w.empty:
        return pd.DataFrame()
    w = w.assign(pair=[f"{label(x)} vs {label(y)}" for x, y in zip(w["a"], w["b"])],
                 cell=[f"{x} / {y} / {z}" for x, y, z in zip(w["wins"], w["ties"], w["losses"])])
    pivot = w.pivot(index=["pair", "network"], columns="metric", values="cell")
    pivot = pivot.reindex(columns=ordered(pivot.columns, a.config.metrics))
    pivot = pivot.reset_index().rename_axis(columns=None)
    rank = {"pair": {p: i for i, p in enumerate(dict.fromkeys(w["pair"]))},
            "network": {n: i for i, n in enumerate(networks_in(w["network"]))}}
    pivot = pivot.sort_values(["pair", "network"], key=lambda s: s.map(rank[s.name]),
                              kind="stable", ignore_index=True)
    pivot["network"] = pivot["network"].map(label)
    return pivot.rename(columns={c: label(c) for c in pivot.columns})


def _design_pivot(a: Analysis) -> pd.DataFrame:
    """The paper's Table 3 shape: rows pair x site x metric, one column per network,
    cells 'difference ms (difference / RTT)'."""
    d = a.design
    if d.empty:
        return pd.DataFrame()
    d = d.assign(pair=[f"{label(t)} − 1 RTT vs {label(q)}" for t, q in zip(d["tcp"], d["quic"])],
                 cell=[f"{x:+.1f} ms ({y:+.2f} [{lo:+.2f}, {hi:+.2f}] RTT)" for x, y, lo, hi in
                       zip(d["diff_ms"], d["diff_rtt"], d["diff_rtt_low"], d["diff_rtt_high"])])
    rank = {"pair": {p: i for i, p in enumerate(dict.fromkeys(d["pair"]))},
            "site": {s: i for i, s in enumerate(sorted(set(d["site"])))},
            "metric": {m: i for i, m in enumerate(DESIGN_METRICS)}}
    pivot = d.pivot(index=["pair", "site", "metric"], columns="network", values="cell")
    pivot = pivot.reindex(columns=networks_in(pivot.columns))
    pivot = pivot.reset_index().rename_axis(columns=None)
    pivot = pivot.sort_values(["pair", "site", "metric"], kind="stable", ignore_index=True,
                              key=lambda s: s.map(lambda v: rank[s.name].get(v, len(rank[s.name]))))
    pivot["metric"] = pivot["metric"].map(label)
    return pivot.rename(columns={c: label(c) for c in pivot.columns})


SUMMARY_HEADERS = {"n": "n (ok runs)", "mean": "mean (ms)", "median": "median (ms)",
                   "std": "std (ms)", "ci_low": "95 % CI low (ms)", "ci_high": "95 % CI high (ms)"}
ROBUSTNESS_HEADERS = {
    "a": "setting", "b": "vs", "anova": "ANOVA (paper)", "anova_bh": "ANOVA + BH",
    "mannwhitney_bh": "Mann-Whitney U + BH", "median_rel": "median relative difference",
    "ci_excludes_0": "sites whose 95 % CI excludes 0", "median_power": "median power",
    "median_detectable": "median detectable (80 % power)"}
EFFECT_HEADERS = {"a": "setting", "b": "vs", "rel": "relative difference",
                  "rel_low": "95 % CI low", "rel_high": "95 % CI high",
                  "hedges_g": "Hedges' g", "detectable": "detectable (80 % power)"}


def write_report(a: Analysis, out: Path, source: str = "", manifest: dict[str, Any] | None = None,
                 results_dir: Path | None = None) -> Path:
    """Write the report folder `out` (plots/, tables/, index.html, and trials.html with
    links to each trial's HAR and video when `results_dir` holds trial folders);
    returns index.html."""
    out = Path(out)
    (out / "plots").mkdir(parents=True, exist_ok=True)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    for name, table in a.tables().items():
        spreadsheet_safe(table).to_csv(out / "tables" / f"{name}.csv", index=False)

    figures = []  # one row per metric: all networks side by side, one shared x-range
    rel = a.relative
    networks = networks_in(rel["network"])
    for metric in a.config.plot_metrics:
        if not (rel["metric"] == metric).any():
            continue
        fig = cdf_row_figure(rel, metric, networks, a.baseline)
        files = save(fig, out / "plots", f"cdf-{metric}", formats=("png", "svg", "pdf"))
        figures.append({"title": full_name(metric),
                        **{fmt: f"plots/{name}" for fmt, name in files.items()}})

    synthetic = bool((manifest or {}).get("synthetic")) or bool(a.trials.attrs.get("synthetic"))
    distributions = distribution_figures(a, out)
    drift = drift_figures(a, out)
    env = pages.environment()
    trial_page = _trial_links(a, out, results_dir, env)
    inspect = inspect_sections(a, out, results_dir, _table_or_none)
    page = env.get_template("report.html.j2").render(
        source=source, a=a, overview=a.overview, label=label, figures=figures,
        distributions=distributions, drift=drift,
        distribution_table=_table_or_none(a.distribution),
        site_tests=site_tests(a, _table_or_none),
        setup=setup_tables(a, manifest if isinstance(manifest, dict) else None, _table_or_none),
        tables=list(a.tables()), synthetic=synthetic, trial_page=trial_page,
        metric_names=[(label(m), METRIC_NAMES[m]) for m in a.config.metrics
                      if m in METRIC_NAMES],
        test_name=TESTS[a.config.test], correction_name=CORRECTIONS[a.config.correction],
        relative_pivot=_table_or_none(_relative_pivot(a)),
        wtl_pivot=_table_or_none(_wtl_pivot(a)),
        wtl_table=_table_or_none(a.win_tie_loss, rename={"a": "setting", "b": "vs",
                                                          "mean_diff_ms": "mean difference (ms)"}),
        robustness_table=_table_or_none(a.robustness, rename=ROBUSTNESS_HEADERS),
        effects_table=_table_or_none(a.effects, rename=EFFECT_HEADERS),
        design_pivot=_table_or_none(_design_pivot(a)),
        visit_pivot=_table_or_none(visit_pivot(a.trials)) if not a.visits.empty else None,
        resumption_table=_table_or_none(a.resumption),
        design_table=_table_or_none(a.design, rename={
            "tcp_ms": "TCP mean (ms)", "tcp_minus_rtt_ms": "TCP − 1 RTT (ms)",
            "quic_ms": "QUIC mean (ms)", "diff_ms": "difference (ms)",
            "diff_rtt": "difference / RTT", "rtt_ms": "RTT (ms)",
            "diff_rtt_low": "95 % CI low (RTT)", "diff_rtt_high": "95 % CI high (RTT)",
            "lead_rtt_upper": "QUIC's lead ≤ (RTT, one-sided 95 %)",
            "lead_under_1rtt": "lead < 1 RTT shown"}),
        health_table=_table_or_none(a.health),
        failures_table=_table_or_none(a.failures),
        summary_table=_table_or_none(a.summary, rename=SUMMARY_HEADERS),
        inspect=inspect,
        findings=shown_findings(a.findings) if len(a.findings) else [],
        status=campaign_status(a),
        reviewer=report_stats.render(a.reviewer, _table_or_none),
        show_workers=a.workers is not None,
        by_worker=_table_or_none(a.workers) if a.workers is not None else None,
        worker_tests=_table_or_none(a.worker_tests) if a.worker_tests is not None else None,
        worker_calibrations=(_table_or_none(a.worker_calibrations)
                             if a.worker_calibrations is not None else None),
        calibration_differs=(manifest or {}).get("calibration_differs") or []
        if a.workers is not None else [])
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    if len(a.findings):  # what REPLICATION.md quotes (analysis.replication)
        (out / "findings.md").write_text(markdown_findings(a.findings, a), encoding="utf-8")
    return index


TRIAL_FILES = {"HAR": trial_folder.HAR, "video": trial_folder.VIDEO,
               "Browsertime JSON": trial_folder.BROWSERTIME}
"""Files of a trial folder the trials page links to, when present."""


def _trial_links(a: Analysis, out: Path, results_dir: Path | None,
                 env: jinja2.Environment) -> str | None:
    """Write out/trials.html (one row per trial, by site, network, setting and run
    number: status, PLT, links to its kept files) when `results_dir` has trial
    folders; returns its name or None."""
    if results_dir is None or not (Path(results_dir) / trial_folder.TRIALS_DIR).is_dir():
        return None
    trials_dir = Path(results_dir) / trial_folder.TRIALS_DIR
    here = out.resolve() if out.is_absolute() else out.absolute()
    rows = []
    for t in by_run(a.trials).itertuples(index=False):
        links = []
        # a trial's folder is trials/<trial_id>; an id that is not one name in trials/
        # links nothing
        inside = str(t.trial_id) not in ("", ".", "..") and "/" not in str(t.trial_id)
        for name, file in TRIAL_FILES.items():
            if inside and _regular(trials_dir, str(t.trial_id), file):
                href = os.path.relpath(trials_dir / str(t.trial_id) / file, here)
                links.append((name, quote(Path(href).as_posix())))
        rows.append({"trial": str(t.trial_id), "links": links,
                     "plt": "–" if pd.isna(t.plt_ms) else f"{t.plt_ms:.0f}",
                     "status": t.status if t.status == OK else f"{t.status}: {t.reason or ''}"})
    page = env.get_template("trials.html.j2").render(trials_dir=str(trials_dir), rows=rows)
    (out / "trials.html").write_text(page, encoding="utf-8")
    return "trials.html"


def by_run(trials: pd.DataFrame) -> pd.DataFrame:
    """`trials` in reading order: site, network and setting (the paper's order), then
    the run as a number (run 10 after run 9)."""
    keys = {"site": sorted(set(trials["site"])), "network": networks_in(trials["network"]),
            "protocol": settings_in(trials["protocol"])}
    return trials.sort_values(
        ["site", "network", "protocol", "run"], kind="stable",
        key=lambda s: s.map({v: i for i, v in enumerate(keys[s.name])}) if s.name in keys
        else pd.to_numeric(s, errors="coerce"))


def _regular(trials_dir: Path, trial_id: str, name: str) -> bool:
    """Whether trials/<trial_id>/<name> is a regular file, no step of it a symlink
    (lstat): the trials page links nothing that leads out of the results folder."""
    kinds = (stat.S_ISDIR, stat.S_ISDIR, stat.S_ISREG)
    for path, kind in zip((trials_dir, trials_dir / trial_id, trials_dir / trial_id / name),
                          kinds):
        try:
            if not kind(os.lstat(path).st_mode):
                return False
        except OSError:
            return False
    return True


def _table_or_none(df: pd.DataFrame, **kwargs: Any) -> Markup | None:
    if df is None or df.empty:
        return None
    return pages.piece("scroll_table.html.j2", table=Markup(_html_table(df, **kwargs)))
