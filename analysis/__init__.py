"""Analysis of campaign results: pure data, no testbed needed.

Needs only pandas, NumPy, SciPy, matplotlib, Jinja2 and pyarrow, so it runs on
a laptop with Jupyter. Typical use:

    from analysis import load, analyse, write_report
    trials = load("results/paper")          # folder, .sqlite, .csv or .parquet
    conns = load_connections("results/paper")   # table connections (telemetry)
    a = analyse(trials)                     # only status == 'ok' enters statistics
    a.summary, a.relative, a.win_tie_loss, a.design, a.health
    write_report(a, "reports/paper")

The results it reads are the contract of the package `results_contract` (beside this
one, imported by the testbed too). The packages, each importing only those before it:

- `analysis.statistics`: statistics of trials and connections, one question a module;
- `analysis.campaign`: one campaign's whole analysis (its model, `analyse`), the
  paper's findings, two campaigns' agreement, REPLICATION.md's block;
- `analysis.figures`: the figures (matplotlib);
- `analysis.report`: the report folder, the trial and compare pages (Jinja2).

`synthetic` (synthetic campaigns for tests, benchmarks and fixtures) is the one loose
module.
"""

from analysis.campaign.analyse import analyse
from analysis.campaign.model import Analysis, Config
from analysis.figures.plots import cdf_figure
from analysis.report.report import write_report
from analysis.statistics.cdf import ecdf, relative_cdfs
from analysis.statistics.design import design_impact, single_origin_sites
from analysis.statistics.health import failures_by_reason, trial_health
from analysis.statistics.stats import (
    compare,
    default_pairs,
    effect_sizes,
    measurements,
    relative_difference,
    relative_summary,
    summarize,
    win_tie_loss,
)
from results_contract.load import ResultsError, load, load_connections, ok_trials

__all__ = [
    "Analysis", "Config", "ResultsError", "analyse", "cdf_figure", "compare", "default_pairs",
    "design_impact", "ecdf", "effect_sizes", "failures_by_reason", "load", "load_connections",
    "measurements", "ok_trials", "relative_cdfs", "relative_difference", "relative_summary",
    "single_origin_sites", "summarize", "trial_health", "win_tie_loss", "write_report",
]
