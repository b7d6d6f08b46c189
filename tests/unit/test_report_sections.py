"""The report's reading aids: contents, absolute distributions, each site's test in
full, the setup as run, the run-order figure, trial lists in run order."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from scipy import stats
from support.paths import FIXTURES

from analysis import analyse, synthetic, write_report
from analysis.campaign.analyse import examples
from analysis.figures.plots import cdf_row_figure, distribution_figure
from analysis.report.setup import networks_table, settings_table
from analysis.statistics.stats import measurements
from results_contract.load import load, load_manifest
from results_contract.manifest import ManifestError, parse

FIXTURE = FIXTURES / "results"


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.toc, self.h2 = set(), [], []
        self._nav = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "nav":
            self._nav = True
        if tag == "a" and self._nav:
            self.toc.append(attrs.get("href"))
        if tag == "h2":
            self.h2.append(attrs.get("id"))

    def handle_endtag(self, tag):
        if tag == "nav":
            self._nav = False


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """A small synthetic campaign's report, with a manifest like `testbed run` writes."""
    trials = synthetic.campaign(sites=3, networks=["dsl", "lte"],
                                settings=["tcp", "tcp-plus", "quic"], runs=11, seed=7)
    out = tmp_path_factory.mktemp("sections")
    results = out / "results"
    synthetic.write_folder(trials, results, manifest=MANIFEST)
    (results / "trials").mkdir()
    result = analyse(load(results))
    index = write_report(result, out / "report", manifest=load_manifest(results),
                         results_dir=results)
    return result, index


MANIFEST = {
    "calibration": {"dsl": {"min_rtt_ms": 24.6, "median_rtt_ms": 25.1}},
    "protocols": {
        "tcp-plus": {"stack": "tcp", "profile": {"stack": "tcp", "congestion_control": "cubic",
                                                 "initial_window_packets": 32, "pacing": True}},
        "quic": {"stack": "quic", "profile": {"stack": "quic", "congestion_control": "bbr2",
                                              "initial_window_packets": 32, "pacing": False}}},
}


def page_of(index: Path) -> Page:
    page = Page()
    page.feed(index.read_text(encoding="utf-8"))
    return page


def test_contents_link_to_every_section(report):
    _, index = report
    page = page_of(index)
    assert page.toc and all(link.startswith("#") for link in page.toc)
    assert {link[1:] for link in page.toc} <= page.ids  # every link lands on a section
    assert set(filter(None, page.h2)) <= {link[1:] for link in page.toc}  # none left out
    assert page.toc[:3] == ["#scorecard", "#findings", "#setup"]  # the answer first


def test_absolute_distributions_per_network_and_setting(report):
    result, index = report
    out = index.parent
    for metric in result.config.plot_metrics:
        if metric in set(result.distribution["metric"]):
            assert (out / "plots" / f"distribution-{metric}.svg").stat().st_size > 1000
    d = result.distribution.set_index(["network", "setting", "metric"])
    ok = result.trials[(result.trials["status"] == "ok") & (result.trials["network"] == "lte")
                       & (result.trials["setting"] == "quic")]["plt_ms"].dropna()
    assert d.loc[("lte", "quic", "plt"), "median"] == pytest.approx(ok.median())
    assert d.loc[("lte", "quic", "plt"), "n"] == len(ok)
    assert d.loc[("lte", "quic", "plt"), "p90"] == pytest.approx(ok.quantile(0.9))
    assert (out / "tables" / "distribution.csv").is_file()
    assert 'src="plots/distribution-plt.svg"' in index.read_text(encoding="utf-8")


