"""The report's sections on transport and BBR vs CUBIC, and its links to single trials.

`inspect_sections` writes what they need into the report folder (the BBR
figures into plots/, one page per example trial into trials/) and returns the
HTML pieces report.html.j2 shows.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pandas as pd
from markupsafe import Markup

from analysis.figures.bbr import delivery_figure, effects_figure
from analysis.figures.plots import save
from analysis.report import pages
from analysis.report.trial_page import page_name, trial_view, write_trial_page
from analysis.statistics.connections import connections_of
from results_contract.load import ResultsError
from results_contract.schema import label

if TYPE_CHECKING:
    from analysis.campaign.model import Analysis

TRANSPORT_HEADERS = {
    "cc": "congestion control", "per_trial": "per trial",
    "handshake_ms": "handshake (ms, median)", "retrans_rate": "retransmitted (of bytes sent)",
    "cwnd_packets": "final cwnd (packets, median)", "cwnd_bytes": "final cwnd (bytes, median)",
    "rwnd_limited_ms": "receive-window limited (ms, median)",
    "rwnd_limited_share": "receive-window limited (of busy time)",
    "sndbuf_limited_ms": "send-buffer limited (ms, median)",
    "sndbuf_limited_share": "send-buffer limited (of busy time)"}
BBR_HEADERS = {
    "bbr": "BBR setting", "cubic": "CUBIC setting", "n_bbr": "n BBR", "n_cubic": "n CUBIC",
    "bbr_ms": "BBR mean (ms)", "cubic_ms": "CUBIC mean (ms)",
    "rel": "(BBR − CUBIC) / CUBIC", "page_bytes": "page bytes", "largest_bytes":
    "largest object (bytes)", "rtt_ms": "RTT (ms)", "loss_percent": "loss (%)",
    "median_rel": "median (BBR − CUBIC) / CUBIC", "no_difference": "no difference",
    "bbr_mbps": "BBR median (Mbit/s)", "cubic_mbps": "CUBIC median (Mbit/s)",
    "ratio": "BBR / CUBIC − 1", "bucket": "object size"}
FORMATS = {"retrans_rate": "{:.2%}", "rwnd_limited_share": "{:.1%}",
           "sndbuf_limited_share": "{:.1%}", "per_trial": "{:.1f}", "page_bytes": "{:,.0f}",
           "largest_bytes": "{:,.0f}", "ratio": "{:+.1%}", "bbr_mbps": "{:.3f}",
           "cubic_mbps": "{:.3f}", "loss_percent": "{:g}", "rtt_ms": "{:g}"}


def _stack_label(df: pd.DataFrame) -> pd.DataFrame:
    if "stack" in df.columns:
        df = df.assign(stack=df["stack"].map({"tcp": "TCP", "quic": "QUIC"}))
    return df


def inspect_sections(a: Analysis, out: Path, results_dir: Path | None,
                     table: Callable[..., Markup | None]) -> dict[str, Any]:
    """HTML pieces for the template; `table(df, formats=, rename=)` renders a table."""
    pieces: dict[str, Any] = {"connections": a.connections}
    if a.transport is not None and len(a.transport):
        pieces["transport"] = table(a.transport, formats=FORMATS, rename=TRANSPORT_HEADERS)
    b = a.bbr
    if b is not None:
        pieces["bbr_missing"] = list(b.missing)
        pieces["bbr_findings"] = list(b.findings)
        pieces["bbr_claims"] = table(b.claims)
        pieces["bbr_by_path"] = table(_stack_label(b.by_path), formats=FORMATS,
                                      rename=BBR_HEADERS)
        pieces["bbr_effects"] = table(_stack_label(b.effects.drop(columns=["p"])),
                                      formats=FORMATS, rename=BBR_HEADERS)
        pieces["bbr_delivery"] = table(_stack_label(b.delivery), formats=FORMATS,
                                       rename=BBR_HEADERS)
        figures = []
        if len(b.effects):
            files = save(effects_figure(b.effects), out / "plots", "bbr-vs-cubic",
                         formats=("png", "svg"))
            figures.append({"title": "BBR vs CUBIC per site and network",
                            **{f: f"plots/{n}" for f, n in files.items()}})
        if len(b.delivery):
            files = save(delivery_figure(b.delivery), out / "plots", "bbr-delivery",
                         formats=("png", "svg"))
            figures.append({"title": "Delivery rate by object size",
                            **{f: f"plots/{n}" for f, n in files.items()}})
        pieces["bbr_figures"] = figures
    pieces["examples"] = _examples(a, out, results_dir)
    return pieces


def _examples(a: Analysis, out: Path, results_dir: Path | None) -> Markup | None:
    """The fastest, median and slowest trial per network and setting, each linked to
    its page (written into out/trials/ when the results folder is at hand)."""
    ex = a.examples
    if ex is None or ex.empty:
        return None
    cells: dict[tuple[str, str], list[dict[str, Any]]] = {}
    written: dict[str, str | None] = {}
    conns = connections_of(results_dir) if results_dir is not None else None
    for r in ex.itertuples(index=False):
        href = written.get(r.trial_id) if results_dir is not None else None
        if results_dir is not None and r.trial_id not in written:
            href = write_page(a, out, Path(results_dir), str(r.trial_id), conns)
            written[r.trial_id] = href
        cells.setdefault((r.network, r.setting), []).append(
            {"href": href, "trial_id": r.trial_id, "text": f"{r.which} {r.value:.0f} ms"})
    return pages.piece("examples.html.j2", rows=[
        {"network": label(n), "setting": label(p), "cells": c} for (n, p), c in cells.items()])


def write_page(a: Analysis, out: Path, results_dir: Path, trial_id: str,
               conns: pd.DataFrame | None) -> str | None:
    """Write out/trials/<id>.html (no filmstrip: ffmpeg per page would take minutes);
    its link relative to `out`, or None when a kept file is unsafe or broken."""
    try:
        view = trial_view(results_dir, trial_id, trials=a.trials, conns=conns,
                          filmstrip=False)
    except ResultsError:
        return None  # an unsafe or broken kept file: no page, the id stays plain text
    view.notes.append("the report's pages leave the filmstrip out; `testbed trial` adds it")
    path = write_trial_page(view, out / "trials" / page_name(trial_id))
    return quote(os.path.relpath(path, out))
