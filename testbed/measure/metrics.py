"""A trial's metrics from what Browsertime and the visual analysis report.

All in milliseconds since navigation start. From the browser's own timings
(Browsertime's browserScripts.timings, which it rounds to whole
milliseconds):
- PLT: pageTimings.pageLoadTime (loadEventStart), None without a load event;
- TTFB: ttfb (responseStart of the main document);
- FP, FCP: paintTiming "first-paint" and "first-contentful-paint";
- LCP: largestContentfulPaint.startTime (the last largest-contentful-paint entry
  when the load ended; what Google's web-vitals reports);
- DCL: pageTimings.domContentLoadedTime (domContentLoadedEventStart).
From the screen recording's visual metrics (steps of one video frame): FVC,
LVC, VC85 and SI.

A metric the browser did not report (LCP on a page without a contentful
element, a paint that never came) is None, never 0; so is a value that is not
a finite number, or a paint or DCL time that is not > 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Metrics:
    plt_ms: float | None = None
    fvc_ms: float | None = None
    lvc_ms: float | None = None
    vc85_ms: float | None = None
    si_ms: float | None = None
    ttfb_ms: float | None = None
    fp_ms: float | None = None
    fcp_ms: float | None = None
    lcp_ms: float | None = None
    dcl_ms: float | None = None

    def missing(self, video: bool = True) -> list[str]:
        """The metrics an ok trial must have (the paint timings may be missing)."""
        names = ["plt_ms", "ttfb_ms"] + (["fvc_ms", "lvc_ms", "vc85_ms", "si_ms"] if video else [])
        return [n for n in names if getattr(self, n) is None]


def _number(value) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v


def _time(value) -> float | None:
    """A browser timing: a JSON number, finite and > 0; anything else is None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    v = float(value)
    return v if math.isfinite(v) and v > 0 else None


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def timings(result: dict | list | None) -> dict:
    """browserScripts.timings of one iteration's result (a dict, or Browsertime's
    per-iteration list with one entry per measured page)."""
    if isinstance(result, list):
        result = result[0] if result else None
    if not isinstance(result, dict):
        return {}
    return _dict(_dict(result.get("browserScripts")).get("timings"))


def extract(result: dict | list | None, visual: dict | None) -> Metrics:
    """Metrics from one iteration's Browsertime result and its visual metrics; a
    metric is None when absent (PLT also when the load event never came)."""
    t = timings(result)
    page = _dict(t.get("pageTimings"))
    plt = _number(page.get("pageLoadTime"))
    if plt is not None and (plt <= 0 or not _number(t.get("loadEventEnd"))):
        plt = None
    ttfb = _number(t.get("ttfb"))
    paint = _dict(t.get("paintTiming"))
    v = visual or {}
    return Metrics(
        plt_ms=plt,
        ttfb_ms=ttfb,
        fvc_ms=_number(v.get("FirstVisualChange")),
        lvc_ms=_number(v.get("LastVisualChange")),
        vc85_ms=_number(v.get("VisualComplete85")),
        si_ms=_number(v.get("SpeedIndex")),
        fp_ms=_time(paint.get("first-paint")),
        fcp_ms=_time(paint.get("first-contentful-paint")),
        lcp_ms=_time(_dict(t.get("largestContentfulPaint")).get("startTime")),
        dcl_ms=_time(page.get("domContentLoadedTime")),
    )
