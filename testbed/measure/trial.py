"""Whether a trial counts: its status and the reason when it does not.

A pure function of the evidence a trial leaves (did the load finish, the
metrics, the protocols in its HAR, the server's view), so the rules are tested
without a browser. Reasons are the store's: `timeout`, `browser-error`,
`server-died`, `wrong-protocol`, `not-resumed` (a warm visit that did not
resume its sessions, or sent no early data where the setting accepts it),
`incomplete` (a resource the recording's page needs was not obtained,
docs/completeness.md), `visual-metrics`, `replay-misses`, with detail after a
colon.
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
    warm: bool = False
    """A warm visit: it must have resumed (see resumption)."""
    early_data: bool = False
    """The setting accepts early data (TLS 1.3 early data, QUIC 0-RTT)."""
    resumption: Resumption | None = None
    """What the servers saw of resumption during the measured load."""
    incomplete: str | None = None
    """Why the load did not obtain every resource the recording's page needs
    (testbed.measure.completeness.Verdict.reason: "incomplete: ..."); None: it did,
    or it was not judged."""


@dataclass(frozen=True)
class Resumption:
    """The servers' view of one load (their summaries' difference): connections that
    carried a request, how many of them resumed a TLS session, and requests answered
    from early data / 0-RTT; where the server says (nginx's $ssl_server_name; not
    h3server), the same per TLS server name, and the names of the warm-up's
    connections."""

    connections: int
    resumed: int
    early_requests: int
    names: tuple[tuple[str, int, int], ...] | None = None
    """(name, connections, resumed) of the load, per TLS server name (SNI)."""
    warm_up_names: tuple[str, ...] | None = None
    """The names of the warm-up's connections that carried a request."""

    @classmethod
    def of(cls, diff: dict | None, warm_up: dict | None = None) -> Resumption | None:
        if diff is None:
            return None
        names = diff.get("names")
        warm = warm_up.get("names") if warm_up is not None else None
        return cls(int(diff.get("connections", 0)), int(diff.get("resumed", 0)),
                   int(diff.get("early_data", 0)),
                   tuple((str(n), int(c), int(r)) for n, (c, r) in sorted(names.items()))
                   if isinstance(names, dict) else None,
                   tuple(sorted(str(n) for n in warm)) if isinstance(warm, dict) else None)

    @property
    def all_resumed(self) -> bool | None:
        """Every connection resumed; None when the load used none the server counted."""
        return None if self.connections <= 0 else self.resumed >= self.connections

    @property
    def early(self) -> bool:
        return self.early_requests > 0

    def not_resumed_names(self) -> tuple[list[str], list[str]] | None:
        """The names with a connection that did not resume: (those the warm-up had a
        connection of, those it had none of); None when the servers did not say, or
        named fewer connections than they counted (one without TLS has no name)."""
        if self.names is None or self.warm_up_names is None:
            return None
        if sum(c for _, c, _ in self.names) != self.connections:
            return None
        missed = [n for n, c, r in self.names if r < c]
        return ([n for n in missed if n in self.warm_up_names],
                [n for n in missed if n not in self.warm_up_names])


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
    a warm visit that did not resume, an incomplete load, missing visual metrics, too
    many replay misses."""
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
    if e.warm:
        problem = not_resumed(e)
        if problem:
            return failed("not-resumed", problem)
    if e.incomplete:
        return Verdict("failed", e.incomplete)
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


def not_resumed(e: Evidence) -> str | None:
    """Why a warm visit does not count as one (None: it resumed as the setting says)."""
    r = e.resumption
    if r is None:
        return "no server summary"
    if r.all_resumed is None:
        return "no connection counted by the server"
    if not r.all_resumed:
        # A name the warm-up made no connection of had no session to resume: its
        # requests then went over another name's connection (HTTP/2 coalescing,
        # which Firefox does by timing), and this load's connection of it is new.
        split = r.not_resumed_names()
        if split is None or split[0] or r.resumed == 0:
            named = f" ({', '.join(split[0])} did not)" if split and split[0] else ""
            return f"{r.resumed} of {r.connections} connections resumed{named}"
    if e.early_data and not r.early:
        what = "0-RTT" if e.stack == "quic" else "TLS early data"
        return f"no request in {what}"
    return None
