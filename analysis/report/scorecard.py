"""The report's scorecard and its page per site.

    grids = scorecard(a)                       # one grid per network, sites x settings
    site_pages(a, out, results_dir, conns)     # out/sites/<site>.html, one per site

The scorecard leads the report: per network a colour-coded grid, one row per site and
one column per setting, each cell the site's relative difference of the mean to the
baseline with the per-site test's verdict (analysis.campaign.model's comparisons),
linking to the site's page. A site's page has, per network and setting, its ok runs'
distribution, its median run (linked to that trial's page: waterfall, connections,
and its filmstrip when `testbed trial` is run on it) and its outliers, each linked to
its trial page. Every link is relative to the report folder.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pandas as pd

from analysis.report import pages
from analysis.report.report_inspect import write_page
from analysis.statistics.wording import DASH, NO_DIFFERENCE, finite, pct
from results_contract.schema import OK, full_name, label, networks_in, settings_in

if TYPE_CHECKING:
    from analysis.campaign.model import Analysis

SITES_DIR = "sites"
"""The site pages' folder in the report folder."""
OUTLIER_FACTOR = 2.0
"""An ok trial whose PLT is this many times its group's median (site, network, setting),
or that fraction of it, is an outlier listed on the site's page."""
VERDICTS = {"win": ("faster", "faster"), "loss": ("slower", "slower"),
            "tie": (NO_DIFFERENCE, "tie")}
"""Per-site test outcome of (setting, baseline) -> (words, CSS class)."""
STRONG = 0.10
"""A relative difference at least this large is coloured deeper."""


