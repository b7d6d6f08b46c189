"""A Dask cluster talks TLS only, with certificates of its own CA on both ends: a real
scheduler and worker in this process on 127.0.0.1 (no root, no namespaces), the
credentials of `testbed cluster certs` and of a local cluster, and the checks of
the credential files a user names."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import ssl
from pathlib import Path

import dask
import psutil
import pytest
from distributed import Client, Scheduler, Security, Worker

from testbed.campaign.cluster import cluster, credentials
from testbed.errors import InputError

TIMEOUT = "3s"
"""How long a refused client keeps trying to connect before it gives up."""
RAW_WAIT_S = 2.0
"""How long a plain TLS client waits for the scheduler's answer."""
JOIN_WAIT_S = 10.0
"""How long a refused worker is given to join (it never stops trying), and the most a
worker with the cluster's certificate may take to join."""


@pytest.fixture
def certs(tmp_path) -> Path:
    d = tmp_path / "priv"
    d.mkdir(mode=0o700)
    return credentials.make(d / "cluster", ["scheduler", "coordinator", "worker-1"])


@pytest.fixture
def other(tmp_path) -> Path:
    """The credentials of another cluster (another CA)."""
    d = tmp_path / "other"
    d.mkdir(mode=0o700)
    return credentials.make(d / "cluster", ["scheduler", "coordinator", "worker-1"])


def scheduler_security(folder: Path) -> Security:
    f = folder / "scheduler"
    return Security(require_encryption=True, tls_ca_file=str(f / "ca.pem"),
                    tls_scheduler_cert=str(f / "cert.pem"), tls_scheduler_key=str(f / "key.pem"))


def test_made_folders_are_root_only_and_keys_private(certs):
    assert os.stat(certs).st_mode & 0o777 == 0o700
    for member in ("scheduler", "coordinator", "worker-1"):
        assert os.stat(certs / member).st_mode & 0o777 == 0o700
        assert os.stat(certs / member / "key.pem").st_mode & 0o777 == 0o600
        assert {p.name for p in (certs / member).iterdir()} == {"ca.pem", "cert.pem", "key.pem"}
    with pytest.raises(InputError, match="expected a new folder"):
        credentials.make(certs, ["x"])


def test_servers_require_a_client_certificate(certs):
    """Distributed's TLS listeners demand the peer's certificate (mutual TLS)."""
    ctx = scheduler_security(certs).get_listen_args("scheduler")["ssl_context"]
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    w = credentials.load("worker", certs / "worker-1")
    assert w.require_encryption
    assert w.get_listen_args("worker")["ssl_context"].verify_mode == ssl.CERT_REQUIRED


async def _refused(coro_factory) -> str:
    """The error of a connection attempt that must fail."""
    try:
        obj = await coro_factory()
    except (OSError, TimeoutError, ssl.SSLError) as e:
        return f"{type(e).__name__}: {e}"
    await obj.close()
    pytest.fail("connected without the cluster's credentials")


async def _worker_joins(addr: str, folder: Path, name: str) -> float:
    """Seconds a worker with `folder`'s certificate takes to register (it fails the test
    if that takes JOIN_WAIT_S or longer)."""
    began = asyncio.get_running_loop().time()
    w = Worker(addr, nthreads=1, name=name, security=credentials.load("worker", folder))
    try:
        await asyncio.wait_for(w.start(), JOIN_WAIT_S)
    except (OSError, TimeoutError) as e:
        pytest.fail(f"a worker with the cluster's certificate did not join within "
                    f"{JOIN_WAIT_S} s ({type(e).__name__}: {e})")
    finally:
        await w.close()
    return asyncio.get_running_loop().time() - began


