"""Calibration: what the shell chain itself adds to the RTT, taken off mm-delay.

mm-delay alone is exact, but mm-link hands a packet over only at a delivery
opportunity: a small probe waits for the next uplink opportunity (a random
part, up to one opportunity gap, which is the link's nature and stays), and
its echo, leaving the server at once, waits for the next downlink
opportunity (a fixed part: mm-link is next to the server, and on sparse
links the downlink opportunities are set a fixed time after the uplink ones,
see testbed.emulate.shells.link_traces). Add the shells' own processing and
whole-ms timers. The calibration measures the minimum
small-packet RTT through the real chain with mm-delay at half the profile's
RTT, takes the excess off mm-delay (in whole ms each way, so 2 ms of RTT)
and measures again; on sparse links it then moves the downlink schedule by
a ms if that brings the minimum RTT closer, so that the path's minimum RTT
equals the profile's.

The result depends on the machine (timer slack, CPU), so it is measured per
profile and machine, kept in /var/cache/testbed/calibration/ and reused
while the profile's file, the kernel and Mahimahi are unchanged; a campaign
stores the Calibration it ran with (`model_dump()`).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import platform
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from testbed.emulate import figures
from testbed.emulate.probesite import PROBE_IP, PROBE_PORT, ProbeSite
from testbed.emulate.shells import (
    ShellChain,
    build_chain,
    default_delay_ms,
    link_traces,
    reply_wait_ms,
)
from testbed.errors import TestbedError
from testbed.formats import traces
from testbed.formats.profiles import NetworkProfile
from testbed.host import proc, safefs

CACHE = Path(os.environ.get("TESTBED_CALIBRATION_DIR", "/var/cache/testbed/calibration"))
PROBES = 300
"""Probes per shell start: enough that some arrive just before an uplink opportunity."""
INSTANCES = 5
"""Shell starts per calibration step (the median of their minimums counts)."""
MAX_STEPS = 3
METHOD = 4


class Calibration(BaseModel):
    """How a profile's chain was compensated on this machine."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    profile: str
    """The profile's name."""
    profile_digest: str
    """sha256 of the profile file it was made for."""
    delay_ms: int
    """mm-delay's one-way delay to use (ms)."""
    reply_wait_ms: int | None = None
    """Sparse downlinks only: ms from each uplink opportunity to the next downlink one
    (testbed.emulate.shells.link_traces); None: the profile has no such knob."""
    method: int = 1
    """Version of the procedure that made it (METHOD now); another is measured again."""
    chain_offset_ms: float
    """Minimum RTT the chain adds beyond 2 x mm-delay (measured, ms)."""
    min_rtt_ms: float
    """Minimum small-packet RTT measured with delay_ms (median over shell starts)."""
    median_rtt_ms: float
    """Median small-packet RTT measured with delay_ms (all probes)."""
    probes: int
    """Probes (echoed) behind min_rtt_ms and median_rtt_ms."""
    kernel: str
    mahimahi: str
    host: str
    measured_at: str
    """ISO 8601 time of the measurement."""


def machine() -> dict[str, str]:
    return {"kernel": platform.release(), "mahimahi": mahimahi_version(), "host": platform.node()}


def mahimahi_version() -> str:
    try:
        out = proc.run(["dpkg-query", "-W", "-f=${Version}", "mahimahi"], check=False, timeout=10)
    except TestbedError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def probe_rate(profile: NetworkProfile) -> float:
    """Probes per second that stay far below what the uplink carries in small packets.

    mm-link hands over 1504 bytes per opportunity, shared by the small probes
    (64 bytes with headers) waiting for it; at 35 % of that a DA2GC
    opportunity (one per 25.6 ms) carries 9 probes on average, and more than
    23 (a full one) almost never.
    """
    lt = link_traces(profile)
    if lt is None:
        return 500.0
    per_second = float(min(lt.uplink.per_ms, lt.downlink.per_ms)) * 1000
    return max(20.0, min(500.0, per_second * (1504 / 64) * 0.35))


def measure_rtt(site: ProbeSite, profile: NetworkProfile, chain: ShellChain, probes: int,
                session: int = 1, seed: int | None = None) -> figures.Rtt:
    rate = probe_rate(profile)
    lt = link_traces(profile)
    outage = max(traces.longest_gap_ms(lt.uplink), traces.longest_gap_ms(lt.downlink)) if lt else 0
    linger = 1.0 + 2 * profile.min_rtt_ms / 1000 + min(outage, 10_000) / 1000
    args = ["rtt", "--to", f"{PROBE_IP}:{PROBE_PORT}", "--count", str(probes),
            "--rate", f"{rate:g}", "--linger", f"{linger:g}", "--session", str(session)]
    if seed is not None:
        args += ["--seed", str(seed)]
    with site.probe_server() as dump:
        client = site.probe(chain, args, timeout=probes / rate + linger + 120)
    return figures.rtt(client, dump.result())


