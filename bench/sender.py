"""bench/sender: the sender's CPU cost per transferred GB and its throughput on one
core, for plain TCP, TLS 1.3 over TCP and QUIC (h3server) with GSO off/on, three
UDP payload sizes and three client ACK policies. Needs root and `make setup`.

    bench/sender [--repeats N] [--seconds S] [--min-mb MB] [--body-mb MB] [--rows PATTERNS]
                 [--server-share SHARE] [--quic-pacing on|off] [--json FILE] [--list]

Two namespaces joined by a veth pair (testbed.host.topology, no Mahimahi), made and
removed by the bench (also on Ctrl-C or SIGTERM). The server runs as the testbed
user pinned to core 0, the client pinned to core 1; each row is one bulk transfer
on one connection (GETs of one --body-mb body, at least --min-mb and --seconds;
iperf3: --seconds), repeated --repeats times in rounds (every row once per round,
so drift does not favour one).

Server side: iperf3 -s (plain TCP, the seeds' tool), nginx with TLS 1.3 and
AES-128-GCM serving a file (HTTP/1.1, TLS in user space as nginx does without
kTLS), h3server serving a one-exchange recording (CUBIC, pacing off by default as
the seeds' senders did not pace). CUBIC everywhere. The server's veth has TCP and
UDP segmentation offload off, so GSO segments in software on the sender's core, as
on a NIC without segmentation offload (the seeds' setup); receive packet steering
puts each side's receive processing on its own core.

Clients: iperf3 -c -R, bench/sender_client.py (Python ssl, HTTP/1.1), and h3bulk
(h3server/h3bulk/, the same quiche) with an ACK policy (sender_table.ACKS).

The server may use only a share of core 0 (a CFS quota in a cgroup the bench makes:
tcp 15 %, tls and quic 35 %; --server-share), because receiving costs this kernel
about as much as sending: unthrottled, the client's core fills first.

CPU: the server processes' utime+stime (/proc via psutil, nginx's worker included)
before and after, per GB; one-core throughput = 8000 / that. Beside it core 0's busy
time per GB (/proc/stat sampled every 20 ms), which also holds the kernel's softirq
work for a throttled server and any other load. A transfer is server-bound when the
server used >= 90 % of its quota (it never waited for the client); the client is
cleared when, besides, the client process used < 90 % of core 1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path
from typing import Self

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import sender_table as T

from testbed.errors import InputError
from testbed.formats import recording as rec
from testbed.host import enter, proc, runstate, safefs
from testbed.host.paths import H3SERVER, chown_to_user
from testbed.host.runstate import current
from testbed.host.topology import ReplayTopology
from testbed.replay import certs, nginx

SERVER_IP = "203.0.113.10"
HOST = "bulk.sender.test"
PATH = "/body"
IPERF_PORT = 5201
SERVER_CORE, CLIENT_CORE = 0, 1
H3BULK = H3SERVER.parent / "h3bulk"
SHARES = {"tcp": 0.15, "tls": 0.35, "quic": 0.35}
"""Share of its core each server may use: small enough that the client, whose kernel
receive path costs about as much as the sender's work, is never the bottleneck."""
CLIENT_PY = ROOT / "bench" / "sender_client.py"

NGINX_CONF = """\
# bench/sender: nginx serving one file over TLS 1.3 (generated; see bench/sender.py).
worker_processes 1;
pid {var}/nginx.pid;
error_log {var}/nginx-error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {var}/tmp/client_body;
    proxy_temp_path {var}/tmp/proxy;
    fastcgi_temp_path {var}/tmp/fastcgi;
    uwsgi_temp_path {var}/tmp/uwsgi;
    scgi_temp_path {var}/tmp/scgi;
    server_tokens off;
    keepalive_requests 100000;
    server {{
        listen {ip}:443 ssl;
        ssl_protocols TLSv1.3;
        ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_session_cache off;
        ssl_session_tickets off;
        location = {path} {{
            alias {body};
            default_type application/octet-stream;
        }}
    }}
}}
"""


def h3server_has_gso(binary: Path = H3SERVER) -> bool:
    """Whether this h3server build takes --gso on|off."""
    return "--gso" in proc.output([binary, "--help"])


def missing_tools() -> str | None:
    for tool in ("iperf3", "nginx", "ethtool", "taskset"):
        if shutil.which(tool, path=enter.SAFE_PATH) is None:
            return f"{tool} not found; run `make setup`"
    for binary in (H3SERVER, H3BULK):
        if not os.access(binary, os.X_OK):
            return f"{binary} missing; build it: `make setup` (cargo build --release in h3server/)"
    return None


