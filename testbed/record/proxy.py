"""mitmdump with the capture addon, running while a `with` block runs.

    with Mitmdump(workdir, netns=None) as proxy:
        proxy.port, proxy.spki, proxy.capture

It runs as the testbed user (it parses whatever the web sends), listening on
127.0.0.1 on a port the kernel picks, with a confdir of its own in which
mitmproxy makes its CA: the CA lives and dies with the recording, and no
trust store anywhere is touched. mitmproxy signs every leaf certificate with
one key (its CA key), so the SHA-256 of that key's SubjectPublicKeyInfo is
all Chromium needs to trust it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pwd
import shutil
import sys
import time
from pathlib import Path
from typing import Self

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from testbed import proc, runstate
from testbed.enter import as_user
from testbed.errors import TestbedError
from testbed.record import addon

MITMDUMP = Path(sys.executable).parent / "mitmdump"


def spki_sha256(cert_pem: bytes) -> str:
    """base64(SHA-256(SubjectPublicKeyInfo)) of the first certificate in cert_pem."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    spki = cert.public_key().public_bytes(serialization.Encoding.DER,
                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(spki).digest()).decode()


def mitmdump_argv(confdir: Path, capture: Path, resolve: dict[str, str],
                  upstream_ca: Path | None) -> list[str]:
    """mitmdump's command line (pure)."""
    argv = [str(MITMDUMP), "--listen-host", "127.0.0.1", "--listen-port", "0",
            "--set", f"confdir={confdir}",
            "--set", "http3=false",
            "--set", "termlog_verbosity=info", "--set", "flow_detail=1",
            "-s", str(Path(addon.__file__)),
            "--set", f"testbed_capture={capture}"]
    for host, ip in sorted(resolve.items()):
        argv += ["--set", f"testbed_resolve={host}={ip}"]
    if upstream_ca is not None:
        argv += ["--set", f"ssl_verify_upstream_trusted_ca={upstream_ca}"]
    return argv


class Mitmdump:
    def __init__(self, workdir: Path, netns: str | None = None,
                 resolve: dict[str, str] | None = None, upstream_ca: Path | None = None,
                 run: runstate.Run | None = None, start_timeout: float = 30):
        self.workdir = Path(workdir)
        self.netns = netns
        self.resolve = dict(resolve or {})
        self.upstream_ca = upstream_ca
        self.run = run or runstate.current()
        self.start_timeout = start_timeout

    def __enter__(self) -> Self:
        user = pwd.getpwnam(runstate.USER)
        self.confdir = self.workdir / "mitmproxy"
        self.capture = self.workdir / "capture"
        for d in (self.confdir, self.capture):
            d.mkdir(parents=True)
            os.chown(d, user.pw_uid, user.pw_gid)
        ca = None
        if self.upstream_ca is not None:
            # A copy the unprivileged proxy can read, whatever the original's permissions.
            ca = self.confdir / "upstream-ca.pem"
            shutil.copyfile(self.upstream_ca, ca)
            os.chmod(ca, 0o644)
        argv = as_user(mitmdump_argv(self.confdir, self.capture, self.resolve, ca),
                       netns=self.netns, run=self.run)
        self.log = self.workdir / "mitmdump.log"
        self.bg = proc.Background(argv, log=self.log)
        self.bg.__enter__()
        try:
            self.port = self._wait_ready()
            self.spki = spki_sha256((self.confdir / "mitmproxy-ca.pem").read_bytes())
        except BaseException:
            self.bg.stop()
            raise
        return self

    def _wait_ready(self) -> int:
        ready = self.capture / "ready.json"
        deadline = time.monotonic() + self.start_timeout
        while not ready.exists():
            if not self.bg.alive():
                raise TestbedError(f"mitmdump exited at start: {self._tail()}")
            if time.monotonic() > deadline:
                raise TestbedError(f"mitmdump did not listen within {self.start_timeout:g} s: "
                                   f"{self._tail()}")
            time.sleep(0.05)
        listen = json.loads(ready.read_text())["listen"]
        return int(listen[0][1])

    def _tail(self) -> str:
        return " | ".join(self.bg.tail(3).splitlines())

    def alive(self) -> bool:
        return self.bg.alive()

    def stop(self) -> None:
        self.bg.stop()

    def __exit__(self, *exc) -> None:
        self.bg.stop()

    # What the addon captured so far -------------------------------------------------

    def exchanges(self) -> list[dict]:
        return _jsonl(self.capture / "exchanges.jsonl")

    def errors(self) -> list[dict]:
        return _jsonl(self.capture / "errors.jsonl")

    def body(self, sha: str | None) -> bytes:
        return (self.capture / "bodies" / sha).read_bytes() if sha else b""


def _jsonl(path: Path) -> list[dict]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    # A line being written has no newline yet: only complete lines count.
    return [json.loads(line) for line in text.split("\n")[:-1] if line]
