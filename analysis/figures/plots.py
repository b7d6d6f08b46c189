"""Figures. Built as matplotlib Figure objects (no pyplot, no global state): saving
renders with Agg (PNG) or the SVG backend, and a notebook displays them inline."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axis import Axis
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure
from matplotlib.ticker import Formatter, FuncFormatter, MaxNLocator, PercentFormatter

from analysis.statistics.cdf import ecdf
from results_contract.schema import full_name, label, settings_in

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

COLORS = {"tcp-plus": "#1f77b4", "tcp-plus-bbr": "#17becf", "quic": "#d62728",
          "quic-bbr": "#ff7f0e", "tcp": "#7f7f7f"}
STYLES = {"tcp-plus": "-", "tcp-plus-bbr": "--", "quic": "-", "quic-bbr": "--"}

def legend_entries(axes: Iterable[Any]) -> tuple[list[Any], list[str]]:
    """Every panel's legend handles and labels, each label once (one figure legend)."""
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    return handles, labels


def plot_label(name: str) -> str:
    """A setting, network or metric's display label (results_contract.schema.label) as a figure
    shows it: every `$` escaped, so that a name from someone's results ("$x^2$", an odd
    "$") is drawn as written, never parsed as maths (mathtext) or failing to parse; a
    character no font draws (a control character) as U+FFFD."""
    shown = "".join(c if c.isprintable() else "\ufffd" for c in str(label(name)))
    return shown.replace("$", r"\$")


SAVE_RC: dict[RcKeyType, Any] = {"svg.hashsalt": "testbed-report", "svg.fonttype": "none"}
"""Deterministic SVG ids (same data, same files); SVG text stays text, editable for a paper."""


def cdf_figure(rel: pd.DataFrame, network: str, metric: str, baseline: str = "tcp") -> Figure:
    """CDF over sites of the relative difference to `baseline`, one line per setting."""
    data = rel[(rel["network"] == network) & (rel["metric"] == metric)]
    # Fixed margins: the labels never change size, and a layout engine would
    # double the time to save.
    fig = Figure(figsize=(5.2, 3.6))
    fig.subplots_adjust(left=0.12, right=0.97, bottom=0.14, top=0.92)
    ax = fig.add_subplot()
    for setting in settings_in(data["setting"]):
        points = ecdf(data.loc[data["setting"] == setting, "rel"])
        if points.empty:
            continue
        # Start the step at p=0 so the first site shows as a jump.
        x = [points["x"].iloc[0], *points["x"]]
        p = [0.0, *points["p"]]
        ax.step(x, p, where="post", label=f"{plot_label(setting)} (n={len(data[data.setting == setting])})",
                color=COLORS.get(setting), linestyle=STYLES.get(setting, "-"), linewidth=1.6)
    ax.axvline(0, color="black", linewidth=0.8, alpha=0.6)
    ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    b = plot_label(baseline)
    ax.set_xlabel(f"(X − {b}) / {b} of mean {plot_label(metric)} per site   (< 0: X faster)")
    ax.set_ylabel("CDF over sites")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"{plot_label(network)} · {plot_label(metric)}")
    ax.grid(True, alpha=0.3)
    if ax.lines[:-1]:
        ax.legend(loc="lower right", fontsize="small")
    return fig


def _step(ax: Any, values: Any, **style: Any) -> None:
    points = ecdf(values)
    if points.empty:
        return
    # Start the step at p=0 so the first site shows as a jump.
    ax.step([points["x"].iloc[0], *points["x"]], [0.0, *points["p"]], where="post", **style)


