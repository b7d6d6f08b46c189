"""The report folder and `testbed report`: files, relative links, errors, edge cases."""

from __future__ import annotations

import csv
import html
import io
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pandas as pd
import pytest
from click.testing import CliRunner
from PIL import Image
from support.paths import FIXTURES

from analysis import Config, analyse, synthetic, write_report
from results_contract.load import load
from results_contract.manifest import ManifestError, parse
from results_contract.schema import COLUMNS
from testbed.cli import cli, main

FIXTURE = FIXTURES / "results"


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []

    def handle_starttag(self, tag, attrs):
        self.links += [v for k, v in attrs if k in ("src", "href") and v]


def links(index: Path) -> list[str]:
    parser = Links()
    parser.feed(index.read_text(encoding="utf-8"))
    return parser.links


@pytest.fixture(scope="module")
def fixture_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    result = analyse(load(FIXTURE))
    return result, write_report(result, out, source=str(FIXTURE))


def test_report_folder_has_every_plot_and_table(fixture_report):
    result, index = fixture_report
    out = index.parent
    for metric in ("plt", "fvc", "vc85", "si"):  # one figure per metric, networks side by side
        for fmt in ("png", "svg", "pdf"):
            assert (out / "plots" / f"cdf-{metric}.{fmt}").stat().st_size > 1000
    assert not list(out.glob("plots/*-lvc.*"))  # computed, not plotted by default
    assert {p.stem for p in out.glob("tables/*.csv")} == set(result.tables())
    assert (out / "plots" / "cdf-plt.pdf").read_bytes()[:5] == b"%PDF-"
    with Image.open(out / "plots" / "cdf-plt.png") as png:
        assert png.info["dpi"][0] == pytest.approx(300, abs=1)  # print resolution
        assert png.width >= 3000


def test_report_page_links_only_relative_files_that_exist(fixture_report):
    _, index = fixture_report
    found = links(index)
    assert sum(1 for link in found if link.endswith(".svg")) >= 8
    for link in found:
        assert not re.match(r"^(https?:|file:|/)", link), link
        if not link.startswith("#"):  # in-page links: test_contents_link_to_every_section
            assert (index.parent / link).is_file(), link


def test_report_page_shows_the_tables(fixture_report):
    _, index = fixture_report
    page = index.read_text(encoding="utf-8")
    for heading in ("CDFs over sites", "wins / ties / losses", "Protocol design impact",
                    "Trial health", "Failures by reason", "Robustness of the verdicts"):
        assert heading in page
    assert "TCP+ − 1 RTT vs QUIC" in page and "gnu.org" in page and "wikipedia.org" in page
    assert "2480 (2459 ok, 21 failed)" in page


def test_same_data_gives_the_same_files(tmp_path):
    trials = synthetic.campaign(sites=3, networks=["dsl"], runs=5, seed=2)
    a, b = (write_report(analyse(trials), tmp_path / n) for n in ("a", "b"))
    for f in ("index.html", "plots/cdf-plt.svg", "plots/cdf-plt.png", "plots/cdf-plt.pdf",
              "tables/tests.csv", "tables/effects.csv"):
        assert (a.parent / f).read_bytes() == (b.parent / f).read_bytes(), f


def test_campaign_without_ok_baseline_still_reports_health(tmp_path):
    trials = synthetic.trials(
        [{"site": "a", "network": "dsl", "setting": "tcp", "run": i, "status": "failed",
          "reason": "timeout"} for i in range(3)]
        + [{"site": "a", "network": "dsl", "setting": "quic", "run": i, "plt_ms": 100.0 + i}
           for i in range(3)])
    result = analyse(trials)
    assert result.relative.empty and result.design.empty
    assert any("baseline" in n for n in result.notes)
    page = write_report(result, tmp_path).read_text(encoding="utf-8")
    assert "No ok trials of the baseline" in page and "timeout" in page


