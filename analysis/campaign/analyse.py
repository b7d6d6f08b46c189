"""The whole analysis of one campaign: `analyse` runs every statistic on its trials
and returns the `Analysis` (analysis.campaign.model) the report is written from.

    analysis = analyse(load("results/paper"))
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from analysis.campaign.findings import evaluate as evaluate_findings
from analysis.campaign.model import (
    Analysis,
    Config,
    caution,
    choose_baseline,
    distribution,
    mixed_versions,
    pairs_of,
    robustness,
    verdicts,
)
from analysis.statistics import report_stats
from analysis.statistics.bbr import analyse_bbr
from analysis.statistics.cdf import relative_cdfs
from analysis.statistics.connections import empty as empty_connections
from analysis.statistics.connections import transport_summary
from analysis.statistics.design import DESIGN_METRICS, design_impact
from analysis.statistics.health import failures_by_reason, overview, trial_health
from analysis.statistics.inference import CORRECTIONS, TESTS
from analysis.statistics.stats import (
    measurements,
    relative_difference,
    relative_summary,
    sort_table,
    summarize,
    timeouts,
    win_tie_loss,
)
from analysis.statistics.visits import has_warm, resumption, visit_means
from analysis.statistics.workers import by_worker, calibrations, worker_tests
from results_contract import profiles_meta
from results_contract.manifest import Manifest
from results_contract.schema import METRICS, label

DEFAULT = Config()
"""The paper's choices and `testbed report`'s."""


def analyse(trials: pd.DataFrame, config: Config = DEFAULT,
            connections: pd.DataFrame | None = None, manifest: Manifest | None = None,
            largest: dict[str, float] | None = None) -> Analysis:
    """Run every statistic on `trials` (from results_contract.load); only ok trials enter them.
    `connections` (analysis.statistics.connections.connections_of; None: none), the campaign's
    `manifest` (path loss) and each site's `largest` object feed the transport and
    BBR-vs-CUBIC sections. The labels, order, baseline and pairs are the ones the
    campaign recorded in its manifest, else the checkout's (results_contract.profiles_meta)."""
    with profiles_meta.using(profiles_meta.from_manifest(manifest)) as meta:
        return replace(_statistics(trials, config, connections, manifest, largest),
                       profiles=meta)


def _statistics(trials: pd.DataFrame, config: Config, connections: pd.DataFrame | None,
                manifest: Manifest | None, largest: dict[str, float] | None) -> Analysis:
    """analyse(), with the profiles' metadata in use."""
    if config.test not in TESTS:
        raise ValueError(f"unknown test {config.test!r}; known: {', '.join(TESTS)}")
    if config.correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {config.correction!r}; "
                         f"known: {', '.join(CORRECTIONS)}")
    notes = []
    baseline, why = choose_baseline(set(trials["setting"]), config.baseline)
    meas = measurements(trials, config.metrics)
    empty = [m for m in config.metrics if m not in set(meas["metric"])]
    if empty and len(meas):
        notes.append(f"No ok trial has {', '.join(label(m) for m in empty)}: left out of "
                     "every table (results stored before the metric was recorded, or the "
                     "browser never reported it).")
    summary = summarize(meas)
    if baseline in set(summary["setting"]):
        rel = relative_difference(summary, baseline)
    else:
        notes.append(f"No ok trials of the baseline setting {baseline!r}: "
                     "no relative differences or CDFs.")
        rel = pd.DataFrame(columns=["network", "site", "setting", "metric", "mean", "baseline",
                                    "baseline_mean", "rel"])
    pairs = pairs_of(set(trials["setting"]), baseline, config)
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
        bbr=analyse_bbr(trials, conns, None if manifest is None else manifest.document(),
                        largest, config.alpha),
        transport=transport_summary(conns, trials), connections=len(conns),
        examples=examples(trials), distribution=distribution(meas),
        reviewer=report_stats.compute(trials, meas, pairs, config.alpha, config.resamples,
                                      config.mixed_metrics), **per_worker)
    return replace(analysis, findings=evaluate_findings(analysis, connections=conns))


def examples(trials: pd.DataFrame, metric: str = "plt") -> pd.DataFrame:
    """Per network and setting, its fastest, median and slowest ok trial by `metric`
    (the median: the lower middle one of an even count): network, protocol, which,
    trial_id, value (ms)."""
    column = METRICS[metric]
    ok = trials[(trials["status"] == "ok") & trials[column].notna()]
    rows = []
    for (network, protocol), g in ok.groupby(["network", "setting"], sort=False,
                                             observed=True):
        g = g.sort_values([column, "site", "run"], kind="stable")  # ties: run 9 before 10
        picks = {"fastest": 0, "median": (len(g) - 1) // 2, "slowest": len(g) - 1}
        for which, i in picks.items():
            rows.append({"network": network, "setting": protocol, "which": which,
                         "trial_id": g["trial_id"].iloc[i], "value": float(g[column].iloc[i])})
    return sort_table(pd.DataFrame(rows, columns=["network", "setting", "which", "trial_id",
                                                  "value"]))
