"""The Mahimahi shell chain of a network profile.

Outer (started in the client namespace) to inner (where the browser runs):

    [mm-loss downlink P] mm-link UP DOWN --uplink-queue=droptail ... -- [mm-loss uplink P] [mm-delay D] CMD

- mm-link is outermost, next to the servers. A small packet waits for the
  next uplink opportunity (a random wait, the link's nature) and its
  answer, leaving the server at once, for the next downlink opportunity: a
  wait fixed by the phase of the two schedules (see link_traces), which
  the calibration takes off mm-delay. With mm-delay outside the link, the
  answer would reach the downlink 2*D after the uplink opportunity, so a
  ms less of mm-delay would be a ms more of waiting there: the RTT could
  only be set in whole opportunity gaps (25.6 ms on DA2GC).
- Each mm-loss sits on the sender's side of the link (downlink loss outside
  it, uplink loss inside), so a lost packet never takes a delivery
  opportunity: the link still delivers its full rate to whatever survives.
- On sparse links the whole chain runs under testbed.emulate.phasegate,
  which starts mm-link again until its two schedules start in phase, so the
  reply wait (see link_traces) is the same at every start.
- mm-loss shells are left out when their loss is 0 (two idle mm-loss shells
  cost about 45 % of the chain's CPU), mm-link when the profile does not
  shape, mm-delay when the delay is 0.

Queues are drop-tail in bytes (testbed.formats.traces.queue_bytes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from testbed.formats import traces
from testbed.formats.profiles import NetworkProfile
from testbed.host import proc
from testbed.host.paths import chown_to_user


@dataclass(frozen=True)
class ShellChain:
    """The shells between the servers and the command, outer to inner."""

    delay_ms: int = 0
    """mm-delay's one-way delay (after calibration); 0: no mm-delay."""
    uplink_trace: Path | None = None
    downlink_trace: Path | None = None
    uplink_queue_bytes: int | None = None
    """Drop-tail queue of the uplink in bytes; None: Mahimahi's unlimited queue."""
    downlink_queue_bytes: int | None = None
    uplink_loss: float = 0.0
    """Fraction of uplink packets mm-loss drops."""
    downlink_loss: float = 0.0
    uplink_log: Path | None = None
    """mm-link --uplink-log (every arrival, opportunity and departure, in ms)."""
    downlink_log: Path | None = None
    phase_gate: bool = False
    """Start mm-link again until its two schedules start in phase (sparse links;
    see testbed.emulate.phasegate)."""
    gate_dir: Path | None = None
    """Where the phase gate keeps mm-link's logs (writable by the testbed user)."""

    @property
    def shaped(self) -> bool:
        return self.uplink_trace is not None

    def with_logs(self, uplink: Path | None, downlink: Path | None) -> ShellChain:
        return replace(self, uplink_log=uplink, downlink_log=downlink)

    def argv(self, command: list[str]) -> list[str]:
        """The whole command line: shells, then command."""
        inner: list[str] = []
        if self.uplink_loss > 0:
            inner += ["mm-loss", "uplink", _fraction(self.uplink_loss)]
        if self.delay_ms > 0:
            inner += ["mm-delay", str(self.delay_ms)]
        inner += [str(c) for c in command]
        if not self.shaped:
            if self.downlink_loss > 0:
                inner = ["mm-loss", "downlink", _fraction(self.downlink_loss), *inner]
            return inner
        link = ["mm-link", str(self.uplink_trace), str(self.downlink_trace)]
        for d, qbytes in (("uplink", self.uplink_queue_bytes),
                          ("downlink", self.downlink_queue_bytes)):
            if qbytes is not None:
                link += [f"--{d}-queue=droptail", f"--{d}-queue-args=bytes={qbytes}"]
        if self.uplink_log:
            link.append(f"--uplink-log={self.uplink_log}")
        if self.downlink_log:
            link.append(f"--downlink-log={self.downlink_log}")
        outer = ["mm-loss", "downlink", _fraction(self.downlink_loss)] if self.downlink_loss > 0 else []
        argv = [*outer, *link, "--", *inner]
        if self.phase_gate:
            where = ["--dir", str(self.gate_dir)] if self.gate_dir else []
            argv = proc.python("-m", "testbed.emulate.phasegate", *where, "--", *argv)
        return argv


@dataclass(frozen=True)
class LinkTraces:
    """The two schedules of a shaped profile, generated or read."""

    uplink: traces.Trace
    downlink: traces.Trace


SPARSE_GAP_MS = 2
"""Downlink opportunity gap (ms) from which the downlink trace is offset by half a gap."""
SPARSE_PERIOD_MS = 10_000


