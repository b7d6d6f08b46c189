"""bench/quic-rtt: the RTT samples and page load times of h3server builds, side by side.
Needs root and `make setup`.

    bench/quic-rtt [--loads N] [--site NAME] [--network NAME] [--protocol NAME]
                   [--json FILE] H3SERVER [H3SERVER ...]

For each h3server binary (e.g. one on quiche 0.24.6 and one on 0.30): N page loads of
one bundled recording by the testbed's session (no video) over one network profile
and one QUIC setting, each load's connections qlogged by h3server. Per binary: the
PLTs (median) and the RTT samples quiche reported in its recovery metrics events
(latest_rtt: max, p95, median; min_rtt; smoothed_rtt: max), and the largest RTT the
path can show (its minimum RTT plus both queues full) for scale. Binaries take turns
in blocks of --block loads, so drift over time does not favour one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from drivers import FixedDriver

from testbed.errors import InputError
from testbed.formats import recording as rec
from testbed.host import safefs
from testbed.host.runstate import current
from testbed.host.topology import ReplayTopology
from testbed.measure import browsertime, metrics
from testbed.measure.browser_process import BrowsertimeProcess
from testbed.protocols.apply import applied, server_options
from testbed.replay.env import ReplayEnv
from testbed.validate import evidence


class QlogDriver(FixedDriver):
    """Fixed flags; after each load, the qlogs written since belong to that load."""

    def __init__(self, env: ReplayEnv, extra: list[str], qlog_dir: Path):
        super().__init__(env, extra)
        self.qlog_dir = qlog_dir
        self.seen: set[str] = set()
        self.per_load: list[list[Path]] = []

    def after_load(self, k, measured):
        new = sorted(p for p in self.qlog_dir.iterdir() if p.name not in self.seen)
        self.seen |= {p.name for p in new}
        self.per_load.append(new)


def rtt_samples(paths: list[Path]) -> dict[str, list[float]]:
    """latest_rtt, min_rtt, smoothed_rtt (ms) of every recovery metrics event."""
    out: dict[str, list[float]] = {"latest_rtt": [], "min_rtt": [], "smoothed_rtt": []}
    for p in paths:
        for ev in evidence.parse_qlog(safefs.read_user_text(p)):
            if not str(ev.get("name", "")).endswith("metrics_updated"):
                continue
            data = ev.get("data") or {}
            for key, xs in out.items():
                if isinstance(data.get(key), (int, float)):
                    xs.append(float(data[key]))
    return out


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


def block(binary: str, r: rec.Recording, setting: str, chain, n: int, work: Path) -> dict:
    """n loads with one h3server binary: PLTs and per-load RTT samples."""
    import testbed.replay.env as env_mod
    # the binary under test, for this block only
    env_mod.QUIC_SERVERS = {**env_mod.QUIC_SERVERS, "h3server": Path(binary)}
    opts = server_options(setting)
    work.mkdir(mode=0o755)
    qdir = safefs.user_dir(work / "qlog")
    out = {"plt_ms": [], "loads": []}
    with ExitStack() as exits:
        topo = exits.enter_context(ReplayTopology(r.ips))
        exits.enter_context(applied(opts, topo))
        env = exits.enter_context(ReplayEnv(r, "quic", topology=topo,
                                            h3server_args=[*opts.h3server_args,
                                                           "--qlog-dir", str(qdir)]))
        driver = QlogDriver(env, list(opts.chromium_flags), qdir)
        s = BrowsertimeProcess(r.url, browsertime.BrowsertimeOptions(iterations=n, video=False),
                    work / "session", netns=env.client_netns, wrap=chain.argv([]),
                    driver=driver)
        outcomes = s.run()
        env.check_alive()
    for o, files in zip(outcomes, driver.per_load, strict=False):
        m = metrics.extract(o.result, None) if o else None
        if m is None or m.plt_ms is None:
            raise SystemExit(f"a load failed with {binary}: {o}")
        out["plt_ms"].append(m.plt_ms)
        out["loads"].append(rtt_samples(files))
    s.remove()
    shutil.rmtree(work, ignore_errors=True)
    return out


def summarise(name: str, runs: dict, path_max_ms: float) -> None:
    lat = [x for load in runs["loads"] for x in load["latest_rtt"]]
    srtt = [x for load in runs["loads"] for x in load["smoothed_rtt"]]
    mins = [x for load in runs["loads"] for x in load["min_rtt"]]
    over = sum(x > path_max_ms for x in lat)
    print(f"{name}\n  loads {len(runs['plt_ms'])}, PLT median {statistics.median(runs['plt_ms']):.0f} ms "
          f"(min {min(runs['plt_ms']):.0f}, max {max(runs['plt_ms']):.0f})\n"
          f"  latest_rtt: {len(lat)} samples, max {max(lat):.1f}, p95 {pct(lat, 0.95):.1f}, "
          f"median {statistics.median(lat):.1f} ms; {over} above {path_max_ms:.0f} ms\n"
          f"  min_rtt min {min(mins):.1f} ms; smoothed_rtt max {max(srtt):.1f} ms\n"
          f"  per load max latest_rtt: "
          + " ".join(f"{max(load['latest_rtt'], default=0):.0f}" for load in runs["loads"]))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="bench/quic-rtt")
    ap.add_argument("binaries", nargs="+", help="h3server binaries to compare")
    ap.add_argument("--loads", type=int, default=10, help="page loads per binary (default 10)")
    ap.add_argument("--block", type=int, default=5, help="loads per turn (default 5)")
    ap.add_argument("--site", default="local-news")
    ap.add_argument("--network", default="dsl")
    ap.add_argument("--protocol", default="quic")
    ap.add_argument("--json", type=Path, help="write every sample here")
    a = ap.parse_args(argv)
    if a.json:
        try:
            safefs.check_out_file(a.json, "--json")  # root writes it: checked first
        except InputError as e:
            print(f"{ap.prog}: error: {e}", file=sys.stderr)
            raise SystemExit(2) from None
    if os.geteuid() != 0:
        raise SystemExit("bench/quic-rtt needs root (namespaces); run with sudo")
    problem = browsertime.missing()
    if problem:
        raise SystemExit(problem)
    from testbed.emulate import calibrate
    from testbed.formats.profiles import load_network
    r = rec.load(a.site)
    profile = load_network(a.network)
    path_max = profile.min_rtt_ms + 2 * profile.buffer_ms
    work = Path(tempfile.mkdtemp(prefix="bench-rtt-", dir=current().dir))
    os.chmod(work, 0o755)
    print(f"page {r.url} ({len(r.exchanges)} requests), network {a.network}, setting "
          f"{a.protocol}, {a.loads} loads per binary in turns of {a.block}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    runs = {b: {"plt_ms": [], "loads": []} for b in a.binaries}
    try:
        chain = calibrate.chain_for(profile, work)
        turn = 0
        while any(len(v["plt_ms"]) < a.loads for v in runs.values()):
            for b in a.binaries:
                n = min(a.block, a.loads - len(runs[b]["plt_ms"]))
                if n > 0:
                    got = block(b, r, a.protocol, chain, n, work / f"turn-{turn}")
                    runs[b]["plt_ms"] += got["plt_ms"]
                    runs[b]["loads"] += got["loads"]
                    turn += 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for b, v in runs.items():
        summarise(b, v, path_max)
    if a.json:
        safefs.write_out_file(a.json, json.dumps(runs), "--json")


if __name__ == "__main__":
    main()
