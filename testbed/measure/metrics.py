"""A trial's metrics from what Browsertime and the visual analysis report.

PLT is Browsertime's pageLoadTime (loadEventStart - navigationStart), TTFB its
ttfb (responseStart of the main document); FVC, LVC, VC85 and SI come from the
visual metrics of the screen recording. All in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metrics:
    plt_ms: float | None = None
    fvc_ms: float | None = None
    lvc_ms: float | None = None
    vc85_ms: float | None = None
    si_ms: float | None = None
    ttfb_ms: float | None = None

    def missing(self, video: bool = True) -> list[str]:
        names = ["plt_ms", "ttfb_ms"] + (["fvc_ms", "lvc_ms", "vc85_ms", "si_ms"] if video else [])
        return [n for n in names if getattr(self, n) is None]


def _number(value) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v


def timings(result: dict | list | None) -> dict:
    """browserScripts.timings of one iteration's result (a dict, or Browsertime's
    per-iteration list with one entry per measured page)."""
    if isinstance(result, list):
        result = result[0] if result else None
    if not result:
        return {}
    return result.get("browserScripts", {}).get("timings", {}) or {}


def extract(result: dict | list | None, visual: dict | None) -> Metrics:
    """Metrics from one iteration's Browsertime result and its visual metrics; a
    metric is None when absent (PLT also when the load event never came)."""
    t = timings(result)
    plt = _number(t.get("pageTimings", {}).get("pageLoadTime"))
    if plt is not None and (plt <= 0 or not _number(t.get("loadEventEnd"))):
        plt = None
    ttfb = _number(t.get("ttfb"))
    v = visual or {}
    return Metrics(
        plt_ms=plt,
        ttfb_ms=ttfb,
        fvc_ms=_number(v.get("FirstVisualChange")),
        lvc_ms=_number(v.get("LastVisualChange")),
        vc85_ms=_number(v.get("VisualComplete85")),
        si_ms=_number(v.get("SpeedIndex")),
    )