def reply_wait_ms(profile: NetworkProfile) -> int | None:
    """For a fixed-rate profile with a sparse downlink: the default wait (whole ms)
    from an uplink opportunity to the next downlink one, about half a gap. None
    when the downlink is dense or trace-driven (nothing to set)."""
    if profile.downlink_mbit is None or not profile.shaped:
        return None
    gap = 1 / traces.opportunities_per_ms(profile.downlink_mbit)
    if gap < SPARSE_GAP_MS:
        return None
    return round(gap / 2)


def link_traces(profile: NetworkProfile, reply_wait: int | None = None) -> LinkTraces | None:
    """The delivery schedules of a shaped profile (None when it does not shape).

    A fixed-rate downlink whose opportunities are SPARSE_GAP_MS or more apart
    is offset from the uplink so that each downlink opportunity comes
    `reply_wait` ms (default: reply_wait_ms, half a gap) after an uplink one.
    mm-link starts its two schedules within a few ms of each other, not
    exactly together (measured here: the downlink from 5 ms before to 11 ms
    after the uplink, most often 0 or 1 ms after), and an answer leaving the
    server right after an uplink opportunity waits for the next downlink
    one: with both schedules in phase that wait jumps between ~0 and a whole
    gap (25.6 ms on DA2GC) from one shell start to the next; half a gap
    apart it moves only by the ms the start moved, and the phase gate
    (ShellChain.phase_gate) removes even that. The calibration may move
    reply_wait by a ms to set the RTT finer than mm-delay's 2 ms steps.
    """
    if not profile.shaped:
        return None
    got = []
    for d in ("uplink", "downlink"):
        mbit = getattr(profile, f"{d}_mbit")
        if mbit is None:
            driven = profile.trace(d)
            assert driven is not None  # no rate: trace-driven
            got.append(traces.starting_at(driven, profile.trace_start_ms))
            continue
        trace = traces.fixed_rate(mbit)
        default = reply_wait_ms(profile)
        if d == "downlink" and default is not None:
            wait = default if reply_wait is None else reply_wait
            gap_ms = 1 / trace.per_ms
            if not 1 <= wait < gap_ms:
                raise ValueError(f"reply wait {wait} ms: expected 1 .. {float(gap_ms):.1f} ms")
            trace = traces.fixed_rate(mbit, 1 - wait * trace.per_ms, SPARSE_PERIOD_MS)
        got.append(trace)
    return LinkTraces(*got)


def default_delay_ms(profile: NetworkProfile) -> int:
    """mm-delay before calibration: half the RTT, in whole ms."""
    return round(profile.min_rtt_ms / 2)


def build_chain(profile: NetworkProfile, workdir: Path, delay_ms: int | None = None,
                reply_wait: int | None = None) -> ShellChain:
    """The chain for a profile; its two traces are written into workdir, one of
    root's folders (safefs) that the testbed user can read: a trace file of the
    profile's is copied as it was read and checked (NetworkProfile.trace), never
    handed to mm-link by its path, which whoever writes the profile's folder could
    point elsewhere in between. delay_ms: mm-delay's one-way delay and reply_wait:
    see link_traces (both from a calibration); default half the profile's RTT and
    half a downlink gap."""
    delay = default_delay_ms(profile) if delay_ms is None else delay_ms
    chain = ShellChain(delay_ms=delay, uplink_loss=profile.uplink_loss_percent / 100,
                       downlink_loss=profile.downlink_loss_percent / 100)
    lt = link_traces(profile, reply_wait)
    if lt is None:
        return chain
    paths, qbytes = {}, {}
    for d, trace in (("uplink", lt.uplink), ("downlink", lt.downlink)):
        paths[d] = traces.write_trace(Path(workdir) / f"{profile.name or 'profile'}.{d}.trace",
                                      trace)
        qbytes[d] = None if profile.buffer_ms is None else traces.queue_bytes(profile.buffer_ms, trace)
    gate = reply_wait_ms(profile) is not None
    return replace(chain, uplink_trace=paths["uplink"], downlink_trace=paths["downlink"],
                   uplink_queue_bytes=qbytes["uplink"], downlink_queue_bytes=qbytes["downlink"],
                   phase_gate=gate, gate_dir=_user_dir(Path(workdir) / "phasegate") if gate
                   else None)


def _user_dir(path: Path) -> Path:
    """A folder the testbed user can write (created by root, given to the user)."""
    path.mkdir(exist_ok=True)
    if os.geteuid() == 0:
        chown_to_user(path)
    return path


def _fraction(x: float) -> str:
    return f"{x:.6g}"
