"""bench/video_rate: does a screen recording hold the frame rate asked for when the
machine is busy? Needs ffmpeg, ffprobe and Xvfb (`make setup`); no root.

    bench/video_rate [--recordings N] [--load N] [--fps N] [--seconds S]

Records an Xvfb screen N times (default 8) for S seconds (default 4) with the
x11grab command Browsertime 28 builds (`-framerate FPS`, libx264rgb, an mp4), while
LOAD busy loops (default 4) keep the CPUs busy, alternating two variants:

- `guessed`: Browsertime 28's command as published: ffmpeg writes the mp4 at a
  constant rate it guesses from the first captured frames' wall-clock stamps;
- `asked`: the same with the output rate given (`-r FPS`), as the testbed's patched
  Browsertime does (setup/browsertime/patch-browsertime.mjs).

Prints each recording's rate (ffprobe's r_frame_rate), frames and duration, then per
variant how many recordings hold exactly the rate asked and the range of frames per
second of recording. A recording at another rate repeats or drops frames: its visual
metrics cost more CPU (or lose resolution) than the campaign asked for.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from fractions import Fraction
from pathlib import Path

from testbed.host import proc
from testbed.measure import xvfb as xvfb_mod

SIZE = "1366x768"


def record(display: str, auth: Path, fps: int, seconds: float, out: Path, asked: bool) -> None:
    """One recording with Browsertime 28's x11grab argv (plus `-r fps` when asked)."""
    argv = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-video_size", SIZE,
            "-f", "x11grab", "-framerate", str(fps), "-probesize", "10M", "-y",
            "-draw_mouse", "0", "-i", f":{display}.0+0,0",
            *(["-r", str(fps)] if asked else []),
            "-codec:v", "libx264rgb", "-threads", "1", "-crf", "0", "-preset", "ultrafast",
            "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", str(out)]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                            env={**os.environ, "XAUTHORITY": str(auth)})
    time.sleep(seconds)
    assert proc.stdin is not None
    proc.stdin.write(b"q")
    proc.stdin.close()
    if proc.wait(timeout=120) != 0:
        raise SystemExit(f"ffmpeg failed: {' '.join(argv)}")


def probe(video: Path) -> tuple[Fraction, int, float]:
    cp = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets",
                         "-show_entries", "stream=r_frame_rate,nb_read_packets,duration",
                         "-of", "json", str(video)], check=True, capture_output=True, text=True,
                        timeout=120)
    s = json.loads(cp.stdout)["streams"][0]
    return Fraction(s["r_frame_rate"]), int(s["nb_read_packets"]), float(s["duration"])


def main() -> None:
    ap = argparse.ArgumentParser(prog="bench/video_rate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--recordings", type=int, default=8)
    ap.add_argument("--load", type=int, default=4, help="busy loops beside the recording")
    ap.add_argument("--fps", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=4.0)
    a = ap.parse_args()
    for tool in ("ffmpeg", "ffprobe", "Xvfb"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} missing; run `make setup`")
    # the testbed's own Xvfb start (a free display, only the cookie's holders admitted)
    private = Path(tempfile.mkdtemp(prefix="video-rate-"))
    auth = private / "Xauthority"
    xvfb_mod.xauthority(auth, secrets.token_bytes(16))
    xvfb, display = xvfb_mod.start_xvfb(auth, f"{SIZE}x24")
    loads: list[subprocess.Popen[bytes]] = []
    results: dict[str, list[tuple[Fraction, int, float]]] = {"guessed": [], "asked": []}
    try:
        loads = [subprocess.Popen(proc.python("-c", "while True: pass"))
                 for _ in range(a.load)]
        print(f"# {time.strftime('%Y-%m-%d %H:%M %Z')}, {os.cpu_count()} CPUs, "
              f"{a.load} busy loops, {a.fps} fps asked, {a.seconds:g} s each")
        print(f"{'variant':8} {'#':>2} {'r_frame_rate':>13} {'frames':>6} {'s':>6} {'fps':>6}")
        for n in range(a.recordings):
            for variant in ("guessed", "asked"):
                video = private / f"{variant}-{n}.mp4"
                record(display, auth, a.fps, a.seconds, video, variant == "asked")
                rate, frames, seconds = probe(video)
                results[variant].append((rate, frames, seconds))
                print(f"{variant:8} {n:2} {rate!s:>13} {frames:6} {seconds:6.2f} "
                      f"{frames / seconds:6.1f}")
    finally:
        for p in loads:
            p.kill()
        xvfb.terminate()
        xvfb.wait(timeout=10)
        shutil.rmtree(private, ignore_errors=True)
    print()
    for variant, rows in results.items():
        exact = sum(1 for rate, _, _ in rows if rate == a.fps)
        fps = [frames / seconds for _, frames, seconds in rows]
        print(f"{variant:8} {exact}/{len(rows)} at exactly {a.fps} fps; "
              f"frames per second {min(fps):.1f}-{max(fps):.1f}")


if __name__ == "__main__":
    main()
