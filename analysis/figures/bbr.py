"""The BBR-vs-CUBIC figures: BBR's effect per site against the page and the path
(`effects_figure`), and the delivery rate by object size (`delivery_figure`), drawn
from the tables of analysis.statistics.bbr."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import EngFormatter, NullFormatter, PercentFormatter

from analysis.figures.plots import legend_entries, plot_label
from analysis.statistics.bbr import SIZE_BUCKETS
from results_contract import profiles_meta
from results_contract.schema import networks_in

MARKERS = {"tcp": "o", "quic": "s"}
FACTORS = (("page_bytes", "page bytes", True), ("largest_bytes", "largest object", True),
           ("rtt_ms", "path RTT (ms)", False), ("loss_percent", "path loss (%)", False))


def effects_figure(effects: pd.DataFrame) -> Figure:
    """BBR's relative difference to CUBIC per site and network against the page's bytes,
    its largest object, the path's RTT and loss: one panel each, one marker per stack."""
    fig = Figure(figsize=(12, 3.4))
    axes = fig.subplots(1, len(FACTORS), sharey=True)
    colors = {n: f"C{i}" for i, n in enumerate(networks_in(effects["network"]))}
    for ax, (column, title, log) in zip(axes, FACTORS):
        data = effects[effects[column].notna() & effects["rel"].notna()]
        for (stack, network), g in data.groupby(["stack", "network"], sort=False):
            ax.scatter(g[column], g["rel"], marker=MARKERS.get(stack, "o"),
                       color=colors.get(network), s=28, alpha=0.8,
                       label=f"{'TCP' if stack == 'tcp' else 'QUIC'} · {plot_label(network)}")
        if data.empty:
            ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", color="#888")
        elif log and (data[column] > 0).all():
            ax.set_xscale("log")
        if log:
            ax.xaxis.set_major_formatter(EngFormatter(unit="B", sep=" "))
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.axhline(0, color="black", linewidth=0.8, alpha=0.6)
        ax.set_xlabel(title, fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.tick_params(labelsize=8)
    axes[0].yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
    axes[0].set_ylabel("(BBR − CUBIC) / CUBIC\n(< 0: BBR faster)", fontsize=9)
    handles, labels = legend_entries(axes)
    if handles:
        fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 6),
                   frameon=False, fontsize=8)
    fig.subplots_adjust(left=0.08, right=0.99, bottom=0.17, top=0.84, wspace=0.08)
    return fig


def delivery_figure(delivery: pd.DataFrame) -> Figure:
    """Median delivery rate per object size bucket, one panel per network, bars for
    CUBIC and BBR on each stack."""
    networks = networks_in(delivery["network"])
    fig = Figure(figsize=(12, 3.2))
    axes = fig.subplots(1, max(len(networks), 1), squeeze=False)[0]
    bars = [(s, side) for s in ("tcp", "quic") for side in ("cubic", "bbr")]
    names = [b[2] for b in SIZE_BUCKETS]
    twin = {stack: (bbr, cubic) for stack, bbr, cubic in profiles_meta.current().bbr_pairs()}
    width = 0.8 / len(bars)
    for ax, network in zip(axes, networks):
        here = delivery[delivery["network"] == network]
        for i, (stack, side) in enumerate(bars):
            g = here[here["stack"] == stack].set_index("bucket")
            values = [g[f"{side}_mbps"].get(b, np.nan) for b in names]
            bbr, cubic = twin.get(stack, ("BBR", "CUBIC"))
            setting = bbr if side == "bbr" else cubic
            ax.bar(np.arange(len(names)) + (i - 1.5) * width, values, width,
                   label=plot_label(setting), hatch="//" if side == "bbr" else None,
                   color="#1f77b4" if stack == "tcp" else "#d62728",
                   alpha=0.9 if side == "bbr" else 0.55)
        ax.set_xticks(np.arange(len(names)), names, fontsize=8)
        ax.set_title(plot_label(network), fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("median delivery rate (Mbit/s)", fontsize=9)
    h, lab = axes[0].get_legend_handles_labels()
    if h:
        fig.legend(h, lab, loc="upper center", ncol=4, frameon=False, fontsize=8)
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.12, top=0.82, wspace=0.15)
    return fig
