"""Figures. Built as matplotlib Figure objects (no pyplot, no global state): saving
renders with Agg (PNG) or the SVG backend, and a notebook displays them inline."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import pandas as pd
from matplotlib.figure import Figure

from analysis.cdf import ecdf
from analysis.schema import label, settings_in

COLORS = {"tcp-plus": "#1f77b4", "tcp-plus-bbr": "#17becf", "quic": "#d62728",
          "quic-bbr": "#ff7f0e", "tcp": "#7f7f7f"}
STYLES = {"tcp-plus": "-", "tcp-plus-bbr": "--", "quic": "-", "quic-bbr": "--"}

SAVE_RC = {"svg.hashsalt": "testbed-report", "svg.fonttype": "none"}
"""Deterministic SVG ids (same data, same files); SVG text stays text, editable for a paper."""


def cdf_figure(rel: pd.DataFrame, network: str, metric: str, baseline: str = "tcp") -> Figure:
    """CDF over sites of the relative difference to `baseline`, one line per setting."""
    data = rel[(rel["network"] == network) & (rel["metric"] == metric)]
    # Fixed margins: the labels never change size, and a layout engine would
    # double the time to save.
    fig = Figure(figsize=(5.2, 3.6))
    fig.subplots_adjust(left=0.12, right=0.97, bottom=0.14, top=0.92)
    ax = fig.add_subplot()
    for setting in settings_in(data["protocol"]):
        points = ecdf(data.loc[data["protocol"] == setting, "rel"])
        if points.empty:
            continue
        # Start the step at p=0 so the first site shows as a jump.
        x = [points["x"].iloc[0], *points["x"]]
        p = [0.0, *points["p"]]
        ax.step(x, p, where="post", label=f"{label(setting)} (n={len(data[data.protocol == setting])})",
                color=COLORS.get(setting), linestyle=STYLES.get(setting, "-"), linewidth=1.6)
    ax.axvline(0, color="black", linewidth=0.8, alpha=0.6)
    b = label(baseline)
    ax.set_xlabel(f"(X − {b}) / {b} of mean {label(metric)} per site   (< 0: X faster)")
    ax.set_ylabel("CDF over sites")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"{label(network)} · {label(metric)}")
    ax.grid(True, alpha=0.3)
    if ax.lines[:-1]:
        ax.legend(loc="lower right", fontsize="small")
    return fig


def save(fig: Figure, folder: Path, stem: str) -> dict[str, str]:
    """Write `fig` as stem.png and stem.svg into `folder`; returns {format: file name}."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    with matplotlib.rc_context(SAVE_RC):
        for fmt, metadata in (("png", {"Software": None}), ("svg", {"Date": None})):
            name = f"{stem}.{fmt}"
            fig.savefig(folder / name, format=fmt, dpi=110, metadata=metadata)
            files[fmt] = name
    return files
