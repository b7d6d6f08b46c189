"""One campaign's report folder, written from its analysis (analysis.campaign.analyse).

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
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
import pandas as pd
from markupsafe import Markup

from analysis.campaign.findings import campaign_status, correction_note
from analysis.campaign.findings import markdown as markdown_findings
from analysis.campaign.findings import shown as shown_findings
from analysis.campaign.model import Analysis
from analysis.figures.plots import cdf_row_figure, save
from analysis.report import pages
from analysis.report.report_inspect import inspect_sections
from analysis.report.report_sections import (
    distribution_figures,
    drift_figures,
    setup_tables,
    site_tests,
)
from analysis.report.scorecard import scorecard, scorecard_metric, site_pages
from analysis.report.trial_page import page_name
from analysis.statistics import machine_load, report_stats
from analysis.statistics.connections import connections_of
from analysis.statistics.design import DESIGN_METRICS
from analysis.statistics.inference import CORRECTIONS, TESTS
from analysis.statistics.stats import sort_table
from analysis.statistics.visits import visit_pivot
from analysis.statistics.wording import BOOTSTRAP_MIN_SITES, DASH, NO_DIFFERENCE, finite, pct
from results_contract import profiles_meta, trial_folder
from results_contract.cells import spreadsheet_safe
from results_contract.manifest import Manifest
from results_contract.schema import (
    METRIC_NAMES,
    OK,
    full_name,
    label,
    networks_in,
    ordered,
    settings_in,
)

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
    for column in ("network", "setting", "metric", "a", "b", "tcp", "quic", "baseline"):
        if column in shown.columns:
            shown[column] = shown[column].map(label)
    formatters = {}
    for column in shown.columns:
        if column in formats:
            formatters[column] = _finite_or_dash(formats[column])
        elif pd.api.types.is_float_dtype(shown[column]):
            formatters[column] = _finite_or_dash("{:.1f}")
        elif (pd.api.types.is_object_dtype(shown[column])
              or pd.api.types.is_string_dtype(shown[column])):  # None or "None": a dash
            shown[column] = shown[column].map(_text_or_dash)
    shown = shown.rename(columns=rename or {})
    formatters = {(rename or {}).get(k, k): v for k, v in formatters.items()}
    result: str = shown.to_html(index=False, formatters=formatters, na_rep="–", border=0,
                                classes="table", escape=True)
    return result


def _finite_or_dash(fmt: str) -> Callable[[Any], str]:
    """`fmt` applied to a finite number; a dash for NaN, inf, None or text."""
    def shown(v: Any) -> str:
        if isinstance(v, str):
            return str(_text_or_dash(v))
        return str(fmt.format(v)) if finite(v) else DASH
    return shown


def _text_or_dash(v: Any) -> Any:
    """A cell of a text column: a dash where it holds no value (None, NaN, 'None', 'nan',
    an infinite number), else the value as it is."""
    if v is None or (isinstance(v, float) and not finite(v)):
        return DASH
    if isinstance(v, str) and v.strip().lower() in ("none", "nan", "inf", "-inf", "+inf"):
        return DASH
    return v


def _relative_pivot(a: Analysis) -> pd.DataFrame:
    """Rows network x metric, one column per setting: median relative difference over
    sites and how many sites were faster than the baseline."""
    rs = a.relative_summary
    if rs.empty:
        return pd.DataFrame()
    rs = rs.assign(cell=[f"{pct(m)} ({round(f * n)}/{n} faster)" for m, f, n in
                         zip(rs["median"], rs["faster"], rs["sites"])])
    pivot = rs.pivot(index=["network", "metric"], columns="setting", values="cell")
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
                 cell=[_design_cell(*v) for v in
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


def _design_cell(ms: float, rtt: float, low: float, high: float) -> str:
    """'difference ms (difference / RTT [95 % CI] RTT)', a dash for what cannot be had."""
    num = _finite_or_dash("{:+.2f}")
    ci = f" [{num(low)}, {num(high)}]" if finite(low) and finite(high) else ""
    return f"{_finite_or_dash('{:+.1f}')(ms)} ms ({num(rtt)}{ci} RTT)"


def runs_per_setting(trials: pd.DataFrame) -> str:
    """Ok runs per site × network × setting as the groups have them: '31', or '29–31'
    when they differ; a dash without ok trials."""
    ok = trials[trials["status"] == OK]
    if ok.empty:
        return DASH
    n = ok.groupby(["site", "network", "setting"], observed=True).size()
    low, high = int(n.min()), int(n.max())
    return str(low) if low == high else f"{low}–{high}"


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


def write_report(a: Analysis, out: Path, source: str = "", manifest: Manifest | None = None,
                 results_dir: Path | None = None) -> Path:
    """Write the report folder `out` (plots/, tables/, index.html, and trials.html with
    links to each trial's HAR and video when `results_dir` holds trial folders);
    returns index.html. Labels and order: the analysis's (a.profiles), else the
    manifest's, else the checkout's (results_contract.profiles_meta)."""
    with profiles_meta.using(a.profiles or profiles_meta.from_manifest(manifest)):
        return _write(a, Path(out), source, manifest, results_dir)


def _write(a: Analysis, out: Path, source: str, manifest: Manifest | None,
           results_dir: Path | None) -> Path:
    """write_report(), with the profiles' metadata in use."""
    (out / "plots").mkdir(parents=True, exist_ok=True)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    for name, table in a.tables().items():
        spreadsheet_safe(table).to_csv(out / "tables" / f"{name}.csv", index=False)
    load_table = machine_load.busier_pairs(a.trials)
    if len(load_table):
        spreadsheet_safe(load_table).to_csv(out / "tables" / f"{MACHINE_LOAD}.csv",
                                            index=False)

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

    synthetic = (manifest is not None and manifest.synthetic) or bool(a.trials.attrs.get("synthetic"))
    distributions = distribution_figures(a, out)
    drift = drift_figures(a, out)
    env = pages.environment()
    inspect = inspect_sections(a, out, results_dir, _table_or_none)
    conns = connections_of(results_dir) if results_dir is not None else None
    site_pages(a, out, results_dir, conns)
    trial_page = _trial_links(a, out, results_dir, env)  # after the pages it links
    page = env.get_template("report.html.j2").render(
        source=source, a=a, overview=a.overview, label=label,
        grids=scorecard(a), metric=full_name(scorecard_metric(a)), alpha=a.config.alpha,
        baseline=label(a.baseline), no_difference=NO_DIFFERENCE,
        runs_per_setting=runs_per_setting(a.trials), bootstrap_min_sites=BOOTSTRAP_MIN_SITES, figures=figures,
        distributions=distributions, drift=drift,
        distribution_table=_table_or_none(a.distribution, csv="distribution"),
        site_tests=site_tests(a, _table_or_none),
        setup=setup_tables(a, manifest, _table_or_none),
        tables=list(a.tables()), synthetic=synthetic, trial_page=trial_page,
        metric_names=[(label(m), METRIC_NAMES[m]) for m in a.config.metrics
                      if m in METRIC_NAMES],
        test_name=TESTS[a.config.test], correction_name=CORRECTIONS[a.config.correction],
        relative_pivot=_table_or_none(_relative_pivot(a)),
        wtl_pivot=_table_or_none(_wtl_pivot(a)),
        wtl_table=_table_or_none(a.win_tie_loss, rename={"a": "setting", "b": "vs",
                                                          "mean_diff_ms": "mean difference (ms)"}),
        robustness_table=_table_or_none(a.robustness, rename=ROBUSTNESS_HEADERS),
        effects_table=_table_or_none(a.effects, csv="effects", rename=EFFECT_HEADERS),
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
        machine_load=_machine_load(a),
        failures_table=_table_or_none(a.failures),
        summary_table=_table_or_none(a.summary, csv="summary", rename=SUMMARY_HEADERS),
        inspect=inspect,
        findings=shown_findings(a.findings) if len(a.findings) else [],
        findings_correction=(correction_note(a.findings, a.config.alpha)
                             if len(a.findings) else ""),
        status=campaign_status(a),
        reviewer=report_stats.render(a.reviewer, _table_or_none),
        show_workers=a.workers is not None,
        by_worker=_table_or_none(a.workers) if a.workers is not None else None,
        worker_tests=_table_or_none(a.worker_tests) if a.worker_tests is not None else None,
        worker_calibrations=(_table_or_none(a.worker_calibrations)
                             if a.worker_calibrations is not None else None),
        calibration_differs=manifest.calibration_differs
        if manifest is not None and a.workers is not None else [])
    index = out / "index.html"
    index.write_text(page, encoding="utf-8")
    if len(a.findings):  # what REPLICATION.md quotes (analysis.campaign.replication)
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
        page = out / "trials" / page_name(str(t.trial_id))
        if page.is_file():  # written for the examples or a site page
            links.append(("page", quote(f"trials/{page_name(str(t.trial_id))}")))
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
    html = env.get_template("trials.html.j2").render(trials_dir=str(trials_dir), rows=rows)
    (out / "trials.html").write_text(html, encoding="utf-8")
    return "trials.html"


def by_run(trials: pd.DataFrame) -> pd.DataFrame:
    """`trials` in reading order: site, network and setting (the paper's order), then
    the run as a number (run 10 after run 9)."""
    keys = {"site": sorted(set(trials["site"])), "network": networks_in(trials["network"]),
            "setting": settings_in(trials["setting"])}
    return trials.sort_values(
        ["site", "network", "setting", "run"], kind="stable",
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


MACHINE_LOAD = "machine-load"
"""The machine-load section's table in tables/ (tables/machine-load.csv)."""


def _machine_load(a: Analysis) -> dict[str, Any] | None:
    """The machine-load section: each compared pair's median cpu_busy, a note per pair
    whose settings ran on unequally busy machines, and how many trials started over the
    campaign's max_load_before_start; None when the store has no machine load."""
    table = machine_load.busier_pairs(a.trials)
    if table.empty:
        return None
    flags = [f"{label(r.busier)} ran on a busier machine than "
             f"{label(r.b if r.busier == r.a else r.a)} under {label(r.network)} "
             f"({r.client}): median CPU busy {r.busy_a:.0%} vs {r.busy_b:.0%}"
             for r in machine_load.flagged(table).itertuples(index=False)]
    over = a.trials.get("load_over_limit")
    n_over = int((over == 1).sum()) if over is not None else 0
    shown = table.assign(busier=table["busier"].map(lambda s: label(s) if s else "–"))
    return {"table": _table_or_none(shown, formats={"busy_a": "{:.0%}", "busy_b": "{:.0%}",
                                                    "busy_diff": "{:+.0%}"}),
            "flags": flags, "threshold": f"{machine_load.BUSIER_BY * 100:g}",
            "csv": f"tables/{MACHINE_LOAD}.csv",
            "over_limit": (f"{n_over} trial(s) started while the machine was still over the "
                           f"campaign's max_load_before_start (column load_over_limit)"
                           if n_over else "")}


MAX_INLINE_ROWS = 1000
"""A table with more rows than this is linked as its CSV instead of shown (the reference's
per-site effects, 4,105 rows, made the page 3 MB)."""


def _table_or_none(df: pd.DataFrame, csv: str | None = None, **kwargs: Any) -> Markup | None:
    """`df` as a scrolling HTML table; None when empty; a link to tables/<csv>.csv instead
    when it has more than MAX_INLINE_ROWS rows and `csv` names its file."""
    if df is None or df.empty:
        return None
    if csv is not None and len(df) > MAX_INLINE_ROWS:
        return pages.piece("csv_link.html.j2", rows=f"{len(df):,}", href=f"tables/{csv}.csv")
    return pages.piece("scroll_table.html.j2", table=Markup(_html_table(df, **kwargs)))
