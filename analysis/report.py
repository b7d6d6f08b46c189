"""The whole analysis of one campaign, and its report folder.

    analysis = analyse(load("results/paper"))
    write_report(analysis, Path("reports/paper"))

The folder holds index.html (tables inline, figures referenced relatively,
readable from file:// without a server), plots/*.png and plots/*.svg, and
tables/*.csv with every table in full.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
import pandas as pd
from markupsafe import Markup

from analysis.cdf import relative_cdfs
from analysis.design import DESIGN_METRICS, DESIGN_PAIRS, design_impact
from analysis.health import failures_by_reason, overview, trial_health
from analysis.plots import cdf_figure, save
from analysis.schema import (
    ANALYSED_METRICS,
    PLOTTED_METRICS,
    label,
    networks_in,
    ordered,
    settings_in,
)
from analysis.stats import (
    DEFAULT_ALPHA,
    compare,
    default_pairs,
    measurements,
    relative_difference,
    relative_summary,
    sort_table,
    summarize,
    win_tie_loss,
)


@dataclass(frozen=True)
class Config:
    """What to compute; the defaults are the paper's choices and `testbed report`'s."""

    baseline: str = "tcp"
    """Setting the relative differences are taken against."""
    alpha: float = DEFAULT_ALPHA
    """ANOVA significance level: p < alpha decides, otherwise a tie."""
    metrics: tuple[str, ...] = ANALYSED_METRICS
    """Metrics with statistics."""
    plot_metrics: tuple[str, ...] = PLOTTED_METRICS
    """Metrics with CDF figures (LVC is computed but not plotted, as in the paper)."""
    pairs: tuple[tuple[str, str], ...] | None = None
    """(a, b) settings compared by ANOVA; None: each vs the baseline, QUIC vs TCP+,
    QUIC+BBR vs TCP+BBR."""
    design_pairs: tuple[tuple[str, str], ...] = DESIGN_PAIRS
    """(TCP setting, QUIC setting) pairs of the 1-RTT table."""


@dataclass(frozen=True)
class Analysis:
    """Every table of one campaign's analysis (see each function for its columns)."""

    trials: pd.DataFrame
    config: Config
    pairs: tuple[tuple[str, str], ...]
    overview: dict
    health: pd.DataFrame
    failures: pd.DataFrame
    summary: pd.DataFrame
    relative: pd.DataFrame
    relative_summary: pd.DataFrame
    cdfs: pd.DataFrame
    comparisons: pd.DataFrame
    win_tie_loss: pd.DataFrame
    design: pd.DataFrame
    notes: tuple[str, ...] = field(default=())

    def tables(self) -> dict[str, pd.DataFrame]:
        """name -> table, as written to tables/<name>.csv."""
        return {"summary": self.summary, "relative": self.relative,
                "relative_summary": self.relative_summary, "cdf": self.cdfs,
                "anova": self.comparisons, "win_tie_loss": self.win_tie_loss,
                "design_impact": self.design, "health": self.health, "failures": self.failures}


def analyse(trials: pd.DataFrame, config: Config = Config()) -> Analysis:
    """Run every statistic on `trials` (from analysis.load); only ok trials enter them."""
    notes = []
    meas = measurements(trials, config.metrics)
    summary = summarize(meas)
    if config.baseline in set(summary["protocol"]):
        rel = relative_difference(summary, config.baseline)
    else:
        notes.append(f"No ok trials of the baseline setting {config.baseline!r}: "
                     "no relative differences or CDFs.")
        rel = pd.DataFrame(columns=["network", "site", "protocol", "metric", "mean", "baseline",
                                    "baseline_mean", "rel"])
    pairs = (tuple(config.pairs) if config.pairs is not None
             else tuple(default_pairs(set(trials["protocol"]), config.baseline)))
    comparisons = compare(meas, pairs, config.alpha)
    design_metrics = [m for m in DESIGN_METRICS if m in config.metrics]
    design = design_impact(trials, summary, config.design_pairs, design_metrics)
    if design.empty:
        notes.append("No single-origin site with both settings of a 1-RTT pair: "
                     "the protocol design impact table is empty.")
    return Analysis(
        trials=trials, config=config, pairs=pairs, overview=overview(trials),
        health=trial_health(trials), failures=failures_by_reason(trials), summary=summary,
        relative=rel, relative_summary=relative_summary(rel), cdfs=relative_cdfs(rel),
        comparisons=comparisons, win_tie_loss=win_tie_loss(comparisons), design=design,
        notes=tuple(notes))


