"""TLS credentials of a Dask cluster: only processes holding a certificate of the
cluster's own CA talk to its scheduler and workers (mutual TLS; a client or worker
with no certificate, or one of another CA, is refused at the handshake).

    with local(run_dir) as security: ...        # a local cluster's: made for this campaign,
                                                # in a root-only folder removed on exit
    make(out, ["scheduler", "coordinator", "worker-1"])   # `testbed cluster certs`
    security = load("worker", folder, "--tls")  # a machine's folder (or Dask's config),
                                                # checked, for `testbed worker` / `run`

A cluster of several machines: `make` writes one folder per machine (its CA
certificate `ca.pem`, its certificate `cert.pem`, its key `key.pem`, 0600); the
CA's key is never written, so nobody can add a member afterwards (make a new set).
Whatever Dask is told to trust or present comes only from files root owns in
folders nobody else may change: a certificate planted by another user would let
its holder run code as root on every worker.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from testbed.errors import InputError
from testbed.host import safefs

CA_FILE, CERT_FILE, KEY_FILE = "ca.pem", "cert.pem", "key.pem"
SCHEME = "tls://"
CLUSTER_DAYS = 365
"""How long the certificates of `testbed cluster certs` are valid."""
LOCAL_DAYS = 7
"""How long a local cluster's certificates are valid (they live as long as the campaign)."""
MAX_PEM = 64 * 1024
"""Largest credential file read."""
ROLES = ("client", "worker", "scheduler")
"""Dask's names of the three ends (the coordinator is Dask's client)."""


# --- making them -----------------------------------------------------------------------
def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _cert(subject: str, key, issuer: str, issuer_key, days: int, ca: bool) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    b = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - dt.timedelta(minutes=5))
         .not_valid_after(now + dt.timedelta(days=days))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None),
                        critical=True))
    if ca:
        b = b.add_extension(x509.KeyUsage(False, False, False, False, False, True, True,
                                          False, False), critical=True)
    else:
        b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                   ExtendedKeyUsageOID.CLIENT_AUTH]),
                            critical=False)
        b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(subject)]),
                            critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def issue(names: list[str], days: int, cluster: str = "testbed cluster CA"
          ) -> tuple[bytes, dict[str, tuple[bytes, bytes]]]:
    """A new CA's certificate (PEM) and, per name, a certificate it signed and its key.
    The CA's key is dropped."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert(cluster, ca_key, cluster, ca_key, days, ca=True)
    out = {}
    for n in names:
        key = ec.generate_private_key(ec.SECP256R1())
        out[n] = (_cert(n, key, cluster, ca_key, days, ca=False)
                  .public_bytes(serialization.Encoding.PEM),
                  key.private_bytes(serialization.Encoding.PEM,
                                    serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    return ca.public_bytes(serialization.Encoding.PEM), out


def _private_dir(path: Path) -> Path:
    """A new folder only root reads (0700) in one of root's folders."""
    safefs.check_root_dir(path.parent)
    os.mkdir(path, 0o700)
    safefs.check_root_dir(path)
    return path


def _write(folder: Path, ca: bytes, cert: bytes, key: bytes) -> Path:
    _private_dir(folder)
    safefs.write_file(folder / CA_FILE, ca, mode=0o644)
    safefs.write_file(folder / CERT_FILE, cert, mode=0o644)
    safefs.write_file(folder / KEY_FILE, key, mode=0o600)
    return folder


def make(out: Path, names: list[str], option: str = "--out") -> Path:
    """Folder `out` (new, 0700) with one folder per name: ca.pem, cert.pem, key.pem."""
    checked = safefs.check_out_dir(Path(out), option)
    if checked.exists() or checked.is_symlink():
        raise InputError(f"{option} {out}: expected a new folder (the credentials of another "
                         "cluster are not overwritten)")
    if not checked.parent.is_dir():
        raise InputError(f"{option} {out}: no folder {checked.parent}")
    ca, members = issue(names, CLUSTER_DAYS)
    _private_dir(checked)
    for n, (cert, key) in members.items():
        _write(checked / n, ca, cert, key)
    return checked


