"""Hostile recordings: every command that reads one refuses it before serving or writing.

Each case writes a good recording into {dir}/rec and breaks it one way (a
body that is a symbolic link to the host's secret, a tampered body, a host
name, an IP, a header, a status...). `recording show`, `recording har`,
`replay` (both stacks) and a campaign must all answer with one line naming
manifest.json and the key, exit 2, and print nothing of the secret.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from support.hostile_harness import Case, Host, run_case
from support.hostile_recordings import (
    BODY,
    GOOD,
    HAR,
    REPLAY,
    REPLAY_QUIC,
    SHOW,
    body_file,
    edit,
    everywhere,
    exchange0,
    write_good,
)

CAMPAIGN = 'sites = ["{dir}/rec"]\nnetworks = ["dsl"]\nprotocols = ["tcp"]\nruns = 1\n'

RUN = ["run", "{dir}/c.toml", "--out", "{dir}/out"]


def symlinked_body(d: Path, host: Host) -> None:
    body = body_file(write_good(d))
    body.unlink()
    body.symlink_to(host.secret)


def symlinked_body_same_size(d: Path, host: Host) -> None:
    """The link and a manifest claiming the secret's size, so only the link gives it away."""
    rec = write_good(d)
    body = body_file(rec)
    body.unlink()
    body.symlink_to(host.secret)
    data = json.loads((rec / "manifest.json").read_text())
    data["exchanges"][0]["body_size"] = data["bytes"] = host.secret.stat().st_size
    (rec / "manifest.json").write_text(json.dumps(data))


def tampered_body(d: Path, host: Host) -> None:
    body = body_file(write_good(d))
    body.write_bytes(BODY.replace(b"hello", b"HELLO"))  # same size, other bytes


def longer_body(d: Path, host: Host) -> None:
    body = body_file(write_good(d))
    body.write_bytes(BODY + b"<script>evil()</script>")


def symlinked_bodies_dir(d: Path, host: Host) -> None:
    rec = write_good(d)
    os.rename(rec / "bodies", d / "elsewhere")
    (rec / "bodies").symlink_to(d / "elsewhere")


def symlinked_manifest(d: Path, host: Host) -> None:
    rec = write_good(d)
    (rec / "manifest.json").unlink()
    (rec / "manifest.json").symlink_to(host.secret)


def fifo_body(d: Path, host: Host) -> None:
    body = body_file(write_good(d))
    body.unlink()
    os.mkfifo(body)


def body_outside(d: Path, host: Host) -> None:
    edit(exchange0(body="../../host/secret"))(d, host)


def gzip_bomb(d: Path, host: Host) -> None:
    bomb = gzip.compress(bytes(100 * 1024 * 1024), 9)
    x = {**GOOD, "response_headers": [["content-type", "text/html"],
                                      ["content-encoding", "gzip"]]}
    write_good(d, [(x, bomb)])


def duplicate_origin(data: dict) -> None:
    data["origins"].append({**data["origins"][0], "ip": "203.0.113.6"})


def no_body_for(status: int) -> Callable[[dict], None]:
    return exchange0(status=status)