def cdf_row_figure(rel: pd.DataFrame, metric: str, networks: list[str],
                   baseline: str = "tcp", width_in: float = 12.0,
                   xlabel: str | None = None) -> Figure:
    """One metric, one panel per network side by side: the CDF over sites of the
    relative difference to `baseline`, one line per setting. The panels share the
    x-range (the same percent means the same place), the legend is drawn once."""
    data = rel[rel["metric"] == metric]
    settings = settings_in(data["setting"])
    cols = max(len(networks), 1)
    fig = Figure(figsize=(width_in, 3.3 + 0.25 * (len(settings) > 3)))
    axes = fig.subplots(1, cols, sharex=True, sharey=True, squeeze=False)[0]
    handles = {}
    for ax, network in zip(axes, networks):
        here = data[data["network"] == network]
        for setting in settings:
            values = here.loc[here["setting"] == setting, "rel"]
            if values.notna().any():
                _step(ax, values, color=COLORS.get(setting), linestyle=STYLES.get(setting, "-"),
                      linewidth=1.6, label=plot_label(setting))
                handles[setting] = ax.lines[-1]
        ax.axvline(0, color="black", linewidth=0.8, alpha=0.6)
        n = here['site'].nunique()
        ax.set_title(f"{plot_label(network)}  ({n} site{'' if n == 1 else 's'})", fontsize=11)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=9)
        ax.xaxis.set_major_formatter(Percent())
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5 if cols > 2 else 8))
        ax.set_ylim(0, 1.02)
        if not here["rel"].notna().any():
            _no_data(ax)
    lo, hi = data["rel"].min(), data["rel"].max()
    if pd.notna(lo) and pd.notna(hi):
        pad = max((hi - lo) * 0.05, 0.005)
        axes[0].set_xlim(min(lo, 0) - pad, max(hi, 0) + pad)
    axes[0].set_ylabel("CDF over sites")
    b = plot_label(baseline)
    fig.supxlabel(xlabel or f"(X − {b}) / {b}: relative difference of the mean "
                  f"{full_name(metric)} per site   (< 0 %: X faster)", fontsize=10)
    if handles:
        fig.legend([handles[s] for s in settings if s in handles],
                   [plot_label(s) for s in settings if s in handles],
                   loc="upper center", ncol=len(handles), frameon=False, fontsize=10)
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.2, top=0.8, wspace=0.08)
    return fig


