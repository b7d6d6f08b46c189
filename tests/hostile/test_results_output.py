"""Hostile results folders and recordings, and what root makes of them: the files it
writes (compare's and report's CSVs, trials.html, the trial page's filmstrip) and
what it prints to a terminal.

Refusals go through the shared harness (one line, exit 2, nothing written). The
cases a command must get through (a name full of escape sequences, a playlist
where a video should be) run the real command line as root the same way and check
what it wrote and printed: no escape byte, the names shown literally, no byte of
the host's files, nothing written outside the scratch folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support.hostile_harness import (
    ROOT,
    TESTBED,
    Case,
    Host,
    _changed,
    make_host,
    run_case,
    snapshot,
)

from analysis import synthetic
from testbed.formats import recording

ESC = "\x1b]52;c;SGVsbG8=\x07[bold]x[red]\x1b[2J\x9b31m"
"""An OSC 52 clipboard write, rich markup, a CSI erasing the screen, a C1 CSI."""
SHOWN = "[bold]x[red]"
"""What of ESC must show, literally."""
TRIALS = synthetic.campaign(sites=1, networks=["dsl"], settings=["tcp-plus"], runs=2, seed=1,
                            failure_rate=0.0)
ID = TRIALS["trial_id"].iloc[0]
PAIR = synthetic.campaign(sites=2, networks=["dsl"], settings=["tcp", "quic"], runs=3, seed=1,
                          failure_rate=0.0)
"""Two settings: something to compare."""


def run_ok(tmp: Path, argv: list[str], prepare) -> tuple[subprocess.CompletedProcess, Path, Host]:
    """Run `testbed argv` as root on what `prepare(dir, host)` made: exit 0, nothing of
    the host's secret printed, nothing written outside the scratch folder."""
    host = make_host(tmp)
    d = tmp / "case"
    d.mkdir()
    d.chmod(0o755)
    prepare(d, host)
    outside = [ROOT / "results", ROOT / "reports", ROOT / "recordings", host.secret.parent]
    before = snapshot(*outside)
    cp = subprocess.run([TESTBED, *(a.replace("{dir}", str(d)) for a in argv)], check=False,
                        capture_output=True, timeout=300, cwd=d, stdin=subprocess.DEVNULL,
                        env={**os.environ, "COLUMNS": "200"})
    assert cp.returncode == 0, cp.stderr[-2000:]
    assert "Traceback" not in cp.stderr.decode(errors="replace")
    assert host.content.encode() not in cp.stdout + cp.stderr
    assert _changed(before, snapshot(*outside)) == [], "written outside the scratch folder"
    return cp, d, host


def no_escapes(out: bytes) -> str:
    """The output as text, after checking it holds no ESC, BEL or C1 control."""
    text = out.decode()
    assert "\x1b" not in text and "\x07" not in text, text[:2000]
    assert not any(0x80 <= ord(c) <= 0x9f for c in text), text[:2000]
    return text


# -- 1. compare --out: the checks every writer makes ---------------------------------

def two_stores(d: Path, host: Host) -> None:
    synthetic.write_folder(PAIR, d / "a")
    synthetic.write_folder(PAIR, d / "b")


def out_with_symlink(d: Path, host: Host) -> None:
    """--out a folder of another user's holding sites.csv -> the host's secret."""
    two_stores(d, host)
    (d / "o").mkdir()
    (d / "o" / "sites.csv").symlink_to(host.secret)
    os.chown(d / "o" / "sites.csv", 65534, 65534, follow_symlinks=False)
    os.chown(d / "o", 65534, 65534)


def out_testbed_user(d: Path, host: Host) -> None:
    from testbed.host.paths import chown_to_user

    two_stores(d, host)
    (d / "o").mkdir()
    chown_to_user(d / "o")


COMPARE = ["compare", "{dir}/a", "{dir}/b", "--out", "{dir}/o"]
CASES = [
    Case("compare-out-symlink-to-host-file", COMPARE, ["--out", "{dir}/o"],
         prepare=out_with_symlink, may_write=True),
    Case("compare-out-of-the-testbed-user", COMPARE,
         ["--out", "{dir}/o", "testbed"], prepare=out_testbed_user, may_write=True),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_hostile_results_output(case, tmp_path):
    cp = run_case(case, tmp_path)
    assert cp.stdout == ""  # refused before anything was read or printed


def test_compare_writes_its_csvs_through_the_checked_folder(tmp_path):
    cp, d, _ = run_ok(tmp_path, COMPARE, two_stores)
    written = {p.name for p in (d / "o").iterdir()}
    assert {"equivalence.csv", "manifest_diff.csv", "sites.csv", "summary.csv",
            "index.html"} <= written, written
    assert all((d / "o" / n).is_file() and not (d / "o" / n).is_symlink() for n in written)
    assert b"wrote " in cp.stdout


# -- 2. the filmstrip: ffmpeg reads only the trial's video, as an mp4 -----------------

def _ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-loglevel", "error", "-y", *args], check=True,
                   timeout=60)


