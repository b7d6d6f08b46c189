"""Report sections beside the statistics: the absolute distributions, the per-site
tests in full, the setup as run and the run-order (drift) figure.

Each function takes a way to render a table (`table`: DataFrame -> HTML or None, as
analysis.report.report makes them) so this module does not import the report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
from markupsafe import Markup

from analysis.figures.plots import distribution_figure, drift_figure, save
from analysis.report.setup import adaptive_runs, networks_table, runs_table, settings_table
from analysis.statistics.stats import measurements
from results_contract.manifest import Manifest
from results_contract.schema import full_name, label, networks_in, ordered

if TYPE_CHECKING:
    from analysis.campaign.model import Analysis

STATISTIC = {"anova": "F", "welch": "t", "mannwhitney": "U", "kruskal": "H"}
"""Per-site test -> the name of its statistic."""

FORMATS = ("svg",)
"""These figures are saved as SVG only (vector, any size; a PNG at print resolution
would double the report's time to write)."""

def distribution_figures(a: Analysis, out: Path) -> list[dict[str, Any]]:
    """One box-plot figure per plotted metric (analysis.figures.plots.distribution_figure),
    saved as SVG into out/plots; [{title, svg}]."""
    meas = measurements(a.trials, a.config.metrics)
    networks = networks_in(meas["network"])
    figures = []
    for metric in a.config.plot_metrics:
        if not (meas["metric"] == metric).any():
            continue
        files = save(distribution_figure(meas, metric, networks), out / "plots",
                     f"distribution-{metric}", formats=FORMATS)
        figures.append({"title": full_name(metric),
                        **{fmt: f"plots/{name}" for fmt, name in files.items()}})
    return figures


def drift_figures(a: Analysis, out: Path) -> list[dict[str, Any]]:
    """The run-order figure of PLT (analysis.figures.plots.drift_figure), or [] without PLT."""
    ok = a.trials[(a.trials["status"] == "ok") & a.trials["plt_ms"].notna()]
    if ok.empty:
        return []
    files = save(drift_figure(a.trials, networks_in(ok["network"])), out / "plots", "drift-plt",
                 formats=FORMATS)
    return [{"title": "PLT in run order", **{fmt: f"plots/{n}" for fmt, n in files.items()}}]


def site_tests(a: Analysis, table: Callable[..., Markup | None]) -> list[dict[str, Any]]:
    """Per pair and network, the per-site test of every site and metric: means, the
    statistic (F with its degrees of freedom for the ANOVA), p and the verdict;
    [{pair, network, wins, ties, losses, table}]."""
    c = a.comparisons
    if c.empty:
        return []
    stat = STATISTIC.get(a.config.test, "statistic")
    shown = c.assign(df=[f"{int(x)}, {int(y)}" if pd.notna(x) and pd.notna(y) else None
                         for x, y in zip(c["df_between"], c["df_within"])])
    shown["metric"] = pd.Categorical(shown["metric"],
                                     ordered(shown["metric"].unique(), a.config.metrics))
    columns = ["site", "metric", "n_a", "n_b", "mean_a", "mean_b", "statistic", "df", "p",
               "p_adj", "outcome"]
    if a.config.correction == "none":
        columns.remove("p_adj")
    if a.config.test != "anova":
        columns.remove("df")
    out = []
    for (x, y) in a.pairs:
        for network in networks_in(c.loc[(c["a"] == x) & (c["b"] == y), "network"]):
            rows = shown[(shown["a"] == x) & (shown["b"] == y) & (shown["network"] == network)]
            rows = rows.sort_values(["site", "metric"], kind="stable")[columns]
            rows = rows.assign(metric=rows["metric"].astype(str))
            counts = rows["outcome"].value_counts()
            out.append({"pair": f"{label(x)} vs {label(y)}", "network": label(network),
                        "wins": int(counts.get("win", 0)), "ties": int(counts.get("tie", 0)),
                        "losses": int(counts.get("loss", 0)),
                        "table": table(rows, formats={"statistic": "{:.2f}"}, rename={
                            "n_a": f"n {label(x)}", "n_b": f"n {label(y)}",
                            "mean_a": f"mean {label(x)} (ms)", "mean_b": f"mean {label(y)} (ms)",
                            "statistic": stat, "df": "df (between, within)"})})
    return out


def setup_tables(a: Analysis, manifest: Manifest | None,
                 table: Callable[..., Markup | None]) -> dict[str, Any]:
    """{networks, settings, runs}: the setup as run (analysis.report.setup), each HTML or None
    (runs: adaptive runs only)."""
    runs = runs_table(a.trials, manifest)
    return {"runs": table(runs, formats={"widest ± (%)": "{:.2f}", "widest ± (ms)": "{:.1f}"})
            if not runs.empty else None,
            "precision": adaptive_runs(manifest),
            "networks": table(networks_table(manifest, set(a.trials["network"]))),
            "settings": table(settings_table(manifest, set(a.trials["setting"])))}
