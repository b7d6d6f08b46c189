"""`testbed validate protocols [SETTING ...]`: prove each protocol setting is in force
during a real replay.

For every setting (default: tcp, tcp-plus, tcp-plus-bbr, quic, quic-bbr, quic-bbr2) the
setting is applied to a replay topology, the replay servers start with its
options, and Chromium, as the testbed user inside the calibrated Mahimahi
chain of a network profile (default: lte), loads a page and then fetches a
1 MB file from another origin and IP (a new connection that has just
finished its handshake), waits 4 s (several retransmission timeouts) and
fetches it again on the same connection. Meanwhile tcpdump
captures the server's veth in the server namespace and, for TCP, `ss -tinm`
samples the server's sockets every 20 ms; h3server writes a qlog.

| property | proof |
|---|---|
| stack (Chromium flags) | the protocol of both fetches (Resource Timing): h2 or h3 |
| what the browser hears of HTTP/3 | the alt-svc of the page origin's answer, read by the page itself (a same-origin fetch): QUIC: `h3` on the port it asked (with it Chromium lifts its limit on delayable requests as it does for an HTTP/2 server; docs/replay-and-h3server.md, "What the browser knows at the start"); TCP: none, a TCP trial never hears of QUIC |
| congestion control | TCP: `ss` names it on the connection. QUIC: the qlog's congestion states (CUBIC: slow_start, congestion_avoidance...; BBR: startup, drain, probe_bw...) |
| BBR generation (BBR settings) | TCP: the gains `ss` prints for bbr, all BBRv1's. QUIC: the controller h3server's summary names (`bbr`: BBRv1, `bbr2_gcongestion`: BBRv2) and the qlog's ProbeBW states (BBRv1: one `bbr_probe_bw`; BBRv2: `bbr_probe_bw_up/_down/_cruise/_refill`); see testbed.validate.bbr_generation |
| one BBR on both stacks | every setting with congestion control `bbr` (tcp-plus-bbr, quic-bbr) showed the same generation |
| initial window | TCP: the first data flight of the response (server packets before the first client packet), segments in flight (plus, under BBR, the handshake segments acknowledged before it: BBR grows its window by them); `ss`'s cwnd. QUIC: the qlog's first congestion_window (the flight on the wire is shown: a paced flight can outlast the first acknowledgement) |
| pacing | the gaps between that flight's packets on the wire, at the third quartile: paced >= 10 % of RTT / initial window, otherwise back to back (the quartile, not the median: quiche's pacer releases BBR's packets in bursts of a send quantum, three back to back every few ms) |
| slow start after idle (TCP) | the first flight after the idle: back to the initial window (on) or the window before (off) |
| buffers (TCP) | the namespace's tcp_rmem / tcp_wmem read back, and the send buffer ss reports |
| max UDP payload (QUIC) | the largest datagram the server sent alone on the wire, the largest 1-RTT packet in the qlog and the summary's max_datagram_size; with GSO, sends of whole datagrams of that size |
| GSO (QUIC) | tcpdump on the server's veth sees a GSO send before it is cut: sends larger than a datagram (on), none (off) |
| ACK parameters (QUIC) | max_ack_delay and ack_delay_exponent in the transport parameters the server's qlog records as sent |
| client connection options (QUIC) | the tags in Chromium's google_connection_options transport parameter (qlog); its ACK frames per data packet shown beside them |
| h3quinn (`quic_server = "h3quinn"`) | its qlog has neither congestion events nor transport parameters: the controller and the initial window from its summary (per connection), the payload from the wire and the summary, pacing as the first flight's spread (>= 25 % of the RTT: quinn paces in bursts of about 2 ms, back to back within one); the ACK parameters, quinn's fixed defaults, are shown as not proven |

capture() runs all that and returns an Observation (what was fetched, the
packets, the `ss` samples, the qlog, what applying the setting set); judge() is
a pure function of the setting and that observation, giving the rows below.
Exit status 1 when an observation differs from its expectation.
"""

from __future__ import annotations

import random
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Self

from rich.console import Console

from testbed import jsonout
from testbed.emulate import calibrate
from testbed.emulate.shells import build_chain
from testbed.errors import TestbedError
from testbed.formats import recording as rec
from testbed.formats.profiles import NetworkProfile, ProtocolProfile, load_network, load_protocol
from testbed.host import proc, safefs
from testbed.host.chromium import CDPError, Chromium
from testbed.host.runstate import current
from testbed.host.topology import ReplayTopology
from testbed.measure.tcpdump import Tcpdump
from testbed.protocols.apply import Change, ServerOptions, applied, replay_env, server_options
from testbed.validate import bbr_generation, evidence, site, verdict
from testbed.validate import firefox as firefox_proof
from testbed.validate.bbr_generation import BBR1, BBR2, Finding
from testbed.validate.site import PROTOCOL
from testbed.validate.verdict import Row