def playlist_video(d: Path, host: Host) -> None:
    """video.mp4 is an HLS playlist naming a root-only video outside the folder."""
    hidden = host.secret.parent / "hidden.ts"
    _ffmpeg("-f", "lavfi", "-i", "color=red:s=64x64:d=2", "-c:v", "mpeg2video", str(hidden))
    hidden.chmod(0o600)
    synthetic.write_folder(TRIALS, d / "r")
    kept = d / "r" / "trials" / ID
    kept.mkdir(parents=True)
    (kept / "video.mp4").write_text("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n"
                                    f"{hidden}\n#EXT-X-ENDLIST\n")


def real_video(d: Path, host: Host) -> None:
    """A real mp4 only root may read (the filmstrip still has its frames)."""
    synthetic.write_folder(TRIALS, d / "r")
    kept = d / "r" / "trials" / ID
    kept.mkdir(parents=True)
    _ffmpeg("-f", "lavfi", "-i", "color=blue:s=64x64:d=2", "-c:v", "mpeg4",
            str(kept / "video.mp4"))
    (kept / "video.mp4").chmod(0o600)


TRIAL = ["trial", "{dir}/r", ID, "--output", "{dir}/page.html"]
needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="no ffmpeg")


@needs_ffmpeg
def test_a_playlist_in_place_of_the_video_reads_nothing_else(tmp_path):
    _, d, _ = run_ok(tmp_path, TRIAL, playlist_video)
    page = (d / "page.html").read_text()
    assert 'id="filmstrip"' not in page and "data:image/jpeg" not in page
    assert "could not read the video" in page


@needs_ffmpeg
def test_a_real_video_still_gives_a_filmstrip(tmp_path):
    _, d, _ = run_ok(tmp_path, TRIAL, real_video)
    page = (d / "page.html").read_text()
    assert page.count("data:image/jpeg") >= 1


# -- 3. escape sequences and markup from stored strings never reach the terminal -----

def escaped_store(d: Path, host: Host) -> None:
    trials = synthetic.trials([{"site": f"s{ESC}", "network": "dsl", "setting": "tcp",
                                "run": 0, "status": "failed", "reason": f"r{ESC}"}])
    synthetic.write_folder(trials, d / "r")


def escaped_manifests(d: Path, host: Host) -> None:
    synthetic.write_folder(PAIR, d / "a", {"note": f"a{ESC}"})
    synthetic.write_folder(PAIR, d / "b", {"note": f"b{ESC}"})


def escaped_recording(d: Path, host: Host) -> None:
    meta = {"name": "rec", "url": f"https://www.a.test/{ESC}", "recorded_at": f"2026{ESC}",
            "loads": 1, "chromium_version": ESC}
    x = {"scheme": "https", "host": "www.a.test", "port": 443, "ip": "203.0.113.5",
         "method": "GET", "target": "/", "request_headers": [["user-agent", "x"]],
         "status": 200, "response_headers": [["content-type", f"text/html{ESC}"]]}
    (d / "recs").mkdir()
    recording.write(d / "recs", meta, [(x, b"<html></html>")])
    os.rename(d / "recs" / "rec", d / "recs" / f"rec{ESC}")


def test_trial_prints_stored_names_without_escapes(tmp_path):
    trial_id = synthetic.trials([{"site": f"s{ESC}", "network": "dsl", "setting": "tcp",
                                  "run": 0}])["trial_id"].iloc[0]
    cp, _, _ = run_ok(tmp_path, ["trial", "{dir}/r", trial_id, "--output", "{dir}/p.html"],
                      escaped_store)
    text = no_escapes(cp.stdout + cp.stderr)
    assert f"site s{SHOWN}" in text
    assert SHOWN in text.split("failed", 1)[1]  # the reason too


def test_compare_prints_stored_manifests_without_escapes(tmp_path):
    cp, _, _ = run_ok(tmp_path, ["compare", "{dir}/a", "{dir}/b"], escaped_manifests)
    text = no_escapes(cp.stdout + cp.stderr)
    assert f"note: a{SHOWN}" in text