def calibrate(site: ProbeSite, profile: NetworkProfile, probes: int = PROBES,
              instances: int = INSTANCES) -> Calibration:
    """Measure through the real chain and choose mm-delay's delay (2 ms steps of RTT)
    and, on sparse downlinks, the reply wait (1 ms steps).

    Each measurement starts the chain `instances` times (the phase of mm-link's
    two schedules changes with every start) and takes the median of their
    minimum RTTs.
    """
    target = profile.min_rtt_ms
    wait = reply_wait_ms(profile)
    tried: dict[tuple[int, int | None], tuple[float, list[figures.Rtt]]] = {}

    def measure(delay: int, wait: int | None) -> float:
        chain = build_chain(profile, site.work_dir(), delay, wait)
        runs = [measure_rtt(site, profile, chain, probes, session=i + 1)
                for i in range(instances)]
        if any(r.echoed == 0 for r in runs):
            raise TestbedError(f"{profile.name}: no probe came back through the shells")
        m = float(np.median([r.min for r in runs]))
        tried[(delay, wait)] = (m, runs)
        return m

    delay = default_delay_ms(profile)
    for _ in range(MAX_STEPS):
        m = measure(delay, wait)
        best = max(0, round((target - (m - 2 * delay)) / 2))
        if (best, wait) in tried:
            break
        delay = best
    delay, wait = min(tried, key=lambda k: (abs(tried[k][0] - target), k[0]))
    if wait is not None:
        assert profile.downlink_mbit is not None  # a reply wait: fixed-rate downlink
        gap = float(1 / traces.opportunities_per_ms(profile.downlink_mbit))
        finer = min(max(1, wait + round(target - tried[(delay, wait)][0])), math.ceil(gap) - 1)
        if finer != wait:
            measure(delay, finer)
            if abs(tried[(delay, finer)][0] - target) < abs(tried[(delay, wait)][0] - target):
                wait = finer
    m, runs = tried[(delay, wait)]
    pooled = np.concatenate([r.rtt_ms for r in runs])
    return Calibration(profile=profile.name, profile_digest=profile.digest, delay_ms=delay,
                       reply_wait_ms=wait, method=METHOD, chain_offset_ms=round(m - 2 * delay, 3),
                       min_rtt_ms=round(m, 3),
                       median_rtt_ms=round(float(np.median(pooled)), 3), probes=len(pooled),
                       measured_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                       **machine())


def cache_dir() -> Path:
    """CACHE, checked as any folder root reads and writes (safefs.check_out_dir): what
    it holds sets every trial's delays, so InputError naming TESTBED_CALIBRATION_DIR
    when another account could change it."""
    return safefs.check_out_dir(CACHE, "TESTBED_CALIBRATION_DIR")


def cache_path(profile: NetworkProfile) -> Path:
    return cache_dir() / f"{profile.name}-{profile.digest[:16]}.json"


def cached(profile: NetworkProfile) -> Calibration | None:
    """The stored calibration, if it was made for this file on this machine."""
    path = cache_path(profile)
    try:
        c = Calibration.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None
    now = machine()
    if (c.profile_digest != profile.digest or c.method != METHOD
            or any(getattr(c, k) != v for k, v in now.items())):
        return None
    return c


def store(c: Calibration, profile: NetworkProfile) -> Path:
    path = cache_path(profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    return safefs.write_file(path, json.dumps(c.model_dump(), indent=2) + "\n")


def for_profile(profile: NetworkProfile, site: ProbeSite | None = None,
                recalibrate: bool = False) -> Calibration:
    """The calibration to use: the stored one, or a new measurement (stored)."""
    if not recalibrate:
        c = cached(profile)
        if c is not None:
            return c
    if site is None:
        with ProbeSite() as own:
            c = calibrate(own, profile)
    else:
        c = calibrate(site, profile)
    store(c, profile)
    return c


def chain_for(profile: NetworkProfile, workdir: Path, calibration: Calibration | None = None,
              ) -> ShellChain:
    """The calibrated chain of a profile (traces written into workdir)."""
    c = calibration or for_profile(profile)
    return build_chain(profile, workdir, c.delay_ms, c.reply_wait_ms)
