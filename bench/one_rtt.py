"""bench/one_rtt: does the testbed see QUIC's one-RTT handshake lead? Needs root and
`make setup`.

    bench/one_rtt [--runs N] [--network NAME] [--fps N] [--keep DIR] [--client chromium|firefox]

A single-origin page (tests/site/sitegen.SINGLE_SITE: HTML, 2 stylesheets and 3
JPEGs, ~150 KB, one host) is served in a namespace of its own and recorded by
`testbed record` into a temporary folder, then measured by `testbed run` (the
real trial path: replay, Mahimahi, Browsertime, the store) over TCP+ and QUIC,
N runs each (default 15), on DSL. TCP + TLS 1.3 needs two round trips before
the first request, QUIC one: with one connection and nothing else in the way,
QUIC should lead by about one RTT in every metric.

Prints, per metric (FCP, FVC, PLT, TTFB and the other browser timings), the
mean and median of each stack and QUIC's lead in ms and in RTTs (the
profile's minimum RTT), and whether FVC values lie on the video's frame grid
(1000 / fps ms): FVC can only move in whole frames, FCP in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "site"))

import sitegen
from harness import LocalSite

from testbed.measure import browsertime

TESTBED = ROOT / ".venv/bin/testbed"
STACKS = ("tcp-plus", "quic")
METRICS = (("fcp_ms", "FCP"), ("fvc_ms", "FVC"), ("plt_ms", "PLT"), ("ttfb_ms", "TTFB"),
           ("fp_ms", "FP"), ("lcp_ms", "LCP"), ("dcl_ms", "DCL"))


def record(spec: sitegen.SiteSpec, out: Path) -> Path:
    """The site recorded by `testbed record` (one load: nothing on it is random)."""
    with LocalSite(spec, purpose="onertt") as site:
        cp = subprocess.run([str(TESTBED), "record", spec.url(), "--name", spec.name,
                             "--out", str(out), "--loads", "1", *site.record_args()],
                            check=False, capture_output=True, text=True)
    if cp.returncode != 0:
        raise SystemExit(f"recording failed: {cp.stderr[-2000:]}")
    return out / spec.name


def campaign(recording: Path, network: str, runs: int, fps: int, folder: Path,
             client: str = "chromium") -> Path:
    path = folder / "one-rtt.toml"
    path.write_text(f'description = "bench/one_rtt"\nsites = ["{recording}"]\n'
                    f'networks = ["{network}"]\nprotocols = {list(STACKS)!r}\n'.replace("'", '"')
                    + f'runs = {runs}\nvideo_fps = {fps}\nclient = ["{client}"]\n')
    return path


def on_grid(value: float, step: float) -> bool:
    """value lies within 1 ms of a multiple of step (visualmetrics floors frame times to
    whole ms)."""
    k = round(value / step)
    return abs(value - k * step) <= 1.0 + 1e-9


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="bench/one_rtt")
    ap.add_argument("--runs", type=int, default=15, help="trials per stack (default 15)")
    ap.add_argument("--network", default="dsl")
    ap.add_argument("--fps", type=int, default=browsertime.VIDEO_FPS,
                    help=f"video frame rate (default {browsertime.VIDEO_FPS})")
    ap.add_argument("--keep", type=Path, help="keep the results folder here")
    ap.add_argument("--client", choices=("chromium", "firefox"), default="chromium",
                    help="the browser (default chromium)")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("bench/one_rtt needs root (namespaces); run with sudo")
    problem = browsertime.missing()
    if problem:
        raise SystemExit(problem)
    from testbed.campaign.store.store import read_rows
    from testbed.formats.profiles import load_network

    rtt = float(load_network(a.network).min_rtt_ms)
    spec = sitegen.SINGLE_SITE
    step = 1000 / a.fps
    work = Path(tempfile.mkdtemp(prefix="bench-one-rtt-"))
    os.chmod(work, 0o755)
    try:
        t0 = time.monotonic()
        recording = record(spec, work / "recordings")
        sizes = sum(len(r.body) for r in sitegen.build(spec).values())
        print(f"page {spec.url()}: {len(sitegen.build(spec))} resources, {sizes / 1000:.0f} KB, "
              f"one origin; recorded in {time.monotonic() - t0:.0f} s")
        out = a.keep or work / "results"
        t0 = time.monotonic()
        cp = subprocess.run([str(TESTBED), "run", str(campaign(recording, a.network, a.runs,
                                                                a.fps, work, a.client)),
                             "--out", str(out)], check=False, capture_output=True, text=True)
        if cp.returncode != 0:
            raise SystemExit(f"testbed run failed: {cp.stderr[-2000:]}")
        rows = read_rows(out / "trials.sqlite")
        ok = {s: [r for r in rows if r["setting"] == s and r["status"] == "ok"] for s in STACKS}
        print(f"{a.client} on {a.network}: min RTT {rtt:g} ms; video {a.fps} fps (frame {step:.1f} ms); "
              f"{len(rows)} trials in {time.monotonic() - t0:.0f} s, ok: "
              + ", ".join(f"{s} {len(ok[s])}/{a.runs}" for s in STACKS))
        print(f"{'metric':<6} {'TCP+ mean':>10} {'median':>8} {'QUIC mean':>10} {'median':>8}"
              f"   {'lead mean':>16} {'lead median':>18}")
        for column, name in METRICS:
            x = {s: [r[column] for r in ok[s] if r[column] is not None] for s in STACKS}
            if not x["tcp-plus"] or not x["quic"]:
                print(f"{name:<6} no values")
                continue
            mean = {s: statistics.mean(v) for s, v in x.items()}
            median = {s: statistics.median(v) for s, v in x.items()}
            lead = mean["tcp-plus"] - mean["quic"]
            lead_med = median["tcp-plus"] - median["quic"]
            print(f"{name:<6} {mean['tcp-plus']:10.1f} {median['tcp-plus']:8.1f} "
                  f"{mean['quic']:10.1f} {median['quic']:8.1f}   "
                  f"{lead:+7.1f} ms {lead / rtt:+5.2f} RTT {lead_med:+8.1f} ms "
                  f"{lead_med / rtt:+5.2f} RTT")
        fvc = [r["fvc_ms"] for s in STACKS for r in ok[s] if r["fvc_ms"] is not None]
        medians = [statistics.median([r["fvc_ms"] for r in ok[s]]) for s in STACKS if ok[s]]
        grid = sum(on_grid(v, step) for v in fvc)
        off = sorted(v for v in fvc if not on_grid(v, step))
        print(f"FVC on the {step:.1f} ms frame grid: {grid}/{len(fvc)} values"
              + (f" (off it: {', '.join(f'{v:g}' for v in off)} ms)" if off else "")
              + "; median lead "
              + (f"{medians[0] - medians[1]:+.1f} ms = {(medians[0] - medians[1]) / step:+.2f} "
                 f"frames ({'a whole number of frames' if on_grid(medians[0] - medians[1], step) else 'NOT on the grid'})"
                 if len(medians) == 2 else "n/a"))
        fcp = [r["fcp_ms"] for s in STACKS for r in ok[s] if r["fcp_ms"] is not None]
        print(f"FCP distinct values: {len(set(fcp))} of {len(fcp)} (1 ms steps); "
              f"FVC distinct values: {len(set(fvc))} of {len(fvc)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    from testbed.host import runstate
    try:
        main()
    finally:
        runstate.release()