class Percent(Formatter):
    """Fractions as percent with the decimals the ticks' spacing needs: 4 %, 8 % (not
    4.0 %) and 0.25 %, 0.50 % (not 0 %, 0 %, 1 %)."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        ticks: Any = self.axis.get_majorticklocs() if isinstance(self.axis, Axis) else []
        locs = np.asarray(ticks, dtype=float)
        step = float(np.min(np.diff(locs))) * 100 if len(locs) > 1 else 1.0
        decimals = next((d for d in range(5) if abs(round(step, d) - step) < 1e-6 * step), 4)
        return f"{round(x * 100, decimals) + 0.0:.{decimals}f}%"


def _no_data(ax: Any, x: float = 0.5, y: float = 0.5, transform: Any = None) -> None:
    """Mark an empty panel or group as such, so that no one reads it as zero."""
    ax.text(x, y, "no data", transform=transform or ax.transAxes, ha="center",
            va="center", color="#888", fontsize=9)


MS = FuncFormatter(lambda v, _: f"{v:,.0f}" if abs(v) >= 10 or v == 0 else f"{v:,.1f}")
"""Milliseconds on an axis: whole ms with thousands separators (one decimal below 10)."""


def distribution_figure(meas: pd.DataFrame, metric: str, networks: list[str],
                        width_in: float = 12.0) -> Figure:
    """One metric in ms, one panel per network (each its own y-range), one box per
    setting over its ok trials (all sites): median, quartiles, whiskers at 1.5 IQR,
    n under each box; a setting without values is marked "no data"."""
    data = meas[meas["metric"] == metric]
    settings = settings_in(data["setting"])
    cols = max(len(networks), 1)
    fig = Figure(figsize=(width_in, 3.4))
    axes = fig.subplots(1, cols, squeeze=False)[0]
    for ax, network in zip(axes, networks):
        here = data[data["network"] == network]
        for i, setting in enumerate(settings):
            values = here.loc[here["setting"] == setting, "value"].dropna().to_numpy()
            if len(values) == 0:
                if not here.empty:  # an empty panel says so once, below
                    _no_data(ax, i, 0.5, ax.get_xaxis_transform())
                continue
            box = ax.boxplot(values, positions=[i], widths=0.6, showfliers=False,
                             patch_artist=True, medianprops={"color": "black"})
            box["boxes"][0].set(facecolor=COLORS.get(setting, "#bbbbbb"), alpha=0.55)
        ax.set_xticks(range(len(settings)),
                      [plot_label(s) for s in settings], fontsize=8, rotation=30)
        ax.set_xlim(-0.6, len(settings) - 0.4)
        ax.yaxis.set_major_formatter(MS)
        ax.tick_params(axis="y", labelsize=8)
        ax.set_title(plot_label(network), fontsize=11)
        ax.grid(True, axis="y", alpha=0.3)
        if here.empty:
            _no_data(ax)
    axes[0].set_ylabel(f"{plot_label(metric)} (ms)")
    fig.suptitle(f"{full_name(metric)} per trial (ms): box = quartiles, line = median, "
                 "whiskers = 1.5 IQR", fontsize=10)
    fig.subplots_adjust(left=0.07, right=0.99, bottom=0.24, top=0.84, wspace=0.3)
    return fig


def drift_figure(trials: pd.DataFrame, networks: list[str], column: str = "plt_ms",
                 width_in: float = 12.0) -> Figure:
    """Run order: per network a panel of each ok trial's `column` divided by its site's
    median for that network and setting, against when it started (`started_at`; the
    run number when no trial has a time), one colour per setting. A drift (a warming
    cache, a neighbour's load) shows as a slope; 1 = the site's median."""
    ok = trials[(trials["status"] == "ok") & trials[column].notna()]
    when = pd.to_datetime(ok["started_at"], errors="coerce", utc=True)
    by_time = bool(when.notna().any())
    x = when.dt.tz_localize(None) if by_time else ok["run"]
    keys = ["site", "network", "setting"]
    norm = ok[column] / ok.groupby(keys, observed=True)[column].transform("median")
    cols = max(len(networks), 1)
    fig = Figure(figsize=(width_in, 3.2))
    axes = fig.subplots(1, cols, sharey=True, squeeze=False)[0]
    for ax, network in zip(axes, networks):
        mine = ok["network"] == network
        for setting in settings_in(ok.loc[mine, "setting"]):
            sel = mine & (ok["setting"] == setting)
            ax.plot(x[sel], norm[sel], ".", markersize=2.5, alpha=0.6,
                    color=COLORS.get(setting), label=plot_label(setting))
        ax.axhline(1, color="black", linewidth=0.8, alpha=0.6)
        ax.set_title(plot_label(network), fontsize=11)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=8)
        if by_time:
            locator = AutoDateLocator(minticks=2, maxticks=5)  # type: ignore[no-untyped-call]
            ax.xaxis.set_major_locator(locator)
            formatter = ConciseDateFormatter(locator)  # type: ignore[no-untyped-call]
            ax.xaxis.set_major_formatter(formatter)
        if not mine.any():
            _no_data(ax)
    axes[0].set_ylabel(f"{plot_label(column.removesuffix('_ms'))} / site median")
    fig.supxlabel("trial started (UTC)" if by_time else "run", fontsize=10)
    handles, labels = legend_entries(axes)
    if handles:
        fig.legend(handles, labels, loc="upper center", ncol=len(handles), frameon=False,
                   fontsize=9, markerscale=4)
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.2, top=0.82, wspace=0.08)
    return fig


PRINT_DPI = 300
"""PNG resolution: print quality at the figure's size in inches."""


def save(fig: Figure, folder: Path, stem: str,
         formats: tuple[str, ...] = ("png", "svg")) -> dict[str, str]:
    """Write `fig` as stem.<format> into `folder` (png at PRINT_DPI, svg, pdf); returns
    {format: file name}. Same figure, same bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    metadata = {"png": {"Software": None}, "svg": {"Date": None},
                "pdf": {"CreationDate": None, "ModDate": None, "Producer": None}}
    files = {}
    with matplotlib.rc_context(SAVE_RC):
        for fmt in formats:
            name = f"{stem}.{fmt}"
            fig.savefig(folder / name, format=fmt, dpi=PRINT_DPI if fmt == "png" else 110,
                        metadata=metadata[fmt])
            files[fmt] = name
    return files
