"""Network profiles and protocol settings: TOML files loaded into frozen models.

    load_network("dsl")                          # profiles/networks/dsl.toml
    load_network("/path/to/mine.toml")          # any file
    load_protocol("tcp-plus")                    # profiles/protocols/tcp-plus.toml

A PROFILE argument is a name from profiles/networks/ (or profiles/protocols/)
or a path to a TOML file. Every problem with a file is an InputError of one
line naming the file, the key and what was expected, e.g.

    profiles/networks/x.toml: key downlink_mbit: expected a number > 0, got -3

Unknown keys are rejected, so a typo never silently falls back to a default.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import Field, PrivateAttr, field_validator, model_validator

from results_contract import profiles_meta
from testbed.errors import InputError
from testbed.formats import tomlfile
from testbed.formats.tomlfile import Expected, KeyProblem
from testbed.host.paths import NETWORKS_DIR, PROTOCOLS_DIR

if TYPE_CHECKING:
    from testbed.formats.traces import Trace

MAHIMAHI_TRACES = Path("/usr/share/mahimahi/traces")


MIN_FPS, MAX_FPS = 10, 120
FRAME_RATES = (10, 15, 20, 25, 30, 50, 60)
"""Frame rates a network's recording defaults to: common video rates that x11grab
(Browsertime's ffmpeg) records and visualmetrics reads, from 10 (one frame per 100 ms)
to the testbed's 60 (16.7 ms)."""
FRAMES_PER_RTT = 4
"""A network's default frame rate fits this many frames into one minimum RTT."""


def frame_rate_for(min_rtt_ms: float) -> int:
    """The default frame rate of a network: the lowest of FRAME_RATES whose frame (1000 /
    rate ms) is at most min_rtt_ms / FRAMES_PER_RTT, so that one RTT spans at least four
    frames and a one-RTT difference (QUIC's handshake) moves the visual metrics by four
    frames or more; 60 when none is (an RTT under 67 ms, or no delay). Every frame costs
    CPU to record and to analyse, and a slow link's load is long: at 60 fps a 90 s load
    on DA2GC is 5,400 frames, at its default 20 fps 1,800.

        DSL 24 ms -> 60 (16.7 ms: 0.7 RTT; 60 is the most the testbed records by default)
        LTE 74 ms -> 60 (16.7 ms <= 18.5 ms)
        DA2GC 262 ms -> 20 (50 ms <= 65.5 ms; 15 fps would be 66.7 ms)
        MSS 760 ms -> 10 (100 ms <= 190 ms)
    """
    for rate in FRAME_RATES:
        if 1000 / rate * FRAMES_PER_RTT <= min_rtt_ms:
            return rate
    return FRAME_RATES[-1]


class _Profile(tomlfile.LoadedFile):
    """A network or protocol profile (name, source, digest, description: LoadedFile)."""

    label: Annotated[str, Expected(profiles_meta.LABEL)] = ""
    """How reports show it (`TCP+BBR`, `DA2GC`); omitted: its name. The analysis reads
    it (results_contract.profiles_meta), and a campaign records it in its manifest."""

    @field_validator("label")
    @classmethod
    def _label(cls, v: str) -> str:
        if not profiles_meta.is_label(v):
            raise KeyProblem("label", f"expected {profiles_meta.LABEL}, got {v!r}")
        return v

    @property
    def shown_as(self) -> str:
        """Its label, or its name when it gives none."""
        return self.label or self.name


P = TypeVar("P", bound=_Profile)


class NetworkProfile(_Profile):
    """An emulated path: Mahimahi's mm-delay, mm-link and mm-loss shells.

    A direction is shaped either by a fixed rate (`*_mbit`, a trace is
    generated from it) or by a Mahimahi trace file (`*_trace`); both
    directions or neither. No rate, no delay and no loss is the unshaped
    path (`none`).
    """

    min_rtt_ms: float = Field(default=0, ge=0, le=10_000)
    """Minimum round-trip time in ms that a small packet sees on an idle path.
    mm-delay gets about half of it each way; the calibration takes off what
    the chain itself adds (see testbed.emulate.calibrate). 0: no mm-delay."""
    uplink_mbit: float | None = Field(default=None, gt=0, le=10_000)
    """Uplink (client → server) rate in Mbit/s of 1500-byte IP packets."""
    downlink_mbit: float | None = Field(default=None, gt=0, le=10_000)
    """Downlink (server → client) rate in Mbit/s of 1500-byte IP packets."""
    uplink_trace: str | None = None
    """Instead of uplink_mbit: a Mahimahi trace file (one line per 1500-byte
    delivery opportunity, in ms), relative to this file's folder, or to
    /usr/share/mahimahi/traces, or absolute. Symbolic links resolved, it must
    lie in /usr/share/mahimahi/traces or in this file's folder (or below), and
    parse as a trace."""
    downlink_trace: str | None = None
    """Instead of downlink_mbit: a Mahimahi trace file, as uplink_trace."""
    trace_start_ms: int = Field(default=0, ge=0)
    """Trace-driven links only: start each trace at its first opportunity at or after
    this ms (the trace is rotated; it still repeats with its own period). mm-link
    always starts a trace at its beginning, i.e. at every shell start."""
    buffer_ms: float | None = Field(default=None, gt=0, le=100_000)
    """Drop-tail queue of each direction, as ms of queueing at that direction's
    rate (a trace's mean rate); sized in bytes. Omitted: Mahimahi's unlimited
    queue."""
    uplink_loss_percent: float = Field(default=0, ge=0, lt=100)
    """Random loss of uplink packets in percent (mm-loss uplink); 0: no shell."""
    downlink_loss_percent: float = Field(default=0, ge=0, lt=100)
    """Random loss of downlink packets in percent (mm-loss downlink); 0: no shell."""
    video_fps: int | None = Field(default=None, ge=MIN_FPS, le=MAX_FPS)
    """Frames per second of the screen recording of trials on this network (the visual
    metrics move in steps of one frame). Omitted: the lowest of FRAME_RATES whose frame
    is at most a quarter of min_rtt_ms (at most 60): see frame_rate_for."""
    _traces: dict[str, Trace] = PrivateAttr(default_factory=dict)
    """Each trace file as read once (load_network reads it when it checks it)."""

    @property
    def fps(self) -> int:
        """The frame rate trials on this network are recorded at: video_fps, or the
        default for its minimum RTT (frame_rate_for)."""
        return self.video_fps if self.video_fps is not None else frame_rate_for(self.min_rtt_ms)

    @model_validator(mode="after")
    def _consistent(self) -> NetworkProfile:
        for d in ("uplink", "downlink"):
            if getattr(self, f"{d}_mbit") is not None and getattr(self, f"{d}_trace") is not None:
                raise KeyProblem(f"{d}_trace", f"give either {d}_mbit or {d}_trace, not both")
        up, down = self.uplink_shaped, self.downlink_shaped
        if up != down:
            missing = "downlink" if up else "uplink"
            raise KeyProblem(f"{missing}_mbit",
                            "missing: mm-link shapes both directions, so give a rate "
                            f"({missing}_mbit) or a trace ({missing}_trace) for each")
        if self.trace_start_ms and self.uplink_trace is None and self.downlink_trace is None:
            raise KeyProblem("trace_start_ms", "only for trace-driven links (uplink_trace, "
                                              "downlink_trace)")
        if self.buffer_ms is not None and not up:
            raise KeyProblem("buffer_ms", "a buffer needs a shaped link (uplink_mbit/downlink_mbit)")
        self._buildable()
        return self

    def _buildable(self) -> None:
        """Each rate has an exact trace of reasonable size; a buffer holds a packet."""
        from fractions import Fraction

        from testbed.formats import traces

        for d in ("uplink", "downlink"):
            mbit = getattr(self, f"{d}_mbit")
            if mbit is None:
                continue
            try:
                per_ms = traces.check_rate(mbit)
            except traces.TraceError as e:
                raise KeyProblem(f"{d}_mbit", str(e)) from None
            if self.buffer_ms is not None and Fraction(str(self.buffer_ms)) * per_ms < 1:
                least = float(1 / per_ms)
                raise KeyProblem("buffer_ms", f"expected at least one 1500-byte packet of queue "
                                             f"(>= {least:.4g} ms at {d}_mbit = {mbit:g}), "
                                             f"got {self.buffer_ms:g}")

    @property
    def uplink_shaped(self) -> bool:
        return self.uplink_mbit is not None or self.uplink_trace is not None

    @property
    def downlink_shaped(self) -> bool:
        return self.downlink_mbit is not None or self.downlink_trace is not None

    @property
    def shaped(self) -> bool:
        return self.uplink_shaped

    def trace_path(self, direction: Literal["uplink", "downlink"]) -> Path | None:
        """The trace file of a trace-driven direction, symbolic links resolved."""
        name = getattr(self, f"{direction}_trace")
        if name is None:
            return None
        return _resolve_trace(name, self._folder()).resolve()

    def trace_home(self, path: Path) -> Path | None:
        """The folder a resolved trace path must lie in that holds it (the profile's
        own or Mahimahi's traces, resolved), or None if neither does."""
        folders = [f.resolve() for f in (self._folder(), MAHIMAHI_TRACES) if f is not None]
        return next((f for f in folders if path.is_relative_to(f)), None)

    def trace(self, direction: Literal["uplink", "downlink"]) -> Trace | None:
        """The trace of a trace-driven direction, read once: the one load_network
        checked. Later changes to the file are never seen, so what a run hands
        mm-link (a copy, see testbed.emulate.shells.build_chain) is what was checked.
        traces.TraceError if it cannot be read as one."""
        if getattr(self, f"{direction}_trace") is None:
            return None
        if direction not in self._traces:
            from testbed.formats import traces

            path = self.trace_path(direction)
            assert path is not None  # trace-driven: it has a path
            self._traces[direction] = traces.read_trace(path, beneath=self.trace_home(path))
        return self._traces[direction]

    def _folder(self) -> Path | None:
        return Path(self.source).parent if self.source else None


_MEM = "a list of 3 whole numbers [min, default, max]"
MIN_UDP_PAYLOAD, MAX_UDP_PAYLOAD = 1200, 1472
_PAYLOAD = (f"a whole number of bytes from {MIN_UDP_PAYLOAD} (QUIC's smallest datagram) to "
            f"{MAX_UDP_PAYLOAD} (the largest UDP payload of a 1500-byte IPv4 packet)")
_ACK_DELAY = "a whole number of ms from 0 to 16383 (RFC 9000: below 2^14)"
_EXPONENT = "a whole number from 0 to 20 (RFC 9000: at most 20)"
_TAGS = 'a list of 1 to 8 QUIC connection option tags, 3 or 4 capitals or digits each (e.g. ["AKDU"])'
QUIC_ONLY = ("quic_server", "max_udp_payload", "gso", "max_ack_delay_ms", "ack_delay_exponent",
             "client_quic_connection_options")
"""Keys only a QUIC setting may give."""


class ProtocolProfile(_Profile):
    """A protocol setting: the stack, and how its transport is tuned.

    TCP settings are applied to the replay topology's server namespace
    (sysctls, the route to the client); QUIC settings become the HTTP/3
    server's options. Every setting names its congestion control: new
    namespaces inherit the host's default (BBR on this machine), so an unset
    baseline would silently be TCP+BBR.
    """

    stack: Literal["tcp", "quic"]
    """`tcp`: nginx, TLS 1.3, HTTP/2, Chromium with --disable-quic.
    `quic`: the HTTP/3 server, Chromium forced to QUIC for every origin."""
    quic_server: Literal["h3server", "h3quinn"] | None = None
    """QUIC only: which HTTP/3 server replays the page. `h3server` (quiche; omitted
    means it) or `h3quinn` (quinn and h3, an independent implementation of QUIC and
    HTTP/3 serving the same recording by the same rules), so a verdict can tell QUIC
    from one implementation of it. h3quinn takes congestion_control cubic, reno or bbr,
    initial_window_packets and max_udp_payload; it always paces (pacing = true) and
    has none of the other QUIC keys."""
    congestion_control: Literal["cubic", "reno", "bbr", "bbr2"]
    """TCP: a Linux congestion control (cubic, reno, bbr), set as the server
    namespace's net.ipv4.tcp_congestion_control; this kernel's bbr is BBRv1.
    QUIC: h3server's --cc (cubic, reno, bbr: quiche's BBRv1, bbr2: quiche's
    BBRv2)."""
    initial_window_packets: int = Field(ge=1, le=1000)
    """Initial congestion window in packets. TCP: initcwnd (and initrwnd) of the
    server's route to the client. QUIC: --initial-cwnd-packets."""
    pacing: bool
    """Pace the sender. TCP: fq where the kernel has it, otherwise Linux's
    internal pacing switched on per socket (SO_MAX_PACING_RATE, see
    testbed.protocols.apply). QUIC: the server's --pacing."""
    slow_start_after_idle: bool = True
    """TCP only: net.ipv4.tcp_slow_start_after_idle (Linux default: true)."""
    tcp_rmem: Annotated[tuple[int, int, int] | None, Expected(_MEM)] = None
    """TCP only: net.ipv4.tcp_rmem (min, default, max bytes); omitted: kernel default."""
    tcp_wmem: Annotated[tuple[int, int, int] | None, Expected(_MEM)] = None
    """TCP only: net.ipv4.tcp_wmem (min, default, max bytes); omitted: kernel default."""
    max_udp_payload: Annotated[int | None, Field(ge=MIN_UDP_PAYLOAD, le=MAX_UDP_PAYLOAD),
                               Expected(_PAYLOAD)] = None
    """QUIC only: largest UDP payload the server sends (--max-udp-payload), 1200 (QUIC's
    smallest datagram, RFC 9000 14.1) to 1472 (the largest UDP payload of a 1500-byte IPv4
    packet: the replay's veth and Mahimahi's links carry no more); omitted: the server's
    default (1350, as Chrome)."""
    gso: bool | None = None
    """QUIC only: the server hands datagrams that leave together to the kernel in one
    send with UDP_SEGMENT (--gso on|off); omitted: the server's default (off)."""
    max_ack_delay_ms: Annotated[int | None, Field(ge=0, le=16383), Expected(_ACK_DELAY)] = None
    """QUIC only: the max_ack_delay transport parameter the server sends, in ms
    (--max-ack-delay-ms); omitted: the server's default (25, RFC 9000's)."""
    ack_delay_exponent: Annotated[int | None, Field(ge=0, le=20), Expected(_EXPONENT)] = None
    """QUIC only: the ack_delay_exponent transport parameter the server sends, the scale
    of its ACK frames' delay field (--ack-delay-exponent); omitted: the server's default
    (3, RFC 9000's)."""
    client_quic_connection_options: Annotated[
        tuple[Annotated[str, Field(pattern=r"^[A-Z0-9]{3,4}$")], ...] | None,
        Field(min_length=1, max_length=8), Expected(_TAGS)] = None
    """QUIC only: QUIC connection options Chromium sends and applies to itself
    (--quic-connection-options=TAG,...), e.g. ["AKDU"]: acknowledge every RTT/4 however
    many packets arrive, not at most every 10; ["AKD3"]: ack decimation at RTT/8;
    omitted: none."""
    session_tickets: bool = False
    """TCP only: nginx issues TLS 1.3 session tickets (ssl_session_tickets,
    OpenSSL's two per handshake), so a returning browser resumes its session (warm
    visits). Off: no tickets, every handshake is a full one. QUIC: h3server
    always issues tickets."""
    early_data: bool = False
    """Accept early data from a resuming browser: TCP: nginx's ssl_early_data
    (needs session_tickets); QUIC: h3server's --early-data (0-RTT)."""

    @field_validator("tcp_rmem", "tcp_wmem", "client_quic_connection_options", mode="before")
    @classmethod
    def _list_to_tuple(cls, v: object) -> object:
        return tuple(v) if isinstance(v, list) else v

    @model_validator(mode="after")
    def _consistent(self) -> ProtocolProfile:
        allowed = {"tcp": ("cubic", "reno", "bbr"), "quic": ("cubic", "reno", "bbr", "bbr2")}[self.stack]
        if self.congestion_control not in allowed:
            raise KeyProblem("congestion_control",
                            f"expected one of {', '.join(allowed)} for stack {self.stack}, "
                            f"got {self.congestion_control!r}")
        if self.stack == "quic":
            for key in ("tcp_rmem", "tcp_wmem"):
                if getattr(self, key) is not None:
                    raise KeyProblem(key, "only for stack tcp")
            if not self.slow_start_after_idle:
                raise KeyProblem("slow_start_after_idle", "only for stack tcp")
        if self.stack == "tcp":
            for key in QUIC_ONLY:
                if getattr(self, key) is not None:
                    raise KeyProblem(key, "only for stack quic")
        if self.quic_server == "h3quinn":
            self._fits_h3quinn()
        if self.stack == "quic" and self.session_tickets:
            raise KeyProblem("session_tickets", "only for stack tcp (h3server always "
                                                "issues tickets)")
        if self.stack == "tcp" and self.early_data and not self.session_tickets:
            raise KeyProblem("early_data", "expected session_tickets = true with it "
                                           "(early data needs a resumed session)")
        for key in ("tcp_rmem", "tcp_wmem"):
            v = getattr(self, key)
            if v is not None and not (0 < v[0] <= v[1] <= v[2]):
                raise KeyProblem(key, f"expected [min, default, max] with 0 < min <= default <= max, "
                                     f"got {list(v)}")
        return self

    def _fits_h3quinn(self) -> None:
        """The keys h3quinn has no option for are refused, not ignored."""
        if self.congestion_control not in H3QUINN_CC:
            raise KeyProblem("congestion_control",
                             f"expected one of {', '.join(H3QUINN_CC)} with quic_server = "
                             f"\"h3quinn\", got {self.congestion_control!r}")
        if not self.pacing:
            raise KeyProblem("pacing", 'expected true with quic_server = "h3quinn" '
                                       "(quinn always paces)")
        for key in H3QUINN_LACKS:
            if getattr(self, key) not in (None, False):
                raise KeyProblem(key, 'not with quic_server = "h3quinn" (it has no such option)')


H3QUINN_CC = ("cubic", "reno", "bbr")
"""h3quinn's --cc: quinn's Cubic, NewReno and Bbr."""
H3QUINN_LACKS = ("gso", "max_ack_delay_ms", "ack_delay_exponent", "early_data")
"""QUIC keys h3server has an option for and h3quinn does not."""


# ------------------------------------------------------------------ loading

def load_network(profile: str | Path) -> NetworkProfile:
    p = _load(NetworkProfile, profile, NETWORKS_DIR)
    directions: tuple[Literal["uplink", "downlink"], ...] = ("uplink", "downlink")
    for d in directions:
        if getattr(p, f"{d}_trace") is not None:
            _check_trace(p, d)
    return p


def _check_trace(p: NetworkProfile, d: Literal["uplink", "downlink"]) -> None:
    """A trace path resolves into Mahimahi's traces or the profile's folder, and parses
    (read once here: the profile keeps what was read, see NetworkProfile.trace)."""
    from testbed.formats import traces

    name = getattr(p, f"{d}_trace")
    where = f"{_shown(Path(p.source))}: key {d}_trace"
    expected = f"expected a Mahimahi trace file (here, or in {MAHIMAHI_TRACES})"
    path = p.trace_path(d)
    assert path is not None  # called for a trace-driven direction only
    if p.trace_home(path) is None:
        raise InputError(f"{where}: {expected}, got {name!r}, which resolves to {path}, "
                         "outside both folders")
    if not path.exists():
        raise InputError(f"{where}: {expected}, got {name!r}: no such file")
    try:
        p.trace(d)
    except traces.TraceError as e:
        raise InputError(f"{where}: {e}") from None


def load_protocol(profile: str | Path) -> ProtocolProfile:
    return _load(ProtocolProfile, profile, PROTOCOLS_DIR)


def comparisons() -> profiles_meta.ProfilesMeta:
    """The checkout's labels, order and compared pairs (profiles/comparisons.toml and
    each profile's label, results_contract.profiles_meta), checked: InputError of one
    line naming the file, the key and what was expected."""
    try:
        return profiles_meta.from_profiles()
    except profiles_meta.ProfilesError as e:
        raise InputError(str(e)) from None


def meta_record(networks: Mapping[str, NetworkProfile],
                settings: Mapping[str, ProtocolProfile]) -> dict[str, Any]:
    """What a campaign's manifest records of the profiles (profiles_meta): the
    checkout's comparisons() with the labels and stacks of the campaign's own
    profiles (by the name its trials are stored under) over them."""
    return comparisons().with_profiles(
        {n: p.shown_as for n, p in settings.items()},
        {n: p.shown_as for n, p in networks.items()},
        {n: p.stack for n, p in settings.items()}).to_json()


def available(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.toml"))


def _locate(profile: str | Path, folder: Path) -> Path:
    text = str(profile)
    looks_like_path = "/" in text or text.endswith(".toml")
    path = Path(text) if looks_like_path else folder / f"{text}.toml"
    if not path.is_file():
        names = ", ".join(available(folder)) or "none"
        if looks_like_path:
            raise InputError(f"{text}: no such profile file")
        raise InputError(f"{text}: no such profile in {_shown(folder)} (available: {names}); "
                         "give a name from there or a path to a TOML file")
    return path


def _load(model: type[P], profile: str | Path, folder: Path) -> P:
    path = _locate(profile, folder)
    return tomlfile.load(path, model, shown=_shown(path), what="profile")


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _resolve_trace(name: str, base: Path | None) -> Path:
    p = Path(name)
    if p.is_absolute():
        return p
    for folder in (base, MAHIMAHI_TRACES):
        if folder is not None and (folder / p).is_file():
            return folder / p
    return (base or MAHIMAHI_TRACES) / p
