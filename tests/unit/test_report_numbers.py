"""The report's numbers cannot mislead (issue 53): no None, nan or inf as a value, no
across-site bound beyond ±100 % on a 4-site campaign (the bootstrap is left out below
the sites its coverage was checked at), one wording per verdict, the scorecard first
with every cell linking to its site's page."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import analyse, synthetic, write_report
from analysis.report.report import _html_table, runs_per_setting
from analysis.report.scorecard import site_page_name
from analysis.statistics import across, bbr
from analysis.statistics.wording import BOOTSTRAP_MIN_SITES, DASH, NO_DIFFERENCE, interval, pct


class Text(HTMLParser):
    """The text a reader sees (no script, no style) and every link."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.links: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        self.skip += tag in ("script", "style")
        self.links += [v for k, v in attrs if k in ("href", "src") and v]

    def handle_endtag(self, tag):
        self.skip -= tag in ("script", "style")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def seen(page: Path) -> Text:
    parser = Text()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


BAD = re.compile(r"(?<![A-Za-z])(None|nan|NaN|inf|Infinity)(?![A-Za-z])")
PERCENT = re.compile(r"([+\-−]?[\d,]+\.?\d*)\s?%")


@pytest.fixture(scope="module")
def four_sites(tmp_path_factory):
    out = tmp_path_factory.mktemp("four")
    trials = synthetic.campaign(sites=4, networks=["dsl", "da2gc"], runs=8, seed=5)
    a = analyse(trials)
    return a, write_report(a, out, source="synthetic")


def test_a_four_site_report_prints_no_none_nan_inf_and_no_bound_beyond_100_percent(four_sites):
    a, index = four_sites
    boot = a.reviewer["across_sites"][["boot_low", "boot_high"]]
    assert boot.isna().all().all()  # 4 < BOOTSTRAP_MIN_SITES: not reported
    pages = [index, *sorted((index.parent / "sites").glob("*.html"))]
    for page in pages:
        text = " ".join(seen(page).parts)
        assert not BAD.search(text), (page.name, BAD.search(text))
    text = " ".join(seen(index).parts)
    values = [float(v.replace(",", "").replace("−", "-")) for v in PERCENT.findall(text)]
    assert values and max(abs(v) for v in values) <= 100, max(values, key=abs)


def test_the_scorecard_leads_and_every_cell_links_to_its_site_page(four_sites):
    a, index = four_sites
    page = index.read_text(encoding="utf-8")
    assert page.index('id="scorecard"') < page.index('id="findings"')
    grids = re.findall(r'<table class="table scorecard">(.*?)</table>', page, re.DOTALL)
    assert len(grids) == 2  # one per network
    for grid in grids:
        cells = re.findall(r'<td class="sc [^"]*"[^>]*><a href="([^"]+)"', grid)
        assert len(cells) == 4 * 4  # 4 sites x 4 settings besides the baseline
    for link in seen(index).links:
        assert not re.match(r"^(https?:|file:|/)", link), link
        if not link.startswith("#"):
            assert (index.parent / link).is_file(), link
    for site in set(a.trials["site"]):
        site_page = index.parent / "sites" / site_page_name(site)
        for link in seen(site_page).links:
            assert not re.match(r"^(https?:|file:|/)", link), link
            assert (site_page.parent / link.split("#")[0]).is_file(), link


def test_the_bootstrap_is_reported_from_the_sites_its_coverage_was_checked_at():
    rng = np.random.default_rng(1)
    rows = []
    for sites in (4, BOOTSTRAP_MIN_SITES):
        for s in range(sites):
            for setting, shift in (("a", 0.03), ("b", 0.0)):
                for run in range(5):
                    rows.append({"network": f"n{sites}", "metric": "plt", "site": f"s{s}",
                                 "setting": setting,
                                 "value": 1000 * np.exp(shift + rng.normal(0, 0.05))})
    out = across.across_sites(pd.DataFrame(rows), [("a", "b")], resamples=200)
    by = out.set_index("network")
    assert by.loc["n4", ["boot_low", "boot_high"]].isna().all()
    assert by.loc[f"n{BOOTSTRAP_MIN_SITES}", ["boot_low", "boot_high"]].notna().all()


def test_a_value_that_cannot_be_had_is_a_dash():
    df = pd.DataFrame({"network": ["dsl", "lte"], "rel": [np.nan, np.inf],
                       "dsl_mbit": [None, "None"], "x": [1.0, -np.inf]})
    html = _html_table(df)
    assert not BAD.search(re.sub(r"<[^>]+>", " ", html))
    assert html.count(DASH) == 5
    assert pct(np.nan) == DASH and interval(0.1, np.nan) == DASH
    assert interval(-0.02, 0.01) == "[-2.0%, +1.0%]"


def test_bbr_sentences_use_the_one_wording_and_no_nan():
    text = bbr._interval({"estimate": np.nan, "low": np.nan, "high": np.nan, "sites": 2,
                          "p": np.nan})
    assert "nan" not in text and DASH in text and "95 % CI" in text
    assert NO_DIFFERENCE == "no significant difference"


def test_runs_per_setting_gives_the_range_the_groups_have():
    t = pd.DataFrame({"site": ["s"] * 5, "network": ["dsl"] * 5,
                      "setting": ["a", "a", "a", "b", "b"], "status": ["ok"] * 5})
    assert runs_per_setting(t) == "2–3"
    assert runs_per_setting(t.iloc[:0]) == DASH