def test_each_sites_anova_f_df_and_p_are_in_the_page_as_scipy_computes_them(report):
    result, index = report
    text = html.unescape(index.read_text(encoding="utf-8"))
    meas = measurements(result.trials)
    checked = 0
    for r in result.comparisons[result.comparisons["metric"] == "plt"].itertuples():
        side = meas[(meas["site"] == r.site) & (meas["network"] == r.network)
                    & (meas["metric"] == "plt")]
        xa = side.loc[side["setting"] == r.a, "value"].to_numpy()
        xb = side.loc[side["setting"] == r.b, "value"].to_numpy()
        want = stats.f_oneway(xa, xb)
        assert r.statistic == pytest.approx(want.statistic)
        assert r.p == pytest.approx(want.pvalue)
        assert (r.df_between, r.df_within) == (1, len(xa) + len(xb) - 2)
        start = text.index(f"{_label(r.a)} vs {_label(r.b)}, {r.network.upper()}:")
        block = text[start:text.index("</details>", start)]
        row = (f"<td>{re.escape(r.site)}</td>\n      <td>PLT</td>.*?<td>{want.statistic:.2f}</td>\n"
               f"      <td>1, {len(xa) + len(xb) - 2}</td>\n      <td>{want.pvalue:.2g}</td>")
        assert re.search(row, block, re.DOTALL), (r.site, r.a, r.b, r.network)
        checked += 1
    assert checked == 3 * 2 * 3  # pairs (each vs TCP, QUIC vs TCP+) x networks x sites


def _label(setting: str) -> str:
    return {"tcp": "TCP", "tcp-plus": "TCP+", "quic": "QUIC"}[setting]


def test_setup_tables_come_from_the_manifest(report):
    _, index = report
    nets = networks_table(parse({**MANIFEST, "networks": synthetic.manifest_networks(
        ["dsl", "lte"])}), ["dsl", "lte"])
    dsl = nets.set_index("network").loc["dsl"]
    assert dsl["min RTT (ms)"] == 24 and dsl["downlink (Mbit/s)"] == 25.0
    assert dsl["calibrated min RTT (ms)"] == 24.6
    assert pd.isna(nets.set_index("network").loc["lte", "calibrated min RTT (ms)"])
    settings = settings_table(parse(MANIFEST), ["tcp", "tcp-plus", "quic"]).set_index("setting")
    assert list(settings.index) == ["tcp", "tcp-plus", "quic"]
    assert settings.loc["quic", "congestion control"] == "bbr2"
    assert settings.loc["tcp-plus", "pacing"] == "yes"
    assert settings.loc["tcp"].drop("stack", errors="ignore").isna().all()  # not listed
    page = html.unescape(index.read_text(encoding="utf-8"))
    setup = page[page.index('id="setup"'):page.index('id="distributions"')]
    assert "congestion control" in setup and "<td>bbr2</td>" in setup
    assert "calibrated min RTT (ms)" in setup and "<td>24.6</td>" in setup
    assert "<pre>" not in page  # no raw manifest dump


def test_run_order_figure(report):
    _, index = report
    assert (index.parent / "plots" / "drift-plt.svg").stat().st_size > 1000
    assert 'src="plots/drift-plt.svg"' in index.read_text(encoding="utf-8")


def test_trials_page_lists_runs_in_numeric_order(report):
    _, index = report
    text = (index.parent / "trials.html").read_text(encoding="utf-8")
    rows = re.findall(r"<td>([^<+]*)\+dsl\+tcp\+(\d+)</td>", text)
    sites = list(dict.fromkeys(site for site, _ in rows))
    assert len(sites) == 3
    for site in sites:  # run 10 after run 9, not after run 1
        assert [int(run) for s, run in rows if s == site] == list(range(11))


def test_empty_groups_are_marked_no_data():
    meas = pd.DataFrame({"site": "a", "network": ["dsl", "dsl", "lte", "lte"],
                         "setting": ["tcp", "tcp", "quic", "quic"], "run": [0, 1, 0, 1],
                         "metric": "plt", "value": [1000.0, 1100.0, 900.0, 950.0]})
    fig = distribution_figure(meas, "plt", ["dsl", "lte", "mss"])
    texts = [[t.get_text() for t in ax.texts] for ax in fig.axes]
    assert texts == [["no data"]] * 3  # dsl's QUIC, lte's TCP, the whole of mss
    rel = pd.DataFrame({"network": "dsl", "site": "a", "setting": "quic", "metric": "plt",
                        "rel": [-0.004, 0.003]})
    fig = cdf_row_figure(rel, "plt", ["dsl", "lte"])
    assert [t.get_text() for ax in fig.axes for t in ax.texts] == ["no data"]
    FigureCanvasAgg(fig)
    fig.canvas.draw()
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels() if t.get_text()]
    assert len(ticks) == len(set(ticks)) > 2, ticks  # a narrow range: no "0%, 0%, 0%"
    assert np.isfinite(rel["rel"]).all()


