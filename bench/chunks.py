"""A campaign measured in chunks by `testbed run`, with the machine's CPU time of each
chunk: what bench/lanes and bench/cpu_budget measure with.

    c = campaign(folder / "c.toml", "da2gc", seed=1)
    chunk = run_chunk(c, folder / "out", lanes=4, runs=8)   # runs 0..7, those not stored
    chunk.rows, chunk.wall_s, chunk.cpu_s, chunk.budget()

A chunk is one `testbed run CAMPAIGN --runs R --lanes N --out DIR`: it measures the
runs of the seeded plan up to R that DIR does not hold yet, so calling it again with
a larger R adds runs to the same results (the plan of the first runs does not
depend on R). The machine's busy CPU time is sampled from /proc/stat while it runs
(cpu_budget.Sampler).
"""

from __future__ import annotations

import datetime as dt
import signal
import sqlite3
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import cpu_budget

from testbed.host.paths import ROOT

PROTOCOLS = ("tcp-plus", "quic")
"""TCP+ and QUIC: the issue's two settings for the bench."""


def campaign(path: Path, network: str, seed: int, site: str = "local-news",
             protocols: tuple[str, ...] = PROTOCOLS) -> Path:
    path.write_text(
        f'description = "bench: {site} x {network}"\n'
        f'sites = ["{site}"]\nnetworks = ["{network}"]\n'
        f"protocols = {list(protocols)!r}\nruns = 1\ntimeout_s = 120\nretries = 1\n"
        f"keep_video = false\nseed = {seed}\n".replace("'", '"'))
    return path


def read_rows(db: Path) -> list[dict]:
    if not db.exists():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("SELECT * FROM trials")]
    finally:
        con.close()


def epoch(iso: str) -> float:
    return dt.datetime.fromisoformat(iso).timestamp()


@dataclass
class Chunk:
    lanes: int
    rows: list[dict]
    """The rows this chunk stored."""
    wall_s: float
    """The command's wall time (its start-up included)."""
    cpu_s: float
    """The whole machine's busy CPU seconds while it ran."""
    samples: cpu_budget.Samples
    offset: float
    """time.time() - time.monotonic() when it started (the rows' times are epoch)."""
    stopped: bool = False
    """Interrupted (Ctrl-C): the rows stored until then."""

    def budget(self) -> cpu_budget.Budget:
        """CPU and wall time inside the trials' page loads (from each row's start to its
        PLT) and outside them, over the chunk."""
        windows = []
        for r in self.rows:
            if r["status"] == "ok" and r["plt_ms"] is not None:
                a = epoch(r["started_at"]) - self.offset
                windows.append((a, a + r["plt_ms"] / 1000))
        merged: list[tuple[float, float]] = []  # lanes' loads overlap: one window each
        for a, b in sorted(windows):
            if merged and a <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
            else:
                merged.append((a, b))
        return self.samples.budget(self.samples.t[0], self.samples.t[-1], merged)


def run_chunk(campaign_file: Path, out: Path, lanes: int, runs: int) -> Chunk:
    argv = [str(ROOT / ".venv/bin/testbed"), "run", str(campaign_file), "--out", str(out),
            "--runs", str(runs), "--lanes", str(lanes)]
    before = {r["trial_id"] for r in read_rows(out / "trials.sqlite")}
    offset = time.time() - time.monotonic()
    t0 = time.monotonic()
    stopped = False
    with cpu_budget.Sampler(every=0.05) as s:
        p = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL)
        try:
            if p.wait() != 0:
                raise subprocess.CalledProcessError(p.returncode, argv)
        except KeyboardInterrupt:  # stopped: the campaign too, cleanly; its rows count
            p.send_signal(signal.SIGINT)
            p.wait()
            stopped = True
    wall = time.monotonic() - t0
    samples = s.samples()
    rows = [r for r in read_rows(out / "trials.sqlite") if r["trial_id"] not in before]
    return Chunk(lanes, rows, wall, samples.busy[-1] - samples.busy[0], samples, offset,
                 stopped)