async def _worker_refused(addr: str, folder: Path, holder: Path) -> str:
    """A worker with another cluster's certificate: it keeps trying to register, and
    is still outside after JOIN_WAIT_S, while a worker with the cluster's own certificate,
    started right after it, joins within that time (so the wait was long enough for a
    join on this machine now, and the intruder was refused, not slow)."""
    w = Worker(addr, nthreads=1, name="intruder", security=credentials.load("worker", folder))
    try:
        await asyncio.wait_for(w.start(), JOIN_WAIT_S)
    except (OSError, TimeoutError) as e:
        why = f"{type(e).__name__}: {e}"
    else:
        pytest.fail("a worker of another cluster joined")
    finally:
        await w.close()
    took = await _worker_joins(addr, holder, "control")
    return f"{why} (a holder joined in {took:.1f} s)"


def _raw_tls(address: str, folder: Path, with_certificate: bool) -> str:
    """A plain TLS client trusting the cluster's CA, presenting folder's certificate or
    none: what it gets once it has written a few bytes (TLS 1.3: a refusal of the
    client's certificate arrives after the client's side of the handshake)."""
    host, port = address.removeprefix("tls://").rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(folder / "ca.pem"))
    ctx.check_hostname = False
    if with_certificate:
        ctx.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    with socket.create_connection((host, int(port)), timeout=RAW_WAIT_S) as raw, \
            ctx.wrap_socket(raw) as s:
        try:
            s.sendall(b"\0" * 8)
            got = s.recv(1)
        except TimeoutError:
            return "kept open"  # Dask waits for the rest of a message
        except (ssl.SSLError, ConnectionError) as e:
            return f"refused: {type(e).__name__}: {e}"
    return "refused: closed" if got == b"" else f"read {got!r}"


def test_only_holders_of_the_clusters_certificates_get_in(certs, other):
    async def main():
        with dask.config.set({"distributed.comm.timeouts.connect": TIMEOUT}):
            async with Scheduler(host="127.0.0.1", port=0, dashboard_address=None,
                                 security=scheduler_security(certs)) as s:
                addr = s.address
                assert addr.startswith("tls://127.0.0.1:")
                async with Worker(addr, nthreads=1, name="w1",
                                  security=credentials.load("worker", certs / "worker-1")):
                    async with Client(addr, asynchronous=True, security=credentials.load(
                            "client", certs / "coordinator")) as c:
                        assert (await c.run(os.getpid)) == {
                            a: os.getpid() for a in s.workers}  # the holder runs code
                    refusals = [
                        await _refused(lambda: Client(addr, asynchronous=True, timeout=TIMEOUT,
                                                      security=Security.temporary())),
                        await _refused(lambda: Client(addr.replace("tls://", "tcp://"),
                                                      asynchronous=True, timeout=TIMEOUT)),
                        await _refused(lambda: Client(addr, asynchronous=True, timeout=TIMEOUT,
                                                      security=credentials.load(
                                                          "client", other / "coordinator"))),
                        await _worker_refused(addr, other / "worker-1", certs / "worker-1"),
                    ]
                    for _ in range(100):  # the control worker's removal is asynchronous
                        if len(s.workers) == 1:
                            break
                        await asyncio.sleep(0.05)
                    assert [w.name for w in s.workers.values()] == ["w1"]
                    raw = [await asyncio.to_thread(_raw_tls, addr, certs / "coordinator", c)
                           for c in (True, False)]
                    return refusals, raw

    refusals, (holder, stranger) = asyncio.run(main())
    assert len(refusals) == 4, refusals
    assert not holder.startswith("refused"), holder  # the server talks to a holder
    assert stranger.startswith("refused"), stranger


