"""Analysis of campaign results: pure data, no testbed needed.

Needs only pandas, NumPy, SciPy, matplotlib, Jinja2 and pyarrow, so it runs on
a laptop with Jupyter. Typical use:

    from analysis import load, analyse, write_report
    trials = load("results/paper")          # folder, .sqlite, .csv or .parquet
    a = analyse(trials)                     # only status == 'ok' enters statistics
    a.summary, a.relative, a.win_tie_loss, a.design, a.health
    write_report(a, "reports/paper")
"""

from analysis.cdf import ecdf, relative_cdfs
from analysis.design import design_impact, single_origin_sites
from analysis.health import failures_by_reason, trial_health
from analysis.load import ResultsError, load, ok_trials
from analysis.plots import cdf_figure
from analysis.report import Analysis, Config, analyse, write_report
from analysis.stats import (
    compare,
    default_pairs,
    effect_sizes,
    measurements,
    relative_difference,
    relative_summary,
    summarize,
    win_tie_loss,
)

__all__ = [
    "Analysis", "Config", "ResultsError", "analyse", "cdf_figure", "compare", "default_pairs",
    "design_impact", "ecdf", "effect_sizes", "failures_by_reason", "load", "measurements", "ok_trials",
    "relative_cdfs", "relative_difference", "relative_summary", "single_origin_sites",
    "summarize", "trial_health", "win_tie_loss", "write_report",
]