@contextmanager
def local(run_dir: Path) -> Iterator:
    """The Security of a local cluster: a CA made for it alone and one certificate for
    each end, in run_dir/cluster-tls (0700; removed on exit, and by the sweep with the
    run's state if the coordinator is killed)."""
    from distributed import Security

    ca, members = issue(list(ROLES), LOCAL_DAYS, cluster="testbed local cluster CA")
    folder = Path(run_dir) / "cluster-tls"
    _private_dir(folder)
    try:
        kwargs = {}
        for role, (cert, key) in members.items():
            _write(folder / role, ca, cert, key)
            kwargs[f"tls_{role}_cert"] = str(folder / role / CERT_FILE)
            kwargs[f"tls_{role}_key"] = str(folder / role / KEY_FILE)
        yield Security(require_encryption=True, tls_ca_file=str(folder / "client" / CA_FILE),
                       **kwargs)
    finally:
        safefs.rmtree(folder)


# --- reading them ----------------------------------------------------------------------
def check_address(address: str, option: str) -> str:
    """address unless it is no tls://HOST:PORT (InputError: plain tcp:// would let anyone
    who reaches the port run code as root on the workers)."""
    host, _, port = address[len(SCHEME):].rpartition(":")
    if not address.startswith(SCHEME) or not host or not port.isdigit():
        raise InputError(f"{option} {address}: expected tls://HOST:PORT (a cluster talks TLS "
                         "only: anyone reaching a tcp:// port could run code as root on the "
                         "workers; make credentials with `testbed cluster certs`)")
    return address


def _read(path: Path, what: str, private: bool) -> tuple[Path, bytes]:
    """The resolved path and bytes of a credential file root owns, in folders only root
    can change (each step checked, symlinks included); a key readable only by root."""
    folder = safefs.check_out_dir(path.parent, what)
    real = folder / path.name
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise InputError(f"{what} {path}: cannot open ({e.strerror}; a symlink is not "
                         "followed)") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        mode = stat.S_IMODE(st.st_mode)
        if not stat.S_ISREG(st.st_mode) or st.st_uid not in safefs.trusted_uids():
            raise InputError(f"{what} {path}: expected a regular file of root's")
        if mode & 0o022 or (private and mode & 0o077):
            raise InputError(f"{what} {path}: mode {mode:04o}, expected "
                             f"{'0600 (a private key)' if private else 'no write for others'}")
        data = f.read(MAX_PEM + 1)
    if len(data) > MAX_PEM:
        raise InputError(f"{what} {path}: expected at most {MAX_PEM} bytes")
    return real, data


def _files(role: str, folder: Path | None, option: str) -> tuple[Path, Path, Path, str]:
    """(ca, cert, key, what): from the folder, else from Dask's configuration."""
    import dask

    if folder is not None:
        f = Path(folder)
        return f / CA_FILE, f / CERT_FILE, f / KEY_FILE, option
    ca = dask.config.get("distributed.comm.tls.ca-file", None)
    cert = dask.config.get(f"distributed.comm.tls.{role}.cert", None)
    key = dask.config.get(f"distributed.comm.tls.{role}.key", None)
    if not (ca and cert and key):
        raise InputError(f"{option}: expected the folder of this machine's credentials (made "
                         "by `testbed cluster certs`) or Dask's configuration "
                         f"distributed.comm.tls.ca-file, .{role}.cert and .{role}.key")
    return Path(ca), Path(cert), Path(key), f"Dask configuration distributed.comm.tls ({role})"


def load(role: str, folder: Path | None, option: str = "--tls"):
    """A Security requiring TLS for `role` (client or worker) from checked files: the
    certificate signed by the CA, the key its own, neither expired."""
    from distributed import Security

    ca_path, cert_path, key_path, what = _files(role, folder, option)
    (ca_real, ca_pem), (cert_real, cert_pem), (key_real, key_pem) = (
        _read(ca_path, what, False), _read(cert_path, what, False), _read(key_path, what, True))
    try:
        ca = x509.load_pem_x509_certificate(ca_pem)
    except ValueError:
        raise InputError(f"{what} {ca_path}: expected a PEM certificate (the cluster's CA)") from None
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        raise InputError(f"{what} {cert_path}: expected a PEM certificate signed by the CA "
                         f"in {ca_path}") from None
    if cert.not_valid_after_utc < dt.datetime.now(dt.UTC):
        raise InputError(f"{what} {cert_path}: expired on {cert.not_valid_after_utc:%Y-%m-%d}; "
                         "make new credentials with `testbed cluster certs`")
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError):
        raise InputError(f"{what} {key_path}: expected a PEM private key without a "
                         "passphrase") from None
    spki = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    if key.public_key().public_bytes(*spki) != cert.public_key().public_bytes(*spki):
        raise InputError(f"{what} {key_path}: expected the key of the certificate {cert_path}")
    return Security(require_encryption=True, tls_ca_file=str(ca_real),
                    **{f"tls_{role}_cert": str(cert_real), f"tls_{role}_key": str(key_real)})
