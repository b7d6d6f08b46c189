"""`testbed validate servers`: the paper's server-parity check.

Both replay stacks serve the same single files (10 KB, 100 KB, 1 MB, 10 MB by
default, from a recording made on the fly) to the same client, Chromium as
the testbed user inside `mm-delay 5` (10 ms RTT, no loss, no rate limit).
Each file is downloaded 31 times per stack; a download's time is Resource
Timing's responseEnd - requestStart. The check passes when, at every size,
the medians of the two stacks differ by at most 5 %.

Fairness choices:
- Every download runs in a fresh browser context (its own connections, cache
  and TLS session cache), from a page on another origin and IP (no HTTP/2
  connection coalescing): each file goes over a new connection that has just
  finished its handshake, as the first resources of a page load do. Reusing
  one connection would let the congestion window of earlier downloads (and
  each stack's idle-restart rules) decide the outcome instead of the servers.
- The handshake is not in the measured time (requestStart is after it):
  QUIC's 1-RTT versus TCP+TLS's 2-RTT setup is a protocol property that the
  page-load experiments measure, not a server-implementation difference.
- Both transports get the same congestion control settings: CUBIC, initial
  window 10 packets, no pacing (Linux TCP with CUBIC does not pace without
  the fq qdisc, which this kernel lacks), so a gap means the servers, not
  their tuning, differ.
- Sizes are interleaved within each stack's run so drift hits all sizes alike.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from testbed import recording as rec
from testbed.errors import TestbedError
from testbed.replay.browser import CDPError, Chromium
from testbed.replay.env import ReplayEnv
from testbed.replay.synthetic import exchange, write
from testbed.runstate import current
from testbed.topology import ReplayTopology

PAGE_HOST, FILE_HOST = "page.parity.test", "files.parity.test"
PAGE_IP, FILE_IP = "192.0.2.80", "192.0.2.81"
SIZES = (10_000, 100_000, 1_000_000, 10_000_000)
RUNS = 31
RTT_MS = 10
MAX_GAP = 0.05
ROUNDS = 8
H3SERVER_PARITY_ARGS = ("--cc", "cubic", "--initial-cwnd-packets", "10", "--pacing", "off",
                        "--max-udp-payload", "1472", "--gso", "on")
TCP_CONGESTION_CONTROL = "cubic"
PROTOCOL = {"tcp": "h2", "quic": "h3"}


def label(size: int) -> str:
    for unit, div in (("MB", 1_000_000), ("KB", 1_000)):
        if size >= div and size % div == 0:
            return f"{size // div} {unit}"
    return f"{size} B"


def file_target(size: int) -> str:
    return f"/file-{size}.bin"


def make_recording(out_dir: Path, sizes=SIZES) -> Path:
    """A page origin and a file origin; files of random (incompressible) bytes."""
    rnd = random.Random(2019)
    cors = (("access-control-allow-origin", "*"), ("timing-allow-origin", "*"),
            ("cache-control", "no-store"))
    page = b'<!doctype html><title>server parity</title><link rel="icon" href="data:,"><p>parity'

    exchanges = [exchange(f"https://{PAGE_HOST}/", PAGE_IP, page, headers=cors[2:])]
    for size in sizes:
        exchanges.append(exchange(f"https://{FILE_HOST}{file_target(size)}", FILE_IP,
                                  rnd.randbytes(size), "application/octet-stream",
                                  headers=cors))
    return write(out_dir, "server-parity", f"https://{PAGE_HOST}/", exchanges)


FETCH_JS = """(async () => {
  const url = %s;
  const r = await fetch(url, {cache: "no-store"});
  const n = (await r.arrayBuffer()).byteLength;
  let e;
  for (let i = 0; i < 100 && !e; i++) {
    e = performance.getEntriesByName(url)[0];
    if (!e) await new Promise(ok => setTimeout(ok, 10));
  }
  return {status: r.status, bytes: n, protocol: e ? e.nextHopProtocol : null,
          ms: e ? e.responseEnd - e.requestStart : null};
})()"""


@dataclass
class StackResult:
    stack: str
    times_ms: dict[int, list[float]] = field(default_factory=dict)
    startup_s: float = 0.0
    misses: int = 0
    retries: int = 0
    """Downloads redone after Chromium reported a network change."""

    def median(self, size: int) -> float:
        return statistics.median(self.times_ms[size])


def check_congestion_control() -> None:
    allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().split()
    if TCP_CONGESTION_CONTROL not in allowed:
        raise TestbedError(
            f"{TCP_CONGESTION_CONTROL} is not an allowed congestion control ({' '.join(allowed)}),"
            f" so the server namespace cannot use it; run `make setup` (or sysctl -w "
            f"net.ipv4.tcp_allowed_congestion_control='reno cubic bbr')")


def rounds_of(runs: int, rounds: int) -> list[int]:
    """Downloads per size in each round: `runs` spread as evenly as possible."""
    rounds = max(1, min(rounds, runs))
    return [runs // rounds + (1 if r < runs % rounds else 0) for r in range(rounds)]


def measure(recording: rec.Recording, stacks, sizes, runs: int, rtt_ms: int, rounds: int,
            progress=None) -> dict[str, StackResult]:
    """All downloads, the stacks taking turns in rounds (first A then B, then B then A,
    ...) so that load or drift over time hits both alike; one stack runs at a time."""
    results = {s: StackResult(s, {size: [] for size in sizes}) for s in stacks}
    with ReplayTopology(recording.ips) as topo:
        topo.server.sysctl("net.ipv4.tcp_congestion_control", TCP_CONGESTION_CONTROL)
        for r, n in enumerate(rounds_of(runs, rounds)):
            order = list(stacks) if r % 2 == 0 else list(reversed(stacks))
            for stack in order:
                _round(recording, topo, results[stack], sizes, n, rtt_ms, f"r{r}", progress)
    return results


def _round(recording, topo, result: StackResult, sizes, n: int, rtt_ms: int, tag: str,
           progress) -> None:
    stack = result.stack
    with ReplayEnv(recording, stack, topology=topo,
                   h3server_args=H3SERVER_PARITY_ARGS if stack == "quic" else ()) as env:
        result.startup_s = max(result.startup_s, env.startup_seconds or 0.0)
        before = env.summary()
        with Chromium(env.client_netns, env.chromium_flags(),
                      wrap=["mm-delay", str(rtt_ms // 2)]) as browser:
            _settle(browser, env, stack, sizes, tag)
            for i in range(n):
                for size in sizes:
                    result.times_ms[size].append(
                        _retrying(browser, env, stack, size, f"{tag}-{i}", result))
                    if progress:
                        progress(stack)
        env.check_alive()
        time.sleep(0.1)  # h3server writes its summary at most every 50 ms
        after = env.summary()
    misses = after["misses"] - before["misses"]
    result.misses += misses
    if misses:
        raise TestbedError(f"{stack}: {misses} replay misses during the parity check: "
                           f"{', '.join(after['miss_urls'][-3:])}")


NETWORK_ERRORS = ("ERR_NETWORK_CHANGED", "Failed to fetch")
SETTLE_S = 3.0


def _retrying(browser: Chromium, env: ReplayEnv, stack: str, size: int, tag: str,
              result: StackResult | None = None) -> float:
    """A download, redone (at most 4 times) if Chromium reports a network change:
    it does while Mahimahi's interfaces settle (IPv6 link-local addresses) just after
    start. The redone download is as clean as the first; nothing else is retried."""
    for attempt in range(5):
        try:
            return _download(browser, env, stack, size, f"{tag}-{attempt}")
        except CDPError as e:
            if not any(x in str(e) for x in NETWORK_ERRORS) or attempt == 4:
                raise
            if result is not None:
                result.retries += 1
            time.sleep(0.2)
    raise AssertionError("unreachable")


def _settle(browser: Chromium, env: ReplayEnv, stack: str, sizes, tag: str) -> None:
    """Uncounted downloads of every size until the browser has run SETTLE_S seconds."""
    started = time.monotonic()
    i = 0
    while True:
        for size in sizes:
            _retrying(browser, env, stack, size, f"{tag}-warm{i}")
        i += 1
        if time.monotonic() - started >= SETTLE_S:
            return


def _download(browser: Chromium, env: ReplayEnv, stack: str, size: int, tag: str) -> float:
    page = browser.new_page(isolated=True)
    try:
        page.navigate(f"https://{PAGE_HOST}/")
        url = f"https://{FILE_HOST}{file_target(size)}?{tag}"
        got = page.evaluate(FETCH_JS % json.dumps(url), timeout=120)
    finally:
        page.close()
    if got["status"] != 200 or got["bytes"] != size:
        env.check_alive()
        raise TestbedError(f"{stack}: {url} gave status {got['status']}, {got['bytes']} bytes")
    if got["protocol"] != PROTOCOL[stack]:
        raise TestbedError(f"{stack}: {url} went over {got['protocol']!r}, "
                           f"expected {PROTOCOL[stack]}")
    return float(got["ms"])


def gap(tcp_ms: float, quic_ms: float) -> float:
    """Relative difference of QUIC's median to TCP's (negative: QUIC faster)."""
    return (quic_ms - tcp_ms) / tcp_ms


def table(results: dict[str, StackResult], sizes, max_gap: float) -> tuple[Table, bool]:
    t = Table(title=f"Server parity: median download time (ms), {RUNS_LABEL(results)}",
              title_justify="left")
    t.add_column("size", justify="right")
    for stack in results:
        t.add_column(f"{stack} ({PROTOCOL[stack]})", justify="right")
    both = {"tcp", "quic"} <= set(results)
    if both:
        t.add_column("gap (quic vs tcp)", justify="right")
        t.add_column(f"|gap| <= {max_gap:.0%}", justify="center")
    ok = True
    for size in sizes:
        row = [label(size)] + [f"{results[s].median(size):.2f}" for s in results]
        if both:
            g = gap(results["tcp"].median(size), results["quic"].median(size))
            passed = abs(g) <= max_gap
            ok &= passed
            row += [f"{g:+.1%}", "[green]yes[/green]" if passed else "[red]NO[/red]"]
        t.add_row(*row)
    return t, ok


def RUNS_LABEL(results) -> str:  # noqa: N802
    n = {len(v) for r in results.values() for v in r.times_ms.values()}
    return f"{'/'.join(map(str, sorted(n)))} downloads per size and stack"


@click.command("servers")
@click.option("--runs", default=RUNS, show_default=True, help="Downloads per size and stack.")
@click.option("--rtt", "rtt_ms", default=RTT_MS, show_default=True, help="RTT in ms (mm-delay).")
@click.option("--size", "sizes", multiple=True, type=int,
              help="File size in bytes (repeatable); default 10 KB, 100 KB, 1 MB, 10 MB.")
@click.option("--stack", "stacks", multiple=True, type=click.Choice(["tcp", "quic"]),
              help="Run only this stack (repeatable; the gap needs both).")
@click.option("--rounds", default=ROUNDS, show_default=True,
              help="The stacks take turns this many times (each turn restarts the servers "
                   "and the browser).")
@click.option("--max-gap", default=MAX_GAP, show_default=True, help="Allowed relative gap.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write every download time to this JSON file.")
def validate_servers(runs, rtt_ms, sizes, stacks, rounds, max_gap, json_out):
    """The paper's server-parity check: single files through nginx+uWSGI (HTTP/2)
    and h3server (HTTP/3) at 10 ms RTT; fails if the medians differ by more than 5 %."""
    sizes = tuple(sizes) or SIZES
    stacks = tuple(dict.fromkeys(stacks)) or ("tcp", "quic")
    check_congestion_control()
    console = Console(stderr=False)
    work = Path(tempfile.mkdtemp(prefix="parity-", dir=current().dir))
    work.chmod(0o755)
    try:
        recording = rec.load(make_recording(work, sizes))
        total = runs * len(sizes)
        done = dict.fromkeys(stacks, 0)
        t0 = time.monotonic()
        with console.status("starting") as status:

            def tick(stack: str) -> None:
                done[stack] += 1
                status.update("  ".join(f"{s}: {done[s]}/{total}" for s in stacks))

            results = measure(recording, stacks, sizes, runs, rtt_ms, rounds, tick)
        console.print(f"{len(stacks) * total} downloads in {time.monotonic() - t0:.0f} s "
                      f"({len(rounds_of(runs, rounds))} rounds per stack), 0 misses; servers "
                      f"ready in at most " + ", ".join(
                          f"{s} {r.startup_s:.2f} s" for s, r in results.items()))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    t, ok = table(results, sizes, max_gap)
    console.print(t)
    if json_out:
        json_out.write_text(json.dumps({"rtt_ms": rtt_ms, "runs": runs, "max_gap": max_gap,
                                        "results": [asdict(r) for r in results.values()]},
                                       indent=1))
    if not ok:
        raise TestbedError(f"server parity failed: a median gap exceeds {max_gap:.0%}")
