"""`testbed validate servers`: the paper's server-parity check.

Both replay stacks serve the same single files (10 KB, 100 KB, 1 MB, 10 MB by
default, a file-download site made on the fly: testbed/validate/site.py) to
the same client, Chromium as the testbed user inside
`mm-link RATE RATE -- mm-delay 5` (10 ms RTT, no loss). Each file is
downloaded 31 times per stack, every download over a new connection to an
origin and IP the browser has not contacted yet; a download's time is
Resource Timing's responseEnd - requestStart (the handshake is not in it: that
is a protocol property, not a server's). The stacks take turns in rounds
(ABBA), each turn with freshly started servers and browser, sizes interleaved
within a turn. The check passes when, at every size, the medians of the two
stacks differ by at most 5 %.

Both transports get alike settings (settings()), the browser's TCP receive
window opens like its QUIC windows (open_receive_window), Mahimahi's TUN
queues hold a 10 MB flight (deepen_tun_queues), and what the path lost anyway
is counted and shown (path_losses). Why each choice, and what it was measured
against: docs/replay-and-h3server.md, "Server parity".
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console

from testbed import jsonout
from testbed.errors import InputError, TestbedError
from testbed.formats import recording as rec
from testbed.formats.profiles import ProtocolProfile
from testbed.formats.traces import fixed_rate, write_trace
from testbed.host import proc, safefs
from testbed.host.chromium import CDPError, Chromium
from testbed.host.runstate import current
from testbed.host.topology import ReplayTopology
from testbed.protocols.apply import Change, ServerOptions, applied, replay_env, server_options
from testbed.replay.env import ReplayEnv
from testbed.validate import evidence, site, verdict
from testbed.validate.site import PROTOCOL
from testbed.validate.verdict import Row

PAGE_HOST, PAGE_IP = "page.parity.test", "192.0.2.80"
FIRST_FILE_IP = 100  # file hosts are on 192.0.2.100 and up, one IP each
WARM_PASSES = 2
SPARE_HOSTS = 2  # per size, for downloads redone after a network change
SIZES = (10_000, 100_000, 1_000_000, 10_000_000)
MAX_SIZE = 100_000_000
"""Largest --size: the servers hold every file in memory."""
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
    common: dict[str, Any] = {"congestion_control": TCP_CONGESTION_CONTROL,
                              "initial_window_packets": initial_window, "pacing": pacing}
    tcp = server_options(ProtocolProfile(name="parity-tcp", stack="tcp", **common))
    quic = server_options(ProtocolProfile(name="parity-quic", stack="quic",
                                          max_udp_payload=1472, **common))
    quic = replace(quic, h3server_args=(*quic.h3server_args, "--gso", "on"))
    return {"tcp": tcp, "quic": quic}


TCP_CONGESTION_CONTROL = "cubic"


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


def check_options(runs: int, rtt_ms: int, sizes, rounds: int, initial_window: int,
                  max_gap: float) -> None:
    """Values the check cannot run with, refused before anything starts."""
    if runs < 1:
        raise InputError(f"--runs: expected at least 1 download per size and stack, got {runs}")
    if rtt_ms < 0:
        raise InputError(f"--rtt: expected 0 ms or more, got {rtt_ms}")
    for size in sizes:
        if not 1 <= size <= MAX_SIZE:
            raise InputError(f"--size: expected 1 to {MAX_SIZE} bytes, got {size}")
    if not 1 <= initial_window <= 1000:
        raise InputError(f"--initial-window: expected 1 to 1000 packets, got {initial_window}")
    if not max_gap >= 0:
        raise InputError(f"--max-gap: expected 0 or more, got {max_gap}")
    hosts = hosts_per_size(runs, rounds) * len(sizes)
    if hosts > 254 - FIRST_FILE_IP:
        raise InputError(f"--runs: {hosts} file hosts for {runs} downloads in "
                         f"{len(rounds_of(runs, rounds))} rounds of {len(sizes)} sizes do not "
                         f"fit in 192.0.2.{FIRST_FILE_IP}-254; expected fewer --runs per round "
                         f"(more --rounds) or fewer sizes")


def make_recording(out_dir: Path, sizes=SIZES, per_size: int = 1) -> Path:
    """The file-download site with, per size, `per_size` file origins (each on its own
    IP) serving that file: random, incompressible bytes."""
    if not 1 <= per_size * len(sizes) <= 254 - FIRST_FILE_IP:
        raise TestbedError(f"{per_size * len(sizes)} file hosts do not fit in "
                           f"192.0.2.{FIRST_FILE_IP}-254; use fewer --runs per round "
                           f"(more --rounds) or fewer sizes")
    rnd = random.Random(site.SEED)
    files = []
    for i, size in enumerate(sizes):
        body = rnd.randbytes(size)
        files += [site.File(*file_host(i, k, per_size), file_target(size), body)
                  for k in range(per_size)]
    return site.make(out_dir, "server-parity", PAGE_HOST, PAGE_IP, files)


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
    """One round of one stack, its setting in force in the server namespace."""
    with applied(opts, topo) as change:
        _round_in_force(recording, topo, result, sizes, n, wrap, tag, progress, change)


def _round_in_force(recording, topo, result: StackResult, sizes, n: int, wrap: list[str],
                    tag: str, progress, change: Change) -> None:
    stack = result.stack
    retransmits_before = snmp(topo.server.exec(["cat", "/proc/net/snmp"]))["Tcp"]["RetransSegs"]
    with replay_env(recording, change, topo) as env:
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
            time.sleep(max(0.0, site.SETTLE_S - (time.monotonic() - started)))
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
LOSS_COUNTERS: tuple[str, ...] = tuple(LOSS_LABELS)
DROPS = ("tun_drops", "udp_rcvbuf_drops")
"""The counters that are loss for sure (a TCP retransmission may be a tail loss
probe or a spurious timeout)."""
SHOWN = {"tcp": ("tun_drops", "tcp_retransmits"), "quic": DROPS}


def snmp(argv: list[str]) -> dict[str, dict[str, int]]:
    """/proc/net/snmp as read by argv (`cat` inside some namespace): {"Tcp": {...}}."""
    return evidence.parse_snmp(proc.output(argv))


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
                if not site.network_changed(e) or attempt == 4:
                    raise
                if counted:
                    self.result.retries += 1
                time.sleep(0.2)
        raise AssertionError("unreachable")


def _download(page, env: ReplayEnv, stack: str, host: str, size: int, tag: str) -> float:
    url = f"https://{host}{file_target(size)}?{tag}"
    got = site.fetch(page, url, timeout=120)
    if got.status != 200 or got.bytes != size:
        env.check_alive()
        raise TestbedError(f"{stack}: {url} gave status {got.status}, {got.bytes} bytes")
    if got.protocol != PROTOCOL[stack]:
        raise TestbedError(f"{stack}: {url} went over {got.protocol!r}, "
                           f"expected {PROTOCOL[stack]}")
    assert got.ms is not None  # a 200 with the size: Resource Timing has its entry
    return float(got.ms)


def gap(tcp_ms: float, quic_ms: float) -> float:
    """Relative difference of QUIC's median to TCP's (negative: QUIC faster)."""
    return (quic_ms - tcp_ms) / tcp_ms


def conditions(rtt_ms: int, rate_mbit: int) -> str:
    link = f"{rate_mbit} Mbit/s link" if rate_mbit else "no rate limit"
    return f"{rtt_ms} ms RTT, {link}"


def rows(results: dict[str, StackResult], sizes, max_gap: float) -> list[Row]:
    """Per size: each stack's median (figures) and, with both stacks, QUIC's gap to TCP
    (observed) judged against max_gap."""
    both = {"tcp", "quic"} <= set(results)
    out = []
    for size in sizes:
        medians = tuple(f"{results[s].median(size):.2f}" for s in results)
        if both:
            g = gap(results["tcp"].median(size), results["quic"].median(size))
            out.append(Row(label(size), expected=f"|gap| <= {max_gap:.0%}", observed=f"{g:+.1%}",
                           ok=abs(g) <= max_gap, figures=medians))
        else:
            out.append(Row(label(size), figures=medians))
    return out


def columns(results: dict[str, StackResult], max_gap: float) -> list[verdict.Column]:
    cols = [verdict.column("size", "name", "right")]
    cols += [verdict.figure(f"{stack} ({PROTOCOL[stack]})", i) for i, stack in enumerate(results)]
    if {"tcp", "quic"} <= set(results):
        cols += [verdict.column("gap (quic vs tcp)", "observed", "right"),
                 verdict.verdict(f"|gap| <= {max_gap:.0%}", "center")]
    return cols


def title(results: dict[str, StackResult], conditions_text: str = "") -> str:
    return (f"Server parity: median download time (ms), {runs_label(results)}"
            + (f", {conditions_text}" if conditions_text else ""))


def loss_report(results: dict[str, StackResult]) -> tuple[str, bool]:
    """One line of what was lost on the path per stack, and whether anything was."""
    parts = [f"{stack}: " + ", ".join(f"{r.lost[k]} {LOSS_LABELS[k]}" for k in SHOWN[stack])
             for stack, r in results.items()]
    return "Lost on the path: " + "; ".join(parts), any(
        r.lost[k] for r in results.values() for k in DROPS)


def runs_label(results) -> str:
    n = {len(v) for r in results.values() for v in r.times_ms.values()}
    return f"{'/'.join(map(str, sorted(n)))} downloads per size and stack"


def json_doc(results: dict[str, StackResult], by_size: list[Row], **conditions) -> dict:
    """What `testbed validate servers --json` prints (and --output writes): the
    conditions, the verdict, a row per size and every stack's download times."""
    return {**conditions, "ok": verdict.all_ok(by_size),
            "rows": [verdict.json_row(r) for r in by_size],
            "results": [asdict(r) for r in results.values()]}


