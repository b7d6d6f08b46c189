"""bench/cpu_budget: what a campaign trial costs the CPU against its wall time, per
network, on one lane. Needs root and `make setup`.

    bench/cpu_budget [--network NAME ...] [--runs R] [--site NAME] [--keep DIR]

For each network (default da2gc and mss) the bundled page with TCP+ and QUIC,
R runs (default 2: 4 trials) through `testbed run` (bench/chunks.py), while
/proc/stat is sampled (cpu_budget.Sampler). Per network it prints the trials'
wall time and PLT, the whole machine's busy CPU seconds per trial (the
campaign's start-up included), how busy the cores were inside the page loads
and outside them, and the wall time a trial could share: the share of the
machine's capacity a trial leaves idle, i.e. about how many trials the cores
could carry at once if CPU were the only limit (cores x wall / CPU).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from chunks import campaign, run_chunk


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", action="append", dest="networks")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--site", default="local-news")
    ap.add_argument("--keep", type=Path)
    a = ap.parse_args(argv)
    base = a.keep or Path(tempfile.mkdtemp(prefix="bench-cpu-budget-"))
    base.mkdir(parents=True, exist_ok=True)
    cores = len(os.sched_getaffinity(0))
    print(f"bench/cpu_budget: {a.site} x TCP+, QUIC x {a.runs} runs, one lane, {cores} cores; "
          f"results in {base}")
    print("  network  trials  ok  wall-s/trial  PLT med s  CPU-s/trial  busy in loads  "
          "busy outside  cores x wall / CPU")
    for network in a.networks or ["da2gc", "mss"]:
        c = campaign(base / f"{network}.toml", network, seed=1, site=a.site)
        ch = run_chunk(c, base / network, 1, a.runs)
        n = len(ch.rows)
        ok = [r for r in ch.rows if r["status"] == "ok"]
        b = ch.budget()
        wall_trial = statistics.mean(r["wall_s"] for r in ch.rows) if n else float("nan")
        plt = statistics.median(r["plt_ms"] for r in ok) / 1000 if ok else float("nan")
        cpu = ch.cpu_s / n if n else float("nan")
        print(f"  {network:7}  {n:6d}  {len(ok):2d}  {wall_trial:12.1f}  {plt:9.1f}  "
              f"{cpu:11.1f}  {b.share(cores, True):13.0%}  {b.share(cores, False):12.0%}  "
              f"{cores * ch.wall_s / ch.cpu_s:17.1f}", flush=True)


if __name__ == "__main__":
    main()
