"""The report's answers across sites, tests that use the design, diagnostics and planner
(analysis.across, analysis.paired, analysis.diagnostics, analysis.planner): computed
by `compute` into named tables, shown by templates/stats_sections.html.j2."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from analysis.across import across_sites, mixed_models
from analysis.design import network_rtts
from analysis.diagnostics import group_checks, position_checks, variance_checks
from analysis.paired import paired_counts, paired_tests
from analysis.planner import plan

TABLES = ("across_sites", "mixed_model", "paired_tests", "paired_counts", "diagnostics",
          "block_position", "variances", "plan")
"""Names of the tables (tables/<name>.csv), in the order shown."""

PLAN_PERCENT = 0.05
"""The planner's relative difference, beside one RTT."""


def compute(trials: pd.DataFrame, meas: pd.DataFrame, pairs, alpha: float,
            resamples: int = 2000, mixed_metrics=("plt",)) -> dict[str, pd.DataFrame]:
    """Every table of TABLES for one campaign (`meas`: analysis.stats.measurements)."""
    pairs = list(pairs)
    paired = paired_tests(meas, pairs, alpha)
    has_plt = bool((meas["metric"] == "plt").any())
    return {
        "across_sites": across_sites(meas, pairs, network_rtts(trials).to_dict(), alpha,
                                     resamples=resamples),
        "mixed_model": mixed_models(meas, pairs, mixed_metrics),
        "paired_tests": paired,
        "paired_counts": paired_counts(paired),
        "diagnostics": group_checks(trials) if has_plt else pd.DataFrame(),
        "block_position": position_checks(trials) if has_plt else pd.DataFrame(),
        "variances": variance_checks(trials, pairs) if has_plt else pd.DataFrame(),
        "plan": plan(trials, alpha, PLAN_PERCENT) if has_plt else pd.DataFrame(),
    }


FORMATS = {"estimate": "{:+.1%}", "low": "{:+.1%}", "high": "{:+.1%}", "boot_low": "{:+.1%}",
           "boot_high": "{:+.1%}", "estimate_rtt": "{:+.2f}", "low_rtt": "{:+.2f}",
           "high_rtt": "{:+.2f}", "site_slope_sd": "{:.3f}", "failed_share": "{:.1%}",
           "outlier_share": "{:.1%}", "sd_within": "{:.3f}", "drift_per_hour": "{:+.2%}",
           "drift_p": "{:.2g}", "first": "{:+.1%}", "last": "{:+.1%}", "largest": "{:.1%}",
           "sd_a": "{:.3f}", "sd_b": "{:.3f}", "sd_ratio": "{:.2f}", "sd_log": "{:.3f}",
           "runs_rtt": "{:.0f}", "runs_percent": "{:.0f}"}
HEADERS = {"a": "setting", "b": "vs", "estimate": "geometric-mean ratio − 1",
           "low": "95 % CI low", "high": "95 % CI high", "boot_low": "bootstrap low",
           "boot_high": "bootstrap high", "estimate_ms": "ms", "low_ms": "ms low",
           "high_ms": "ms high", "rtt_ms": "RTT (ms)", "estimate_rtt": "RTTs",
           "low_rtt": "RTTs low", "high_rtt": "RTTs high", "site_slope_sd": "site slope SD (log)",
           "anova": "ANOVA (paper)", "welch": "Welch", "paired_t": "paired t",
           "wilcoxon": "Wilcoxon signed-rank", "drift_per_hour": "drift per hour",
           "sd_within": "within-site SD (log)", "runs_rtt": "runs for 1 RTT",
           "runs_percent": f"runs for {PLAN_PERCENT:.0%}", "sd_ms": "within-site SD (ms)"}


def render(tables: dict[str, pd.DataFrame],
           as_html: Callable[..., object]) -> dict[str, object]:
    """name -> HTML (or None when empty) of each table but the per-site paired tests,
    by the report's `as_html(df, formats=..., rename=...)`."""
    return {name: as_html(tables.get(name), formats=FORMATS, rename=HEADERS)
            for name in TABLES if name != "paired_tests"}