def test_config_pairs_and_lvc_plot(tmp_path):
    trials = synthetic.campaign(sites=3, networks=["dsl"], runs=5, seed=2)
    result = analyse(trials, Config(pairs=(("quic", "tcp-plus"),), plot_metrics=("plt", "lvc")))
    assert set(zip(result.win_tie_loss.a, result.win_tie_loss.b)) == {("quic", "tcp-plus")}
    out = write_report(result, tmp_path).parent
    assert sorted(p.name for p in out.glob("plots/cdf-*.png")) == ["cdf-lvc.png", "cdf-plt.png"]


def test_cli_writes_the_report(tmp_path):
    done = CliRunner().invoke(cli, ["report", str(FIXTURE), "--out", str(tmp_path / "r")])
    assert done.exit_code == 0, done.output
    assert "2480 trials (2459 ok, 21 failed)" in done.output
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    setup = page[page.index('id="setup"'):page.index('id="distributions"')]
    # the folder's manifest.json: the networks as run (DA2GC: 262 ms, 0.468 Mbit/s, 3.3 %)
    assert re.search(r"<td>DA2GC</td>\s*<td>0.468</td>\s*<td>262</td>\s*<td>3.3</td>", setup)
    assert re.search(r"<td>TCP\+BBR</td>\s*<td>tcp</td>\s*<td>bbr</td>\s*<td>32</td>"
                     r"\s*<td>yes</td>", setup)  # the settings as run
    assert 'id="synthetic"' in page


def test_cli_reads_an_export_with_pairs(tmp_path):
    load(FIXTURE).to_parquet(tmp_path / "paper.parquet", index=False)
    done = CliRunner().invoke(cli, ["report", str(tmp_path / "paper.parquet"), "--out",
                                    str(tmp_path / "r"), "--pair", "quic:tcp-plus",
                                    "--plot-lvc"])
    assert done.exit_code == 0, done.output
    assert (tmp_path / "r" / "plots" / "cdf-lvc.svg").is_file()
    assert "quic" in (tmp_path / "r" / "tables" / "win_tie_loss.csv").read_text()


@pytest.mark.parametrize("args, message", [
    (["/nonexistent/results"], "no such file or folder"),
    ([str(FIXTURE), "--baseline", "tcp-fast"], "no setting tcp-fast"),
    ([str(FIXTURE), "--pair", "quic:nope"], "no setting nope"),
])
def test_cli_input_errors_exit_2_with_one_line(args, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["report", *args, "--out", str(tmp_path / "r")])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_report_units_and_names(fixture_report):
    result, index = fixture_report
    page = index.read_text(encoding="utf-8")
    # Medians and means in ms (no sign, one decimal), relative differences in percent.
    summary = result.summary.iloc[0]
    assert f"<td>{summary['median']:.1f}</td>" in page
    assert "median (ms)" in page and "+196.000" not in page
    assert re.search(r"[+-]\d+\.\d% \(\d/4 faster\)", page)
    for name in ("Page Load Time", "First Visual Change", "Visual Complete 85 %", "Speed Index"):
        assert page.count(f"= {name}") == 1  # spelled out once, in the overview
    assert "TCP (the default)" in page


def test_banners_for_few_runs_failures_and_synthetic_data(fixture_report, tmp_path):
    _, index = fixture_report
    page = index.read_text(encoding="utf-8")
    assert 'class="warning"' in page and "Failed trials in 14 of 20" in page
    assert "Few runs" not in page  # 31 runs
    assert "Synthetic data" not in page  # no manifest given and loaded from CSV
    few = synthetic.campaign(sites=2, networks=["dsl"], runs=3, seed=1, failure_rate=0.0)
    result = analyse(few)
    assert len(result.warnings) == 1 and "fewer than 10 ok runs (fewest: 3)" in result.warnings[0]
    page = write_report(result, tmp_path).read_text(encoding="utf-8")
    assert "Few runs" in page and 'id="synthetic"' in page


