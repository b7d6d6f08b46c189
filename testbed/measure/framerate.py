"""Does a screen recording hold no more frames than the rate asked? Read from its header.

    problem = framerate.check(video, asked=20)   # None, or "video: 60.0 fps recorded, 20 asked"

The frames and the duration come from the container's header (ffprobe's
`nb_frames` and `duration`: no frame is decoded). A recording whose frames exceed
the rate asked by more than TOLERANCE was written with frames twice or three times
(ffmpeg's guess of the input's rate, bench/video_rate): its trial fails with that
reason (testbed.measure.browser_process). A lean recording (testbed.measure.ffmpeg_wrapper)
keeps only the frames that changed, so it holds fewer frames than the rate allows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from testbed.errors import TestbedError
from testbed.host import proc

TOLERANCE = 0.05
"""Frames over duration may exceed the rate asked by 5 %: the last frame's duration
and the container's rounding, over a recording of a few seconds (one frame in 20
over a 1 s recording at 20 fps); a duplicated rate is 2-3 times the asked."""
MIN_SECONDS = 1.0
"""Recordings shorter than this are not judged (one frame more is a large share)."""


@dataclass(frozen=True)
class Header:
    frames: int
    seconds: float

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0


def header(video: Path, timeout: float = 60) -> Header:
    """The first video stream's frame count and duration, from the container's header."""
    argv = ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
            "stream=nb_frames,duration:format=duration", "-of", "json", str(video)]
    cp = proc.run(argv, check=False, timeout=timeout)
    if cp.returncode != 0:
        tail = (cp.stderr.strip().splitlines() or ["no output"])[-1]
        raise TestbedError(f"ffprobe {video.name}: {tail}")
    try:
        data = json.loads(cp.stdout)
        stream = data["streams"][0]
        frames = int(stream["nb_frames"])
        seconds = float(stream.get("duration") or data["format"]["duration"])
    except (ValueError, KeyError, IndexError, TypeError):
        raise TestbedError(f"ffprobe {video.name}: no frame count or duration in the header"
                           ) from None
    return Header(frames, seconds)


def problem(h: Header, asked: int, tolerance: float = TOLERANCE) -> str | None:
    """Why a recording with this header does not hold the rate asked; None: it does."""
    if h.seconds < MIN_SECONDS:
        return None
    if h.fps > asked * (1 + tolerance):
        return f"video: {h.fps:.1f} fps recorded, {asked} asked"
    return None


def check(video: Path, asked: int, tolerance: float = TOLERANCE) -> str | None:
    """problem() of the recording at `video`; an unreadable header is a problem too."""
    try:
        return problem(header(video), asked, tolerance)
    except TestbedError as e:
        return f"video: {e}"