def site_page_name(site: str) -> str:
    """The site's page in the report folder's sites/: its name with anything but letters,
    digits, dot, dash and underscore as '_' (one name per site of a campaign)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", site) + ".html"


def scorecard_metric(a: Analysis) -> str:
    """The metric the scorecard shows: PLT when the campaign has it, else its first."""
    metrics = list(a.config.metrics)
    return "plt" if "plt" in metrics or not metrics else metrics[0]


def _outcomes(a: Analysis, metric: str) -> dict[tuple[str, str, str], str]:
    """(network, site, setting) -> the per-site test's outcome of setting vs baseline
    ('win' means the setting was faster), from either order of the pair."""
    c = a.comparisons
    if c is None or c.empty:
        return {}
    c = c[c["metric"] == metric]
    out = {}
    flip = {"win": "loss", "loss": "win", "tie": "tie"}
    for r in c.itertuples(index=False):
        if r.b == a.baseline:
            out[(r.network, r.site, r.a)] = str(r.outcome)
        elif r.a == a.baseline:
            out[(r.network, r.site, r.b)] = flip.get(str(r.outcome), str(r.outcome))
    return out


def scorecard(a: Analysis) -> list[dict[str, Any]]:
    """Per network: {network, settings, rows}; each row a site with its page's link and
    one cell per setting: text (relative difference or a dash), verdict, CSS class and
    a title saying why a cell is empty."""
    metric = scorecard_metric(a)
    rel = a.relative
    if rel is None or rel.empty:
        return []
    rel = rel[rel["metric"] == metric]
    outcomes = _outcomes(a, metric)
    grids = []
    for network in networks_in(rel["network"]):
        here = rel[rel["network"] == network]
        settings = settings_in(here["setting"])
        values = {(r.site, r.setting): r.rel for r in here.itertuples(index=False)}
        rows = []
        for site in sorted(set(here["site"])):
            cells = []
            for setting in settings:
                v = values.get((site, setting))
                outcome = outcomes.get((network, site, setting))
                words, cls = VERDICTS.get(outcome or "", ("not tested", "none"))
                if not finite(v):
                    cells.append({"text": DASH, "verdict": "", "cls": "none",
                                  "title": f"no ok runs of both {label(setting)} and "
                                           f"{label(a.baseline)} on this site"})
                    continue
                deep = " strong" if abs(float(v or 0)) >= STRONG and cls != "tie" else ""
                cells.append({"text": pct(v), "verdict": words, "cls": cls + deep,
                              "title": f"{label(setting)} vs {label(a.baseline)}: {pct(v)} "
                                       f"({words}, per-site test)"})
            rows.append({"site": site, "href": f"{SITES_DIR}/{quote(site_page_name(site))}",
                         "cells": cells})
        grids.append({"network": label(network), "id": f"scorecard-{network}",
                      "settings": [label(s) for s in settings], "rows": rows})
    return grids


def site_pages(a: Analysis, out: Path, results_dir: Path | None,
               conns: pd.DataFrame | None = None) -> int:
    """Write out/sites/<site>.html for every site of `a.trials` (and, with `results_dir`,
    the trial pages of each setting's median run and of the outliers); returns how many."""
    ok = a.trials[(a.trials["status"] == OK) & a.trials["plt_ms"].notna()]
    (out / SITES_DIR).mkdir(parents=True, exist_ok=True)
    written: dict[str, str | None] = {}

    def trial_link(trial_id: str) -> str | None:
        if results_dir is None:
            return None
        if trial_id not in written:
            href = write_page(a, out, Path(results_dir), trial_id, conns)
            written[trial_id] = f"../{href}" if href else None
        return written[trial_id]

    metric = scorecard_metric(a)
    rel = a.relative
    rel = rel[rel["metric"] == metric] if rel is not None and len(rel) else pd.DataFrame(
        columns=["site", "network", "setting", "rel"])
    outcomes = _outcomes(a, metric)
    sites = sorted(set(a.trials["site"]))
    for site in sites:
        mine = ok[ok["site"] == site]
        groups, outliers = [], []
        for network in networks_in(mine["network"]):
            for setting in settings_in(mine.loc[mine["network"] == network, "setting"]):
                g = mine[(mine["network"] == network) & (mine["setting"] == setting)]
                plt_ms = g["plt_ms"].astype(float)
                median = float(plt_ms.median())
                middle = g.iloc[(plt_ms - median).abs().to_numpy().argmin()]
                r = rel[(rel["site"] == site) & (rel["network"] == network)
                        & (rel["setting"] == setting)]["rel"]
                words = VERDICTS.get(outcomes.get((network, site, setting), ""), ("", ""))[0]
                groups.append({
                    "network": label(network), "setting": label(setting), "runs": len(g),
                    "median": f"{median:.0f}", "p10": f"{plt_ms.quantile(0.1):.0f}",
                    "p90": f"{plt_ms.quantile(0.9):.0f}", "min": f"{plt_ms.min():.0f}",
                    "max": f"{plt_ms.max():.0f}",
                    "rel": pct(r.iloc[0]) if len(r) else DASH,
                    "verdict": words or ("baseline" if setting == a.baseline else DASH),
                    "median_trial": str(middle["trial_id"]),
                    "median_href": trial_link(str(middle["trial_id"])),
                    "median_plt": f"{float(middle['plt_ms']):.0f}"})
                far = g[(plt_ms > OUTLIER_FACTOR * median) | (plt_ms < median / OUTLIER_FACTOR)]
                for t in far.itertuples(index=False):
                    outliers.append({"network": label(network), "setting": label(setting),
                                     "trial": str(t.trial_id), "plt": f"{t.plt_ms:.0f}",
                                     "times": f"{t.plt_ms / median:.1f}×",
                                     "href": trial_link(str(t.trial_id))})
        failed = a.trials[(a.trials["site"] == site) & (a.trials["status"] != OK)]
        page = pages.render(
            "site.html.j2", site=site, metric=full_name(metric), baseline=label(a.baseline),
            groups=groups, outliers=outliers, factor=f"{OUTLIER_FACTOR:g}",
            failed=len(failed), kept=results_dir is not None)
        (out / SITES_DIR / site_page_name(site)).write_text(page, encoding="utf-8")
    return len(sites)
