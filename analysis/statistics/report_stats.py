"""The report's answers across sites, tests that use the design, diagnostics and planner
(analysis.statistics.across, .paired, .diagnostics, .planner): computed by `compute`
into named tables, shown by templates/stats_sections.html.j2."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from analysis.statistics.across import across_sites, mixed_models, site_table
from analysis.statistics.design import network_rtts
from analysis.statistics.diagnostics import (
    failures_beside,
    group_checks,
    position_checks,
    variance_checks,
)
from analysis.statistics.paired import paired_counts, paired_tests
from analysis.statistics.planner import across_plan, pilot_spread, plan

TABLES = ("across_sites", "mixed_model", "paired_tests", "paired_counts", "diagnostics",
          "block_position", "variances", "plan", "plan_across")
"""Names of the tables (tables/<name>.csv), in the order shown."""

PLAN_PERCENT = 0.05
"""The planner's relative difference, beside one RTT."""
ACROSS_PERCENT = 0.03
"""The across-site planner's effect."""


def compute(trials: pd.DataFrame, meas: pd.DataFrame, pairs: Sequence[tuple[str, str]],
            alpha: float, resamples: int = 2000,
            mixed_metrics: Sequence[str] = ("plt",)) -> dict[str, pd.DataFrame]:
    """Every table of TABLES for one campaign (`meas`: analysis.statistics.stats.measurements)."""
    pairs = list(pairs)
    paired = paired_tests(meas, pairs, alpha)
    has_plt = bool((meas["metric"] == "plt").any())
    return {
        "across_sites": failures_beside(
            across_sites(meas, pairs, network_rtts(trials).to_dict(), alpha,
                         resamples=resamples), trials),
        "mixed_model": failures_beside(mixed_models(meas, pairs, mixed_metrics), trials),
        "paired_tests": paired,
        "paired_counts": paired_counts(paired),
        "diagnostics": group_checks(trials) if has_plt else pd.DataFrame(),
        "block_position": position_checks(trials) if has_plt else pd.DataFrame(),
        "variances": variance_checks(trials, pairs) if has_plt else pd.DataFrame(),
        "plan": plan(trials, alpha, PLAN_PERCENT) if has_plt else pd.DataFrame(),
        "plan_across": (across_plan(site_table(meas, pairs), pilot_spread(trials), alpha,
                                    ACROSS_PERCENT) if has_plt else pd.DataFrame()),
    }


FORMATS = {"estimate": "{:+.1%}", "low": "{:+.1%}", "high": "{:+.1%}", "boot_low": "{:+.1%}",
           "boot_high": "{:+.1%}", "estimate_rtt": "{:+.2f}", "low_rtt": "{:+.2f}",
           "high_rtt": "{:+.2f}", "site_slope_sd": "{:.3f}", "failed_share": "{:.1%}",
           "outlier_share": "{:.1%}", "sd_within": "{:.3f}", "drift_per_hour": "{:+.2%}",
           "drift_p": "{:.2g}", "first": "{:+.1%}", "last": "{:+.1%}", "largest": "{:.1%}",
           "sd_a": "{:.3f}", "sd_b": "{:.3f}", "sd_ratio": "{:.2f}", "sd_log": "{:.3f}",
           "runs_rtt": "{:.0f}", "runs_percent": "{:.0f}", "runs_equivalence": "{:.0f}",
           "failed_share_a": "{:.1%}", "failed_share_b": "{:.1%}", "sd_sites": "{:.3f}",
           "sd_between": "{:.3f}", "power_now": "{:.0%}", "sites_needed": "{:.0f}",
           "runs_needed": "{:.0f}", "runs": "{:.0f}"}
HEADERS = {"a": "setting", "b": "vs", "estimate": "geometric-mean ratio − 1",
           "low": "95 % CI low", "high": "95 % CI high", "boot_low": "bootstrap 95 % CI low",
           "boot_high": "bootstrap 95 % CI high", "estimate_ms": "ms", "low_ms": "ms low",
           "high_ms": "ms high", "rtt_ms": "RTT (ms)", "estimate_rtt": "RTTs",
           "low_rtt": "RTTs low", "high_rtt": "RTTs high", "site_slope_sd": "site slope SD (log)",
           "anova": "ANOVA (paper)", "welch": "Welch", "paired_t": "paired t",
           "wilcoxon": "Wilcoxon signed-rank", "drift_per_hour": "drift per hour",
           "sd_within": "within-site SD (log)", "runs_rtt": "runs for 1 RTT",
           "runs_percent": f"runs for {PLAN_PERCENT:.0%}", "sd_ms": "within-site SD (ms)",
           "runs_equivalence": "runs for ±2 % equivalence (compare)",
           "sd_log": "within-site SD (log)", "mean_ms": "median mean (ms)",
           "failed_a": "failed (setting)", "failed_b": "failed (vs)",
           "failed_share_a": "failed share (setting)", "failed_share_b": "failed share (vs)",
           "sd_sites": "SD of sites' log ratios", "sd_between": "SD of sites' true effects",
           "power_now": f"power for {ACROSS_PERCENT:.0%}",
           "sites_needed": f"sites for {ACROSS_PERCENT:.0%} (these runs)",
           "runs_needed": f"runs for {ACROSS_PERCENT:.0%} (these sites)", "runs": "runs"}


def render(tables: dict[str, pd.DataFrame],
           as_html: Callable[..., object]) -> dict[str, object]:
    """name -> HTML (or None when empty) of each table but the per-site paired tests,
    by the report's `as_html(df, formats=..., rename=...)`."""
    return {name: as_html(tables.get(name), formats=FORMATS, rename=HEADERS)
            for name in TABLES if name != "paired_tests"}
