"""The lean video pipeline (testbed.measure.ffmpeg_wrapper) and the recording's rate check
(testbed.measure.framerate): the command lines, and real recordings made by ffmpeg."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from testbed.campaign.plan import config
from testbed.errors import InputError
from testbed.measure import browsertime, framerate, xvfb
from testbed.measure.ffmpeg_wrapper import lean

X11GRAB = ["-hide_banner", "-video_size", "1366x768", "-f", "x11grab", "-framerate", "20",
           "-probesize", "10M", "-y", "-draw_mouse", "0", "-i", ":5.0+0,0", "-r", "20",
           "-codec:v", "libx264rgb", "-threads", "0", "-crf", "0", "-preset", "ultrafast",
           "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "/out/1.mp4"]
"""Browsertime 28's x11grab command (with the testbed's patch: `-r`)."""


def needs_ffmpeg() -> None:
    if not (shutil.which("ffmpeg") and shutil.which("ffprobe")):
        pytest.skip("ffmpeg missing (apt: ffmpeg)")


def make_testsrc(path: Path, fps: int, seconds: float = 2) -> Path:
    """A synthetic recording: ffmpeg's test pattern at `fps`, lossless as the capture's."""
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
                    f"testsrc=size=320x240:rate={fps}:duration={seconds}",
                    "-c:v", "libx264rgb", "-crf", "0", "-preset", "ultrafast", str(path)],
                   check=True, timeout=60)
    return path


# --- the wrapper's command line --------------------------------------------------------
def test_lean_records_below_the_tab_strip_at_the_frames_own_times():
    out = lean(X11GRAB, top=44)
    pairs = dict(itertools.pairwise(out))
    assert pairs["-video_size"] == "1366x724" and pairs["-i"] == ":5.0+0,44"
    assert pairs["-framerate"] == "20"  # the capture's rate stays
    assert "-r" not in out  # no constant output rate: no frame is written twice
    assert pairs["-fps_mode"] == "vfr"
    assert pairs["-vf"] == "mpdecimate=hi=0:lo=0:frac=0:max=20"  # exact duplicates; 1/s kept
    assert out[-1] == "/out/1.mp4" and pairs["-codec:v"] == "libx264rgb"


def test_lean_keeps_the_whole_window_without_a_top_and_other_commands_unchanged():
    out = lean(X11GRAB, top=0)
    assert dict(itertools.pairwise(out))["-i"] == ":5.0+0,0"
    convert = ["-i", "/a.mp4", "-c:v", "libx264", "/b.mp4"]
    assert lean(convert, top=44) == convert
    assert lean(["-version"]) == ["-version"]
    odd = [a.replace("1366x768", "1365x767") for a in X11GRAB]
    assert "pad=ceil(iw/2)*2:ceil(ih/2)*2" in lean(odd)[lean(odd).index("-vf") + 1]


def test_the_pipeline_is_chosen_by_the_browsertime_process_s_path(tmp_path):
    leanopts = browsertime.BrowsertimeOptions(iterations=1)
    assert leanopts.video_pipeline == "lean"
    env = browsertime.env(tmp_path, leanopts, "chromium")
    assert env["PATH"].split(":")[0] == str(browsertime.VIDEO_BIN)
    assert env["TESTBED_VIDEO_TOP"] == "44"
    assert browsertime.env(tmp_path, leanopts, "firefox")["TESTBED_VIDEO_TOP"] == "0"
    legacy = browsertime.BrowsertimeOptions(iterations=1, video_pipeline="legacy")
    assert "PATH" not in browsertime.env(tmp_path, legacy)
    novideo = browsertime.BrowsertimeOptions(iterations=1, video=False)
    assert "PATH" not in browsertime.env(tmp_path, novideo)
    assert os.path.realpath(browsertime.VIDEO_BIN / "ffmpeg").endswith("ffmpeg_wrapper.py")


def test_a_wrapper_folder_others_may_write_is_refused(tmp_path):
    if os.geteuid() == 0:
        assert browsertime.wrapper_problem() is None  # the checkout's own
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "ffmpeg").symlink_to(browsertime.VIDEO_BIN / "ffmpeg")
    folder.chmod(0o777)
    assert "writable by root alone" in (browsertime.wrapper_problem(folder) or "")


def test_the_campaign_key_is_typed(tmp_path):
    base = 'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["tcp"]\n'
    (tmp_path / "c.toml").write_text(base)
    assert config.load(tmp_path / "c.toml").video_pipeline == "lean"
    (tmp_path / "c.toml").write_text(base + 'video_pipeline = "legacy"\n')
    assert config.load(tmp_path / "c.toml").video_pipeline == "legacy"
    (tmp_path / "c.toml").write_text(base + 'video_pipeline = "fast"\n')
    with pytest.raises(InputError, match="video_pipeline"):
        config.load(tmp_path / "c.toml")


# --- the rate check --------------------------------------------------------------------
def test_the_rate_check_judges_frames_over_duration():
    assert framerate.problem(framerate.Header(40, 2.0), asked=20) is None
    assert framerate.problem(framerate.Header(12, 2.0), asked=20) is None  # lean: fewer
    assert framerate.problem(framerate.Header(42, 2.0), asked=20) is None  # within 5 %
    assert framerate.problem(framerate.Header(120, 2.0), asked=20) == (
        "video: 60.0 fps recorded, 20 asked")
    assert framerate.problem(framerate.Header(3, 0.05), asked=20) is None  # too short


def test_a_recording_at_three_times_the_rate_fails_and_at_the_rate_passes(tmp_path):
    needs_ffmpeg()
    assert framerate.check(make_testsrc(tmp_path / "60.mp4", 60), asked=20) == (
        "video: 60.0 fps recorded, 20 asked")
    assert framerate.check(make_testsrc(tmp_path / "20.mp4", 20), asked=20) is None
    h = framerate.header(tmp_path / "20.mp4")
    assert (h.frames, h.seconds) == (40, 2.0)
    (tmp_path / "bad.mp4").write_bytes(b"not a video")
    assert (framerate.check(tmp_path / "bad.mp4", asked=20) or "").startswith("video: ffprobe")


def test_the_wrapper_records_a_still_screen_in_few_frames_at_the_rate_asked(tmp_path):
    """The real ffmpeg takes the lean command line: 3 s of a still X screen at 20 fps
    holds a frame a second or so, and passes the rate check."""
    needs_ffmpeg()
    if not shutil.which("Xvfb"):
        pytest.skip("Xvfb missing")
    auth = tmp_path / "auth"
    xvfb.xauthority(auth, os.urandom(16))
    server, display = xvfb.start_xvfb(auth)
    try:
        args = [a.replace(":5.0", f":{display}.0").replace("/out/1.mp4", str(tmp_path / "v.mp4"))
                for a in X11GRAB]
        args.insert(args.index("-i"), "-t")
        args.insert(args.index("-i"), "3")
        env = {**os.environ, "XAUTHORITY": str(auth), "TESTBED_VIDEO_TOP": "44"}
        subprocess.run([str(browsertime.VIDEO_BIN / "ffmpeg"), "-loglevel", "error", *args],
                       env=env, check=True, timeout=60)
    finally:
        server.terminate()
        server.wait(10)
    h = framerate.header(tmp_path / "v.mp4")
    assert 2 <= h.frames <= 6, h
    assert framerate.check(tmp_path / "v.mp4", asked=20) is None
