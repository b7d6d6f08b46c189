"""mitmdump with the capture addon, running while a `with` block runs.

    with Mitmdump(workdir, netns=None) as proxy:
        proxy.port, proxy.spki, proxy.capture

It runs as the testbed user (it parses whatever the web sends), listening on
127.0.0.1 on a port the kernel picks, with a confdir of its own in which
mitmproxy makes its CA: the CA lives and dies with the recording, and no
trust store anywhere is touched. mitmproxy signs every leaf certificate with
one key (its CA key), so the SHA-256 of that key's SubjectPublicKeyInfo is
all Chromium needs to trust it.

Files (see testbed.host.safefs): the workdir is root's (the proxy's log, the copy
of an upstream CA); mitmproxy/ and capture/ are the testbed user's, and root
reads what the proxy wrote there without following a symlink, bodies only by
their hex digest.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
import time
from pathlib import Path
from typing import Self

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from testbed.errors import InputError, TestbedError
from testbed.host import proc, runstate, safefs
from testbed.host.enter import as_user
from testbed.record import addon

MITMDUMP = Path(sys.executable).parent / "mitmdump"
DIGEST_RE = re.compile(r"[0-9a-f]{64}")


def spki_sha256(cert_pem: bytes) -> str:
    """base64(SHA-256(SubjectPublicKeyInfo)) of the first certificate in cert_pem."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    spki = cert.public_key().public_bytes(serialization.Encoding.DER,
                                          serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(spki).digest()).decode()


def mitmdump_argv(confdir: Path, capture: Path, resolve: dict[str, str],
                  upstream_ca: Path | None, pin_ms: int | None = None) -> list[str]:
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
    if pin_ms is not None:  # the pinned script in the pages the browser gets
        argv += ["--set", f"testbed_pin={int(pin_ms)}"]
    return argv


class Mitmdump:
    def __init__(self, workdir: Path, netns: str | None = None,
                 resolve: dict[str, str] | None = None, upstream_ca: Path | None = None,
                 run: runstate.Run | None = None, start_timeout: float = 30,
                 pin_ms: int | None = None):
        self.workdir = Path(workdir)
        self.pin_ms = pin_ms
        """The pinned script's clock start in the pages the browser gets, or None (off)."""
        self.netns = netns
        self.resolve = dict(resolve or {})
        self.upstream_ca = upstream_ca
        self.run = run or runstate.current()
        self.start_timeout = start_timeout

    def __enter__(self) -> Self:
        self.confdir = safefs.user_dir(self.workdir / "mitmproxy")
        self.capture = safefs.user_dir(self.workdir / "capture")
        ca = None
        if self.upstream_ca is not None:
            # A copy the unprivileged proxy can read, whatever the original's permissions
            # (certificates only: nothing else of root's is handed to the proxy).
            ca = safefs.write_file(self.workdir / "upstream-ca.pem",
                                   _certificates(Path(self.upstream_ca)))
        argv = as_user(mitmdump_argv(self.confdir, self.capture, self.resolve, ca,
                                     self.pin_ms),
                       netns=self.netns, run=self.run)
        self.log = self.workdir / "mitmdump.log"
        self.bg = proc.Background(argv, log=self.log)
        self.bg.__enter__()
        try:
            self.port = self._wait_ready()
            self.spki = spki_sha256(safefs.read_user(self.confdir / "mitmproxy-ca.pem"))
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
        listen = json.loads(safefs.read_user(ready))["listen"]
        return int(listen[0][1])

    def _tail(self) -> str:
        return " | ".join(self.bg.tail(3).splitlines())

    def alive(self) -> bool:
        return self.bg.alive()

    def stop(self) -> None:
        self.bg.stop()

    def __exit__(self, *exc: object) -> None:
        self.bg.stop()

    # What the addon captured so far -------------------------------------------------

    def exchanges(self) -> list[dict]:
        return _jsonl(self.capture / "exchanges.jsonl")

    def errors(self) -> list[dict]:
        return _jsonl(self.capture / "errors.jsonl")

    def body(self, sha: str | None) -> bytes:
        if not sha:
            return b""
        if not DIGEST_RE.fullmatch(sha):
            raise TestbedError(f"{self.capture}: body name {sha[:80]!r} is not a SHA-256 "
                               f"digest")
        return safefs.read_user(self.capture / "bodies" / sha, beneath=self.capture)


def _certificates(path: Path) -> bytes:
    """The PEM certificates in path (InputError naming it if there are none)."""
    try:
        certs = x509.load_pem_x509_certificates(path.read_bytes())
    except (OSError, ValueError) as e:
        raise InputError(f"--upstream-ca {path}: expected PEM certificates "
                         f"({getattr(e, 'strerror', None) or 'none found'})") from None
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)


def _jsonl(path: Path) -> list[dict]:
    try:
        text = safefs.read_user(path).decode(errors="replace")
    except FileNotFoundError:
        return []
    # A line being written has no newline yet: only complete lines count.
    return [json.loads(line) for line in text.split("\n")[:-1] if line]