DEFAULT_SETTINGS = ("tcp", "tcp-plus", "tcp-plus-bbr", "quic", "quic-bbr", "quic-bbr2")
DEFAULT_NETWORK = "lte"
FILE_SIZE = 1_000_000
IDLE_S = 4.0
"""Idle time between the two fetches: several retransmission timeouts, even with the
RTT a full 200 ms buffer adds, so that slow start after idle falls back to the
initial window."""
QUINN_PACED_SHARE = 0.25
"""h3quinn paced: its first flight spreads over at least this share of the RTT (quinn
paces in bursts; testbed.validate.protocols._quinn_pacing)."""
PACED_GAP_SHARE = 0.1
"""Paced: the third-quartile gap between packets of the first flight is at least this
share of RTT / initial window (a paced flight spreads over a good part of the RTT, in
bursts of a few packets at most; an unpaced one leaves back to back, microseconds
apart)."""
SS_INTERVAL = 0.02
ATTEMPTS = 3
"""A setting is started over (at most this often in all) when Chromium reports a network
change anyway, after site.SETTLE_S."""
TCP_MSS = 1448
QUIC_PAYLOAD = 1350
"""h3server's UDP payload when a setting names none."""
QUIC_MAX_ACK_DELAY_MS, QUIC_ACK_EXPONENT = 25, 3
"""h3server's max_ack_delay and ack_delay_exponent when a setting names none."""
CUBIC_STATES = {"slow_start", "conservative_slow_start", "congestion_avoidance", "recovery",
                "application_limited"}
"""quiche's congestion states for CUBIC and Reno (HyStart++ adds conservative slow start)."""
BBR_STATES = {"startup", "drain", "probe_bw", "probe_rtt"}
"""BBR's modes; quiche's BBRv2 names them bbr_startup, bbr_drain, bbr_probe_bw_up, ..."""
GENERATION = {("tcp", "bbr"): BBR1, ("quic", "bbr"): BBR1, ("quic", "bbr2"): BBR2}
"""The BBR generation each BBR setting must run: Linux's bbr is BBRv1, and so is
h3server's --cc bbr (quiche 0.24.6); --cc bbr2 is quiche's BBRv2."""
GENERATION_NAME = {BBR1: "BBRv1", BBR2: "BBRv2", None: "not shown"}
BBR_HIGH_GAIN = 2.89
"""BBRv1's Startup gain (Linux's bbr_high_gain, quiche's BBR_HIGH_GAIN)."""


@dataclass(frozen=True)
class Result:
    setting: ProtocolProfile
    rows: list[Row]
    bbr: Finding | None = None
    """The BBR generation the evidence showed (BBR settings only)."""

    @property
    def ok(self) -> bool:
        return verdict.all_ok(self.rows)


# ------------------------------------------------------------------ the replayed site

PAGE_HOST, PAGE_IP = "page.protocols.test", "192.0.2.90"
FILE_HOST, FILE_IP = "files.protocols.test", "192.0.2.91"
FILE_PATH = "/file.bin"


def make_recording(out_dir: Path) -> Path:
    """The file-download site with one 1 MB file of random bytes on another origin and
    IP than the page (so that the browser opens a new connection for it: no HTTP/2 or
    HTTP/3 coalescing)."""
    body = random.Random(site.SEED).randbytes(FILE_SIZE)
    return site.make(out_dir, "protocol-settings", PAGE_HOST, PAGE_IP,
                     [site.File(FILE_HOST, FILE_IP, FILE_PATH, body)])


# ------------------------------------------------------------------ capture tools

def server_capture(topology: ReplayTopology, path: Path, proto: str) -> Tcpdump:
    """tcpdump on the server's veth, in the server namespace, while the block runs:
    headers (128 bytes a packet) of `proto` port 443 into `path`."""
    return Tcpdump(topology.server.exec([]), topology.server_dev, path,
                   log=path.with_suffix(".log"), snaplen=128,
                   options=("-n", "--immediate-mode"), expression=(proto, "port", "443"),
                   linger=0.2)


def captured(path: Path) -> list[evidence.Packet]:
    return evidence.read_pcap(path.read_bytes()) if path.exists() else []


