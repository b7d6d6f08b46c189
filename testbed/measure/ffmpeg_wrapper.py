#!/usr/bin/python3 -I
"""`ffmpeg` for Browsertime's screen recorder in the lean video pipeline.

Browsertime starts `ffmpeg` from its PATH to record the screen (x11grab). The
lean pipeline (a campaign's `video_pipeline = "lean"`, docs/networks.md) puts the
folder video_bin/ (this file, linked as `ffmpeg`, root's like the rest of the
checkout) first on the Browsertime process's PATH, and this wrapper changes the
x11grab command line before it execs the real ffmpeg:

- the recording starts TESTBED_VIDEO_TOP pixel rows down (the browser's tab strip,
  whose loading throbber changes in every frame of a load, is not recorded; the
  visual metrics never look at it: visualmetrics keeps the part that was orange in
  the first frame);
- a frame identical to the last one kept is not written (`mpdecimate` with every
  threshold 0: exact duplicates only, lossless), but at least one frame a second
  is, so the file spans the recording; the file is written at the frames' own
  times (`-fps_mode vfr`) instead of at a constant rate, so no frame is ever
  written twice, whatever rate ffmpeg guesses for its input;
- no padding filter (both sides are even already).

Any other ffmpeg command passes unchanged. Standard library only: it runs as the
testbed user, with `python3 -I` (no environment, no user site), before every load.
"""

import os
import sys

REAL = "/usr/bin/ffmpeg"
PAD = "pad=ceil(iw/2)*2:ceil(ih/2)*2"


def _value(args: list[str], option: str) -> str | None:
    return args[args.index(option) + 1] if option in args[:-1] else None


def lean(args: list[str], top: int = 0) -> list[str]:
    """The lean form of Browsertime's x11grab arguments (without the program name);
    anything else unchanged."""
    if _value(args, "-f") != "x11grab" or "-i" not in args[:-1]:
        return list(args)
    out = list(args)
    i = out.index("-i")
    fps = _value(out[:i], "-framerate") or "30"
    size = _value(out[:i], "-video_size")
    if top > 0 and size and "x" in size:
        w, _, h = size.partition("x")
        display, _, origin = out[i + 1].partition("+")
        x, _, y = origin.partition(",")
        if h.isdigit() and int(h) > top + 100 and x.isdigit() and y.isdigit():
            out[out.index("-video_size") + 1] = f"{w}x{int(h) - top}"
            out[i + 1] = f"{display}+{x},{int(y) + top}"
            size = f"{w}x{int(h) - top}"
    # output options: drop the constant output rate and the padding (when not needed)
    head, tail = out[:i + 2], out[i + 2:]
    if "-r" in tail[:-1]:
        j = tail.index("-r")
        del tail[j:j + 2]
    filters = []
    if "-vf" in tail[:-1]:
        j = tail.index("-vf")
        vf = tail[j + 1]
        del tail[j:j + 2]
        w_, _, h_ = (size or "").partition("x")
        even = w_.isdigit() and h_.isdigit() and int(w_) % 2 == 0 and int(h_) % 2 == 0
        if not (vf == PAD and even):
            filters.append(vf)
    max_drop = int(fps) if fps.isdigit() and int(fps) > 0 else 30
    filters.insert(0, f"mpdecimate=hi=0:lo=0:frac=0:max={max_drop}")
    return [*head, "-vf", ",".join(filters), "-fps_mode", "vfr", *tail]


def main() -> None:
    try:
        top = int(os.environ.get("TESTBED_VIDEO_TOP", "0"))
    except ValueError:
        top = 0
    args = lean(sys.argv[1:], max(0, top))
    os.execv(REAL, [REAL, *args])


if __name__ == "__main__":
    main()
