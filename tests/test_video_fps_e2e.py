"""End to end: a network's frame rate reaches the screen recording. One trial of the
bundled site over a network with DA2GC's RTT (262 ms, no rate limit or loss, so the load
stays short) and no `video_fps` of its own: the default for that RTT, 20 fps, is what
the kept video holds (ffprobe; or ffmpeg's constant-rate retiming of it, a whole
multiple), what the manifest says and what the report's setup table shows."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from needs import need
from test_smoke_campaign import needs_parts, rows

from testbed.formats.profiles import frame_rate_for

ROOT = Path(__file__).resolve().parent.parent
TESTBED = str(ROOT / ".venv/bin/testbed")

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


def _retimed(rate: float, asked: int) -> bool:
    """A rate ffmpeg's constant-rate output may take for a capture at `asked` fps: a
    whole multiple of it (two or more), within 1 % (60000/1001 for 20)."""
    k = round(rate / asked)
    return k >= 2 and abs(rate / (k * asked) - 1) <= 0.01


def test_retimed_rates_are_whole_multiples():
    assert _retimed(60000 / 1001, 20) and _retimed(120, 60)
    assert not _retimed(20, 20) and not _retimed(30, 20) and not _retimed(50, 20)


def test_a_networks_frame_rate_is_the_recordings(tmp_path):
    needs_parts()
    need(None if subprocess.run(["which", "ffprobe"], capture_output=True, check=False
                                ).returncode == 0 else "ffprobe missing (apt: ffmpeg)")
    assert frame_rate_for(262) == 20
    (tmp_path / "slow-rtt.toml").write_text(
        'description = "DA2GC\'s RTT alone"\nmin_rtt_ms = 262\n')
    (tmp_path / "c.toml").write_text(
        'sites = ["local-news"]\nnetworks = ["./slow-rtt.toml"]\nprotocols = ["tcp-plus"]\n'
        "runs = 1\nkeep_video = true\nretries = 0\n")
    out = tmp_path / "out"
    cp = subprocess.run([TESTBED, "run", str(tmp_path / "c.toml"), "--out", str(out)],
                        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    [row] = rows(out)
    assert row["status"] == "ok", row
    video = ffprobe(out / "trials" / row["trial_id"] / "video.mp4")
    rate, frames, seconds = (_rate(video["r_frame_rate"]), int(video["nb_read_frames"]),
                             float(video["duration"]))
    assert seconds > row["plt_ms"] / 1000, video  # it spans the load
    if _retimed(rate, 20):
        # ffmpeg writes the mp4 at a constant rate it takes from its guess of the
        # input's rate, made from the first frames' wall-clock stamps; under load it
        # guessed 60000/1001 twice in fresh clones (CI, 26 and 27 Nov: 247 and 241
        # frames in 4.12 and 4.02 s, every packet 1001/60000 s apart) and repeated
        # each captured frame about three times. Same duration, so the visual
        # metrics' times hold; this cannot be told from a capture at 60 fps.
        assert _rate(video["avg_frame_rate"]) == pytest.approx(rate, rel=0.01), video
        assert frames / seconds == pytest.approx(rate, rel=0.05), video
        print(f"video retimed by ffmpeg to {rate:.2f} fps: {video}")
    else:
        # ffprobe guesses r_frame_rate from the frames' timestamps, and x11grab stamps
        # them with the wall clock: a busy machine gives 239/12 (19.92) as well as 20/1
        assert abs(rate - 20) <= 0.5, video
        # 20 frames in each second of the recording, not 60 or 30
        assert 18 <= frames / seconds <= 20.5, video
        assert 18 <= _rate(video["avg_frame_rate"]) <= 20.5, video
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["networks"]["slow-rtt"]["video_fps"] == 20
    assert row["fvc_ms"] is not None and row["fvc_ms"] > 0
    report = tmp_path / "report"
    cp = subprocess.run([TESTBED, "report", str(out), "--out", str(report)], cwd=ROOT,
                        capture_output=True, text=True, timeout=600, check=False)
    assert cp.returncode == 0, cp.stderr[-3000:]
    page = (report / "index.html").read_text()
    assert "video (fps)" in page
