"""bench/lanes: how many lanes leave the measurements unchanged, per network. Needs root
and `make setup`.

    bench/lanes [--network NAME ...] [--lanes N ...] [--rounds R] [--blocks B]
                [--site NAME] [--margin 0.02] [--keep DIR] [--no-store]

For each network (default the paper's four: dsl, lte, da2gc, mss), the same
campaign (the bundled page, TCP+ and QUIC) is measured with one lane and with
each N of --lanes (default 4), interleaved: R rounds (default 2), each running a
chunk of every lane count in a seeded random order (bench/chunks.py: `testbed run
--lanes N --runs ...`, each lane count adding runs to its own results). A chunk
of one lane runs B blocks (default 4, two trials each); a chunk of N lanes
B x ceil(sqrt(N)), at least N (a lane count's trials are cheaper, so it gets more
of them).

It prints per lane count: trials, trials per hour (stored trials over the
commands' wall time, start-up included), the speed-up over one lane, the
machine's CPU seconds per trial, and per metric (PLT, FVC) the shift against one
lane with its 90 % interval and the verdict of two one-sided tests at the margin
(`tost`): "equivalent", "different" or "inconclusive". The largest N that is
equivalent in both metrics (and every smaller N tried too) is stored for the
campaign key `lanes = "auto"` (testbed.campaign.plan.lanes; --no-store: not).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from chunks import Chunk, campaign, run_chunk
from scipy import stats

PAPER_NETWORKS = ("dsl", "lte", "da2gc", "mss")
METRICS = ("plt_ms", "fvc_ms")
ALPHA = 0.05


def centred_logs(rows: Sequence[Mapping], metric: str, centre: Mapping[str, float]
                 ) -> np.ndarray:
    """log(metric) of the ok rows minus the one-lane mean log of their setting (the
    settings' own difference is no noise of the comparison)."""
    return np.array([math.log(r[metric]) - centre[r["setting"]] for r in rows
                     if r["status"] == "ok" and r[metric] and r["setting"] in centre])


def centres(rows: Sequence[Mapping], metric: str) -> dict[str, float]:
    by: dict[str, list[float]] = {}
    for r in rows:
        if r["status"] == "ok" and r[metric]:
            by.setdefault(r["setting"], []).append(math.log(r[metric]))
    return {p: float(np.mean(v)) for p, v in by.items()}


def tost(one: np.ndarray, many: np.ndarray, margin: float = 0.02, alpha: float = ALPHA
         ) -> dict:
    """Two one-sided Welch t tests (TOST) of mean(many) - mean(one) on the log scale:
    "equivalent" when its (1 - 2 alpha) interval lies within ±log(1 + margin)
    (p_tost < alpha); otherwise "different" when the two-sided Welch test rejects 0 at
    alpha; otherwise "inconclusive" (as analysis.statistics.across.equivalence). shift and its
    interval as ratios - 1."""
    one, many = np.asarray(one, float), np.asarray(many, float)
    n1, n2 = len(one), len(many)
    if n1 < 2 or n2 < 2:
        return {"n_one": n1, "n_many": n2, "shift": math.nan, "low": math.nan,
                "high": math.nan, "p_tost": math.nan, "p_diff": math.nan,
                "verdict": "inconclusive"}
    d = many.mean() - one.mean()
    v1, v2 = one.var(ddof=1) / n1, many.var(ddof=1) / n2
    se = math.sqrt(v1 + v2)
    df = (v1 + v2) ** 2 / ((v1 ** 2 / (n1 - 1)) + (v2 ** 2 / (n2 - 1))) if se > 0 else n1 + n2 - 2
    bound = math.log1p(margin)
    if se == 0:
        p_tost = 0.0 if abs(d) < bound else 1.0
        p_diff = 1.0 if d == 0 else 0.0
        half = 0.0
    else:
        p_tost = max(stats.t.sf((d + bound) / se, df), stats.t.cdf((d - bound) / se, df))
        p_diff = 2 * stats.t.sf(abs(d) / se, df)
        half = stats.t.ppf(1 - alpha, df) * se
    verdict = ("equivalent" if p_tost < alpha else
               "different" if p_diff < alpha else "inconclusive")
    return {"n_one": n1, "n_many": n2, "shift": math.expm1(d), "low": math.expm1(d - half),
            "high": math.expm1(d + half), "p_tost": float(p_tost), "p_diff": float(p_diff),
            "verdict": verdict}


def largest_equivalent(verdicts: Mapping[int, Mapping[str, str]]) -> int:
    """The largest lane count equivalent to one lane in every metric, every smaller
    count tried being so too; 1 when none is."""
    best = 1
    for n in sorted(verdicts):
        if n == 1:
            continue
        if all(v == "equivalent" for v in verdicts[n].values()):
            best = n
        else:
            break
    return best


def blocks_of(lanes: int, blocks: int) -> int:
    """Blocks of a chunk of `lanes` lanes: B x ceil(sqrt(N)), at least one per lane."""
    return max(lanes, blocks * math.ceil(math.sqrt(lanes))) if lanes > 1 else blocks


def measure(network: str, counts: list[int], rounds: int, blocks: int, site: str,
            base: Path, seed: int) -> dict[int, list[Chunk]]:
    """The interleaved chunks of one network: lane count -> its chunks."""
    c = campaign(base / f"{network}.toml", network, seed, site)
    rng = random.Random(f"bench-lanes:{network}:{seed}")
    runs = dict.fromkeys(counts, 0)
    got: dict[int, list[Chunk]] = {n: [] for n in counts}
    for r in range(rounds):
        order = list(counts)
        rng.shuffle(order)
        for n in order:
            runs[n] += blocks_of(n, blocks)
            chunk = run_chunk(c, base / f"{network}-lanes-{n}", n, runs[n])
            got[n].append(chunk)
            print(f"  {network} round {r + 1}: {n} lane(s): {len(chunk.rows)} trials in "
                  f"{chunk.wall_s:.0f} s{' (stopped)' if chunk.stopped else ''}", flush=True)
            if chunk.stopped:
                return {n: chunks for n, chunks in got.items() if chunks}
    return got


def report(network: str, got: dict[int, list[Chunk]], margin: float) -> tuple[int, list[dict]]:
    """Print one network's table; the largest equivalent lane count and what was tried."""
    rows = {n: [r for ch in chunks for r in ch.rows] for n, chunks in got.items()}
    wall = {n: sum(ch.wall_s for ch in chunks) for n, chunks in got.items()}
    cpu = {n: sum(ch.cpu_s for ch in chunks) for n, chunks in got.items()}
    tph = {n: len(rows[n]) / wall[n] * 3600 if wall[n] else math.nan for n in rows}
    print(f"network {network}, margin ±{margin * 100:g} %:")
    print("  lanes  trials  ok  trials/h  speed-up  CPU-s/trial  wall-s/trial  "
          "PLT med ms  PLT vs 1 lane [90 % CI]          FVC vs 1 lane [90 % CI]")
    verdicts: dict[int, dict[str, str]] = {}
    tested = []
    if 1 not in rows or not rows[1]:
        print("  no trial of one lane: nothing to compare")
        return 1, []
    for n in sorted(rows):
        ok = [r for r in rows[n] if r["status"] == "ok"]
        cells, verdicts[n] = [], {}
        for m in METRICS:
            centre = centres(rows[1], m)
            t = tost(centred_logs(rows[1], m, centre), centred_logs(rows[n], m, centre),
                     margin)
            verdicts[n][m] = t["verdict"] if n != 1 else "equivalent"
            cells.append("(reference)" if n == 1 else
                         f"{t['shift'] * 100:+5.1f} % [{t['low'] * 100:+5.1f}, "
                         f"{t['high'] * 100:+5.1f}] {t['verdict']}")
        med = statistics.median(r["plt_ms"] for r in ok) if ok else math.nan
        n_trials = len(rows[n])
        print(f"  {n:5d}  {n_trials:6d}  {len(ok):2d}  {tph[n]:8.0f}  {tph[n] / tph[1]:7.2f}x"
              f"  {cpu[n] / max(n_trials, 1):11.1f}  {wall[n] / max(n_trials, 1):12.1f}"
              f"  {med:10.0f}  {cells[0]:<32} {cells[1]}")
        tested.append({"lanes": n, "trials": n_trials, "ok": len(ok),
                       "trials_per_hour": round(tph[n], 1),
                       "plt": verdicts[n]["plt_ms"], "fvc": verdicts[n]["fvc_ms"]})
    cores = len(os.sched_getaffinity(0))
    for n, chunks in sorted(got.items()):
        b = chunks[0].budget()
        for ch in chunks[1:]:
            b = b + ch.budget()
        print(f"  {n} lane(s): cores busy {b.share(cores, True):.0%} while a page loads, "
              f"{b.share(cores, False):.0%} otherwise ({cores} cores; bench/cpu_budget)")
    best = largest_equivalent(verdicts)
    print(f"  largest lane count equivalent to one lane: {best}")
    return best, tested


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", action="append", dest="networks")
    ap.add_argument("--lanes", action="append", type=int, dest="counts")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--site", default="local-news")
    ap.add_argument("--margin", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", type=Path, help="keep the results folders here")
    ap.add_argument("--no-store", action="store_true",
                    help='do not store the answer for lanes = "auto"')
    a = ap.parse_args(argv)
    networks = a.networks or list(PAPER_NETWORKS)
    counts = sorted({1, *(a.counts or [4])})
    if any(not 1 <= n <= 16 for n in counts):
        ap.error("--lanes: 1 to 16")
    base = a.keep or Path(tempfile.mkdtemp(prefix="bench-lanes-"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"bench/lanes: {a.site} x TCP+, QUIC; lanes {counts}; {a.rounds} rounds of "
          f"{a.blocks} blocks (x ceil(sqrt(N)) for N lanes); results in {base}", flush=True)
    from testbed.campaign.plan import lanes
    from testbed.formats.profiles import load_network

    for network in networks:
        got = measure(network, counts, a.rounds, a.blocks, a.site, base, a.seed)
        best, tested = report(network, got, a.margin)
        if not a.no_store and tested:  # nothing compared: nothing to store
            path = lanes.store(load_network(network), best, a.margin, tested)
            print(f"  stored for lanes = \"auto\": {path}")


if __name__ == "__main__":
    main()
