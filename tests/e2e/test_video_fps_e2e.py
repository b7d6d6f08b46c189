"""End to end: a network's frame rate reaches the screen recording. One trial of the
bundled site over a network with DA2GC's RTT (262 ms, no rate limit or loss, so the load
stays short) and no `video_fps` of its own: the default for that RTT, 20 fps, is what
the kept video holds (ffprobe), what the manifest says and what the report's setup
table shows. The trial runs beside busy loops on every CPU: on a busy machine ffmpeg's
guess of the capture's rate goes wrong (bench/video_rate), and the recording must hold
the rate asked anyway: exactly 20 a second in the legacy pipeline
(setup/browsertime/patch-browsertime.mjs gives ffmpeg `-r`), at most 20 in the lean
one (frames at their own times, unchanged ones not written: testbed.measure.ffmpeg_wrapper).

And a two-lane campaign recorded while busy loops load the machine: every trial ok,
so every recording passed the runtime check (testbed.measure.framerate: no more
frames than the rate asked), and every kept video at most the rate asked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.campaigns import rows
from support.needs import need, needs_parts
from support.paths import ROOT, TESTBED

from testbed.formats.profiles import frame_rate_for
from testbed.measure import framerate

pytestmark = pytest.mark.e2e


def ffprobe(video: Path) -> dict:
    """The video's first stream as ffprobe sees it: r_frame_rate, avg_frame_rate, the
    frames it decoded (nb_read_frames) and its duration (s)."""
    cp = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_frames",
                         "-show_entries",
                         "stream=r_frame_rate,avg_frame_rate,nb_read_frames,duration",
                         "-of", "json", str(video)], check=True, capture_output=True, text=True,
                        timeout=120)
    return json.loads(cp.stdout)["streams"][0]


def _rate(text: str) -> float:
    num, _, den = text.partition("/")
    return float(num) / float(den or 1)


@contextmanager
def busy_cpus():
    """Four busy loops per CPU for the duration of the block."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(4 * (os.cpu_count() or 1))]
    try:
        yield
    finally:
        for p in loops:
            p.kill()
            p.wait(timeout=10)


LEAN = "tests/e2e/test_video_fps_e2e.py::test_a_networks_frame_rate_is_the_recordings[lean]"


# legacy (the pipeline kept for comparisons) and the loaded two-lane campaign are make
# test-long's: they strengthen the lean pipeline's test, which make test runs.
@pytest.mark.parametrize("pipeline", [pytest.param("legacy", marks=pytest.mark.long(
    strengthens=LEAN)), "lean"])
def test_a_networks_frame_rate_is_the_recordings(tmp_path, pipeline):
    needs_parts()
    need(None if subprocess.run(["which", "ffprobe"], capture_output=True, check=False
                                ).returncode == 0 else "ffprobe missing (apt: ffmpeg)")
    assert frame_rate_for(262) == 20
    (tmp_path / "slow-rtt.toml").write_text(
        'description = "DA2GC\'s RTT alone"\nmin_rtt_ms = 262\n')
    (tmp_path / "c.toml").write_text(
        'sites = ["local-news"]\nnetworks = ["./slow-rtt.toml"]\nprotocols = ["tcp-plus"]\n'
        f'runs = 1\nkeep_video = true\nretries = 0\nvideo_pipeline = "{pipeline}"\n')
    out = tmp_path / "out"
    with busy_cpus():
        cp = subprocess.run([TESTBED, "run", str(tmp_path / "c.toml"), "--out", str(out)],
                            cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    [row] = rows(out)
    assert row["status"] == "ok", row
    video = ffprobe(out / "trials" / row["trial_id"] / "video.mp4")
    rate, frames, seconds = (_rate(video["r_frame_rate"]), int(video["nb_read_frames"]),
                             float(video["duration"]))
    assert seconds > row["plt_ms"] / 1000, video  # it spans the load
    if pipeline == "legacy":
        # exactly the rate asked. Without the patch's `-r` ffmpeg writes the rate it
        # guessed from the first frames' stamps: 239/12 in 1 of 3 runs of this test (27
        # Nov), and 60000/1001, every frame three times, in two fresh clones' CI (26, 27 Nov)
        assert rate == 20, video
        assert _rate(video["avg_frame_rate"]) == 20, video
        assert frames / seconds == pytest.approx(20, rel=0.01), video
    else:  # the frames that changed, at their own times, and one a second at least
        assert seconds * 0.9 <= frames <= seconds * 20 * (1 + framerate.TOLERANCE), video
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["networks"]["slow-rtt"]["video_fps"] == 20
    assert row["fvc_ms"] is not None and row["fvc_ms"] > 0
    report = tmp_path / "report"
    cp = subprocess.run([TESTBED, "report", str(out), "--out", str(report)], cwd=ROOT,
                        capture_output=True, text=True, timeout=600, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    page = (report / "index.html").read_text()
    assert "video (fps)" in page


LOADED_RUNS = 2


@pytest.mark.long(strengthens=LEAN)
def test_a_loaded_two_lane_campaign_records_every_trial_at_the_rate_asked(tmp_path):
    """Two lanes of TCP+ and QUIC on DA2GC's RTT (20 fps) beside four busy loops per CPU:
    every trial ok (a recording over the rate asked would have failed its trial with
    "visual-metrics: video: N fps recorded, 20 asked") and every kept video within it."""
    needs_parts()
    need(None if subprocess.run(["which", "ffprobe"], capture_output=True, check=False
                                ).returncode == 0 else "ffprobe missing (apt: ffmpeg)")
    (tmp_path / "slow-rtt.toml").write_text(
        'description = "DA2GC\'s RTT alone"\nmin_rtt_ms = 262\n')
    (tmp_path / "c.toml").write_text(
        'sites = ["local-news"]\nnetworks = ["./slow-rtt.toml"]\n'
        f'protocols = ["tcp-plus", "quic"]\nruns = {LOADED_RUNS}\nkeep_video = true\n'
        "retries = 0\nseed = 3\n")
    out = tmp_path / "out"
    with busy_cpus():
        cp = subprocess.run([TESTBED, "run", str(tmp_path / "c.toml"), "--lanes", "2",
                             "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                            timeout=1800, check=False)
    got = rows(out)
    assert [(r["trial_id"], r["reason"]) for r in got if r["status"] != "ok"] == [], cp.stderr[-2000:]
    assert cp.returncode == 0, cp.stderr[-3000:]
    assert len(got) == 2 * LOADED_RUNS and {r["lane"] for r in got} == {0, 1}
    for r in got:
        h = framerate.header(out / "trials" / r["trial_id"] / "video.mp4")
        assert h.seconds > r["plt_ms"] / 1000, (r["trial_id"], h)
        assert framerate.problem(h, 20) is None, (r["trial_id"], h)