def test_trials_to_look_at_break_ties_by_run_number():
    trials = synthetic.campaign(sites=1, networks=["dsl"], settings=["tcp"], runs=11, seed=3,
                                failure_rate=0.0)
    trials["plt_ms"] = 1000.0  # every run ties: the earliest run is the fastest
    ex = examples(trials).set_index("which")
    assert ex.loc["fastest", "trial_id"].endswith("+0")
    assert ex.loc["slowest", "trial_id"].endswith("+10")  # not run 9 (text order)


def test_percent_ticks_carry_the_decimals_their_spacing_needs():
    for (lo, hi), want in (((-0.12, 0.09), "3%"), ((-0.0025, 0.0025), "0.2%")):
        rel = pd.DataFrame({"network": "dsl", "site": "a", "setting": "quic",
                            "metric": "plt", "rel": [lo, hi]})
        fig = cdf_row_figure(rel, "plt", ["dsl"])
        FigureCanvasAgg(fig)
        fig.canvas.draw()
        ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
        assert want in ticks and "0.0%" not in ticks[:1] + ticks[-1:], ticks
        assert not any(t.endswith(".0%") for t in ticks if want == "3%"), ticks


def test_adaptive_runs_table_per_site_and_network(tmp_path):
    """A synthetic campaign whose groups got different runs (the manifest's `runs` a
    table): the report says per site and network how many runs and why it stopped, with
    the widest interval recomputed; a campaign with a fixed number of runs has no table."""
    from analysis.report.setup import runs_table
    from analysis.statistics.precision import Precision, half_width, meets

    trials = synthetic.campaign(sites=2, networks=["dsl", "mss"], settings=["tcp", "quic"],
                                runs=12, seed=3)
    # mss got all 12 runs, dsl stopped after 5
    trials = trials[(trials["network"] == "mss") | (trials["run"] < 5)]
    manifest = {**MANIFEST, "campaign": {"settings": {
        "runs": {"min": 5, "max": 12, "precision": "2%"}}}}
    table = runs_table(trials, parse(manifest)).set_index(["site", "network"])
    assert len(table) == 4
    for (site, network), row in table.iterrows():
        assert row["runs"] == (5 if network == "dsl" else 12)
        assert row["stopped"] == ("precision met" if network == "dsl" else "max reached")
        g = trials[(trials["site"] == site) & (trials["network"] == network)
                   & (trials["status"] == "ok")]
        widths = [half_width(g.loc[g["setting"] == p, "plt_ms"].tolist()) for p in ("tcp", "quic")]
        assert row["widest ± (ms)"] == pytest.approx(max(widths))
        met = all(meets(g.loc[g["setting"] == p, "plt_ms"].tolist(), Precision(2, "%"))
                  for p in ("tcp", "quic"))
        assert row["precision met"] == ("yes" if met else "no")
    assert runs_table(trials, parse(MANIFEST)).empty  # fixed runs
    assert runs_table(trials, parse({"campaign": {"settings": {"runs": {
        "min": 5, "max": 12, "precision": "fast"}}}})).empty
    for bad in ({"min": "5", "max": 12, "precision": "2%"}, {"min": 5, "max": 12}, [5, 12],
                True):  # refused on load, naming the key
        with pytest.raises(ManifestError, match="key campaign.settings.runs"):
            parse({"campaign": {"settings": {"runs": bad}}})
    results = tmp_path / "results"
    synthetic.write_folder(trials, results, manifest=manifest)
    (results / "trials").mkdir()
    index = write_report(analyse(load(results)), tmp_path / "report",
                         manifest=load_manifest(results), results_dir=results)
    page = html.unescape(index.read_text(encoding="utf-8"))
    setup = page[page.index('id="setup"'):page.index('id="distributions"')]
    assert "Runs per site and network" in setup and "±2%" in setup
    assert setup.count("precision met</td>") == 2 and setup.count("max reached</td>") == 2