def validate_servers(runs: int, rtt_ms: int, rate_mbit: int, sizes: Sequence[int],
                     stacks: Sequence[str], rounds: int, initial_window: int, pacing: bool,
                     max_gap: float, output: Path | None, as_json: bool) -> None:
    """`testbed validate servers`: both stacks measured on single files, the rows shown
    (or printed as JSON, or written to `output`); TestbedError (exit 1) on a gap."""
    sizes = tuple(sizes) or SIZES
    check_options(runs, rtt_ms, sizes, rounds, initial_window, max_gap)
    if output:  # checked before the measurement, written after it
        safefs.check_out_file(output, "--output")
    stacks = tuple(dict.fromkeys(stacks)) or ("tcp", "quic")
    console = Console(stderr=as_json)
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
    by_size = rows(results, sizes, max_gap)
    if not as_json:
        verdict.render(console, by_size, columns(results, max_gap),
                       title(results, conditions(rtt_ms, rate_mbit)))
    losses, lost = loss_report(results)
    console.print(losses)
    if lost:
        console.print("[yellow]The path was not loss-free, as the check assumes: the machine, "
                      "not the link, was the bottleneck somewhere; a lower --rate avoids it."
                      "[/yellow]")
    doc = json_doc(results, by_size, rtt_ms=rtt_ms, rate_mbit=rate_mbit, runs=runs,
                   max_gap=max_gap)
    if as_json:
        jsonout.echo(doc)
    if output:
        safefs.write_out_file(output, jsonout.dumps(doc), "--output")
    if not verdict.all_ok(by_size):
        raise TestbedError(f"server parity failed: a median gap exceeds {max_gap:.0%}")
