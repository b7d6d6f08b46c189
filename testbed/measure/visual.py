"""Visual metrics from a trial's screen recording, computed as Browsertime does.

Browsertime records the screen (an orange frame marks the start) and runs
its bundled visualmetrics-portable.py on the video. The driver of the Browsertime
process (testbed.measure.browser_process) runs the same
script with the same arguments itself, after the load and before the next
one starts, so the analysis never competes with a page load for the CPU and
overlaps Browsertime's fixed pauses between iterations instead.
"""

from __future__ import annotations

import json
from pathlib import Path

from testbed.errors import TimedOut
from testbed.host import proc
from testbed.measure import browsertime

# Browsertime 28.3.0, lib/video/postprocessing/visualmetrics/visualMetrics.js,
# without the filmstrip.
ARGS = ("--orange", "--force", "--renderignore", "5", "--json", "--viewport",
        "--viewportretries", "60", "--viewportminheight", "100", "--viewportminwidth", "100")


class VisualMetricsError(Exception):
    pass


def run(video: Path, logfile: Path, timeout: float = 300) -> dict:
    """The script's JSON output for `video` plus VisualComplete85/95/99."""
    argv = proc.python(browsertime.VISUALMETRICS, "--video", video, *ARGS, "--logfile", logfile,
                       "-vvv", interpreter=browsertime.PYTHON)
    try:
        cp = proc.run(argv, check=False, timeout=timeout)
    except TimedOut:
        raise VisualMetricsError(f"visual metrics took longer than {timeout:.0f} s") from None
    if cp.returncode != 0:
        tail = (cp.stderr.strip().splitlines() or ["no output"])[-1]
        raise VisualMetricsError(f"visualmetrics exited with status {cp.returncode}: {tail}")
    try:
        metrics = json.loads(cp.stdout)
    except json.JSONDecodeError:
        raise VisualMetricsError(f"visualmetrics printed no JSON: {cp.stdout[:200]!r}") from None
    return with_visual_complete(metrics)


def with_visual_complete(metrics: dict) -> dict:
    """Add VisualComplete85/95/99 from VisualProgress ("0=0, 133=65, 166=100") as
    Browsertime's extraMetrics.js does: the first time a level is reached, dropped
    again (with every higher level) when the progress falls back below it."""
    out = dict(metrics)
    levels = (85, 95, 99)
    reached: dict[int, int | None] = dict.fromkeys(levels)
    for item in str(metrics.get("VisualProgress", "")).split(","):
        if "=" not in item:
            continue
        ts, pct = (int(float(x)) for x in item.split("="))
        for level in levels:
            if pct >= level and reached[level] is None:
                reached[level] = ts
        for i, level in enumerate(levels):
            if reached[level] is not None and pct < level:
                for higher in levels[i:]:
                    reached[higher] = None
                break
    for level in levels:
        if reached[level] is not None:
            out[f"VisualComplete{level}"] = reached[level]
    if "VisualReadiness" not in out and "LastVisualChange" in out:
        out["VisualReadiness"] = out["LastVisualChange"] - out.get("FirstVisualChange", 0)
    return out