def cpu_times(pid: int) -> float:
    """user+system seconds of pid and its descendants."""
    p = psutil.Process(pid)
    total = 0.0
    for q in (p, *p.children(recursive=True)):
        try:
            t = q.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


class CpuQuota:
    """`with CpuQuota(name) as q:` a cgroup whose processes may use a share of one CPU
    (CFS bandwidth: share x 10 ms in every 10 ms, set by `q.set(share)`; 1: no limit);
    `q.wrap(argv)` starts argv in it. Removed on exit (its processes must be gone by
    then). cgroup v2, or v1's cpu controller."""

    PERIOD_US = 10_000

    def __init__(self, name: str):
        self.name = name
        self.dir: Path | None = None
        self.v2 = False

    def __enter__(self) -> Self:
        v2 = Path("/sys/fs/cgroup")
        v1 = Path("/sys/fs/cgroup/cpu")
        if "cpu" in _words(v2 / "cgroup.subtree_control"):
            self.dir, self.v2 = v2 / self.name, True
        elif (v1 / "cpu.cfs_quota_us").exists():
            self.dir = v1 / self.name
        else:
            raise SystemExit("bench/sender: no cgroup cpu controller (v2 with cpu in the root's "
                             "subtree_control, or v1's cpu); use --server-share 1")
        self.dir.mkdir()
        return self

    def set(self, share: float) -> None:
        assert self.dir is not None
        quota = int(share * self.PERIOD_US) if share < 1 else None
        if self.v2:
            (self.dir / "cpu.max").write_text(f"{quota or 'max'} {self.PERIOD_US}\n")
        else:
            (self.dir / "cpu.cfs_period_us").write_text(f"{self.PERIOD_US}\n")
            (self.dir / "cpu.cfs_quota_us").write_text(f"{quota or -1}\n")

    def wrap(self, argv: list[str]) -> list[str]:
        assert self.dir is not None
        return ["sh", "-c", f'echo $$ > {self.dir / "cgroup.procs"} && exec "$@"', "sh", *argv]

    def __exit__(self, *exc) -> None:
        if self.dir is None:
            return
        for _ in range(50):
            try:
                self.dir.rmdir()
                return
            except OSError:
                time.sleep(0.1)  # a process of the last server still exiting
        print(f"bench/sender: cgroup {self.dir} not removed: processes left in it",
              file=sys.stderr)


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


