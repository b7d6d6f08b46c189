"""Hostile recordings that would steer one stack's server and not the other's.

nginx acts on a few response headers from its upstream (`X-Accel-Limit-Rate`
sends the response at that rate, `X-Accel-Redirect` serves another URI,
`X-Accel-Buffering` turns buffering off...) and removes them; h3server passes
every header through. A recording carrying one would slow or change the TCP
stack alone. So the recording rules refuse them (one line, exit 2, through
every command that reads a recording), and nginx ignores them anyway
(`uwsgi_ignore_headers`): the e2e test lifts the rule and times the same
response over both stacks.

uWSGI expands `$(VAR)` and `@(file)` in its command line: a recording folder
whose path holds them is served by uWSGI from exactly that folder, because no
path reaches uWSGI's command line (the e2e test replays one and fetches a URL).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.hostile_harness import TESTBED, Case, run_case
from support.hostile_recordings import REPLAY, REPLAY_QUIC, SHOW, edit, exchange0
from support.needs import need

from testbed.formats import recording as rec
from testbed.formats import recording_rules
from testbed.host import proc
from testbed.host.paths import H3SERVER
from testbed.replay import nginx
from testbed.replay.env import ReplayEnv

HERE = Path(__file__).resolve().parent
HEADERS = [["content-type", "text/html"]]


def with_header(name: str, value: str):
    return edit(exchange0(response_headers=[*HEADERS, [name, value]]))


KEY = ["manifest.json", "exchanges/0/response_headers/1/0"]
CASES = [
    Case("x-accel-limit-rate via recording show", SHOW, [*KEY, "x-accel-limit-rate"],
         prepare=with_header("x-accel-limit-rate", "4000")),
    Case("x-accel-limit-rate via replay tcp", REPLAY, [*KEY, "x-accel-limit-rate"],
         prepare=with_header("x-accel-limit-rate", "4000")),
    Case("x-accel-redirect via replay quic", REPLAY_QUIC, [*KEY, "x-accel-redirect"],
         prepare=with_header("x-accel-redirect", "/elsewhere")),
    Case("x-accel-buffering via recording show", SHOW, [*KEY, "x-accel-buffering"],
         prepare=with_header("x-accel-buffering", "no")),
    Case("x-accel-expires via recording show", SHOW, [*KEY, "x-accel-expires"],
         prepare=with_header("x-accel-expires", "0")),
    Case("x-accel-charset via recording show", SHOW, [*KEY, "x-accel-charset"],
         prepare=with_header("x-accel-charset", "koi8-r")),
    Case("any other x-accel- header via recording show", SHOW, [*KEY, "x-accel-future"],
         prepare=with_header("x-accel-future", "1")),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_server_directive_in_a_recording(case: Case, tmp_path: Path):
    run_case(case, tmp_path)


def test_uwsgi_command_line_holds_no_path():
    """The recording and the summary reach uWSGI through its environment, never as
    arguments it would expand."""
    argv = nginx.uwsgi_argv(socket=Path("/run/x/var/uwsgi.sock"))
    assert "--env" not in argv
    assert not any("TESTBED_REPLAY" in a for a in argv)


# --- end to end -------------------------------------------------------------------------

WWW, IP = "www.a.test", "203.0.113.5"
SLOW = b"<p>" + b"x" * 20_000 + b"</p>"
"""At nginx's obeyed X-Accel-Limit-Rate of 4000 bytes/s, 5 s; on either stack, ms."""

FETCH_H3 = """
import asyncio, json, ssl, sys, time
from aioquic.asyncio import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration

ip, host, path = sys.argv[1:4]

class Client(QuicConnectionProtocol):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.h3 = H3Connection(self._quic)
        self.headers, self.size = {}, 0
        self.done = asyncio.get_running_loop().create_future()

    def quic_event_received(self, event):
        for ev in self.h3.handle_event(event):
            if isinstance(ev, HeadersReceived):
                self.headers.update((k.decode(), v.decode()) for k, v in ev.headers)
            if isinstance(ev, DataReceived):
                self.size += len(ev.data)
            if isinstance(ev, HeadersReceived | DataReceived) and ev.stream_ended:
                self.done.set_result(None)

async def main():
    cfg = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN,
                            verify_mode=ssl.CERT_NONE, server_name=host)
    async with connect(ip, 443, configuration=cfg, create_protocol=Client) as c:
        t0 = time.monotonic()
        sid = c._quic.get_next_available_stream_id()
        c.h3.send_headers(sid, [(b":method", b"GET"), (b":scheme", b"https"),
                                (b":authority", host.encode()), (b":path", path.encode())],
                          end_stream=True)
        c.transmit()
        await c.done
        print(json.dumps({"seconds": time.monotonic() - t0, "headers": c.headers,
                          "size": c.size}))

asyncio.run(asyncio.wait_for(main(), 30))
"""


