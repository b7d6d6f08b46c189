"""The local CA and per-replay leaf certificates."""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import os
import stat

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from testbed import errors
from testbed.replay import certs


@pytest.fixture
def ca(tmp_path):
    return certs.ensure_ca(tmp_path / "ca")


def test_ca_is_made_once_and_kept_private(tmp_path, ca):
    assert stat.S_IMODE((tmp_path / "ca").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "ca" / "ca.key").stat().st_mode) == 0o600
    again = certs.ensure_ca(tmp_path / "ca")
    assert again.cert == ca.cert
    assert ca.cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_ca_folder_open_to_others_is_refused(tmp_path, ca):
    os.chmod(tmp_path / "ca", 0o755)
    with pytest.raises(errors.TestbedError, match="mode 0700"):
        certs.ensure_ca(tmp_path / "ca")


def test_leaf_names_every_host_and_ip(tmp_path, ca):
    leaf = certs.issue_leaf(["www.a.test", "CDN.b.test", "192.0.2.7", "www.a.test",
                             "93.184.216.34"], tmp_path / "run", ca=ca)
    chain = x509.load_pem_x509_certificates(leaf.chain_path.read_bytes())
    assert len(chain) == 2 and chain[1] == ca.cert
    cert = chain[0]
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["www.a.test", "cdn.b.test"]
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("192.0.2.7"),
                                                       ipaddress.ip_address("93.184.216.34")]
    cert.verify_directly_issued_by(ca.cert)
    assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey)
    assert cert.public_key().curve.name == "secp256r1"


def test_spki_is_chromiums_format(tmp_path, ca):
    leaf = certs.issue_leaf(["a.test"], tmp_path, ca=ca)
    cert = x509.load_pem_x509_certificates(leaf.chain_path.read_bytes())[0]
    der = cert.public_key().public_bytes(serialization.Encoding.DER,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)
    assert leaf.spki == base64.b64encode(hashlib.sha256(der).digest()).decode()
    assert len(base64.b64decode(leaf.spki)) == 32


def test_leaf_key_matches_and_is_private(tmp_path, ca):
    leaf = certs.issue_leaf(["a.test"], tmp_path, ca=ca)
    assert stat.S_IMODE(leaf.key_path.stat().st_mode) == 0o600
    key = serialization.load_pem_private_key(leaf.key_path.read_bytes(), None)
    cert = x509.load_pem_x509_certificates(leaf.chain_path.read_bytes())[0]
    assert key.public_key() == cert.public_key()


def test_each_replay_gets_a_new_key(tmp_path, ca):
    a = certs.issue_leaf(["a.test"], tmp_path / "1", ca=ca)
    b = certs.issue_leaf(["a.test"], tmp_path / "2", ca=ca)
    assert a.spki != b.spki


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_leaf_key_readable_by_the_server_user_not_owned(tmp_path, ca):
    import pwd

    leaf = certs.issue_leaf(["a.test"], tmp_path, ca=ca, group=True)
    st = leaf.key_path.stat()
    assert st.st_uid == 0
    assert st.st_gid == pwd.getpwnam("testbed").pw_gid
    assert st.st_mode & 0o777 == 0o640
    assert leaf.chain_path.stat().st_mode & 0o777 == 0o644


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root and the testbed user")
def test_leaf_refuses_a_folder_the_server_user_can_write(tmp_path, ca):
    import pwd

    d = tmp_path / "server"
    d.mkdir()
    pw = pwd.getpwnam("testbed")
    os.chown(d, pw.pw_uid, pw.pw_gid)
    canary = tmp_path / "canary"
    canary.write_text("root only")
    (d / "leaf.key").symlink_to(canary)
    with pytest.raises(errors.TestbedError, match="only root can write"):
        certs.issue_leaf(["a.test"], d, ca=ca, group=True)
    assert canary.read_text() == "root only"


def test_leaf_needs_a_name(tmp_path, ca):
    with pytest.raises(errors.TestbedError):
        certs.issue_leaf([], tmp_path, ca=ca)
