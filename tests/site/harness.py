"""Run a generated test site inside a network namespace the caller owns.

    with LocalSite(sitegen.TEST_SITE) as site:
        testbed record site.spec.url() --netns site.netns --upstream-ca site.ca_file \
            --resolve www.site.test=10.77.0.1 ...   (site.record_args())

The namespace (testbed.host.netns.NetNS, `tb-<run>-site`) gets every IP of the
site on its loopback; the server (tests/site/server.py) listens there with a
certificate from a throwaway CA made for this block. Nothing of it is
reachable from outside the namespace, and everything is removed on exit.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Self

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from testbed.host import proc
from testbed.host.netns import NetNS

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sitegen

SERVER = Path(__file__).resolve().parent / "server.py"


def make_certs(hosts: list[str], out: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a leaf for `hosts`: (ca.pem, leaf.pem, leaf.key)."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "testbed test-site CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - dt.timedelta(hours=1))
          .not_valid_after(now + dt.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(h) for h in hosts]),
                           critical=False)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = out / "ca.pem", out / "leaf.pem", out / "leaf.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


class LocalSite:
    """A generated site served inside its own namespace while the block runs."""

    def __init__(self, spec: sitegen.SiteSpec, promo: str = "rotate", purpose: str = "site"):
        self.spec = spec
        self.promo = promo
        self.purpose = purpose
        self._exits = ExitStack()

    def __enter__(self) -> Self:
        with ExitStack() as exits:
            self.dir = Path(tempfile.mkdtemp(prefix="testsite-"))
            exits.callback(shutil.rmtree, self.dir, True)
            self.ns = exits.enter_context(NetNS(self.purpose))
            for ip in sorted(set(self.spec.ips.values())):
                self.ns.add_address(ip)
            self.ca_file, cert, key = make_certs(self.spec.hosts, self.dir)
            self.log = self.dir / "served.jsonl"
            ready = self.dir / "ready"
            self.server = exits.enter_context(proc.Background(
                self.ns.exec([sys.executable, SERVER, "--site", self.spec.name, "--cert", cert,
                              "--key", key, "--log", self.log, "--ready", ready,
                              "--promo", self.promo]),
                log=self.dir / "server.out"))
            deadline = time.monotonic() + 30
            while not ready.exists():
                if not self.server.alive() or time.monotonic() > deadline:
                    raise RuntimeError(f"test site server did not start: {self.server.tail()}")
                time.sleep(0.05)
            self._exits = exits.pop_all()
        return self

    def __exit__(self, *exc) -> None:
        self._exits.close()

    @property
    def netns(self) -> str:
        return self.ns.name

    def resolve_args(self) -> list[str]:
        """`--resolve host=ip` for every host of the site."""
        args = []
        for host, ip in sorted(self.spec.ips.items()):
            args += ["--resolve", f"{host}={ip}"]
        return args

    def record_args(self) -> list[str]:
        """The options that make `testbed record` reach this site (and only it)."""
        return ["--netns", self.netns, "--upstream-ca", str(self.ca_file), *self.resolve_args()]

    def served(self) -> list[dict]:
        """Every response the server sent so far, in order."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]
