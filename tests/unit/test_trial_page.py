"""One trial's page (analysis.report.trial_page) and its safe reading of a results folder
(results_contract.trialfiles), from synthetic results folders: no testbed, no browser."""

from __future__ import annotations

import gzip
import json
import os
import re

import pytest
from click.testing import CliRunner
from support.paths import FIXTURES

from analysis import ResultsError, synthetic
from analysis.campaign.analyse import examples
from analysis.report.trial_page import frame_times, render, trial_view, waterfall
from analysis.statistics.connections import connections_of
from results_contract.trialfiles import MAX_JSON, TrialFiles
from testbed.cli import cli

FIXTURE = FIXTURES / "results"


@pytest.fixture
def folder(tmp_path):
    """A results folder of 8 trials with connections; the first trial keeps a HAR."""
    trials = synthetic.campaign(sites=1, networks=["dsl"], settings=["tcp-plus", "quic"],
                                runs=4, seed=3, failure_rate=0.0)
    out = tmp_path / "results"
    synthetic.write_folder(trials, out, connections=synthetic.connections(trials, seed=3))
    first = trials.iloc[0]
    har = synthetic.har(first["site"], int(first["bytes"]), 12, seed=1)
    kept = out / "trials" / first["trial_id"]
    kept.mkdir(parents=True)
    (kept / "browsertime.har.gz").write_bytes(gzip.compress(json.dumps(har).encode()))
    return out, trials, first["trial_id"], har


def rows_of(page: str) -> int:
    return len(re.findall(r'<tr data-request="\d+"', page))


def test_waterfall_has_one_row_per_har_entry_with_its_phases(folder):
    out, _, trial_id, har = folder
    rows = waterfall(har)
    assert len(rows) == len(har["log"]["entries"]) == 12
    first = rows[0]
    assert first["start"] == 0 and first["http_version"] == "h2" and first["connection"] == "1"
    # HAR's connect includes ssl: the bar draws them apart
    assert (first["connect"], first["ssl"]) == (20.0, 20.0)
    assert rows[5]["connect"] == 0 and rows[5]["start"] > 0
    view = trial_view(out, trial_id)
    page = render(view)
    assert rows_of(page) == 12
    assert "<table" in page and 'id="connections"' in page  # the trial's connections
    assert len(view.connections) >= 1 and set(view.connections["trial_id"]) == {trial_id}


def test_the_page_is_self_contained(folder):
    out, _, trial_id, _ = folder
    page = render(trial_view(out, trial_id))
    assert "<script" not in page
    assert not re.search(r'(src|href)="(?!data:)', page)  # nothing to load
    assert "default-src 'none'" in page


def test_a_trial_without_files_or_connections_says_so(folder, tmp_path):
    out, trials, _, _ = folder
    other = trials.iloc[1]["trial_id"]
    view = trial_view(out, other)
    page = render(view)
    assert rows_of(page) == 0 and "no files kept" in view.text()
    plain = tmp_path / "plain"
    synthetic.write_folder(trials, plain)  # a store without table connections
    view = trial_view(plain, other)
    assert 'id="no-connections"' in render(view) and "no connections table" in render(view)
    assert connections_of(plain).empty


def test_unknown_trial_names_the_store_and_lists_nothing(folder):
    out, _, _, _ = folder
    with pytest.raises(ResultsError, match=r"no trial 'nope\+x' among its 8 trials"):
        trial_view(out, "nope+x")


def test_kept_files_are_never_read_through_a_symlink_or_a_fifo(folder, tmp_path):
    out, _, trial_id, _ = folder
    secret = tmp_path / "secret"
    secret.write_text("SECRET")
    har = out / "trials" / trial_id / "browsertime.har.gz"
    har.unlink()
    har.symlink_to(secret)
    with pytest.raises(ResultsError, match="a symlink"), TrialFiles(out, trial_id) as f:
        f.read("browsertime.har.gz")
    har.unlink()
    os.mkfifo(har)
    with pytest.raises(ResultsError, match="not a regular file"), TrialFiles(out, trial_id) as f:
        f.read("browsertime.har.gz")
    har.unlink()
    # the trial folder itself a symlink to a folder outside
    outside = tmp_path / "outside"
    outside.mkdir()
    (out / "trials" / trial_id).rmdir()
    (out / "trials" / trial_id).symlink_to(outside)
    with pytest.raises(ResultsError, match="a symlink"):
        TrialFiles(out, trial_id).__enter__()
    for bad in ("..", "a/../../x", ""):
        with pytest.raises(ResultsError, match="not a path"):
            TrialFiles(out, bad).__enter__()