def test_an_error_line_holds_no_stored_escapes(tmp_path):
    def prepare(d, host):
        trials = synthetic.trials([{"site": "s", "network": "dsl", "setting": f"p{ESC}",
                                    "run": 0}])
        synthetic.write_folder(trials, d / "a")
    host = make_host(tmp_path)
    d = tmp_path / "case"
    d.mkdir()
    prepare(d, host)
    cp = subprocess.run([TESTBED, "compare", d / "a", d / "a", "--baseline", "nope"],
                        capture_output=True, check=False, timeout=120, cwd=d)
    assert cp.returncode == 2
    line = no_escapes(cp.stderr)
    assert SHOWN in line and len(line.splitlines()) == 1


def test_recording_show_prints_recorded_strings_literally(tmp_path):
    def prepare(d, host):
        escaped_recording(d, host)
    cp, d, _ = run_ok(tmp_path, ["recording", "list", "{dir}/recs"], prepare)
    listed = no_escapes(cp.stdout + cp.stderr)
    assert f"https://www.a.test/{SHOWN}" in listed
    assert f"rec{SHOWN}" in listed
    rec = next((d / "recs").iterdir())
    cp = subprocess.run([TESTBED, "recording", "show", rec], capture_output=True, check=False,
                        timeout=120, cwd=d)
    assert cp.returncode == 0, cp.stderr
    shown = no_escapes(cp.stdout + cp.stderr)
    assert f"https://www.a.test/{SHOWN}" in shown
    assert f"Chromium {SHOWN}" in shown


# -- 4, 5, 6. the report: names with $, cells a spreadsheet runs, links to symlinks ---

def dollar_store(d: Path, host: Host) -> None:
    rows = [{"site": "s", "network": net, "setting": p, "run": i, "plt_ms": 100.0 + i + k,
             "fvc_ms": 50.0 + i, "si_ms": 70.0 + i, "vc85_ms": 80.0 + i}
            for net in ("$x^2$", "a$b") for k, p in enumerate(("tcp", "$\\frac$"))
            for i in range(3)]
    synthetic.write_folder(synthetic.trials(rows), d / "r")


def test_report_shows_dollar_names_literally(tmp_path):
    _, d, _ = run_ok(tmp_path, ["report", "{dir}/r", "--out", "{dir}/rep"], dollar_store)
    svg = (d / "rep" / "plots" / "cdf-plt.svg").read_text()
    assert "$x^2$" in svg and "a$b" in svg and "$\\frac$" in svg


def formula_store(d: Path, host: Host) -> None:
    rows = [{"site": "s", "network": "dsl", "setting": p, "run": i, "plt_ms": 100.0 + i,
             "status": "failed" if i == 0 else "ok",
             "reason": "=HYPERLINK(\"http://x.test\",\"y\")" if i == 0 else None}
            for p in ("tcp", "quic") for i in range(4)]
    synthetic.write_folder(synthetic.trials(rows), d / "r", {"note": "@SUM(1+1)*cmd|' /C calc'!A0"})
    synthetic.write_folder(synthetic.trials(rows), d / "b", {"note": "+1+1"})
    synthetic.write_folder(synthetic.trials(rows), d / "a", {"note": "-2+3"})


def test_csv_cells_a_spreadsheet_would_run_are_neutralised(tmp_path):
    _, d, _ = run_ok(tmp_path, ["report", "{dir}/r", "--out", "{dir}/rep"], formula_store)
    failures = (d / "rep" / "tables" / "failures.csv").read_text()
    assert "'=HYPERLINK" in failures
    cp = subprocess.run([TESTBED, "compare", d / "a", d / "b", "--out", d / "o"],
                        capture_output=True, check=False, timeout=120, cwd=d)
    assert cp.returncode == 0, cp.stderr
    diff = (d / "o" / "manifest_diff.csv").read_text()
    assert "'-2+3" in diff and "'+1+1" in diff
    for f in (d / "o").iterdir():
        for line in f.read_text().splitlines()[1:]:
            assert not any(cell[:1] in "=+-@" and cell[1:2] not in "0123456789."
                           for cell in line.split(",")), (f, line)


def symlinked_files(d: Path, host: Host) -> None:
    synthetic.write_folder(TRIALS, d / "r")
    kept = d / "r" / "trials" / ID
    kept.mkdir(parents=True)
    (kept / "video.mp4").symlink_to(host.secret)
    (kept / "browsertime.json").write_text("{}")
    other = d / "r" / "trials" / TRIALS["trial_id"].iloc[1]
    (d / "elsewhere").mkdir()
    (d / "elsewhere" / "browsertime.json").write_text("{}")
    other.symlink_to(d / "elsewhere")


