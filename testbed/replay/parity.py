"""`testbed validate servers`: the paper's server-parity check.

Both replay stacks serve the same single files (10 KB, 100 KB, 1 MB, 10 MB by
default, from a recording made on the fly) to the same client, Chromium as
the testbed user inside `mm-link RATE RATE -- mm-delay 5` (10 ms RTT, no loss).
Each file is downloaded 31 times per stack; a download's time is Resource
Timing's responseEnd - requestStart. The check passes when, at every size,
the medians of the two stacks differ by at most 5 %.

The paper ran it without a rate limit. On a small machine that makes the
machine the bottleneck instead of a link, and the check then measures how
each transport copes with it rather than the servers. On 2 cores, 10 MB
without a rate limit moves at ~600 Mbit/s and loses packets in two places
no server controls: Mahimahi's TUN device queues (500 packets; they dropped
~10 % of unpaced TCP's segments in slow-start bursts) and Chromium's 2 MB
QUIC socket receive buffer (its network thread falls behind; 21,052
datagrams dropped in one check). Even without drops the client's QUIC stack
shows: it reads, decrypts and acknowledges ~20 us per packet (~50,000
packets/s, ~600 Mbit/s), so a 32-packet flight arriving at once is
acknowledged over ~0.65 ms (qlog: an ACK every 2 packets, 40 us apart),
while TCP's ACKs come from the client's kernel at once; each slow-start
round of QUIC then takes longer (+7 % at 1 MB without a rate limit, up to
+5.3 % at 100 KB behind a 400 Mbit/s link). h3server sends within ~10 us of each
ACK (median, qlog).

So the check puts a link of RATE Mbit/s in front of the delay: by default
100, 4 times the fastest network profile (DSL's 25 Mbit/s) and a sixth of
what the client's QUIC stack can take, so a flight reaches the browser over
a few ms and is acknowledged as it comes. mm-link's queue is unbounded and
the shells' TUN devices hold 10,000 packets: the link, not the CPU, is the
bottleneck, and nothing is lost. `--rate 0` runs the paper's condition
exactly (on this machine it fails at 10 MB and 1 MB, by +7 % each).

The link has a cost: mm-link delivers on 1 ms ticks, so a server answering
within the same tick as another looks just as fast. nginx+uWSGI answers a
request ~0.3 ms later than h3server (0.67 against 0.39 ms median, request to
first response byte at the server's veth); without the link that is 2-3 %
of a 10 KB download at 10 ms RTT, with it mostly invisible, as it is in
every shaped network profile.

The check counts what the path dropped (TUN queue drops, the browser's UDP
receive-buffer drops; server TCP retransmissions are shown too) and says so
when the "no loss" condition did not hold.

Fairness choices:
- Every download goes to a file origin this browser has not contacted yet,
  each on its own IP (so neither HTTP/2 nor QUIC pools it onto an existing
  connection), fetched from one page on yet another origin: each file goes
  over a new connection that has just finished its handshake, as the first
  resources of a page load do, without a TLS session to resume (nginx issues
  no tickets; session caches are per host). Reusing one connection would let
  the congestion window left by earlier downloads (and each stack's
  idle-restart rules) decide the outcome instead of the servers. (A fresh
  browser context per download would also give fresh connections, but
  starting and ending a renderer process around every download made the
  times far noisier on a 2-core machine.)
- The handshake is not in the measured time (requestStart is after it):
  QUIC's 1-RTT versus TCP+TLS's 2-RTT setup is a protocol property that the
  page-load experiments measure, not a server-implementation difference.
- Both transports get the same settings, so a gap means the servers, not
  their tuning, differ: CUBIC, initial window 32 packets (the paper's tuned
  TCP+ and QUIC, whose comparison is the central one), 1500-byte IP packets
  (h3server --max-udp-payload 1472, as TCP's 1448-byte segments),
  segmentation offload on both (the kernel's GSO for TCP, --gso on for
  h3server), and no pacing unless --pacing. Paced, the check compares the
  pacers too: Linux's internal TCP pacing against h3server's own (quiche
  paces only BBRv2), and h3server's is the slower in slow start (on this
  machine +6 % at 10 KB to 1 MB behind the 100 Mbit/s link, +20 % at 1 MB
  behind a 400 Mbit/s one): it spreads each flight over half of quiche's
  smoothed RTT, whose first sample (12.3 ms at 10 ms RTT, from qlog)
  includes the browser's handshake processing; Linux's first sample is the
  SYN's round trip, and its pacing lets through bursts of about a
  millisecond's worth of data. --pacing shows it.
- Chromium's TCP receive window may open as far as its QUIC flow-control
  windows (megabytes from the start). By default the kernel starts it at
  64 KB and grows it per round trip (Mahimahi's namespace copies the host's
  tcp_rmem), which throttled TCP, not the server, at 100 KB and 1 MB. The
  check raises it inside the innermost Mahimahi namespace it created.
- nginx sends no TLS session tickets (the replay never resumes sessions:
  fresh profiles), which would otherwise take two segments of TCP's initial
  window and push a 10 KB response into a second round trip.
- Why not 10 packets: with a 10-segment window nginx still spends three
  segments of the first flight on tiny records (its SETTINGS, the SETTINGS
  ACK when the client's SETTINGS arrives apart from its Finished, and the
  END_STREAM of a proxied response, always a separate empty DATA frame),
  and Linux does not grow the window on the ACK of the handshake flight
  (not window-limited), so a 10 KB response needs an eleventh segment about
  half the time: one more round trip. QUIC counts its window in bytes and
  coalesces frames into full packets. That is a property of nginx's HTTP/2
  over TCP at IW10, shown by `--initial-window 10`, not noise.
- The stacks take turns in rounds (ABBA order), each turn with freshly started
  servers and browser, and sizes are interleaved within a turn, so load and
  drift over time hit both stacks and all sizes alike. Each browser first
  downloads uncounted until it has run a few seconds (Chromium reports
  network changes while Mahimahi's interfaces settle).
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from testbed import proc, safefs
from testbed import recording as rec
from testbed.errors import TestbedError
from testbed.profiles import ProtocolProfile
from testbed.protocols.apply import ServerOptions, server_options
from testbed.replay.browser import CDPError, Chromium
from testbed.replay.env import ReplayEnv
from testbed.replay.synthetic import exchange, write
from testbed.runstate import current
from testbed.topology import ReplayTopology
from testbed.traces import fixed_rate, write_trace

PAGE_HOST, PAGE_IP = "page.parity.test", "192.0.2.80"
FIRST_FILE_IP = 100  # file hosts are on 192.0.2.100 and up, one IP each
WARM_PASSES = 2
SPARE_HOSTS = 2  # per size, for downloads redone after a network change
SIZES = (10_000, 100_000, 1_000_000, 10_000_000)
RUNS = 31
RTT_MS = 10
MAX_GAP = 0.05
RATE_MBIT = 100
ROUNDS = 8
INITIAL_WINDOW = 32


def settings(initial_window: int = INITIAL_WINDOW, pacing: bool = False,
             ) -> dict[str, ServerOptions]:
    """The two stacks' protocol settings: alike in all a setting can say (CUBIC, the
    initial window, pacing), with 1500-byte packets on both (h3server
    --max-udp-payload 1472, as TCP's 1448-byte segments) and segmentation offload on
    both (the kernel's GSO for TCP, --gso on for h3server)."""
    common = {"congestion_control": TCP_CONGESTION_CONTROL,
              "initial_window_packets": initial_window, "pacing": pacing}
    tcp = server_options(ProtocolProfile(name="parity-tcp", stack="tcp", **common))
    quic = server_options(ProtocolProfile(name="parity-quic", stack="quic",
                                          max_udp_payload=1472, **common))
    quic = replace(quic, h3server_args=(*quic.h3server_args, "--gso", "on"))
    return {"tcp": tcp, "quic": quic}


TCP_CONGESTION_CONTROL = "cubic"
PROTOCOL = {"tcp": "h2", "quic": "h3"}


def label(size: int) -> str:
    for unit, div in (("MB", 1_000_000), ("KB", 1_000)):
        if size >= div and size % div == 0:
            return f"{size // div} {unit}"
    return f"{size} B"


def file_target(size: int) -> str:
    return f"/file-{size}.bin"


def file_host(size_index: int, k: int, per_size: int) -> tuple[str, str]:
    """Host name and IP of the k-th origin serving the size_index-th size."""
    return (f"f{size_index}-{k}.parity.test",
            f"192.0.2.{FIRST_FILE_IP + size_index * per_size + k}")


def hosts_per_size(runs: int, rounds: int) -> int:
    """Fresh origins one browser needs per size: warm-ups, the largest round, spares."""
    return WARM_PASSES + max(rounds_of(runs, rounds)) + SPARE_HOSTS


def make_recording(out_dir: Path, sizes=SIZES, per_size: int = 1) -> Path:
    """A page origin, and per size `per_size` file origins (each on its own IP) serving
    that file: random, incompressible bytes."""
    if not 1 <= per_size * len(sizes) <= 254 - FIRST_FILE_IP:
        raise TestbedError(f"{per_size * len(sizes)} file hosts do not fit in "
                           f"192.0.2.{FIRST_FILE_IP}-254; use fewer --runs per round "
                           f"(more --rounds) or fewer sizes")
    rnd = random.Random(2019)
    cors = (("access-control-allow-origin", "*"), ("timing-allow-origin", "*"),
            ("cache-control", "no-store"))
    page = b'<!doctype html><title>server parity</title><link rel="icon" href="data:,"><p>parity'
    exchanges = [exchange(f"https://{PAGE_HOST}/", PAGE_IP, page, headers=cors[2:])]
    for i, size in enumerate(sizes):
        body = rnd.randbytes(size)
        for k in range(per_size):
            host, ip = file_host(i, k, per_size)
            exchanges.append(exchange(f"https://{host}{file_target(size)}", ip, body,
                                      "application/octet-stream", headers=cors))
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
    lost: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LOSS_COUNTERS, 0))
    """Packets lost on the path while this stack ran (see path_losses)."""

    def median(self, size: int) -> float:
        return statistics.median(self.times_ms[size])


