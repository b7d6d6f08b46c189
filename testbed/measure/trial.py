"""Whether a trial counts: its status and the reason when it does not.

A pure function of the evidence a trial leaves (did the load finish, the
metrics, the protocols in its HAR, the server's view), so the rules are tested
without a browser. Reasons are the store's: `timeout`, `browser-error`,
`server-died`, `wrong-protocol`, `visual-metrics`, `replay-misses`, with
detail after a colon.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from testbed.measure.metrics import Metrics
from testbed.measure.trial_har import expected_protocol


@dataclass(frozen=True)
class Evidence:
    """What one page load left behind."""

    stack: str
    """tcp or quic: the protocol every request must use follows from it."""
    measured: bool
    """Browsertime measured the page (its post-load hook ran)."""
    metrics: Metrics = field(default_factory=Metrics)
    protocols: dict[str, int] = field(default_factory=dict)
    """Protocol -> requests, from the HAR."""
    misses: int | None = None
    server_error: str | None = None
    """The replay server that died during the trial, if one did."""
    browser_error: str | None = None
    """Browsertime's or the launcher's error, if the load failed."""
    timed_out: bool = False
    visual_error: str | None = None
    video: bool = True
    """Visual metrics were asked for."""
    max_misses: int | None = None
    """More replay misses than this fail the trial; None: never."""


@dataclass(frozen=True)
class Verdict:
    status: str
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def failed(reason: str, detail: str | None = None) -> Verdict:
    return Verdict("failed", f"{reason}: {detail}" if detail else reason)


def judge(e: Evidence) -> Verdict:
    """ok, or failed with the first reason that applies, in this order: the server
    died, the load timed out or the browser failed, no load time, the wrong protocol,
    missing visual metrics, too many replay misses."""
    if e.server_error:
        return failed("server-died", e.server_error)
    if e.timed_out:
        return failed("timeout")
    if not e.measured:
        return failed("browser-error", e.browser_error or "the page was not measured")
    if e.metrics.plt_ms is None:
        return failed("timeout", "no load event")
    want = expected_protocol(e.stack)
    if not e.protocols:
        return failed("wrong-protocol", "no request in the HAR")
    if set(e.protocols) != {want}:
        return failed("wrong-protocol", json.dumps(e.protocols, sort_keys=True))
    if e.video:
        if e.visual_error:
            return failed("visual-metrics", e.visual_error)
        missing = e.metrics.missing(video=True)
        if missing:
            return failed("visual-metrics", "missing " + ", ".join(missing))
    elif e.metrics.missing(video=False):
        return failed("browser-error", "missing " + ", ".join(e.metrics.missing(video=False)))
    if e.max_misses is not None and (e.misses or 0) > e.max_misses:
        return failed("replay-misses", str(e.misses))
    return Verdict("ok")