class CoreSampler:
    """Every core's /proc/stat times, sampled every `period` s on a thread while the
    `with` block runs; `busy(core, start, end)` is the busy share between the samples
    nearest inside [start, end]."""

    def __init__(self, period: float = 0.02):
        self.period = period
        self.samples: list[tuple[float, list]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            self.samples.append((time.monotonic(), psutil.cpu_times(percpu=True)))
            if self._stop.wait(self.period):
                return

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append((time.monotonic(), psutil.cpu_times(percpu=True)))

    def busy(self, core: int, start: float, end: float) -> float:
        inside = [(t, c[core]) for t, c in self.samples if start <= t <= end]
        if len(inside) < 2:
            inside = [(t, c[core]) for t, c in self.samples]
        a, b = inside[0][1], inside[-1][1]
        idle = (b.idle - a.idle) + (b.iowait - a.iowait)
        wall = _total(b) - _total(a)
        return 0.0 if wall <= 0 else min(1.0, (wall - idle) / wall)


def _total(t) -> float:
    """All of a core's time (guest time is already in user and nice)."""
    return t.user + t.nice + t.system + t.idle + t.iowait + t.irq + t.softirq + t.steal


def snmp(ns, table: str, key: str) -> int:
    """A counter of /proc/net/snmp in a namespace (e.g. Tcp RetransSegs)."""
    lines = [x.split() for x in proc.output(ns.exec(["cat", "/proc/net/snmp"])).splitlines()]
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names[0] == f"{table}:" and key in names:
            return int(values[names.index(key)])
    return 0


def backlog_drops(core: int) -> int:
    """Packets dropped because a core's receive backlog was full (/proc/net/softnet_stat;
    the whole machine's, not a namespace's)."""
    with open("/proc/net/softnet_stat") as f:
        for line in f:
            fields = line.split()
            cpu = int(fields[12], 16) if len(fields) > 12 else None
            if cpu == core:
                return int(fields[1], 16)
    return 0


class ClientError(Exception):
    """A client that ran but reported no transfer."""


class Bench:
    """The topology, the body, the certificate; one measurement per `measure` call."""

    def __init__(self, body_mb: int, min_mb: int, seconds: float, pacing: str,
                 gso_flag: bool, shares: dict[str, float] | None = None):
        self.shares = shares or {}
        self.quota: CpuQuota | None = None
        self.runs = 0
        self.body_bytes = body_mb * 1_000_000
        self.count = max(1, -(-min_mb // body_mb))
        self.seconds = seconds
        self.pacing = pacing
        self.gso_flag = gso_flag
        self.exits = ExitStack()

    # --- set up, torn down on exit ---------------------------------------------------
    def __enter__(self) -> Self:
        with ExitStack() as exits:
            self.work = Path(tempfile.mkdtemp(prefix="bench-sender-", dir=current().dir))
            exits.callback(safefs.rmtree, self.work)
            chown_to_user(self.work, group_only=True)
            os.chmod(self.work, 0o750)
            self.var = safefs.user_dir(self.work / "var", "tmp", mode=0o750)
            self.recording = self._recording()
            self.leaf = certs.issue_leaf([HOST, SERVER_IP], self.work, group=True)
            (self.work / "nginx.conf").write_text(NGINX_CONF.format(
                var=self.var, ip=SERVER_IP, cert=self.leaf.chain_path, key=self.leaf.key_path,
                path=PATH, body=self.body_path))
            self.topo = exits.enter_context(ReplayTopology([SERVER_IP]))
            self._tune()
            if any(x < 1 for x in self.shares.values()):
                self.quota = exits.enter_context(CpuQuota(current().name("sender")))
            self.exits = exits.pop_all()
        return self

    def __exit__(self, *exc) -> None:
        self.exits.close()

    def _recording(self) -> Path:
        body = os.urandom(self.body_bytes)
        x = {"scheme": "https", "host": HOST, "port": 443, "ip": SERVER_IP, "method": "GET",
             "target": PATH, "request_headers": [["user-agent", "bench-sender"]],
             "status": 200,
             "response_headers": [["content-type", "application/octet-stream"],
                                  ["content-length", str(len(body))]]}
        meta = {"name": "sender-bulk", "url": f"https://{HOST}{PATH}", "loads": 1,
                "recorded_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        path = rec.write(self.work, meta, [(x, body)])
        # The servers run as the testbed user: the recording must be readable.
        for p in (path, path / "bodies"):
            os.chmod(p, 0o755)
        for p in (path / "manifest.json", *(path / "bodies").iterdir()):
            os.chmod(p, 0o644)
        self.body_path = path / "bodies" / rec.sha256(body)
        return path

    def _tune(self) -> None:
        srv, cli = self.topo.server, self.topo.client
        for ns in (srv, cli):
            ns.sysctl("net.ipv4.tcp_congestion_control", "cubic")
        # Segmentation in software on the sender's core (no TSO/USO on its veth).
        proc.run(srv.exec(["ethtool", "-K", self.topo.server_dev, "tso", "off",
                           "tx-udp-segmentation", "off"]))
        # Receive processing on the receiver's own core: the server's (ACKs) on 0,
        # the client's (data) on 1.
        for ns, dev, core in ((srv, self.topo.server_dev, SERVER_CORE),
                              (cli, self.topo.client_dev, CLIENT_CORE)):
            proc.run(ns.exec(["tee", f"/sys/class/net/{dev}/queues/rx-0/rps_cpus"]),
                     input=f"{1 << core:x}\n")

    # --- one measurement -----------------------------------------------------------
    def _server_argv(self, row: T.Row) -> tuple[list[str], str]:
        """argv and the log line that says it listens ("" for a TCP probe)."""
        if row.kind == "tcp":
            return ["iperf3", "-s", "-B", SERVER_IP, "-p", str(IPERF_PORT), "--forceflush"], \
                "Server listening"
        if row.kind == "tls":
            return nginx.nginx_argv(self.var, self.work / "nginx.conf"), ""
        argv = [str(H3SERVER), "--recording", str(self.recording),
                "--listen", f"{SERVER_IP}:443", "--cert", str(self.leaf.chain_path),
                "--key", str(self.leaf.key_path), "--cc", "cubic", "--pacing", self.pacing,
                "--max-udp-payload", str(row.payload), "--alt-svc", "off"]
        if self.gso_flag:
            argv += ["--gso", "on" if row.gso else "off"]
        return argv, "listening on"

    def _client_argv(self, row: T.Row) -> list[str]:
        if row.kind == "tcp":
            return ["iperf3", "-c", SERVER_IP, "-p", str(IPERF_PORT), "-R", "-J", "-C", "cubic",
                    "-t", str(self.seconds)]
        if row.kind == "tls":
            return proc.python(CLIENT_PY, "--connect", f"{SERVER_IP}:443", "--host", HOST,
                               "--path", PATH, "--count", self.count, "--seconds", self.seconds)
        return [str(H3BULK), "--connect", f"{SERVER_IP}:443", "--host", HOST, "--path", PATH,
                "--count", str(self.count), "--seconds", str(self.seconds),
                *T.ACKS[row.acks][1]]

    def measure(self, row: T.Row, attempts: int = 2) -> T.Sample:
        """One transfer; a client that reports an error (iperf3 does in its JSON, with
        exit status 0) gets one more try with a fresh server."""
        for attempt in range(attempts):
            try:
                return self._measure(row)
            except ClientError as e:
                if attempt + 1 == attempts:
                    raise SystemExit(f"bench/sender: {row.name}: {e}") from None
                print(f"bench/sender: {row.name}: {e}; once more", file=sys.stderr)
        raise AssertionError("unreachable")

    def _measure(self, row: T.Row) -> T.Sample:
        argv, ready = self._server_argv(row)
        self.runs += 1
        # A log of its own: an old one would already say the server listens.
        log = self.work / f"{row.name}-{self.runs}.log"
        argv = enter.as_user(["taskset", "-c", str(SERVER_CORE), *argv],
                             netns=self.topo.server.name, cwd=str(self.var))
        share = self.shares.get(row.kind, 1.0)
        if self.quota:
            self.quota.set(share)
            argv = self.quota.wrap(argv)
        with proc.Background(argv, log=log) as server:
            if ready:
                server.wait_for_log(ready, row.kind)
            else:
                proc.run(self.topo.client.exec(proc.python("-m", "testbed.replay.readiness",
                                                           "--timeout", "10",
                                                           f"tcp:{SERVER_IP}:443")))
            retrans0 = snmp(self.topo.server, "Tcp", "RetransSegs")
            drops0 = snmp(self.topo.client, "Udp", "RcvbufErrors") + backlog_drops(CLIENT_CORE)
            srv0 = cpu_times(server.pid)
            with CoreSampler() as cores:
                cp = proc.run(enter.as_user(["taskset", "-c", str(CLIENT_CORE),
                                             *self._client_argv(row)],
                                            netns=self.topo.client.name), timeout=600)
                end = time.monotonic()
            srv1 = cpu_times(server.pid)
            retrans = snmp(self.topo.server, "Tcp", "RetransSegs") - retrans0
            drops = (snmp(self.topo.client, "Udp", "RcvbufErrors") + backlog_drops(CLIENT_CORE)
                     - drops0)
            lost = self._quic_lost(server) if row.kind == "quic" else retrans
            if not server.alive():
                raise SystemExit(f"{row.name}: the server exited: {server.tail()}")
        out = json.loads(cp.stdout)
        if row.kind == "tcp" and ("error" in out or "sum_received" not in out.get("end", {})):
            raise ClientError(f"iperf3: {out.get('error', 'no sum_received in its report')}")
        return sample_from(row, out, srv1 - srv0, cores, end, lost=lost, drops=drops,
                           share=share)

    def _quic_lost(self, server: proc.Background) -> int | None:
        """Packets h3server declared lost, from its log line for the closed connection."""
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            m = re.search(r"closed .*: sent \d+ packets .*, lost (\d+)", server.tail(50))
            if m:
                return int(m.group(1))
            time.sleep(0.05)
        return None


def sample_from(row: T.Row, out: dict, server_cpu: float, cores: CoreSampler, end: float, *,
                lost: int | None, drops: int, share: float = 1.0) -> T.Sample:
    """A Sample from a client's JSON (iperf3's, sender_client's or h3bulk's), the
    server's CPU time and the cores' busy shares over the transfer (which ended at
    `end`, when the client exited)."""
    if row.kind == "tcp":
        summary = out["end"]["sum_received"]
        seconds, nbytes = summary["seconds"], summary["bytes"]
        client = out["end"]["cpu_utilization_percent"]["host_total"] / 100 * seconds
    else:
        seconds, nbytes, client = out["seconds"], out["bytes"], out["cpu_seconds"]
    acks = (100 * out["sent_packets"] / out["recv_packets"]
            if row.kind == "quic" and out.get("recv_packets") else None)
    return T.Sample(bytes=nbytes, seconds=seconds, server_cpu=server_cpu, client_cpu=client,
                    server_core=cores.busy(SERVER_CORE, end - seconds, end),
                    client_core=cores.busy(CLIENT_CORE, end - seconds, end),
                    share=share, acks_per_100=acks, lost=lost, client_drops=drops,
                    extra={"client": out if row.kind != "tcp" else {}})


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="bench/sender", description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="rounds over the rows (default 3)")
    ap.add_argument("--seconds", type=float, default=3.0,
                    help="least duration of a transfer (default 3 s)")
    ap.add_argument("--min-mb", type=int, default=200,
                    help="least MB per transfer, iperf3 aside (default 200)")
    ap.add_argument("--body-mb", type=int, default=50,
                    help="size of the body fetched again and again (default 50 MB)")
    ap.add_argument("--rows", help="comma-separated name patterns (default: every row)")
    ap.add_argument("--quic-pacing", choices=("on", "off"), default="off",
                    help="h3server --pacing (default off)")
    ap.add_argument("--server-share", type=float,
                    help="share of core 0 every server may use (CPU quota; default: "
                         + ", ".join(f"{k} {v:g}" for k, v in SHARES.items())
                         + "; 1: no quota)")
    ap.add_argument("--json", type=Path, help="write every sample here")
    ap.add_argument("--list", action="store_true", help="list the rows and exit")
    a = ap.parse_args(argv)
    if a.repeats < 1 or a.min_mb < 1 or a.body_mb < 1 or not 0 < a.seconds <= 60 \
            or not 0.05 <= (a.server_share or 1) <= 1:
        ap.error("--repeats, --min-mb and --body-mb must be at least 1, --seconds in (0, 60], "
                 "--server-share in [0.05, 1]")
    if a.json:
        try:
            safefs.check_out_file(a.json, "--json")
        except InputError as e:
            print(f"bench/sender: error: {e}", file=sys.stderr)
            raise SystemExit(2) from None
    gso = os.access(H3SERVER, os.X_OK) and h3server_has_gso()
    try:
        rows = T.select(T.all_rows(gso), a.rows)
    except ValueError as e:
        ap.error(str(e))
    if a.list:
        for r in rows:
            print(f"{r.name:32} {r.label}")
        if not gso:
            print(f"(GSO on rows need an h3server with --gso; {H3SERVER} has none)")
        return
    if os.geteuid() != 0:
        raise SystemExit("bench/sender needs root (namespaces); run with sudo")
    if os.cpu_count() is None or os.cpu_count() < 2:
        raise SystemExit("bench/sender needs two cores (server on 0, client on 1)")
    problem = missing_tools()
    if problem:
        raise SystemExit(problem)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # This process (it samples the cores) stays off the server's core.
    os.sched_setaffinity(0, {CLIENT_CORE})
    summaries = [T.Summary(r) for r in rows]
    n, total = 0, len(rows) * a.repeats
    shares = {k: a.server_share or v for k, v in SHARES.items()}
    print(f"bench/sender: {len(rows)} rows x {a.repeats} rounds; transfers of at least "
          f"{a.seconds:g} s and {a.min_mb} MB ({a.body_mb} MB body; iperf3 {a.seconds:g} s); "
          f"server on core {SERVER_CORE} (allowed "
          + ", ".join(f"{k} {v:.0%}" for k, v in shares.items())
          + f" of it), client on core {CLIENT_CORE}; h3server "
          f"{'with' if gso else 'without'} --gso, pacing {a.quic_pacing}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    try:
        with Bench(a.body_mb, a.min_mb, a.seconds, a.quic_pacing, gso, shares) as bench:
            for _ in range(a.repeats):
                for s in summaries:
                    n += 1
                    x = bench.measure(s.row)
                    s.samples.append(x)
                    print(f"[{n}/{total}] {s.row.name}: {x.mbit_s:.0f} Mbit/s, server "
                          f"{x.server_s_per_gb:.2f} s/GB (quota used {x.quota_used_pct:.0f} %, one core "
                          f"{x.one_core_mbit_s:.0f} Mbit/s), "
                          f"client core {x.client_pct:.0f} % (process {x.client_process_pct:.0f} %), "
                          f"{x.bottleneck}-bound", file=sys.stderr,
                          flush=True)
    finally:
        runstate.release()
    print(T.table(summaries))
    print(T.notes(summaries))
    if a.json:
        safefs.write_out_file(a.json, json.dumps(
            [{"row": asdict(s.row), "samples": [T.sample_json(x) for x in s.samples]}
             for s in summaries],
            indent=1), "--json")


if __name__ == "__main__":
    main()