BODY_KEY = "exchanges/0/body"
CASES = [
    # bodies
    Case("symlinked body via recording har", HAR, ["manifest.json", BODY_KEY, "symbolic link"],
         prepare=symlinked_body),
    Case("symlinked body via recording show", SHOW, ["manifest.json", BODY_KEY, "symbolic link"],
         prepare=symlinked_body),
    Case("symlinked body via replay tcp", REPLAY, ["manifest.json", BODY_KEY, "symbolic link"],
         prepare=symlinked_body),
    Case("symlinked body via replay quic", REPLAY_QUIC,
         ["manifest.json", BODY_KEY, "symbolic link"], prepare=symlinked_body),
    Case("symlinked body via a campaign", RUN, ["manifest.json", BODY_KEY, "symbolic link"],
         files={"c.toml": CAMPAIGN}, prepare=symlinked_body),
    Case("symlinked body of the secret's size via har", HAR,
         ["manifest.json", BODY_KEY, "symbolic link"], prepare=symlinked_body_same_size),
    Case("tampered body via replay tcp", REPLAY, ["manifest.json", BODY_KEY, "SHA-256"],
         prepare=tampered_body),
    Case("tampered body via recording har", HAR, ["manifest.json", BODY_KEY, "SHA-256"],
         prepare=tampered_body),
    Case("body of the wrong size", REPLAY, ["manifest.json", "exchanges/0/body_size"],
         prepare=longer_body),
    Case("body named ../ out of bodies/", HAR, ["manifest.json", BODY_KEY],
         prepare=body_outside),
    Case("bodies/ a symbolic link", SHOW, ["manifest.json", "bodies/", "symbolic link"],
         prepare=symlinked_bodies_dir),
    Case("manifest a symbolic link to the secret", SHOW, ["manifest.json", "symbolic link"],
         prepare=symlinked_manifest),
    Case("body a FIFO", HAR, ["manifest.json", BODY_KEY, "not a regular file"],
         prepare=fifo_body),
    Case("gzip bomb in HAR export", HAR, ["manifest.json", BODY_KEY, "more than"],
         prepare=gzip_bomb),
    # host names
    Case("host name with an empty label", SHOW, ["manifest.json", "origins/0/host", "DNS name"],
         prepare=edit(everywhere(host="www..a.test"))),
    Case("host name with a comma (resolver rules)", REPLAY, ["manifest.json", "origins/0/host"],
         prepare=edit(everywhere(host="a.test,map*"))),
    Case("host name not an A-label", SHOW, ["manifest.json", "origins/0/host", "A-label"],
         prepare=edit(everywhere(host="xn--zz.test"))),
    Case("host name in Unicode", SHOW, ["manifest.json", "origins/0/host"],
         prepare=edit(everywhere(host="bücher.test"))),
    Case("duplicate origin", SHOW, ["manifest.json", "origins/1/host", "twice"],
         prepare=edit(duplicate_origin)),
    # IPs
    Case("IP in Mahimahi's 100.64/10", REPLAY, ["manifest.json", "origins/0/ip", "100.64.0.0/10"],
         prepare=edit(everywhere(ip="100.64.0.7"))),
    Case("IP in the testbed's 198.18/15", SHOW, ["manifest.json", "origins/0/ip", "198.18.0.0/15"],
         prepare=edit(everywhere(ip="198.18.0.1"))),
    Case("IP on loopback", REPLAY, ["manifest.json", "origins/0/ip", "loopback"],
         prepare=edit(everywhere(ip="127.0.0.1"))),
    Case("IP multicast", SHOW, ["manifest.json", "origins/0/ip", "multicast"],
         prepare=edit(everywhere(ip="224.0.0.251"))),
    Case("IP not IPv4", SHOW, ["manifest.json", "origins/0/ip"],
         prepare=edit(everywhere(ip="::1"))),
    # headers
    Case("CR LF in a header name", REPLAY, ["manifest.json", "response_headers/0/0"],
         prepare=edit(exchange0(response_headers=[["x-a\r\nset-cookie", "1"]]))),
    Case("CR LF in a header value", REPLAY, ["manifest.json", "response_headers/0/1"],
         prepare=edit(exchange0(response_headers=[["x-a", "1\r\nset-cookie: a=b"]]))),
    Case("LF ending a header value", SHOW, ["manifest.json", "response_headers/0/1"],
         prepare=edit(exchange0(response_headers=[["x-a", "1\n"]]))),
    Case("NUL in a header value", REPLAY, ["manifest.json", "request_headers/0/1"],
         prepare=edit(exchange0(request_headers=[["user-agent", "x\u0000y"]]))),
    # statuses
    Case("status 99", SHOW, ["manifest.json", "exchanges/0/status"],
         prepare=edit(exchange0(status=99))),
    Case("status 600", REPLAY, ["manifest.json", "exchanges/0/status"],
         prepare=edit(exchange0(status=600))),
    Case("body on a 204", REPLAY, ["manifest.json", BODY_KEY, "204"],
         prepare=edit(no_body_for(204))),
    Case("body on a 304", HAR, ["manifest.json", BODY_KEY, "304"],
         prepare=edit(no_body_for(304))),
    Case("body on a HEAD response", SHOW, ["manifest.json", BODY_KEY, "HEAD"],
         prepare=edit(exchange0(method="HEAD"))),
    # schemes
    Case("http on 443 of a recorded IP", REPLAY,
         ["manifest.json", "origins/0/scheme", "203.0.113.5:443", "IP:port"],
         prepare=lambda d, host: second_scheme(d, 443)),
    Case("http and https on one custom port", SHOW,
         ["manifest.json", "origins/1/scheme", "203.0.113.5:8443"],
         prepare=lambda d, host: second_scheme(d, 8443)),
]


def second_scheme(d: Path, port: int) -> None:
    """A second host on the same IP:port as http (write() refuses that, so edited after)."""
    rec = write_good(d, [({**GOOD, "port": port}, BODY),
                     ({**GOOD, "port": port, "host": "b.a.test", "target": "/2"}, b"two")])
    data = json.loads((rec / "manifest.json").read_text())
    for row in [*data["origins"], *data["exchanges"]]:
        if row["host"] == "b.a.test":
            row["scheme"] = "http"
    (rec / "manifest.json").write_text(json.dumps(data))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_recording(case: Case, tmp_path: Path):
    run_case(case, tmp_path)
