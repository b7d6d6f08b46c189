"""The model of one campaign's analysis: what to compute (`Config`), every table it
gives (`Analysis`), and the checks on them that `analysis.campaign.analyse` runs
(the pairs compared, the per-site verdicts, the banner's cautions, robustness).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from analysis.statistics.bbr import BbrAnalysis
from analysis.statistics.inference import DEFAULT_MDE
from analysis.statistics.stats import (
    DEFAULT_ALPHA,
    compare,
    default_pairs,
    effect_sizes,
    rank_input,
    sort_pairs,
    sort_table,
    win_tie_loss,
)
from results_contract import profiles_meta
from results_contract.manifest import Manifest
from results_contract.profiles_meta import ProfilesMeta
from results_contract.schema import ANALYSED_METRICS, PLOTTED_METRICS, label, settings_in


@dataclass(frozen=True)
class Config:
    """What to compute; the defaults are the paper's choices and `testbed report`'s."""

    baseline: str | None = None
    """Setting the relative differences are taken against; None: the profiles' baseline
    (profiles/comparisons.toml: `tcp`) when the campaign has it, otherwise its first
    setting (in the profiles' order)."""
    alpha: float = DEFAULT_ALPHA
    """Significance level of the per-site test: p < alpha decides, otherwise a tie."""
    test: str = "anova"
    """Per-site test deciding wins and losses (analysis.statistics.inference.TESTS); the
    paper's ANOVA."""
    correction: str = "none"
    """Correction across the per-site tests (analysis.statistics.inference.CORRECTIONS);
    the paper: none."""
    mde: float = DEFAULT_MDE
    """Relative difference whose detection power is reported."""
    resamples: int = 2000
    """Bootstrap resamples per site for the relative difference's CI."""
    metrics: tuple[str, ...] = ANALYSED_METRICS
    """Metrics with statistics."""
    plot_metrics: tuple[str, ...] = PLOTTED_METRICS
    """Metrics with CDF figures (LVC is computed but not plotted, as in the paper)."""
    pairs: tuple[tuple[str, str], ...] | None = None
    """(a, b) settings compared by ANOVA; None: each vs the baseline, and each stack
    twin's QUIC setting vs its TCP one (QUIC vs TCP+, QUIC+BBR vs TCP+BBR)."""
    design_pairs: tuple[tuple[str, str], ...] | None = None
    """(TCP setting, QUIC setting) pairs of the 1-RTT table; None: the profiles' stack
    twins (profiles/comparisons.toml)."""
    by_worker: bool = False
    """Also show results per worker (`testbed report --by-worker`, analysis.statistics.workers)."""
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
    """First vs warm visits: network x setting x visit x metric (analysis.statistics.visits)."""
    resumption: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Per network x setting x visit: trials that resumed, used early data / 0-RTT."""
    baseline: str = ""
    """The setting actually used as baseline."""
    baseline_why: str = ""
    notes: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())
    """Why the numbers deserve caution (few runs, failures): shown as a banner."""
    bbr: BbrAnalysis | None = None
    """Where BBR beats CUBIC (analysis.statistics.bbr)."""
    transport: pd.DataFrame | None = None
    """Per network and setting, from table connections (analysis.statistics.connections)."""
    connections: int = 0
    """Connection rows the transport figures come from."""
    examples: pd.DataFrame | None = None
    """Fastest, median and slowest trial per network and setting (by PLT)."""
    workers: pd.DataFrame | None = None
    """With config.by_worker: network x setting x worker PLT
    (analysis.statistics.workers.by_worker)."""
    worker_tests: pd.DataFrame | None = None
    """With config.by_worker: do the workers agree (analysis.statistics.workers.worker_tests)."""
    worker_calibrations: pd.DataFrame | None = None
    """With config.by_worker: the manifest's minimum RTT per worker and network."""
    reviewer: dict[str, pd.DataFrame] = field(default_factory=dict)
    """Across sites, paired tests, diagnostics, planner
    (analysis.statistics.report_stats.TABLES)."""
    distribution: pd.DataFrame = field(default_factory=pd.DataFrame)
    """Per network x setting x metric over all ok trials: n, mean, percentiles (ms)
    (analysis.campaign.model.distribution)."""
    findings: pd.DataFrame = field(default_factory=pd.DataFrame)
    """The paper's findings beside this campaign's, with verdicts (analysis.campaign.findings)."""
    profiles: ProfilesMeta | None = None
    """The labels, order and pairs it was computed with (the manifest's, else the
    checkout's: results_contract.profiles_meta); the report is written with them."""

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
    """(baseline, why): `wanted` if given, else the profiles' baseline (tcp) when
    present, else the first setting."""
    settings = settings_in(settings)
    default = profiles_meta.current().baseline
    if wanted is not None:
        return wanted, "chosen with --baseline"
    if default in settings or not settings:
        return default, "the default"
    return settings[0], f"the campaign has no {default} setting: its first setting"


def pairs_of(settings: Iterable[str], baseline: str, config: Config) -> tuple[tuple[str, str], ...]:
    """The (a, b) settings compared: config.pairs, or by default each setting vs the
    baseline and the stack twins (analysis.statistics.stats.default_pairs)."""
    if config.pairs is not None:
        return tuple(config.pairs)
    return tuple(default_pairs(settings, baseline))


def verdicts(meas: pd.DataFrame, pairs: Sequence[tuple[str, str]], config: Config,
             timed_out: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per pair x network x metric x site of `meas` (analysis.statistics.stats.measurements): the
    per-site test's outcome (analysis.statistics.stats.compare; a rank test counts the
    `timed_out` trials, analysis.statistics.stats.timeouts, as its worst values) and the relative
    difference with its bootstrap CI and power (analysis.statistics.stats.effect_sizes), as
    `config` says."""
    comparisons = compare(rank_input(meas, timed_out, config.test), pairs, config.alpha,
                          config.test, config.correction)
    effects = effect_sizes(meas, pairs, config.alpha, config.mde, resamples=config.resamples)
    return comparisons, effects


def caution(summary: pd.DataFrame, health: pd.DataFrame) -> list[str]:
    """Banner lines: groups with fewer than MIN_RUNS ok runs, groups with failed trials."""
    out = few_runs(summary)
    failing = health[health["failed"] > 0]
    if len(failing):
        groups = ", ".join(f"{label(n)}/{label(p)} ({f})" for n, p, f in
                           zip(failing["network"], failing["setting"], failing["failed"]))
        out.append(f"Failed trials in {len(failing)} of {len(health)} network × setting "
                   f"groups: {groups}. They are left out of the statistics; see Trial health.")
    return out


VERSIONED = ("testbed", "chromium", "firefox", "browsertime", "h3server", "h3quinn", "nginx",
             "kernel")
"""The versions (manifest.json, each session's `versions`) that a campaign's trials
should share: what measured them."""


def mixed_versions(manifest: Manifest | None) -> list[str]:
    """A banner line when the campaign's sessions (each `testbed run`, a resume
    included) ran with more than one version of what measures: the testbed's own
    commit, a browser, Browsertime, a server or the kernel; the trials of different
    runs may then differ by more than chance."""
    sessions = manifest.sessions if manifest is not None else []
    seen: dict[str, set[str]] = {}
    for s in sessions:
        for key in VERSIONED:
            value = s.versions.get(key)
            if value:
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
    low = summary.groupby(["site", "network", "setting"], observed=True)["n"].max()
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


QUANTILES = {"p10": 0.1, "p25": 0.25, "median": 0.5, "p75": 0.75, "p90": 0.9}


def distribution(meas: pd.DataFrame) -> pd.DataFrame:
    """Per network x setting x metric over every ok trial of every site: n, mean and
    the 10th, 25th, 50th, 75th and 90th percentiles (ms)."""
    g = meas.groupby(["network", "setting", "metric"], sort=False, observed=True)["value"]
    out = g.agg(n="count", mean="mean").reset_index()
    for name, q in QUANTILES.items():
        out[name] = g.quantile(q).to_numpy()
    return sort_table(out)