# -- the report folder ---------------------------------------------------------------

FORMATS = {
    "rel": "{:+.3f}", "median": "{:+.3f}", "faster": "{:.0%}", "p": "{:.2g}",
    "diff_rtt": "{:+.3f}", "mean_diff_ms": "{:+.1f}", "diff_ms": "{:+.1f}",
}
"""Column -> format in HTML tables; other floats get one decimal."""


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
    return shown.to_html(index=False, formatters=formatters, na_rep="–", border=0,
                         classes="table", escape=True)


def _relative_pivot(a: Analysis) -> pd.DataFrame:
    """Rows network x metric, one column per setting: median relative difference over
    sites and how many sites were faster than the baseline."""
    rs = a.relative_summary
    if rs.empty:
        return pd.DataFrame()
    rs = rs.assign(cell=[f"{m:+.3f} ({round(f * n)}/{n} faster)" for m, f, n in
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
                 cell=[f"{x:+.1f} ms ({y:+.3f})" for x, y in zip(d["diff_ms"], d["diff_rtt"])])
    rank = {"pair": {p: i for i, p in enumerate(dict.fromkeys(d["pair"]))},
            "site": {s: i for i, s in enumerate(sorted(set(d["site"])))},
            "metric": {"fvc": 0, "plt": 1}}
    pivot = d.pivot(index=["pair", "site", "metric"], columns="network", values="cell")
    pivot = pivot.reindex(columns=networks_in(pivot.columns))
    pivot = pivot.reset_index().rename_axis(columns=None)
    pivot = pivot.sort_values(["pair", "site", "metric"], kind="stable", ignore_index=True,
                              key=lambda s: s.map(lambda v: rank[s.name].get(v, len(rank[s.name]))))
    pivot["metric"] = pivot["metric"].map(label)
    return pivot.rename(columns={c: label(c) for c in pivot.columns})


def write_report(a: Analysis, out: Path, source: str = "", manifest: dict | None = None) -> Path:
    """Write the report folder `out` (plots/, tables/, index.html); returns index.html."""
    out = Path(out)
    (out / "plots").mkdir(parents=True, exist_ok=True)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    for name, table in a.tables().items():
        table.to_csv(out / "tables" / f"{name}.csv", index=False)

    figures = []  # one entry per network: its figures in metric order
    rel = a.relative
    for network in networks_in(rel["network"]):
        row = []
        for metric in a.config.plot_metrics:
            if not ((rel["network"] == network) & (rel["metric"] == metric)).any():
                continue
            fig = cdf_figure(rel, network, metric, a.config.baseline)
            files = save(fig, out / "plots", f"cdf-{network}-{metric}")
            row.append({"title": f"{label(network)} · {label(metric)}",
                        "png": f"plots/{files['png']}", "svg": f"plots/{files['svg']}"})
        figures.append({"network": label(network), "figures": row})

    env = jinja2.Environment(loader=jinja2.PackageLoader("analysis", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]),
                             trim_blocks=True, lstrip_blocks=True)
    page = env.get_template("report.html.j2").render(
        source=source, a=a, overview=a.overview, label=label, figures=figures,
        tables=list(a.tables()),
        relative_pivot=_table_or_none(_relative_pivot(a)),
        wtl_pivot=_table_or_none(_wtl_pivot(a)),
        wtl_table=_table_or_none(a.win_tie_loss),
        design_pivot=_table_or_none(_design_pivot(a)),
        design_table=_table_or_none(a.design, rename={
            "tcp_ms": "TCP mean (ms)", "tcp_minus_rtt_ms": "TCP − 1 RTT (ms)",
            "quic_ms": "QUIC mean (ms)", "diff_ms": "difference (ms)",
            "diff_rtt": "difference / RTT"}),
        health_table=_table_or_none(a.health),
        failures_table=_table_or_none(a.failures),
        summary_table=_table_or_none(a.summary),
        manifest=json.dumps(manifest, indent=2, sort_keys=True) if manifest else None)
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    return index


def _table_or_none(df: pd.DataFrame, **kwargs) -> Markup | None:
    if df is None or df.empty:
        return None
    return Markup(f'<div class="scroll">{_html_table(df, **kwargs)}</div>')