class SsWatch:
    """`ss -tinm` of the server's established port-443 sockets every SS_INTERVAL."""

    def __init__(self, topology: ReplayTopology):
        self.argv = topology.server.exec(["ss", "-tinm", "state", "established",
                                          "sport", "=", ":443"])
        self.samples: list[tuple[float, list[evidence.SockInfo]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            cp = proc.run(self.argv, check=False, timeout=10)
            self.samples.append((time.monotonic(), evidence.parse_ss(cp.stdout)))
            self._stop.wait(SS_INTERVAL)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(15)

    def of_peer_ip(self, server_ip: str) -> list[evidence.SockInfo]:
        return [s for _, infos in self.samples for s in infos
                if s.local.rsplit(":", 1)[0] == server_ip]


def qlog_events(path: Path | None) -> list[dict]:
    """The events of a qlog h3server wrote (none if there is no qlog)."""
    if path is None:
        return []
    try:  # h3server (the testbed user) wrote it: never read through a symlink
        return evidence.parse_qlog(safefs.read_user_text(path))
    except (OSError, safefs.UnsafePath):
        return []


def main_qlog(qlog_dir: Path) -> Path | None:
    """The qlog of the connection that carried the most (the file's)."""
    files = [p for p in qlog_dir.glob("*") if p.is_file() and not p.is_symlink()]
    return max(files, key=lambda p: p.lstat().st_size) if files else None


# ------------------------------------------------------------------ capture

@dataclass(frozen=True)
class Observation:
    """What one replay under one setting showed: capture's output, judge's input."""

    applied: dict[str, str]
    """What applying the setting set in the server namespace, read back (the managed
    sysctls, "route": the server's route to the client)."""
    fetched: tuple[site.Fetched, ...]
    """The file, then the file again on the same connection after IDLE_S."""
    packets: tuple[evidence.Packet, ...]
    """Captured on the server's veth: port 443 over the stack's transport."""
    socks: tuple[evidence.SockInfo, ...] = ()
    """TCP: `ss` samples of the file server's sockets, in order."""
    qlog: tuple[dict, ...] = ()
    """QUIC: the events of h3server's qlog of the file's connection."""
    summary: dict | None = None
    """QUIC: h3server's summary after the fetches (its `cc`: the controller quiche ran)."""
    available_cc: str | None = None
    """TCP: the server namespace's net.ipv4.tcp_available_congestion_control."""
    alt_svc: str | None = None
    """The alt-svc of the page origin's answer as the page received it (None: none)."""


def observe(opts: ServerOptions, recording: rec.Recording, topology: ReplayTopology,
            chain_wrap: list[str], work: Path) -> Observation:
    """One setting, observed; started over (at most ATTEMPTS times) when Chromium
    reports a network change, as it may while Mahimahi's interfaces come up."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return capture(opts, recording, topology, chain_wrap, work, attempt)
        except CDPError as e:
            if not site.network_changed(e) or attempt == ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def capture(opts: ServerOptions, recording: rec.Recording, topology: ReplayTopology,
            chain_wrap: list[str], work: Path, attempt: int = 1) -> Observation:
    """Put the setting in force, start the replay servers with its options and Chromium
    inside the shells, fetch the file twice with an idle between, and keep what the
    wire, the kernel and h3server showed meanwhile; the server namespace is as before
    afterwards."""
    with applied(opts, topology) as change:
        return _capture_in_force(opts, change, recording, topology, chain_wrap, work, attempt)


def _capture_in_force(opts: ServerOptions, change: Change, recording: rec.Recording,
                      topology: ReplayTopology, chain_wrap: list[str], work: Path,
                      attempt: int) -> Observation:
    name = opts.setting.name
    h3args = []
    qlog_dir = work / f"qlog-{name}-{attempt}"
    if opts.stack == "quic":
        safefs.user_dir(qlog_dir)  # h3server writes its qlogs there
        h3args = ["--qlog-dir", str(qlog_dir)]
    pcap = work / f"{name}-{attempt}.pcap"
    url = f"https://{FILE_HOST}{FILE_PATH}"
    watch = SsWatch(topology) if opts.stack == "tcp" else None
    fetched = []
    summary = available = alt_svc = None
    if opts.stack == "tcp":
        available = proc.run(topology.server.exec(
            ["cat", "/proc/sys/net/ipv4/tcp_available_congestion_control"]),
            check=False, timeout=10).stdout.strip()
    with replay_env(recording, change, topology, h3args) as env, \
            server_capture(topology, pcap, "tcp" if opts.stack == "tcp" else "udp"):
        with Chromium(env.client_netns, [*env.chromium_flags(), *opts.chromium_flags],
                      wrap=chain_wrap, timeout=120) as browser:
            time.sleep(site.SETTLE_S)
            with watch if watch else nullcontext():
                page = browser.new_page(isolated=True)
                page.navigate(f"https://{PAGE_HOST}/", timeout=120)
                alt_svc = site.alt_svc(page, timeout=120)
                fetched.append(site.fetch(page, url + "?first", timeout=180))
                time.sleep(IDLE_S)
                fetched.append(site.fetch(page, url + "?after-idle", timeout=180))
        if opts.stack == "quic":
            time.sleep(0.2)  # h3server rewrites its summary at most every 50 ms
            summary = env.summary()
        env.check_alive()
    return Observation(
        applied=dict(change.done), fetched=tuple(fetched), packets=tuple(captured(pcap)),
        socks=tuple(watch.of_peer_ip(FILE_IP)) if watch else (),
        qlog=tuple(qlog_events(main_qlog(qlog_dir))) if opts.stack == "quic" else (),
        summary=summary, available_cc=available, alt_svc=alt_svc)


# ------------------------------------------------------------------ judge

def judge(opts: ServerOptions, obs: Observation, rtt_s: float) -> list[Row]:
    """Each property of the setting against what was observed (a pure function).
    rtt_s: the network profile's minimum RTT, the scale pacing is judged on."""
    setting, stack = opts.setting, opts.stack
    protos = [f.protocol for f in obs.fetched]
    fetched = bool(obs.fetched) and all(f.status == 200 and f.bytes == FILE_SIZE
                                        for f in obs.fetched)
    rows = [Row("stack (Chromium flags)", PROTOCOL[stack],
                ", ".join(map(str, protos)) + ("" if fetched else " (fetch failed)"),
                fetched and all(p == PROTOCOL[stack] for p in protos))]
    rows.append(_alt_svc(opts, obs))
    conns = evidence.connections(list(obs.packets), 443,
                                 evidence.TCP if stack == "tcp" else evidence.UDP)
    conn = [c for k, c in conns.items() if k[2] == FILE_IP]
    if not conn:
        return [*rows, Row("capture", f"a connection to {FILE_IP}:443", "none", False)]
    packets = max(conn, key=len)
    data = evidence.data_flights(evidence.flights(packets, 443, TCP_MSS))
    first = data[0] if data else None
    quinn = stack == "quic" and opts.quic_server == "h3quinn"
    rows.append(_quinn_congestion_control(setting, obs) if quinn
                else _congestion_control(setting, stack, obs))
    finding = bbr_finding(opts, obs)
    if finding is not None:
        rows.append(_bbr_generation(setting, stack, finding))
    if stack == "quic" and not quinn and setting.congestion_control == "bbr":
        rows.append(_bbr_start_pacing(obs))
    rows += _initial_window(setting, stack, obs, packets, first, quinn)
    if first is not None:
        rows.append(_quinn_pacing(first, rtt_s) if quinn
                    else _pacing(setting, opts.pacing_method, first, rtt_s))
    if stack == "tcp":
        if opts.pacing_method == "internal":
            maxrates = sorted({s.max_pacing_rate for s in obs.socks if s.max_pacing_rate})
            rows.append(Row("max pacing rate set (ss)", "yes (switches internal pacing on)",
                            ", ".join(maxrates) + " bps" if maxrates else "not set",
                            bool(maxrates)))
        quiet = [f for f in data if f.start - data[0].start > IDLE_S * 0.8]
        rows += _tcp_settings(setting, obs, quiet[0] if quiet else None)
    else:
        rows += _quic_settings(setting, obs, packets, quinn)
    return rows


def _alt_svc(opts: ServerOptions, obs: Observation) -> Row:
    """What the browser hears of HTTP/3 on the page's origin: QUIC, h3 on port 443;
    TCP, nothing."""
    got = obs.alt_svc or "none"
    name = "what the browser hears of HTTP/3 (alt-svc of the page's origin)"
    if opts.stack == "tcp":
        return Row(name, "none (a TCP trial never hears of QUIC)", got, obs.alt_svc is None)
    ok = bool(obs.alt_svc and re.search(r'(^|[\s,])h3=":443"', obs.alt_svc))
    return Row(name, 'h3=":443" (the same origin: priorities known, as over HTTP/2)', got, ok)


def _quic_settings(setting: ProtocolProfile, obs: Observation,
                   packets: list[evidence.Packet], quinn: bool = False) -> list[Row]:
    """Payload size and GSO from the wire, the ACK parameters the server sent and the
    client's acknowledgements from the qlog. quinn: h3quinn served (its qlog records
    neither packet sizes nor transport parameters: the wire and the summary show the
    payload, and the ACK parameters, quinn's fixed defaults, are shown as not proven)."""
    want = setting.max_udp_payload or QUIC_PAYLOAD
    gso = bool(setting.gso)
    sizes = [p.payload for p in packets if p.sport == 443]
    # tcpdump sees a GSO send before the kernel cuts it into datagrams: one UDP payload
    # of several datagrams, larger than a datagram may be.
    over = [n for n in sizes if n > want]
    single = max((n for n in sizes if n <= want), default=0)
    whole = [n for n in over if n % want == 0]
    largest = evidence.qlog_largest_packet(list(obs.qlog))
    conn = [c for c in (obs.summary or {}).get("conns", []) if c.get("requests")]
    said = sorted({c.get("max_datagram_size") for c in conn} - {None})
    text = (f"wire: largest datagram {single}"
            + (f", {len(whole)} GSO sends of whole {want}-byte datagrams" if gso else "")
            + ("; qlog: not recorded by h3quinn" if quinn
               else f"; qlog: largest 1-RTT packet {largest}")
            + "; summary max_datagram_size " + (", ".join(map(str, said)) or "none"))
    rows = [Row("max UDP payload (wire, qlog, summary)", f"{want} bytes", text,
                single == want and (quinn or largest == want)
                and said in (([want],) if quinn else ([], [want]))
                # GSO sends hold whole datagrams of that size (a 2400-byte send: 2 x 1200)
                and (bool(whole) or not over if gso else not over))]
    shown = f" (up to {max(over)} bytes = {max(over) / want:.1f} x {want})" if over else ""
    rows.append(Row("GSO (sends on the wire)",
                    "on: sends of several datagrams" if gso else "off: one datagram per send",
                    f"{len(over)} of {len(sizes)} sends larger than a datagram{shown}",
                    bool(over) == gso))
    sent = evidence.qlog_parameters(list(obs.qlog), "local")
    for key, tp, default in (("max_ack_delay_ms", "max_ack_delay", QUIC_MAX_ACK_DELAY_MS),
                             ("ack_delay_exponent", "ack_delay_exponent", QUIC_ACK_EXPONENT)):
        exp = getattr(setting, key)
        exp = default if exp is None else exp
        got = sent.get(tp)
        if quinn:  # not in quinn's qlog; quinn's default, which h3quinn cannot change
            rows.append(Row(f"{tp} (transport parameter sent, qlog)",
                            f"{exp} (quinn's default)",
                            "not shown: h3quinn's qlog has no transport parameters", None))
            continue
        rows.append(Row(f"{tp} (transport parameter sent, qlog)", str(exp),
                        "not in the qlog" if got is None else str(got), got == exp))
    options = list(setting.client_quic_connection_options or ())
    seen = evidence.qlog_client_connection_options(list(obs.qlog))
    rows.append(Row("client QUIC connection options (transport parameter, qlog)",
                    f"{', '.join(options)} among them" if options else "Chromium's own",
                    ", ".join(seen) or "none",
                    set(options) <= set(seen) if options else None))
    acks, data = evidence.qlog_acks_per_data_packet(list(obs.qlog))
    peer = evidence.qlog_parameters(list(obs.qlog), "remote")
    rows.append(Row("client ACK frames per data packet (qlog)", "shown (see docs/protocol-settings.md)",
                    f"{acks} for {data} = {acks / data if data else 0:.3f} "
                    f"(1 per {data / acks if acks else float('inf'):.1f}); client "
                    f"max_ack_delay {peer.get('max_ack_delay', '?')} ms", None))
    return rows


def _congestion_control(setting: ProtocolProfile, stack: str, obs: Observation) -> Row:
    cc = setting.congestion_control
    if stack == "tcp":
        seen = sorted({s.cc for s in obs.socks if s.cc})
        return Row("congestion control (ss)", cc,
                   ", ".join(seen) + f" ({len(obs.socks)} samples)" if seen else "no sample",
                   seen == [cc])
    states = evidence.qlog_states(list(obs.qlog))
    bbr = {x for x in states if x.startswith("bbr") or x in BBR_STATES}
    family = ("bbr" if bbr and not states - bbr else
              "cubic" if states and states <= CUBIC_STATES else "?")
    want = "bbr" if cc.startswith("bbr") else "cubic" if cc == "cubic" else cc
    return Row("congestion control (qlog states)", f"{cc} ({want} states)",
               f"{family}: {', '.join(sorted(states)) or 'none'}", family == want)


def _quinn_congestion_control(setting: ProtocolProfile, obs: Observation) -> Row:
    """h3quinn: the controller its summary names per connection (quinn's qlog has no
    congestion states)."""
    conns = [c for c in (obs.summary or {}).get("conns", []) if c.get("requests")]
    seen = sorted({str(c.get("cc")) for c in conns})
    return Row("congestion control (h3quinn summary cc)", setting.congestion_control,
               ", ".join(seen) or "no connection", seen == [setting.congestion_control])


def _quinn_pacing(first: evidence.Flight, rtt_s: float) -> Row:
    """h3quinn: quinn's pacer releases bursts (about 2 ms of data at a time) at the
    window's rate, so within a burst packets leave back to back and the gaps between
    packets say little; paced, the first flight spreads over a good share of the RTT,
    where an unpaced one leaves within a millisecond or two."""
    gaps = sorted(first.gaps)
    q3_gap = gaps[3 * len(gaps) // 4] if gaps else 0.0
    share = first.duration / rtt_s if rtt_s else 0.0
    text = (f"flight over {first.duration * 1000:.1f} ms = {share:.0%} of RTT; gap at the "
            f"3rd quartile {q3_gap * 1000:.2f} ms (back to back within a burst)")
    return Row("pacing", f"on (quinn's pacer, in bursts): first flight over >= "
               f"{QUINN_PACED_SHARE:.0%} of RTT", text, share >= QUINN_PACED_SHARE)


def bbr_finding(opts: ServerOptions, obs: Observation) -> Finding | None:
    """The BBR generation the evidence shows, for a BBR setting (None for others).
    TCP: the gains `ss` printed on the file server's connection; QUIC: h3server's
    summary `cc` and the qlog's congestion states."""
    if (opts.stack, opts.setting.congestion_control) not in GENERATION:
        return None
    if opts.stack == "quic" and opts.quic_server == "h3quinn":
        return None  # quinn's one BBR; its qlog has no states to tell a generation by
    if opts.stack == "tcp":
        return bbr_generation.tcp_generation([s.detail for s in obs.socks], obs.available_cc)
    return bbr_generation.quic_generation(obs.summary, evidence.qlog_states(list(obs.qlog)))


def _bbr_generation(setting: ProtocolProfile, stack: str, finding: Finding) -> Row:
    want = GENERATION[(stack, setting.congestion_control)]
    how = "ss gains" if stack == "tcp" else "h3server summary cc, qlog states"
    return Row(f"BBR generation ({how})", GENERATION_NAME[want],
               f"{GENERATION_NAME[finding.generation]}: {finding.why}",
               finding.generation == want)


def one_generation(results: list[Result]) -> Row | None:
    """One BBR on both stacks: every setting with congestion control `bbr` (TCP's and
    QUIC's, e.g. tcp-plus-bbr and quic-bbr) ran the same BBR generation. None unless
    both stacks have such a setting among the results."""
    bbr = [r for r in results if r.setting.congestion_control == "bbr"
           and r.setting.quic_server != "h3quinn"]  # h3quinn's generation is not shown
    if {r.setting.stack for r in bbr} != {"tcp", "quic"}:
        return None
    gens = {r.bbr.generation if r.bbr else None for r in bbr}
    names = ", ".join(r.setting.name for r in bbr)
    return Row("one BBR generation on TCP and QUIC", f"the same for {names}",
               ", ".join(f"{r.setting.name}: {GENERATION_NAME[r.bbr.generation if r.bbr else None]}"
                         for r in bbr),
               len(gens) == 1 and None not in gens, group="tcp vs quic")


def _bbr_start_pacing(obs: Observation) -> Row:
    """h3server's BBRv1: the first pacing rate it sets, once it has an RTT sample, is
    Startup's gain times the initial window over the smoothed RTT, as Linux's BBR
    (TCP+BBR's sender) starts. quiche 0.24.6 as published started at the gain times
    its first delivery-rate sample, a few kB/s from the handshake (h3server's
    vendored change, vendor/quiche-0.24.6/VENDORED.md); at least twice the window
    over the RTT tells the two apart by two orders of magnitude."""
    events = list(obs.qlog)
    cwnd, first = evidence.qlog_initial_cwnd(events), evidence.qlog_first_pacing(events)
    want = f"about {BBR_HIGH_GAIN} x initial window / smoothed RTT"
    if not cwnd or cwnd < 0 or first is None:
        return Row("BBR start pacing rate (qlog, first RTT sample)", want,
                   "no congestion_window or pacing_rate in the qlog", False)
    rate, srtt_ms = first
    nominal = cwnd / (srtt_ms / 1000)
    return Row("BBR start pacing rate (qlog, first RTT sample)", want,
               f"{rate / 1000:.0f} kB/s = {rate / nominal:.2f} x {cwnd} bytes / "
               f"{srtt_ms:.1f} ms", rate >= 2 * nominal)


def _initial_window(setting: ProtocolProfile, stack: str, obs: Observation,
                    packets: list[evidence.Packet], first: evidence.Flight | None,
                    quinn: bool = False) -> list[Row]:
    iw = setting.initial_window_packets
    if first is None:
        return [Row("initial window (first flight)", f"{iw} packets", "no data flight", False)]
    if stack == "tcp":
        got = evidence.outstanding_segments(packets, first, 443, TCP_MSS)
        grown = (evidence.acked_before(packets, first, 443, TCP_MSS)
                 if setting.congestion_control == "bbr" else 0)
        rows = [Row("initial window (first flight)",
                    f"{iw} segments" + (f" + {grown} acked in the handshake (BBR startup)"
                                        if grown else ""),
                    f"{got} segments in flight ({first.bytes} bytes in this flight)",
                    got == iw + grown)]
        if obs.socks and obs.socks[0].cwnd is not None:
            rows.append(Row("initial cwnd (ss, first sample)", f">= {iw}",
                            f"{obs.socks[0].cwnd}", obs.socks[0].cwnd >= iw))
        return rows
    unit = setting.max_udp_payload or QUIC_PAYLOAD
    if quinn:  # quinn's qlog has no congestion window: h3quinn's summary has it per connection
        windows = sorted({c.get("cwnd_initial_bytes") for c in (obs.summary or {}).get(
            "conns", []) if c.get("requests")} - {None})
        window = Row("initial window (h3quinn summary cwnd_initial_bytes)",
                     f"{iw} x {unit} = {iw * unit} bytes",
                     ", ".join(f"{w} bytes" for w in windows) or "no connection",
                     windows == [iw * unit])
    else:
        cwnd = evidence.qlog_initial_cwnd(list(obs.qlog))
        window = Row("initial window (qlog congestion_window)",
                     f"{iw} x {unit} = {iw * unit} bytes",
                     f"{cwnd} bytes" if cwnd is not None else "not in the qlog",
                     cwnd == iw * unit)
    return [window,
            Row("first flight on the wire", f"about {iw} packets, fewer if paced over > 1 RTT",
                f"{first.bytes} bytes = {first.bytes / unit:.1f} x {unit} "
                f"({len(first.times)} datagrams over {first.duration * 1000:.0f} ms)", None)]


def _pacing(setting: ProtocolProfile, method: str, first: evidence.Flight, rtt_s: float) -> Row:
    """Gaps between the packets of the first data flight."""
    iw = setting.initial_window_packets
    gaps = sorted(first.gaps)
    median_gap = gaps[len(gaps) // 2] if gaps else 0.0
    q3_gap = gaps[3 * len(gaps) // 4] if gaps else 0.0
    spaced = rtt_s / iw * PACED_GAP_SHARE if rtt_s else 1e-4
    text = f"gap at the 3rd quartile {q3_gap * 1000:.2f} ms, median {median_gap * 1000:.2f} ms"
    if rtt_s:
        text += (f"; flight over {first.duration * 1000:.1f} ms = "
                 f"{first.duration / rtt_s:.0%} of RTT")
    how = {"internal": " (internal, SO_MAX_PACING_RATE)", "fq": " (fq)",
           "quic": " (h3server)"}.get(method, "")
    if setting.pacing:
        return Row("pacing", f"on{how}: 3rd-quartile gap >= {spaced * 1000:.2f} ms", text,
                   q3_gap >= spaced)
    return Row("pacing", f"off: back to back, 3rd-quartile gap < {spaced * 1000:.2f} ms", text,
               q3_gap < spaced)


def _tcp_settings(setting: ProtocolProfile, obs: Observation,
                  after_idle: evidence.Flight | None) -> list[Row]:
    """Slow start after idle, buffers, the route's metrics."""
    iw = setting.initial_window_packets
    ssai = setting.slow_start_after_idle
    exp = f"{'on' if ssai else 'off'}: {'<=' if ssai else '>'} {iw} segments after {IDLE_S} s idle"
    if after_idle is None:
        rows = [Row("slow start after idle", exp, "no flight after the idle", False)]
    else:
        got = after_idle.segments
        rows = [Row("slow start after idle", exp, f"{got} segments",
                    got <= iw + 2 if ssai else got > iw + 2)]
    for key in ("tcp_rmem", "tcp_wmem"):
        want = getattr(setting, key)
        have = " ".join(obs.applied.get(f"net.ipv4.{key}", "").split())
        exp = " ".join(map(str, want)) if want else "namespace default"
        rows.append(Row(f"net.ipv4.{key}", exp, have, have == exp if want else None))
    tb = [s.sndbuf for s in obs.socks if s.sndbuf]
    if tb:
        floor = setting.tcp_wmem[1] if setting.tcp_wmem else None
        rows.append(Row("send buffer (ss skmem tb, first sample)",
                        f">= {floor}" if floor else "kernel autotuning",
                        f"{tb[0]} bytes", tb[0] >= floor if floor else None))
    route = obs.applied.get("route", "")
    metrics = " ".join(re.findall(r"\b(?:initcwnd|initrwnd) \d+", route)) or route
    rows.append(Row("route to client", f"initcwnd {iw} initrwnd {iw}", metrics,
                    f"initcwnd {iw}" in route and f"initrwnd {iw}" in route))
    return rows


# ------------------------------------------------------------------ command

COLUMNS = (verdict.column("property", "name"), verdict.column("expected", "expected"),
           verdict.column("observed", "observed"), verdict.verdict(justify="left"))


def all_rows(results: list[Result], extra: Sequence[Row] = ()) -> list[Row]:
    """Every setting's rows (their group: the setting), then the rows across settings."""
    return [replace(row, group=r.setting.name) for r in results for row in r.rows] + list(extra)


def render(console: Console, results: list[Result], profile: NetworkProfile,
           delay_ms: int, extra: Sequence[Row] = ()) -> None:
    verdict.render(console, all_rows(results, extra), COLUMNS,
                   f"Protocol settings proven during a replay under {profile.name} "
                   f"({profile.description}; mm-delay {delay_ms} ms each way)", group="setting")


def json_doc(results: list[Result], profile: NetworkProfile, delay_ms: int,
             extra: Sequence[Row] = ()) -> dict:
    """What `testbed validate protocols --json` prints: the network, each setting's
    verdict, and every row (its group: the setting)."""
    rows = all_rows(results, extra)
    return {"network": profile.name, "delay_ms": delay_ms, "ok": not verdict.failed(rows),
            "settings": {r.setting.name: r.ok for r in results},
            "rows": [verdict.json_row(x) for x in rows]}


def validate_protocols(settings: Sequence[str], network: str, keep: Path | None, client: str,
                       as_json: bool) -> None:
    """`testbed validate protocols`: each setting replayed and proved (or, with client
    firefox, Firefox's protocol per origin); TestbedError (exit 1) on any mismatch."""
    if client == "firefox":
        validate_firefox(settings or firefox_proof.SETTINGS, network, keep, as_json)
        return
    loaded = [load_protocol(s) for s in (settings or DEFAULT_SETTINGS)]
    profile = load_network(network)
    if keep:
        keep = safefs.check_out_dir(keep, "--keep")
    console = Console(stderr=as_json)
    cal = calibrate.for_profile(profile)
    work = Path(tempfile.mkdtemp(prefix="protocols-", dir=current().dir))
    work.chmod(0o755)
    results: list[Result] = []
    try:
        recording = rec.load(make_recording(work / "recording"))
        chain = build_chain(profile, work, cal.delay_ms)
        with ReplayTopology(recording.ips) as topo, console.status("starting") as status:
            for s in loaded:
                status.update(f"{s.name}: replay under {profile.name}")
                opts = server_options(s)
                obs = observe(opts, recording, topo, chain.argv([]), work)
                results.append(Result(s, judge(opts, obs, profile.min_rtt_ms / 1000),
                                      bbr_finding(opts, obs)))
    finally:
        if keep:
            keep.mkdir(parents=True, exist_ok=True)
            for item in work.iterdir():
                if item.name != "recording":
                    shutil.move(str(item), keep / item.name)
            console.print(f"captures and qlogs kept in {keep}")
        shutil.rmtree(work, ignore_errors=True)
    agree = one_generation(results)
    if as_json:
        jsonout.echo(json_doc(results, profile, cal.delay_ms, [agree] if agree else []))
    else:
        render(console, results, profile, cal.delay_ms, [agree] if agree else [])
    bad = [r.setting.name for r in results if not r.ok]
    if agree is not None and not agree.ok:
        bad.append(f"{agree.name} ({agree.observed})")
    if bad:
        raise TestbedError(f"protocol validation failed: {', '.join(bad)}")
    console.print(f"[green]all {len(results)} settings observed as configured[/green]")


def validate_firefox(settings: Sequence[str], network: str, keep: Path | None,
                     as_json: bool) -> None:
    """`--client firefox`: a one-run Firefox campaign of the settings on the bundled
    site, keeping Firefox's HTTP log and the packets, then every origin of every trial
    judged (testbed.validate.firefox)."""
    from results_contract.sqlite_fd import Reader
    from testbed.host.paths import VENV_BIN
    from testbed.replay.matching import normalise_host

    loaded = [load_protocol(s) for s in settings]
    profile = load_network(network)
    if keep:
        keep = safefs.check_out_dir(keep, "--keep")
    console = Console(stderr=as_json)
    recording = rec.load(firefox_proof.SITE)
    origins = {f"{normalise_host(o.host)}:{o.port}": o.ip for o in recording.origins
               if o.scheme == "https"}
    work = Path(tempfile.mkdtemp(prefix="protocols-firefox-", dir=current().dir))
    work.chmod(0o755)
    results: list[Result] = []
    try:
        toml = work / "firefox.toml"
        toml.write_text(firefox_proof.campaign_text(recording.path, profile.source or network,
                                                    [s.source or s.name for s in loaded]))
        out = work / "results"
        with console.status(f"Firefox over {', '.join(s.name for s in loaded)} "
                            f"under {profile.name}"):
            cp = proc.run([str(VENV_BIN / "testbed"), "run", str(toml), "--out", str(out)],
                          check=False, timeout=3600)
        if cp.returncode != 0 or not (out / "trials.sqlite").exists():
            raise TestbedError(f"the Firefox campaign failed: {cp.stderr.strip()[-1500:]}")
        with Reader.of(out / "trials.sqlite") as db:  # the one opener of a store
            names = db.columns("trials")
            stored = {r["setting"]: r for r in (dict(zip(names, row))
                                                 for row in db.rows("SELECT * FROM trials"))}
        for s in loaded:
            row = stored.get(s.name)
            rows = ([Row("trial", "stored", "missing", False)] if row is None
                    else firefox_proof.trial_rows(out, row, origins))
            results.append(Result(s, rows))
    finally:
        if keep:
            keep.mkdir(parents=True, exist_ok=True)
            for item in work.iterdir():
                shutil.move(str(item), keep / item.name)
            console.print(f"results, logs and captures kept in {keep}")
        shutil.rmtree(work, ignore_errors=True)
    cal = calibrate.cached(profile)
    delay = cal.delay_ms if cal is not None else 0
    if as_json:
        jsonout.echo({**json_doc(results, profile, delay), "client": "firefox"})
    else:
        verdict.render(console, all_rows(results), COLUMNS,
                       f"Firefox's protocol per origin during a replay under {profile.name} "
                       f"({profile.description})", group="setting")
    bad = [r.setting.name for r in results if not r.ok]
    if bad:
        raise TestbedError(f"protocol validation (firefox) failed: {', '.join(bad)}")
    console.print(f"[green]all {len(results)} settings: Firefox used the claimed protocol "
                  f"for every origin[/green]")
