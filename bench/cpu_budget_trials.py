"""bench/cpu_budget: what a campaign trial costs the CPU against its wall time, per
network, on one lane. Needs root and `make setup`.

    bench/cpu_budget [--network NAME ...] [--runs R] [--site NAME] [--keep DIR]
                     [--pipeline lean|legacy ...] [--protocol NAME ...]

For each network (default da2gc and mss) the bundled page with TCP+ and QUIC,
R runs (default 2: 4 trials) through `testbed run` (bench/chunks.py), while
/proc/stat is sampled (cpu_budget.Sampler). Per network it prints the trials'
wall time and PLT, the whole machine's busy CPU seconds per trial (the
campaign's start-up included), how busy the cores were inside the page loads
and outside them, and the wall time a trial could share: the share of the
machine's capacity a trial leaves idle, i.e. about how many trials the cores
could carry at once if CPU were the only limit (cores x wall / CPU).

`--pipeline` (repeatable; default lean): the campaign's `video_pipeline`. With two,
each run is measured with each pipeline in turn (run r: one chunk of TCP+ and QUIC
per pipeline, the order alternating from run to run), so both share the machine's
conditions; one line per network and pipeline, and the lean one's CPU per trial as a
share of legacy's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from chunks import PROTOCOLS, Chunk, campaign, run_chunk


def with_pipeline(path: Path, pipeline: str) -> Path:
    path.write_text(path.read_text() + f'video_pipeline = "{pipeline}"\n')
    return path


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", action="append", dest="networks")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--site", default="local-news")
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--pipeline", action="append", dest="pipelines",
                    choices=("lean", "legacy"))
    ap.add_argument("--protocol", action="append", dest="protocols",
                    help="protocol settings (repeatable; default tcp-plus and quic)")
    a = ap.parse_args(argv)
    pipelines = list(dict.fromkeys(a.pipelines or ["lean"]))
    base = a.keep or Path(tempfile.mkdtemp(prefix="bench-cpu-budget-"))
    base.mkdir(parents=True, exist_ok=True)
    cores = len(os.sched_getaffinity(0))
    protocols = tuple(a.protocols or PROTOCOLS)
    print(f"bench/cpu_budget: {a.site} x {', '.join(protocols)} x {a.runs} runs, one lane, {cores} cores, "
          f"video {' and '.join(pipelines)}; results in {base}")
    print("  network  video    trials  ok  wall-s/trial  PLT med s  CPU-s/trial  "
          "busy in loads  busy outside  cores x wall / CPU")
    for network in a.networks or ["da2gc", "mss"]:
        chunks: dict[str, list[Chunk]] = {p: [] for p in pipelines}
        files = {p: with_pipeline(campaign(base / f"{network}-{p}.toml", network, seed=1,
                                           site=a.site, protocols=protocols), p) for p in pipelines}
        for run in range(1, a.runs + 1):  # run r of each pipeline, alternating the order
            for p in pipelines if run % 2 else reversed(pipelines):
                chunks[p].append(run_chunk(files[p], base / f"{network}-{p}", 1, run))
        cpu_of = {}
        for p in pipelines:
            cpu_of[p] = report(network, p, chunks[p], cores)
        if len(pipelines) == 2 and cpu_of["legacy"] > 0:
            print(f"  {network:7}  lean CPU per trial = {cpu_of['lean'] / cpu_of['legacy']:.0%} "
                  "of legacy's", flush=True)


def report(network: str, pipeline: str, chunks: list[Chunk], cores: int) -> float:
    """Print one line for a network's chunks of one pipeline; its CPU-s per trial."""
    rows = [r for ch in chunks for r in ch.rows]
    n = len(rows)
    ok = [r for r in rows if r["status"] == "ok"]
    b = chunks[0].budget()
    for ch in chunks[1:]:
        b = b + ch.budget()
    cpu_s, wall_s = sum(ch.cpu_s for ch in chunks), sum(ch.wall_s for ch in chunks)
    wall_trial = statistics.mean(r["wall_s"] for r in rows) if n else float("nan")
    plt = statistics.median(r["plt_ms"] for r in ok) / 1000 if ok else float("nan")
    cpu = cpu_s / n if n else float("nan")
    print(f"  {network:7}  {pipeline:7}  {n:6d}  {len(ok):2d}  {wall_trial:12.1f}  {plt:9.1f}  "
          f"{cpu:11.1f}  {b.share(cores, True):13.0%}  {b.share(cores, False):12.0%}  "
          f"{cores * wall_s / cpu_s:17.1f}", flush=True)
    return cpu


if __name__ == "__main__":
    main()
