"""`testbed validate network [PROFILE ...]`: measure each profile through its real shells.

In a replay topology (probe server and iperf3 in the server namespace, the
clients inside the calibrated Mahimahi chain in the client namespace, as the
testbed user), per profile:

- small-packet RTT: open-loop UDP echo probes at random times, spread over
  several shell starts (the median over starts keeps one odd start from
  deciding; the phase of mm-link's two schedules is shown for each). Minimum RTT (median of the starts'
  minimums) within ±1 ms of the profile; median RTT (median of the starts'
  medians) within ±2 ms of the profile plus the median wait for an uplink
  delivery opportunity, which a packet arriving at a random time has on a
  Mahimahi link (computed from the trace: 1.2 ms on DSL, 12.8 ms on DA2GC;
  mm-link delivers only at 1500-byte opportunities). On trace-driven
  profiles the median and the rates are shown, not checked: the few seconds
  measured are not the trace's mean.
- loss per direction from the same probes (probes the server never saw,
  echoes the client never saw): the configured rate inside the measured
  99 % Clopper-Pearson interval.
- link rate per direction: a UDP stream of 1472-byte payloads offered 10 %
  above the rate; the payload rate delivered within 2 % of the ceiling (one
  payload per delivery opportunity, rate x 1472/1500).
- TCP goodput per direction: iperf3 with BBR (so the buffer does not
  dominate); at least 90 % of the rate on lossless profiles.

Exit status 1 when anything is outside its tolerance.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from rich.console import Console

from testbed import jsonout
from testbed.emulate import calibrate, figures
from testbed.emulate.probesite import PROBE_IP, PROBE_PORT, ProbeSite
from testbed.emulate.shells import ShellChain, build_chain, link_traces
from testbed.errors import InputError, TestbedError
from testbed.formats.profiles import NetworkProfile, available, load_network
from testbed.formats.traces import UDP_PAYLOAD, opportunity_wait_quantile
from testbed.host import safefs
from testbed.host.paths import NETWORKS_DIR
from testbed.validate import verdict
from testbed.validate.verdict import Row

DEFAULT_PROFILES = ("dsl", "lte", "da2gc", "mss")
PROBES = 10_000
SHELL_STARTS = 7
MIN_RTT_TOLERANCE_MS = 1.0
MEDIAN_RTT_TOLERANCE_MS = 2.0
RATE_TOLERANCE = 0.02
TCP_MIN_SHARE = 0.90
LOSS_CONFIDENCE = 0.99
UDP_OVERLOAD = 1.10


@dataclass
class Report:
    profile: NetworkProfile
    calibration: calibrate.Calibration
    rows: list[Row] = field(default_factory=list)
    phases_ms: list[int | None] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return verdict.all_ok(self.rows)

    def failed(self) -> list[str]:
        return [r.name for r in verdict.failed(self.rows)]


# ------------------------------------------------------------------ measurements

def link_phase_ms(uplink_log: Path, downlink_log: Path) -> int | None:
    """How many ms after the uplink schedule mm-link started the downlink one (from
    the `# base timestamp:` line each --*-log begins with)."""
    base = []
    for log in (uplink_log, downlink_log):
        try:  # mm-link (the testbed user) wrote it: never read through a symlink
            with os.fdopen(safefs.open_user(log), errors="replace") as f:
                head = [next(f, "") for _ in range(8)]
        except (OSError, safefs.UnsafePath):
            return None
        found = [int(line.split()[-1]) for line in head if line.startswith("# base timestamp:")]
        if not found:
            return None
        base.append(found[0])
    return base[1] - base[0]


def rtt_and_loss(site: ProbeSite, profile: NetworkProfile, chain: ShellChain, probes: int,
                 starts: int, report: Report) -> None:
    runs: list[figures.Rtt] = []
    per_start = math.ceil(probes / starts)
    for i in range(starts):
        c = chain
        if chain.shaped:
            up, down = site.userdir / f"up-{i}.log", site.userdir / f"down-{i}.log"
            c = chain.with_logs(up, down)
        runs.append(calibrate.measure_rtt(site, profile, c, per_start, session=i + 1))
        if chain.shaped:
            report.phases_ms.append(link_phase_ms(up, down))
            up.unlink(missing_ok=True)
            down.unlink(missing_ok=True)
    target = profile.min_rtt_ms
    mins = [r.min for r in runs if r.echoed]
    if not mins:
        raise TestbedError(f"{profile.name}: no probe came back through the shells")
    m = float(np.median(mins))
    report.rows.append(Row(
        "min RTT (ms)", f"{target:g}",
        f"{m:.2f} (starts {min(mins):.2f}..{max(mins):.2f})",
        tolerance=f"±{MIN_RTT_TOLERANCE_MS:g}", ok=bool(abs(m - target) <= MIN_RTT_TOLERANCE_MS)))
    lt = link_traces(profile)
    wait = opportunity_wait_quantile(lt.uplink, 0.5) if lt else 0.0
    expected = target + wait
    medians = [float(np.median(r.rtt_ms)) for r in runs if r.echoed]
    med = float(np.median(medians))
    pooled = float(np.median(np.concatenate([r.rtt_ms for r in runs])))
    traced = profile.uplink_trace is not None or profile.downlink_trace is not None
    report.rows.append(Row(
        "median RTT (ms)", f"{expected:.2f} = {target:g} + {wait:.2f} uplink wait"
        + (" (trace mean)" if traced else ""),
        f"{med:.2f} (starts {min(medians):.2f}..{max(medians):.2f}; all probes {pooled:.2f})",
        tolerance="" if traced else f"±{MEDIAN_RTT_TOLERANCE_MS:g}",
        ok=None if traced else bool(abs(med - expected) <= MEDIAN_RTT_TOLERANCE_MS)))
    up_conf, down_conf = profile.uplink_loss_percent / 100, profile.downlink_loss_percent / 100
    sent = sum(r.sent for r in runs)
    at_server = sum(r.at_server for r in runs)
    echoed = sum(r.echoed for r in runs)
    for name, loss in (("uplink", figures.Loss(sent, sent - at_server, up_conf)),
                       ("downlink", figures.Loss(at_server, at_server - echoed, down_conf))):
        low, high = loss.interval(LOSS_CONFIDENCE)
        report.rows.append(Row(
            f"{name} loss (%)", f"{100 * loss.configured:g}",
            f"{100 * loss.fraction:.2f} ({loss.lost}/{loss.trials}; 99 % CI "
            f"{100 * low:.2f}..{100 * high:.2f})",
            tolerance="in 99 % CI", ok=bool(loss.consistent(LOSS_CONFIDENCE))))


def udp_rates(site: ProbeSite, profile: NetworkProfile, chain: ShellChain,
              report: Report) -> None:
    lt = link_traces(profile)
    if lt is None:
        return
    for name, trace, loss in (("downlink", lt.downlink, profile.downlink_loss_percent),
                              ("uplink", lt.uplink, profile.uplink_loss_percent)):
        ceiling = trace.udp_payload_mbit
        offered = ceiling * UDP_OVERLOAD / (1 - loss / 100)
        per_s = float(trace.per_ms) * 1000
        window = max(0.25, 100 / per_s)  # 100+ opportunities: +-1 % from the window edges
        seconds = max(4.0, 4 * window)
        args = ["--to", f"{PROBE_IP}:{PROBE_PORT}", "--mbit", f"{offered:.6f}",
                "--seconds", f"{seconds:g}", "--session", "100"]
        timeout = seconds + 60 + 3 * profile.min_rtt_ms / 1000
        with site.probe_server() as dump:
            if name == "downlink":
                got = site.probe(chain, ["receive", *args], timeout=timeout)
                arrivals = got["t_recv"]
            else:
                site.probe(chain, ["send", *args], timeout=timeout)
        if name == "uplink":
            arrivals = dump.result()["sink"].get("100", {}).get("t_server", [])
        measured, windows = figures.delivered_mbit_windows(arrivals, UDP_PAYLOAD, window)
        overall = figures.delivered_mbit(arrivals, UDP_PAYLOAD)
        fixed = getattr(profile, f"{name}_mbit") is not None
        share = measured / ceiling if ceiling else 0.0
        report.rows.append(Row(
            f"{name} UDP payload (Mbit/s)",
            f"{ceiling:.4f}" + ("" if fixed else " (trace mean)"),
            f"{measured:.4f} ({share:.1%}; median of {windows} x {window:.2g} s; "
            f"overall {overall:.4f}, {len(arrivals)} datagrams)",
            tolerance=f"±{RATE_TOLERANCE:.0%}" if fixed else "",
            ok=bool(abs(share - 1) <= RATE_TOLERANCE) if fixed else None))


def tcp_goodput(site: ProbeSite, profile: NetworkProfile, chain: ShellChain,
                report: Report) -> None:
    lossless = profile.uplink_loss_percent == 0 and profile.downlink_loss_percent == 0
    lt = link_traces(profile)
    seconds, omit = (10.0, 3.0) if profile.min_rtt_ms < 300 else (12.0, 5.0)
    for name, reverse in (("downlink", True), ("uplink", False)):
        rep = site.iperf(chain, seconds, omit, reverse,
                         timeout=seconds + omit + 60 + 10 * profile.min_rtt_ms / 1000)
        got = rep["end"]["sum_received"]["bits_per_second"] / 1e6
        rate = getattr(profile, f"{name}_mbit")
        if rate is None:
            report.rows.append(Row(f"{name} TCP goodput (Mbit/s)",
                                   f"{getattr(lt, name).mbit:.2f} (trace mean)" if lt else "-",
                                   f"{got:.2f}"))
            continue
        share = got / rate
        checked = lossless
        report.rows.append(Row(
            f"{name} TCP goodput (Mbit/s)", f"{rate:g}",
            f"{got:.3f} ({share:.1%})",
            tolerance=f">= {TCP_MIN_SHARE:.0%}" if checked else "(lossy: shown)",
            ok=bool(share >= TCP_MIN_SHARE) if checked else None))


def validate_profile(site: ProbeSite, profile: NetworkProfile, probes: int, starts: int,
                     recalibrate: bool, status=None) -> Report:
    t0 = time.monotonic()
    say = status or (lambda _msg: None)
    say(f"{profile.name}: calibrating")
    cal = calibrate.for_profile(profile, site, recalibrate=recalibrate)
    chain = build_chain(profile, site.work_dir(), cal.delay_ms, cal.reply_wait_ms)
    report = Report(profile, cal)
    say(f"{profile.name}: {probes} RTT/loss probes")
    rtt_and_loss(site, profile, chain, probes, starts, report)
    say(f"{profile.name}: UDP link rates")
    udp_rates(site, profile, chain, report)
    say(f"{profile.name}: TCP goodput (iperf3, BBR)")
    tcp_goodput(site, profile, chain, report)
    report.seconds = time.monotonic() - t0
    return report


COLUMNS = (verdict.column("property", "name"),
           verdict.column("configured / expected", "expected", "right"),
           verdict.column("measured", "observed"),
           verdict.column("tolerance", "tolerance", "right"),
           verdict.verdict())


def title(report: Report) -> str:
    p, c = report.profile, report.calibration
    phases = ", ".join("?" if x is None else f"{x:+d}" for x in report.phases_ms)
    return (f"{p.name}: {p.description}\n"
            f"mm-delay {c.delay_ms} ms each way"
            + (f", downlink opportunities {c.reply_wait_ms} ms after uplink ones"
               if c.reply_wait_ms is not None else "")
            + f" (chain adds {c.chain_offset_ms:.2f} ms; "
            f"calibrated {c.measured_at})"
            + (f"; downlink schedule started {phases} ms after the uplink's" if phases else "")
            + f"; {report.seconds:.0f} s")


def json_doc(reports: list[Report]) -> dict:
    """What `testbed validate network --json` prints: per profile its verdict and rows."""
    return {"ok": all(r.ok for r in reports),
            "profiles": [{"profile": r.profile.name, "title": title(r), "ok": r.ok,
                          "seconds": r.seconds, "rows": [verdict.json_row(x) for x in r.rows]}
                         for r in reports]}


def validate_network(profiles: Sequence[str], probes: int, starts: int, recalibrate: bool,
                     as_json: bool) -> None:
    """`testbed validate network`: each profile measured, its rows shown (or printed as
    JSON); TestbedError (exit 1) if any is out of tolerance."""
    loaded = [load_network(p) for p in (profiles or DEFAULT_PROFILES)]
    if probes < 100:
        raise InputError(f"--probes: expected at least 100, got {probes}")
    if starts < 1:
        raise InputError(f"--starts: expected at least 1, got {starts}")
    console = Console(stderr=as_json)
    console.print(f"profiles available: {', '.join(available(NETWORKS_DIR))}")
    reports = []
    with ProbeSite() as site, console.status("starting") as status:
        for p in loaded:
            rep = validate_profile(site, p, probes, starts, recalibrate, status.update)
            reports.append(rep)
            if not as_json:
                verdict.render(console, rep.rows, COLUMNS, title(rep))
    if as_json:
        jsonout.echo(json_doc(reports))
    bad = [f"{r.profile.name} ({', '.join(r.failed())})" for r in reports if not r.ok]
    if bad:
        raise TestbedError(f"network validation failed: {'; '.join(bad)}")
    console.print(f"[green]all {len(reports)} profiles within tolerance[/green]")