def test_tcp_plus_and_quic_alone(tmp_path):
    """No tcp: the first setting is the baseline, and the 1-RTT table is there."""
    trials = synthetic.campaign(sites=3, single_origin=1, networks=["dsl"],
                                settings=["quic", "tcp-plus"], runs=12, seed=3)
    result = analyse(trials)
    assert (result.baseline, result.pairs) == ("tcp-plus", (("quic", "tcp-plus"),))
    assert set(result.design["site"]) == {"gnu.org"} and not result.design.empty
    page = write_report(result, tmp_path).read_text(encoding="utf-8")
    assert "TCP+ (the campaign has no tcp setting: its first setting)" in page
    assert "TCP+ − 1 RTT vs QUIC" in page
    trials.to_parquet(tmp_path / "x.parquet", index=False)
    done = CliRunner().invoke(cli, ["report", str(tmp_path / "x.parquet"), "--out",
                                    str(tmp_path / "r")])
    assert done.exit_code == 0, done.output
    assert "baseline: tcp-plus" in done.output


def test_cli_statistics_options_and_trial_links(tmp_path):
    trials = synthetic.campaign(sites=2, networks=["dsl"], settings=["tcp", "quic"], runs=10,
                                seed=4, failure_rate=0.0)
    results = tmp_path / "results"
    synthetic.write_folder(trials, results)
    kept = results / "trials" / trials["trial_id"].iloc[0]
    kept.mkdir(parents=True)
    (kept / "browsertime.har.gz").write_bytes(b"x")
    (kept / "video.mp4").write_bytes(b"x")
    done = CliRunner().invoke(cli, ["report", str(results), "--out", str(tmp_path / "r"),
                                    "--test", "mannwhitney", "--correction", "bh"])
    assert done.exit_code == 0, done.output
    page = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    assert "Mann-Whitney U (two-sided), Benjamini-Hochberg" in page
    assert 'id="synthetic"' in page  # the manifest says so
    trials_page = tmp_path / "r" / "trials.html"
    hrefs = [h for h in links(trials_page) if h != "index.html"]
    assert all((trials_page.parent / unquote(h)).is_file() for h in hrefs)
    files = [h for h in hrefs if not h.startswith("trials/")]  # the kept HAR and video
    assert len(files) == 2
    pages = [h for h in hrefs if h.startswith("trials/")]  # each trial page written
    assert pages and all(h.endswith(".html") for h in pages)


PAINT = ("fp_ms", "fcp_ms", "lcp_ms", "dcl_ms")


def test_results_stored_before_the_paint_timings_load_report_and_export(tmp_path):
    trials = synthetic.campaign(sites=3, single_origin=1, networks=["dsl"],
                                settings=["tcp", "tcp-plus", "quic"], runs=10, seed=5)
    old = tmp_path / "old"
    synthetic.write_folder(trials, old, without=PAINT)
    loaded = load(old)
    assert loaded[list(PAINT)].isna().all().all() and loaded["plt_ms"].notna().any()
    done = CliRunner().invoke(cli, ["report", str(old), "--out", str(tmp_path / "r")])
    assert done.exit_code == 0, done.output
    design = pd.read_csv(tmp_path / "r" / "tables" / "design_impact.csv")
    assert set(design["metric"]) == {"fvc", "plt"}
    assert not list((tmp_path / "r" / "plots").glob("cdf-fcp.*"))
    page = html.unescape((tmp_path / "r" / "index.html").read_text(encoding="utf-8"))
    assert "No ok trial has FP, FCP, LCP, DCL: left out of every table" in page
    done = CliRunner().invoke(cli, ["export", str(old), "--csv", "-"])
    assert done.exit_code == 0, done.output
    first = next(csv.DictReader(io.StringIO(done.output)))
    assert list(first) == list(COLUMNS)  # every column of the contract, in its order
    assert [first[c] for c in PAINT] == [""] * len(PAINT), first


