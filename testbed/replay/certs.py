"""TLS material for a replay: a local CA made once per installation, a leaf per replay.

The CA lives in CA_DIR (root-owned, mode 0700; the key 0600) and is never
added to any trust store: Chromium accepts the replay's leaf because its
SPKI hash is passed with --ignore-certificate-errors-spki-list. Each replay
gets fresh ECDSA P-256 leaves, one per certificate of its layout
(testbed.replay.layout: one naming every recorded host and IP, or one per host),
all with one fresh key, written to
one of root's folders in the run's state (see testbed.host.safefs): the chain
0644, the key 0640 with group testbed, so the servers read it without owning it.
"""

from __future__ import annotations

import base64
import datetime as dt
import fcntl
import hashlib
import ipaddress
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from testbed.errors import TestbedError
from testbed.host import safefs

# Not under the testbed user's home (/var/lib/testbed): a folder the
# unprivileged user owns could have the CA swapped or symlinked under root.
CA_DIR = Path(os.environ.get("TESTBED_CA_DIR", "/var/lib/testbed-ca"))
CA_VALIDITY = dt.timedelta(days=3650)
LEAF_VALIDITY = dt.timedelta(days=30)


@dataclass(frozen=True)
class CA:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    dir: Path


@dataclass(frozen=True)
class Leaf:
    """A replay's certificate: chain (leaf then CA) and key as PEM files."""

    chain_path: Path
    key_path: Path
    spki: str
    """Base64 SHA-256 of the leaf's SubjectPublicKeyInfo (Chromium's SPKI list format)."""
    names: tuple[str, ...]


def spki_hash(cert: x509.Certificate) -> str:
    der = cert.public_key().public_bytes(serialization.Encoding.DER,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _check_private(path: Path) -> None:
    st = path.lstat()
    if path.is_symlink() or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise TestbedError(
            f"{path}: must be a folder owned by uid {os.geteuid()} with mode 0700 "
            f"(remove it to have a new CA made)")


def ensure_ca(ca_dir: Path | None = None) -> CA:
    """The installation's CA, created on first use (safe against concurrent first uses)."""
    ca_dir = Path(ca_dir or CA_DIR)
    ca_dir.parent.mkdir(parents=True, exist_ok=True)
    safefs.check_root_dir(ca_dir.parent)
    lock_path = ca_dir.parent / f".{ca_dir.name}.lock"
    with safefs.open_log(lock_path) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ca_dir.exists():
            _create_ca(ca_dir)
    _check_private(ca_dir)
    try:
        cert = x509.load_pem_x509_certificate((ca_dir / "ca.pem").read_bytes())
        key = serialization.load_pem_private_key((ca_dir / "ca.key").read_bytes(), None)
    except (FileNotFoundError, ValueError) as e:
        raise TestbedError(f"{ca_dir}: unreadable CA ({e}); remove the folder to have a new "
                           f"one made") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise TestbedError(f"{ca_dir}: unreadable CA (not an EC key); remove the folder to "
                           f"have a new one made")
    return CA(cert=cert, key=key, dir=ca_dir)


def _create_ca(ca_dir: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([
        x509.NameAttribute(NameOID.ORGANIZATION_NAME, "testbed"),
        x509.NameAttribute(NameOID.COMMON_NAME, f"testbed replay CA ({socket.gethostname()})"),
    ])
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name).issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                     key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, key_cert_sign=True, crl_sign=True,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                       critical=False)
        .sign(key, hashes.SHA256())
    )
    tmp = Path(tempfile.mkdtemp(prefix=f".{ca_dir.name}.", dir=ca_dir.parent))
    try:
        os.chmod(tmp, 0o700)
        fd = os.open(tmp / "ca.key", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(_key_pem(key))
        (tmp / "ca.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        tmp.rename(ca_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def san_entries(names) -> list[x509.GeneralName]:
    """DNS names for host names, IP addresses for IP literals; duplicates dropped."""
    out: list[x509.GeneralName] = []
    seen = set()
    for n in names:
        n = n.strip("[]").lower()
        if not n or n in seen:
            continue
        seen.add(n)
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(n)))
        except ValueError:
            out.append(x509.DNSName(n))
    return out


def new_key() -> ec.EllipticCurvePrivateKey:
    """A fresh ECDSA P-256 key (several leaves of one replay may share it: one SPKI)."""
    return ec.generate_private_key(ec.SECP256R1())


def issue_leaf(names, out_dir: Path, *, group: bool = False, ca: CA | None = None,
               key: ec.EllipticCurvePrivateKey | None = None, stem: str = "leaf") -> Leaf:
    """A fresh leaf for `names` (hosts and IPs), written to out_dir (one of root's
    folders) as STEM.pem (leaf + CA, 0644) and STEM.key (0600; group=True: 0640 with
    the testbed user's group, which the servers run as). key: the leaf's key (default:
    a fresh one); the leaves of one replay share theirs, so Chromium is given one SPKI."""
    ca = ca or ensure_ca()
    names = tuple(dict.fromkeys(names))
    if not names:
        raise TestbedError("a leaf certificate needs at least one host name or IP")
    key = key or new_key()
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0][:64])]))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + LEAF_VALIDITY)
        .add_extension(x509.SubjectAlternativeName(san_entries(names)), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                     key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, key_cert_sign=False, crl_sign=False,
                                     encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()),
                       critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    chain_path = safefs.write_file(out_dir / f"{stem}.pem",
                                   cert.public_bytes(serialization.Encoding.PEM)
                                   + ca.cert.public_bytes(serialization.Encoding.PEM))
    key_path = safefs.write_file(out_dir / f"{stem}.key", _key_pem(key),
                                 mode=0o640 if group else 0o600, group=group)
    return Leaf(chain_path=chain_path, key_path=key_path, spki=spki_hash(cert), names=names)
