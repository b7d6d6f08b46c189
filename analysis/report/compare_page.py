"""The HTML page of `testbed compare A B --out DIR`: the agreement's tables and, per
metric, the CDF over sites of the difference of the two campaigns' relative
differences (analysis.campaign.agreement). Returned as file name -> bytes, for the caller to
write where it checked it may."""

from __future__ import annotations

import io
from collections.abc import Sequence

import matplotlib

from analysis.campaign.agreement import Agreement
from analysis.figures.plots import SAVE_RC, cdf_row_figure
from analysis.report import pages
from analysis.report.report import _table_or_none as table
from results_contract.schema import PLOTTED_METRICS, full_name, label, networks_in

SHOWN_DIFFS = 50
"""Manifest differences shown on the page (all are in manifest_diff.csv)."""


def figures(result: Agreement) -> dict[str, bytes]:
    """diff-rel-<metric>.svg per plotted metric the sites have: one panel per network,
    one line per pair: the CDF over sites of rel_A − rel_B (0: the campaigns agree)."""
    s = result.sites
    pair = [f"{label(a)} vs {label(b)}" for a, b in zip(s["a"], s["b"])]
    rel = s.assign(setting=pair, rel=s["diff_rel"])
    networks = networks_in(rel["network"])
    out = {}
    for metric in PLOTTED_METRICS:
        if not (rel["metric"] == metric).any():
            continue
        fig = cdf_row_figure(rel, metric, networks, xlabel=(
            f"relative difference in A − in B, per site, of the mean {full_name(metric)}"
            "   (0: the campaigns agree)"))
        buffer = io.BytesIO()
        with matplotlib.rc_context(SAVE_RC):
            fig.savefig(buffer, format="svg", metadata={"Date": None})
        out[f"diff-rel-{metric}.svg"] = buffer.getvalue()
    return out


EQUIVALENCE_FORMATS = {"shift": "{:+.1%}", "shift_low": "{:+.1%}", "shift_high": "{:+.1%}",
                       "p_tost": "{:.2g}", "p_diff": "{:.2g}", "margin": "{:.1%}"}


def equivalence_headers(alpha: float) -> dict[str, str]:
    """Human headers of the equivalence table; its interval is the (1 − 2 alpha) one the
    two one-sided tests at `alpha` use (98 % at 0.01), said in its header."""
    level = f"{1 - 2 * alpha:.0%}"
    return {"a": "setting", "b": "vs", "sites": "sites", "shift": "shift (ratio − 1)",
            "shift_low": f"{level} CI low", "shift_high": f"{level} CI high",
            "p_tost": "p (equivalence)", "p_diff": "p (difference)", "margin": "margin ±",
            "runs_needed": "runs needed (80 % power)"}


def page(result: Agreement, a: str, b: str, csv_names: Sequence[str],
         figure_names: Sequence[str]) -> bytes:
    """index.html: the campaigns, warnings, score, per-cell agreement, equivalence,
    the figures and the manifests' differences, its tables as the report shows them."""
    tested = int(result.sites["agree"].notna().sum())
    diff = result.manifest_diff
    return pages.render(
        "compare.html.j2", a=a, b=b, result=result, label=label, tested=tested,
        score=None if tested == 0 else f"{result.score:.1%}",
        summary=table(result.summary, formats={"agreement": "{:.0%}",
                                               "median_diff_rel": "{:+.1%}"},
                      rename={"a": "setting", "b": "vs", "tested": "tested in both",
                              "median_diff_rel": "median A − B of the relative difference"}),
        equivalence=(table(result.equivalence, formats=EQUIVALENCE_FORMATS,
                           rename=equivalence_headers(result.equivalence_alpha))
                     if result.equivalence is not None else None),
        diffs=table(diff.head(SHOWN_DIFFS)), more_diffs=max(len(diff) - SHOWN_DIFFS, 0),
        figures=[{"file": f, "title": full_name(f.removeprefix("diff-rel-")
                                                .removesuffix(".svg"))} for f in figure_names],
        csvs=list(csv_names)).encode()


def files(result: Agreement, a: str, b: str, csv_names: Sequence[str]) -> dict[str, bytes]:
    """The page and its figures: file name -> bytes."""
    figs = figures(result)
    return {**figs, "index.html": page(result, a, b, csv_names, list(figs))}