def test_a_local_cluster_listens_on_loopback_with_tls_only(tmp_path):
    """A local cluster of one worker process: every listening port of this process and
    its children is on 127.0.0.1, the scheduler is tls://, and a client without the
    campaign's credentials cannot run anything; the credentials are gone afterwards."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    with dask.config.set({"distributed.comm.timeouts.connect": TIMEOUT}), \
            cluster.local_cluster(1, state) as lc, \
            Client(lc, security=lc.security) as c:
        addr = c.scheduler_info()["address"]
        assert addr.startswith("tls://127.0.0.1:")
        assert os.stat(state / "cluster-tls").st_mode & 0o777 == 0o700
        assert (c.run(os.getuid)).values()  # the holder runs code
        # the workers' scratch is in the run's root-only state, not /tmp/dask-scratch-space
        dirs = c.run(lambda dask_worker: dask_worker.local_directory)
        assert dirs and all(d.startswith(str(state / "dask") + "/") for d in dirs.values()), dirs
        own = c.run_on_scheduler(lambda dask_scheduler: dask_scheduler.local_directory)
        assert own.startswith(str(state / "dask") + "/"), own
        me = psutil.Process()
        listening = [(conn.laddr.ip, p.pid) for p in [me, *me.children(recursive=True)]
                     for conn in p.net_connections("tcp") if conn.status == psutil.CONN_LISTEN]
        assert len(listening) >= 3, listening  # scheduler, nanny, worker (+ HTTP)
        assert {ip for ip, _ in listening} == {"127.0.0.1"}, listening
        for attempt, security in ((addr, Security.temporary()),
                                  (addr.replace("tls://", "tcp://"), None)):
            with pytest.raises((OSError, TimeoutError)):
                Client(attempt, timeout=TIMEOUT, security=security).close()
    assert not (state / "cluster-tls").exists()


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:8786", "127.0.0.1:8786", "tls://",
                                     "tls://host", "inproc://x", "ws://h:1"])
def test_only_tls_addresses(address):
    with pytest.raises(InputError, match="expected tls://HOST:PORT"):
        credentials.check_address(address, "--scheduler")


def _broken(certs: Path, other: Path, how: str) -> Path:
    f = certs / "coordinator"
    if how == "key readable by others":
        os.chmod(f / "key.pem", 0o644)
    elif how == "key a symlink":
        (f / "key.pem").unlink()
        (f / "key.pem").symlink_to(certs / "worker-1" / "key.pem")
    elif how == "certificate of another CA":
        (f / "cert.pem").write_bytes((other / "coordinator" / "cert.pem").read_bytes())
    elif how == "key of another certificate":
        (f / "key.pem").unlink()
        (f / "key.pem").write_bytes((certs / "worker-1" / "key.pem").read_bytes())
        os.chmod(f / "key.pem", 0o600)
    elif how == "CA not a certificate":
        (f / "ca.pem").write_text("hello\n")
    elif how == "folder writable by others":
        os.chmod(f, 0o777)
    elif how == "missing":
        (f / "ca.pem").unlink()
    return f


@pytest.mark.parametrize("how, expect", [
    ("key readable by others", "key.pem: mode 0644, expected 0600"),
    ("key a symlink", "key.pem is a symlink"),
    ("certificate of another CA", "cert.pem: expected a PEM certificate signed by the CA"),
    ("key of another certificate", "key.pem: expected the key of the certificate"),
    ("CA not a certificate", "ca.pem: expected a PEM certificate (the cluster's CA)"),
    ("folder writable by others", "writable by the testbed user"),
    ("missing", "ca.pem: cannot open"),
])
def test_bad_credential_files_are_refused_in_one_line(certs, other, how, expect):
    if os.geteuid() != 0 and how == "folder writable by others":
        pytest.skip("the folder checks are root's")
    f = _broken(certs, other, how)
    with pytest.raises(InputError, match=re.escape(expect)) as e:
        credentials.load("client", f)
    assert "\n" not in str(e.value) and str(e.value).startswith("--tls ")


def test_dask_configuration_is_the_default(certs):
    f = certs / "worker-1"
    with dask.config.set({"distributed.comm.tls.ca-file": str(f / "ca.pem"),
                          "distributed.comm.tls.worker.cert": str(f / "cert.pem"),
                          "distributed.comm.tls.worker.key": str(f / "key.pem")}):
        sec = credentials.load("worker", None)
    assert sec.tls_worker_cert == str(f / "cert.pem") and sec.require_encryption
    with dask.config.set({"distributed.comm.tls.ca-file": None}), \
            pytest.raises(InputError, match="--tls: expected the folder"):
        credentials.load("worker", None)