def rounds_of(runs: int, rounds: int) -> list[int]:
    """Downloads per size in each round: `runs` spread as evenly as possible."""
    rounds = max(1, min(rounds, runs))
    return [runs // rounds + (1 if r < runs % rounds else 0) for r in range(rounds)]


def shells(rtt_ms: int, rate_mbit: int, workdir: Path) -> list[str]:
    """The Mahimahi shells around the browser: a link of rate_mbit each way with
    mm-link's default unbounded queues (none if 0), then half the RTT of delay each
    way. The link is outermost, next to the servers, as in a network profile."""
    delay = ["mm-delay", str(rtt_ms // 2)]
    if not rate_mbit:
        return delay
    trace = write_trace(workdir / f"{rate_mbit}mbit.trace", fixed_rate(rate_mbit))
    trace.chmod(0o644)
    return ["mm-link", str(trace), str(trace), "--", *delay]


def measure(recording: rec.Recording, stacks, sizes, runs: int, rtt_ms: int, rounds: int,
            initial_window: int = INITIAL_WINDOW, progress=None, rate_mbit: int = RATE_MBIT,
            pacing: bool = False, workdir: Path | None = None) -> dict[str, StackResult]:
    """All downloads, the stacks taking turns in rounds (first A then B, then B then A,
    ...) so that load or drift over time hits both alike; one stack runs at a time."""
    results = {s: StackResult(s, {size: [] for size in sizes}) for s in stacks}
    wrap = shells(rtt_ms, rate_mbit, workdir or recording.path.parent)
    options = settings(initial_window, pacing)
    with ReplayTopology(recording.ips) as topo:
        for r, n in enumerate(rounds_of(runs, rounds)):
            order = list(stacks) if r % 2 == 0 else list(reversed(stacks))
            for stack in order:
                _round(recording, topo, results[stack], sizes, n, wrap, f"r{r}", progress,
                       options[stack])
    return results


def _round(recording, topo, result: StackResult, sizes, n: int, wrap: list[str], tag: str,
           progress, opts: ServerOptions) -> None:
    stack = result.stack
    opts.apply(topo)
    retransmits_before = snmp(topo.server.exec(["cat", "/proc/net/snmp"]))["Tcp"]["RetransSegs"]
    with ReplayEnv(recording, stack, topology=topo, h3server_args=opts.h3server_args,
                   nginx_env=opts.nginx_env) as env:
        result.startup_s = max(result.startup_s, env.startup_seconds or 0.0)
        before = env.summary()
        with Chromium(env.client_netns, env.chromium_flags(), wrap=wrap) as browser:
            started = time.monotonic()
            open_receive_window(browser)
            deepen_tun_queues(browser)
            lost_before = path_losses(browser)  # e.g. packets sent while a shell started
            d = _Downloader(browser, env, stack, tag, result, sizes,
                            per_size=(len(recording.origins) - 1) // len(sizes))
            for _ in range(WARM_PASSES):  # uncounted: the new browser warms up
                for size in sizes:
                    d.download(size, counted=False)
            # Chromium reports network changes while Mahimahi's interfaces settle.
            time.sleep(max(0.0, SETTLE_S - (time.monotonic() - started)))
            for _ in range(n):
                for size in sizes:
                    result.times_ms[size].append(d.download(size))
                    if progress:
                        progress(stack)
            # Mahimahi's devices and the browser's namespace end with the browser.
            for key, value in path_losses(browser).items():
                result.lost[key] += value - lost_before[key]
        env.check_alive()
        time.sleep(0.1)  # h3server writes its summary at most every 50 ms
        after = env.summary()
    retransmits = snmp(topo.server.exec(["cat", "/proc/net/snmp"]))["Tcp"]["RetransSegs"]
    result.lost["tcp_retransmits"] += retransmits - retransmits_before
    misses = after["misses"] - before["misses"]
    result.misses += misses
    if misses:
        raise TestbedError(f"{stack}: {misses} replay misses during the parity check: "
                           f"{', '.join(after['miss_urls'][-3:])}")


CLIENT_TCP_RMEM = "4096 6291456 33554432"
CLIENT_INITRWND = 2000


def open_receive_window(browser: Chromium) -> None:
    """Let the browser's TCP receive window open as far as its QUIC flow-control
    windows (several MB from the start): a larger default receive buffer and an
    initial receive window route metric in the namespace Chromium runs in (the
    innermost Mahimahi shell's, made by this run and gone when the shell exits;
    it copied the host's defaults, which start TCP at a 64 KB window)."""
    ns = in_netns_of(browser.netns_pid())
    proc.run([*ns, "sysctl", "-q", "-w", f"net.ipv4.tcp_rmem={CLIENT_TCP_RMEM}"])
    for route in proc.output([*ns, "ip", "-4", "route", "show", "default"]).splitlines():
        proc.run([*ns, "ip", "route", "change", *route.split(), "initrwnd",
                  str(CLIENT_INITRWND)])


TUN_QUEUE = 10_000


def in_netns_of(pid: int) -> list[str]:
    """argv prefix running a command in the network namespace of process pid."""
    return ["nsenter", f"--net=/proc/{pid}/ns/net"]


def tun_links(ns: list[str], stats: bool = False) -> list[dict]:
    """The TUN devices (Mahimahi's) in a namespace, as `ip -j link` describes them."""
    return json.loads(proc.output([*ns, "ip", *(["-s"] if stats else []), "-j", "link",
                                   "show", "type", "tun"]) or "[]")


def deepen_tun_queues(browser: Chromium) -> None:
    """Let Mahimahi's TUN devices hold a 10 MB flight (10,000 packets instead of 500).
    A shell reads its TUN one packet per system call; a sender's burst at memory
    speed overflowed the 500-packet ring (10 % of unpaced TCP's segments without a
    rate limit): loss the check's conditions rule out. The devices live in the shells'
    namespaces, made by this run and gone with the browser."""
    for pid in browser.shell_netns_pids():
        ns = in_netns_of(pid)
        for link in tun_links(ns):
            proc.run([*ns, "ip", "link", "set", link["ifname"], "txqueuelen", str(TUN_QUEUE)])


LOSS_LABELS = {"tun_drops": "TUN queue drops", "udp_rcvbuf_drops": "UDP receive-buffer drops",
               "tcp_retransmits": "TCP retransmissions"}
"""Mahimahi's TUN devices dropped (queue full), the browser's namespace dropped as
its UDP receive buffers were full, the servers' TCP retransmitted."""
LOSS_COUNTERS = tuple(LOSS_LABELS)
DROPS = ("tun_drops", "udp_rcvbuf_drops")
"""The counters that are loss for sure (a TCP retransmission may be a tail loss
probe or a spurious timeout)."""
SHOWN = {"tcp": ("tun_drops", "tcp_retransmits"), "quic": DROPS}


def snmp(argv: list[str]) -> dict[str, dict[str, int]]:
    """/proc/net/snmp as read by argv (`cat` inside some namespace): {"Tcp": {...}}."""
    return parse_snmp(proc.output(argv))


def parse_snmp(text: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    lines = text.splitlines()
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        group, _, keys = names.partition(":")
        out[group] = dict(zip(keys.split(), map(int, values.partition(":")[2].split()),
                              strict=False))
    return out


def tun_drops(ns: list[str]) -> int:
    """TX drops of the TUN devices in a namespace: queue overflows."""
    return sum(link.get("stats64", {}).get("tx", {}).get("dropped", 0)
               for link in tun_links(ns, stats=True))


def path_losses(browser: Chromium) -> dict[str, int]:
    """Drops so far in this browser's Mahimahi shells (made with the browser): in the
    TUN devices of every shell's namespace (the client namespace holds the outermost
    shell's), and in the browser's UDP sockets (its namespace is the innermost). The
    server's TCP retransmissions are counted around the round."""
    shells = [in_netns_of(pid) for pid in browser.shell_netns_pids()]
    udp = snmp([*shells[-1], "cat", "/proc/net/snmp"])["Udp"]
    return {"tun_drops": sum(tun_drops(ns) for ns in shells),
            "udp_rcvbuf_drops": udp["RcvbufErrors"]}


NETWORK_ERRORS = ("ERR_NETWORK_CHANGED", "Failed to fetch")
SETTLE_S = 3.0


class _Downloader:
    """One page in one browser; each download goes to a file host (and IP) not used
    before in this browser, so over a new connection."""

    def __init__(self, browser: Chromium, env: ReplayEnv, stack: str, tag: str,
                 result: StackResult, sizes, per_size: int):
        self.browser, self.env, self.stack, self.tag = browser, env, stack, tag
        self.result = result
        self.sizes = list(sizes)
        self.per_size = per_size
        self.used = dict.fromkeys(self.sizes, 0)
        self.page = browser.new_page()
        for attempt in range(5):
            try:
                self.page.navigate(f"https://{PAGE_HOST}/")
                break
            except CDPError as e:
                if "ERR_NETWORK_CHANGED" not in str(e) or attempt == 4:
                    raise
                time.sleep(0.2)

    def download(self, size: int, counted: bool = True) -> float:
        """Redone on a fresh host (at most 4 times) if Chromium reports a network change
        (it does while Mahimahi's interfaces settle); nothing else is retried."""
        for attempt in range(5):
            if self.used[size] >= self.per_size:
                raise TestbedError("parity check ran out of fresh file hosts")
            host, _ = file_host(self.sizes.index(size), self.used[size], self.per_size)
            self.used[size] += 1
            try:
                return _download(self.page, self.env, self.stack, host, size, self.tag)
            except CDPError as e:
                if not any(x in str(e) for x in NETWORK_ERRORS) or attempt == 4:
                    raise
                if counted:
                    self.result.retries += 1
                time.sleep(0.2)
        raise AssertionError("unreachable")


def _download(page, env: ReplayEnv, stack: str, host: str, size: int, tag: str) -> float:
    url = f"https://{host}{file_target(size)}?{tag}"
    got = page.evaluate(FETCH_JS % json.dumps(url), timeout=120)
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


def conditions(rtt_ms: int, rate_mbit: int) -> str:
    link = f"{rate_mbit} Mbit/s link" if rate_mbit else "no rate limit"
    return f"{rtt_ms} ms RTT, {link}"


def table(results: dict[str, StackResult], sizes, max_gap: float,
          conditions_text: str = "") -> tuple[Table, bool]:
    t = Table(title=f"Server parity: median download time (ms), {runs_label(results)}"
              + (f", {conditions_text}" if conditions_text else ""),
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


def loss_report(results: dict[str, StackResult]) -> tuple[str, bool]:
    """One line of what was lost on the path per stack, and whether anything was."""
    parts = [f"{stack}: " + ", ".join(f"{r.lost[k]} {LOSS_LABELS[k]}" for k in SHOWN[stack])
             for stack, r in results.items()]
    return "Lost on the path: " + "; ".join(parts), any(
        r.lost[k] for r in results.values() for k in DROPS)


def runs_label(results) -> str:
    n = {len(v) for r in results.values() for v in r.times_ms.values()}
    return f"{'/'.join(map(str, sorted(n)))} downloads per size and stack"


@click.command("servers")
@click.option("--runs", default=RUNS, show_default=True, help="Downloads per size and stack.")
@click.option("--rtt", "rtt_ms", default=RTT_MS, show_default=True, help="RTT in ms (mm-delay).")
@click.option("--rate", "rate_mbit", default=RATE_MBIT, show_default=True,
              type=click.IntRange(min=0),
              help="Link rate each way in Mbit/s (mm-link, unbounded queue); 0: no rate limit, "
                   "the paper's condition, where on a small machine the CPU is the bottleneck.")
@click.option("--size", "sizes", multiple=True, type=int,
              help="File size in bytes (repeatable); default 10 KB, 100 KB, 1 MB, 10 MB.")
@click.option("--stack", "stacks", multiple=True, type=click.Choice(["tcp", "quic"]),
              help="Run only this stack (repeatable; the gap needs both).")
@click.option("--rounds", default=ROUNDS, show_default=True,
              help="The stacks take turns this many times (each turn restarts the servers "
                   "and the browser).")
@click.option("--initial-window", "initial_window", default=INITIAL_WINDOW, show_default=True,
              help="Initial congestion window of both stacks, in packets.")
@click.option("--pacing/--no-pacing", default=False, show_default=True,
              help="Pace both senders (as the paper's TCP+ and QUIC settings do): fq or "
                   "Linux's internal pacing for TCP, h3server's pacer for QUIC.")
@click.option("--max-gap", default=MAX_GAP, show_default=True, help="Allowed relative gap.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write every download time to this JSON file.")
def validate_servers(runs, rtt_ms, rate_mbit, sizes, stacks, rounds, initial_window, pacing,
                     max_gap, json_out):
    """The paper's server-parity check: single files through nginx+uWSGI (HTTP/2)
    and h3server (HTTP/3) at 10 ms RTT and no loss; fails if the medians differ by
    more than 5 %."""
    if json_out:  # checked before the measurement, written after it
        safefs.check_out_file(json_out, "--json")
    sizes = tuple(sizes) or SIZES
    stacks = tuple(dict.fromkeys(stacks)) or ("tcp", "quic")
    console = Console(stderr=False)
    work = Path(tempfile.mkdtemp(prefix="parity-", dir=current().dir))
    work.chmod(0o755)
    try:
        recording = rec.load(make_recording(work, sizes, hosts_per_size(runs, rounds)))
        total = runs * len(sizes)
        done = dict.fromkeys(stacks, 0)
        t0 = time.monotonic()
        with console.status("starting") as status:

            def tick(stack: str) -> None:
                done[stack] += 1
                status.update("  ".join(f"{s}: {done[s]}/{total}" for s in stacks))

            results = measure(recording, stacks, sizes, runs, rtt_ms, rounds, initial_window,
                              tick, rate_mbit=rate_mbit, pacing=pacing, workdir=work)
        console.print(f"{len(stacks) * total} downloads in {time.monotonic() - t0:.0f} s "
                      f"({len(rounds_of(runs, rounds))} rounds per stack), 0 misses; servers "
                      f"ready in at most " + ", ".join(
                          f"{s} {r.startup_s:.2f} s" for s, r in results.items()))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    t, ok = table(results, sizes, max_gap, conditions(rtt_ms, rate_mbit))
    console.print(t)
    losses, lost = loss_report(results)
    console.print(losses)
    if lost:
        console.print("[yellow]The path was not loss-free, as the check assumes: the machine, "
                      "not the link, was the bottleneck somewhere; a lower --rate avoids it."
                      "[/yellow]")
    if json_out:
        doc = {"rtt_ms": rtt_ms, "rate_mbit": rate_mbit, "runs": runs, "max_gap": max_gap,
               "results": [asdict(r) for r in results.values()]}
        safefs.write_out_file(json_out, json.dumps(doc, indent=1), "--json")
    if not ok:
        raise TestbedError(f"server parity failed: a median gap exceeds {max_gap:.0%}")