def fetch(env: ReplayEnv, path: str) -> dict:
    """GET https://WWW/path from the client namespace over the env's stack: the seconds
    from request to the response's end, its headers and body size."""
    client = env._topo().client
    if env.stack == "quic":
        out = proc.output(client.exec([sys.executable, "-c", FETCH_H3, IP, WWW, path]),
                          timeout=60)
        return json.loads(out)
    cp = proc.run(client.exec(["curl", "-sk", "--http2", "-m", "30", "--resolve",
                               f"{WWW}:443:{IP}", "-D", "-", "-o", "/dev/null",
                               "-w", "\n%{time_pretransfer} %{time_total} %{size_download}",
                               f"https://{WWW}{path}"]), timeout=60)
    *head, timing = cp.stdout.strip().splitlines()
    pretransfer, total, size = timing.split()
    headers = dict(line.split(": ", 1) for line in head[1:] if ": " in line)
    return {"seconds": float(total) - float(pretransfer), "size": int(size),
            "headers": {k.lower(): v.strip() for k, v in headers.items()}}


def unruled_uwsgi_argv(original):
    """uWSGI started on tests/hostile/unruled_wsgi.py: the replay app with the rule
    refusing server directives lifted, so that what is measured is nginx's config."""
    def argv(**kw) -> list[str]:
        out = original(**kw)
        out[out.index("testbed.replay.wsgi:application")] = "unruled_wsgi:application"
        return [*out, "--pythonpath", str(HERE)]
    return argv


@pytest.fixture
def public_dir():
    """A fresh folder the testbed user can read (the servers run as that user)."""
    d = Path(tempfile.mkdtemp(prefix="tb-directives-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.e2e
def test_x_accel_limit_rate_takes_the_same_time_over_both_stacks(public_dir, monkeypatch):
    if not H3SERVER.exists():
        need(f"{H3SERVER} not built (make setup)")
    good = {"scheme": "https", "host": WWW, "port": 443, "ip": IP, "method": "GET",
            "target": "/slow", "request_headers": [], "status": 200,
            "response_headers": [["content-type", "text/html"]]}
    path = rec.write(public_dir, {"name": "slow", "url": f"https://{WWW}/slow",
                                  "recorded_at": "2026-01-01T00:00:00Z", "loads": 1},
                     [(good, SLOW)])
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["exchanges"][0]["response_headers"].append(["x-accel-limit-rate", "4000"])
    (path / "manifest.json").write_text(json.dumps(manifest))
    # The rule refuses it; lifted here (and in the uWSGI app) to test nginx's guard.
    monkeypatch.setattr(recording_rules, "SERVER_DIRECTIVES", (), raising=False)
    monkeypatch.setattr(nginx, "uwsgi_argv", unruled_uwsgi_argv(nginx.uwsgi_argv))
    recording = rec.load(path)
    got = {}
    for stack in ("tcp", "quic"):  # the recording itself served (no pinned script)
        with ReplayEnv(recording, stack, deterministic_scripts=False) as env:
            fetch(env, "/slow")  # the connection's first response: handshakes done
            got[stack] = fetch(env, "/slow")
    tcp, quic = got["tcp"], got["quic"]
    assert tcp["size"] == quic["size"] == len(SLOW)
    # 20 kB at 4000 bytes/s would be 5 s; unshaped, both stacks take milliseconds.
    assert tcp["seconds"] < 1.0 and quic["seconds"] < 1.0, (tcp, quic)
    # Served as recorded by both (nginx would otherwise remove it).
    assert tcp["headers"].get("x-accel-limit-rate") == \
        quic["headers"].get("x-accel-limit-rate") == "4000", (tcp["headers"], quic["headers"])


@pytest.mark.e2e
@pytest.mark.parametrize("folder", ["x$(LANG)", "y@(name)"])
def test_uwsgi_serves_exactly_the_recording_folder_root_checked(folder, public_dir):
    """A decoy where uWSGI's expansion would lead ($(LANG) is C.UTF-8 for the servers,
    @(name) a file in their folder): the real body is served, not the decoy's."""
    real, decoy = public_dir / folder, public_dir / "xC.UTF-8"
    for parent, body in ((real, b"<p>the checked recording</p>"), (decoy, b"<p>decoy</p>")):
        parent.mkdir(mode=0o755)
        good = {"scheme": "https", "host": WWW, "port": 443, "ip": IP, "method": "GET",
                "target": "/", "request_headers": [], "status": 200,
                "response_headers": [["content-type", "text/html"]]}
        rec.write(parent, {"name": "rec", "url": f"https://{WWW}/",
                           "recorded_at": "2026-01-01T00:00:00Z", "loads": 1}, [(good, body)])
    cp = subprocess.run([TESTBED, "replay", str(real / "rec"), "--stack", "tcp",
                         "--no-deterministic-scripts", "--",  # uWSGI given the folder itself
                         "curl", "-sk", "-m", "20", "--resolve", f"{WWW}:443:{IP}",
                         f"https://{WWW}/"],
                        check=False, capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout == "<p>the checked recording</p>", cp.stdout + cp.stderr


def test_the_recorder_drops_server_directives():
    """What a site sends through mitmproxy is stored without them (a recording that
    holds one would not load)."""
    from testbed.record import normalise

    kept = normalise.response_headers([("Content-Type", "text/html"),
                                       ("X-Accel-Buffering", "no"),
                                       ("x-accel-limit-rate", "4000")], 0)
    assert kept == (("content-type", "text/html"), ("content-length", "0"))