def test_a_gzip_bomb_is_not_inflated_past_the_cap(folder, monkeypatch):
    out, _, trial_id, _ = folder
    har = out / "trials" / trial_id / "browsertime.har.gz"
    har.write_bytes(gzip.compress(b" " * (MAX_JSON // 64 + 10)))
    monkeypatch.setattr("results_contract.results_io.MAX_JSON", MAX_JSON // 64)
    with pytest.raises(ResultsError, match="inflates to more than"), \
            TrialFiles(out, trial_id) as f:
        f.json("browsertime.har.gz")


def test_frame_times_follow_the_visual_progress():
    visual = {"VisualProgress": "0=0, 100=20, 200=40, 300=60, 400=80, 500=100"}
    assert frame_times(visual) == [0, 100, 200, 300, 400, 500]
    many = {"VisualProgress": ", ".join(f"{t}={t // 10}" for t in range(0, 1000, 10))}
    times = frame_times(many, limit=5)
    assert len(times) == 5 and times[0] == 0 and times[-1] == 990
    assert frame_times(None) == [0.0]


def test_examples_are_the_fastest_median_and_slowest_trial(folder):
    _, trials, _, _ = folder
    ex = examples(trials)
    assert len(ex) == 2 * 3
    g = trials[trials["setting"] == "quic"].sort_values("plt_ms")
    got = ex[ex["setting"] == "quic"].set_index("which")["trial_id"]
    assert got["fastest"] == g["trial_id"].iloc[0] and got["slowest"] == g["trial_id"].iloc[-1]
    assert got["median"] == g["trial_id"].iloc[1]  # the lower middle of 4


def test_cli_prints_the_trial_and_writes_the_page(folder, tmp_path):
    out, _, trial_id, _ = folder
    page = tmp_path / "pages" / "t.html"
    done = CliRunner().invoke(cli, ["trial", str(out), trial_id, "--output", str(page)])
    assert done.exit_code == 0, done.output
    assert f"trial {trial_id}: ok" in done.output and "HAR: 12 requests" in done.output
    assert "connections (" in done.output and f"page: {page}" in done.output
    assert rows_of(page.read_text()) == 12


def test_report_links_the_fastest_median_and_slowest_trial_to_their_pages(folder, tmp_path):
    out = folder[0]
    done = CliRunner().invoke(cli, ["report", str(out), "--out", str(tmp_path / "r")])
    assert done.exit_code == 0, done.output
    index = (tmp_path / "r" / "index.html").read_text()
    section = index[index.index('id="examples"'):]
    hrefs = re.findall(r'href="(trials/[^"]+)"', section)
    assert len(hrefs) == 2 * 3
    from urllib.parse import unquote

    for href in hrefs:
        assert (tmp_path / "r" / unquote(href)).is_file()


def test_ffmpeg_gets_a_pinned_mp4_of_the_kept_bytes_and_nothing_else(folder):
    """The runner (the command line's runs it unprivileged) gets the mp4 demuxer, the
    file protocol only, no external references, and a sealed memory copy of the video."""
    import shutil

    if shutil.which("ffmpeg") is None:
        pytest.skip("no ffmpeg")
    out, _, trial_id, _ = folder
    (out / "trials" / trial_id / "video.mp4").write_bytes(b"#EXTM3U\n/etc/hostname\n")
    calls = []

    def runner(argv, pass_fds, timeout):
        (fd,) = pass_fds
        with open(f"/proc/self/fd/{fd}", "rb") as f:
            calls.append((argv, f.read(), timeout))
        import subprocess
        return subprocess.CompletedProcess(argv, 1, b"", b"moov atom not found")

    view = trial_view(out, trial_id, runner=runner)
    (argv, seen, timeout), = calls
    assert seen == b"#EXTM3U\n/etc/hostname\n" and timeout == 30
    before_input = argv[:argv.index("-i")]
    def option(name):
        return before_input[before_input.index(name) + 1]
    assert (option("-protocol_whitelist"), option("-f"), option("-enable_drefs")) == (
        "file", "mp4", "0")
    assert argv[argv.index("-i") + 1].startswith("/proc/self/fd/")
    assert view.frames == [] and "ffmpeg could not read the video: no filmstrip" in view.notes


def test_the_fixtures_kept_trials_match_their_rows_and_ids():
    """The bundled fixture's trial ids are `site+network+setting+run`, as the docs' commands
    take them; each kept HAR is the trial's own: one waterfall row per request of its
    row, each over the HTTP version its row counts."""
    from results_contract.load import load

    trials = load(FIXTURE).set_index("trial_id")
    assert not trials.index.str.contains("|", regex=False).any()
    kept = sorted(p.name for p in (FIXTURE / "trials").iterdir())
    assert len(kept) == 4
    for trial_id in kept:
        r = trials.loc[trial_id]
        assert trial_id == "+".join([r["site"], r["network"], r["setting"], str(r["run"])])
        view = trial_view(FIXTURE, trial_id)
        page = render(view)
        har = json.loads(gzip.decompress((FIXTURE / "trials" / trial_id /
                                          "browsertime.har.gz").read_bytes()))
        rows = waterfall(har)
        assert len(rows) == len(har["log"]["entries"]) == r["requests"] == rows_of(page)
        versions = json.loads(r["http_versions"])
        assert {w["http_version"] for w in rows} == set(versions)
        assert sum(versions.values()) == len(rows)