def test_trials_page_links_no_symlink(tmp_path):
    _, d, _ = run_ok(tmp_path, ["report", "{dir}/r", "--out", "{dir}/rep"], symlinked_files)
    page = (d / "rep" / "trials.html").read_text()
    assert "browsertime.json" in page  # the regular file is linked
    assert "video.mp4" not in page
    assert "elsewhere" not in page and page.count("browsertime.json") == 1


# -- 7. recordings whose manifest disagrees with itself ------------------------------

BODY = b"<html>hello</html>"
GOOD = {"scheme": "https", "host": "www.a.test", "port": 443, "ip": "203.0.113.5",
        "method": "GET", "target": "/", "request_headers": [["user-agent", "x"]],
        "status": 200, "response_headers": [["content-type", "text/html"],
                                            ["content-length", str(len(BODY))]]}
META = {"name": "rec", "url": "https://www.a.test/", "recorded_at": "2026-01-01T00:00:00Z",
        "loads": 1}


def edited(change):
    def prepare(d: Path, host: Host) -> None:
        rec = recording.write(d, META, [(dict(GOOD), BODY),
                                        ({**GOOD, "target": "/b"}, BODY)])
        data = json.loads((rec / "manifest.json").read_text())
        change(data)
        (rec / "manifest.json").write_text(json.dumps(data))
    return prepare


def _twice(data):
    data["exchanges"].append(dict(data["exchanges"][0]))
    data["requests"] += 1
    data["bytes"] += data["exchanges"][0]["body_size"]


def _conflicting(data):
    data["exchanges"].append({**data["exchanges"][0], "status": 404, "body": None,
                              "body_size": 0, "response_headers": []})
    data["requests"] += 1


def _header(i, name, value):
    def change(data):
        data["exchanges"][i]["response_headers"].append([name, value])
    return change


SHOW = ["recording", "show", "{dir}/rec"]
RECORDING_CASES = [
    Case("recording-exchange-twice", SHOW, ["{dir}/rec/manifest.json", "key exchanges/2",
                                            "exchanges/0"], prepare=edited(_twice),
         may_write=True),
    Case("recording-conflicting-exchanges", SHOW,
         ["{dir}/rec/manifest.json", "key exchanges/2", "exchanges/0"],
         prepare=edited(_conflicting), may_write=True),
    Case("recording-requests-total", SHOW, ["{dir}/rec/manifest.json", "key requests", "2"],
         prepare=edited(lambda m: m.update(requests=7)), may_write=True),
    Case("recording-bytes-total", SHOW, ["{dir}/rec/manifest.json", "key bytes",
                                         str(2 * len(BODY))],
         prepare=edited(lambda m: m.update(bytes=1)), may_write=True),
    Case("recording-alt-svc", SHOW, ["{dir}/rec/manifest.json",
                                     "key exchanges/1/response_headers/2/0", "alt-svc"],
         prepare=edited(_header(1, "alt-svc", 'h3=":443"')), may_write=True),
    Case("recording-transfer-encoding", SHOW,
         ["{dir}/rec/manifest.json", "key exchanges/0/response_headers/2/0",
          "transfer-encoding"], prepare=edited(_header(0, "transfer-encoding", "chunked")),
         may_write=True),
    Case("recording-content-length-wrong", SHOW,
         ["{dir}/rec/manifest.json", "key exchanges/0/response_headers/1/1", str(len(BODY))],
         prepare=edited(lambda m: m["exchanges"][0]["response_headers"][1].__setitem__(1, "5")),
         may_write=True),
    Case("recording-content-length-twice", SHOW,
         ["{dir}/rec/manifest.json", "key exchanges/0/response_headers/2/0", "content-length"],
         prepare=edited(_header(0, "content-length", str(len(BODY)))), may_write=True),
]


@pytest.mark.parametrize("case", RECORDING_CASES, ids=str)
def test_hostile_recording_manifest(case, tmp_path):
    cp = run_case(case, tmp_path)
    assert cp.stdout == ""


def test_report_prints_stored_names_without_escapes(tmp_path):
    def prepare(d, host):
        rows = [{"site": "s", "network": f"n{ESC}", "setting": p, "run": i,
                 "plt_ms": 100.0 + i, "status": "failed" if i == 0 else "ok", "reason": "x"}
                for p in ("tcp", "quic") for i in range(3)]
        synthetic.write_folder(synthetic.trials(rows), d / "r")
    cp, _, _ = run_ok(tmp_path, ["report", "{dir}/r", "--out", "{dir}/rep"], prepare)
    text = no_escapes(cp.stdout + cp.stderr)
    assert f"n{SHOWN}/TCP" in text  # the banner naming the groups with failures
