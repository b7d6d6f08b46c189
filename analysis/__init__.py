"""Analysis of campaign results: pure data, no testbed needed.

Needs only pandas, NumPy, SciPy, matplotlib, Jinja2 and pyarrow, so it runs on
a laptop with Jupyter. Typical use:

    from analysis import load, analyse, write_report
    trials = load("results/paper")          # folder, .sqlite, .csv or .parquet
    conns = load_connections("results/paper")   # table connections (telemetry)
    a = analyse(trials)                     # only status == 'ok' enters statistics
    a.summary, a.relative, a.win_tie_loss, a.design, a.health
    write_report(a, "reports/paper")

The names below are imported when first used, so that `analysis.schema` (the
results contract, which the campaign store is built from) is read without
pandas, SciPy or matplotlib.
"""

from types import ModuleType
from typing import Any

from analysis.load import ResultsError, load, load_connections, ok_trials

__all__ = [
    "Analysis", "Config", "ResultsError", "analyse", "cdf_figure", "compare", "default_pairs",
    "design_impact", "ecdf", "effect_sizes", "failures_by_reason", "load", "load_connections", "measurements", "ok_trials",
    "relative_cdfs", "relative_difference", "relative_summary", "single_origin_sites",
    "summarize", "trial_health", "win_tie_loss", "write_report",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'analysis' has no attribute {name!r}")
    module: ModuleType
    if name in ("ecdf", "relative_cdfs"):
        from analysis import cdf as module
    elif name in ("design_impact", "single_origin_sites"):
        from analysis import design as module
    elif name in ("failures_by_reason", "trial_health"):
        from analysis import health as module
    elif name == "cdf_figure":
        from analysis import plots as module
    elif name in ("Analysis", "Config", "analyse", "write_report"):
        from analysis import report as module
    else:
        from analysis import stats as module
    return getattr(module, name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