def test_report_shows_the_paint_timings_beside_the_video_metrics(fixture_report):
    result, index = fixture_report
    out = index.parent
    for metric in ("fcp", "lcp"):
        assert (out / "plots" / f"cdf-{metric}.svg").is_file()
    assert {"fp", "fcp", "lcp", "dcl"} <= set(result.summary["metric"])
    assert {"fp", "fcp", "lcp", "dcl"} <= set(result.win_tie_loss["metric"])
    assert list(dict.fromkeys(result.design["metric"])) == ["plt", "fvc", "fcp"]
    page = html.unescape(index.read_text(encoding="utf-8"))
    assert "FCP = First Contentful Paint" in page and "LCP = Largest Contentful Paint" in page
    design = page[page.index('id="design"'):page.index('id="health"')]
    rows = re.findall(r"<td>(FVC|FCP|PLT)</td>", design)
    assert rows[:3] == ["FVC", "FCP", "PLT"]  # FCP beside FVC and PLT in the 1-RTT table


def test_two_clients_get_a_report_each_compared_within_the_client(tmp_path):
    chromium = synthetic.campaign(sites=3, networks=["dsl"], runs=4, seed=3)
    firefox = synthetic.campaign(sites=3, networks=["dsl"], runs=4, seed=4)
    firefox["trial_id"] = firefox["trial_id"].astype(str) + "+firefox"
    firefox["client"] = "firefox"
    chromium["client"] = pd.NA  # an older store's rows: chromium
    both = pd.concat([chromium, firefox], ignore_index=True)
    both.to_parquet(tmp_path / "both.parquet", index=False)
    done = CliRunner().invoke(cli, ["report", str(tmp_path / "both.parquet"), "--out",
                                    str(tmp_path / "r"), "--json"])
    assert done.exit_code == 0, done.output
    import json
    summaries = json.loads(done.stdout)
    assert [s["client"] for s in summaries] == ["chromium", "firefox"]
    assert [s["trials"] for s in summaries] == [len(chromium), len(firefox)]
    for client in ("chromium", "firefox"):
        assert (tmp_path / "r" / client / "index.html").is_file()
    one = CliRunner().invoke(cli, ["report", str(tmp_path / "both.parquet"), "--out",
                                   str(tmp_path / "f"), "--client", "firefox", "--json"])
    assert one.exit_code == 0, one.output
    assert json.loads(one.stdout)["trials"] == len(firefox)
    assert (tmp_path / "f" / "index.html").is_file()


def test_sessions_with_other_versions_of_what_measures_get_a_banner():
    from analysis.campaign.model import mixed_versions

    def session(testbed=None, chromium="Chromium 156", **more):
        versions = {"chromium": chromium, "python": "3.11.2", **more}
        if testbed:
            versions["testbed"] = testbed
        return {"versions": versions}

    same = parse({"sessions": [session("0.1.0 " + "a" * 40), session("0.1.0 " + "a" * 40)]})
    assert mixed_versions(same) == [] and mixed_versions(None) == []
    # sessions before the testbed recorded its commit say nothing either way
    assert mixed_versions(parse({"sessions": [session(), session("0.1.0 " + "a" * 40)]})) == []
    two = parse({"sessions": [session("0.1.0 " + "a" * 40),
                              session("0.1.0 " + "b" * 40, chromium="Chromium 157"),
                              session("0.1.0 " + "b" * 40, python="3.12")]})
    [line] = mixed_versions(two)
    assert line.startswith("Mixed versions: the campaign's 3 sessions did not all run the "
                           "same testbed, chromium (testbed: 2 (")
    assert "chromium: 2 (Chromium 156, Chromium 157)" in line and "python" not in line
    with pytest.raises(ManifestError, match="key sessions.0.versions: expected an object"):
        parse({"sessions": [{"versions": "x"}, 3, session()]})  # refused on load
