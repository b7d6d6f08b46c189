"""bench/scale: the smoke campaign scaled up, on one worker and on a local Dask
cluster of N workers: throughput, efficiency, and whether PLT stays the same.
Needs root and `make setup`.

    bench/scale [--runs R] [--workers N] [--network NAME] [--keep DIR]

The smoke campaign (the bundled site, the five protocol settings) with R runs
(default 8: 40 trials in 8 blocks of 5), once with `testbed run` as it is (one
worker, in its own process) and once with `--workers N` (default 2). For each:
trials per hour (stored trials over the command's wall time, which includes the
cluster's start), the efficiency (throughput with N workers over N times the
throughput with one), and PLT medians overall and per setting, with the
Mann-Whitney U test of the two PLT samples. On one machine the workers share its
cores: efficiency below 1 there is contention, not the cluster's cost.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from scipy.stats import mannwhitneyu

from testbed.host.paths import ROOT

PROTOCOLS = ["tcp", "tcp-plus", "tcp-plus-bbr", "quic", "quic-bbr"]


def campaign(path: Path, runs: int, network: str) -> Path:
    path.write_text(
        f'description = "bench/scale: smoke x {runs} runs"\n'
        f'sites = ["local-news"]\nnetworks = ["{network}"]\n'
        f"protocols = {PROTOCOLS!r}\nruns = {runs}\ntimeout_s = 60\nretries = 1\n"
        "keep_video = false\nseed = 1\n".replace("'", '"'))
    return path


def run(campaign_file: Path, out: Path, workers: int) -> tuple[float, list[dict]]:
    argv = [str(ROOT / ".venv/bin/testbed"), "run", str(campaign_file), "--out", str(out)]
    if workers > 1:
        argv += ["--workers", str(workers)]
    t0 = time.monotonic()
    subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    db = sqlite3.connect(out / "trials.sqlite")
    db.row_factory = sqlite3.Row
    try:
        rows = [dict(r) for r in db.execute("SELECT * FROM trials")]
    finally:
        db.close()
    return wall, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--network", default="dsl")
    ap.add_argument("--keep", type=Path, help="keep the results folders here")
    a = ap.parse_args()
    base = a.keep or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    base.mkdir(parents=True, exist_ok=True)
    c = campaign(base / "scale.toml", a.runs, a.network)
    got = {}
    for n in (1, a.workers):
        wall, rows = run(c, base / f"workers-{n}", n)
        got[n] = (wall, rows)
    print(f"bench/scale: local-news x {a.network} x {len(PROTOCOLS)} settings x {a.runs} runs "
          f"= {a.runs * len(PROTOCOLS)} trials; results in {base}")
    tph = {}
    for n, (wall, rows) in got.items():
        ok = [r for r in rows if r["status"] == "ok"]
        tph[n] = len(rows) / wall * 3600
        workers = sorted({r["worker"] for r in rows})
        print(f"  {n} worker(s): {len(rows)} trials ({len(ok)} ok) in {wall:6.0f} s = "
              f"{tph[n]:5.0f} trials/hour; PLT median {statistics.median(r['plt_ms'] for r in ok):5.0f} ms; "
              f"rows by {', '.join(workers)}")
    n = a.workers
    print(f"  speed-up {tph[n] / tph[1]:.2f}x, efficiency {tph[n] / tph[1] / n:.0%} "
          f"({n} workers on {_cores()} cores)")
    print("  PLT median per setting (ms):   " + "  ".join(f"{p:>12}" for p in PROTOCOLS))
    for k, (_, rows) in got.items():
        med = [statistics.median([r["plt_ms"] for r in rows
                                  if r["setting"] == p and r["status"] == "ok"] or [float("nan")])
               for p in PROTOCOLS]
        print(f"    {k} worker(s):{' ' * 18}" + "  ".join(f"{m:12.0f}" for m in med))
    one = [r["plt_ms"] for r in got[1][1] if r["status"] == "ok"]
    many = [r["plt_ms"] for r in got[n][1] if r["status"] == "ok"]
    p = mannwhitneyu(one, many).pvalue
    print(f"  PLT 1 vs {n} workers: Mann-Whitney U p = {p:.3f} "
          f"({'no difference shown' if p >= 0.01 else 'DIFFERENT at p < 0.01'})")


def _cores() -> int:
    import os
    return len(os.sched_getaffinity(0))


if __name__ == "__main__":
    main()
