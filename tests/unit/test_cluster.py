"""Campaigns on a Dask cluster, without namespaces or a browser: a block's packing for
the way back, the check that a worker's files are the coordinator's (at join, through
a real in-process Dask cluster), calibration differences, and the coordinator's
bookkeeping with scripted blocks."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.scripted_campaign import outcome

from testbed.campaign.cluster import cluster, worker
from testbed.campaign.plan import plan
from testbed.campaign.run import block as block_mod
from testbed.campaign.run.rows import TrialRecord
from testbed.campaign.store.store import Store
from testbed.errors import TestbedError
from testbed.formats import recording
from testbed.host.paths import ROOT
from testbed.measure.browser_process import Kept
from testbed.protocols import server_options


def _setup(tmp_path):
    from testbed.campaign.plan import config

    (tmp_path / "c.toml").write_text(
        'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["tcp", "quic"]\n')
    c = config.load(tmp_path / "c.toml")
    return block_mod.Setup(c, {"s": SimpleNamespace(hosts=["a.test", "b.test"], loads=1,
                                                    exchanges=(), url="https://a.test/")},
                           {"dsl": SimpleNamespace(min_rtt_ms=24)},
                           {p: server_options(p, fq=False) for p in ("tcp", "quic")}, {})


def test_pack_sends_rows_and_bytes_and_removes_staged_files(tmp_path):
    setup = _setup(tmp_path)
    video = tmp_path / "staged.mp4"
    video.write_bytes(b"\x00video")
    t0, t1 = (plan.Trial("s", "dsl", p, 0) for p in ("tcp", "quic"))
    o = outcome(0, "tcp")
    o.kept = Kept(files={"browsertime.json": b"{}", "video.mp4": video}, log="logs/x.log",
                  wall_s=1.5)
    rec = TrialRecord(setup.settings["tcp"], before={}, after={})
    packed = block_mod.pack([(t0, o, rec), (t1, None, TrialRecord(setup.settings["quic"]))],
                            {t0.id: 1}, setup, "host-a/0", "x.log", b"log")
    first, second = packed.trials
    assert first.row.worker == "host-a/0" and first.row.attempt == 2
    assert first.row.status == "ok" and first.row.trial_id == t0.id
    assert first.files["video.mp4"] == b"\x00video" and not video.exists()
    assert all(isinstance(v, bytes) for v in first.files.values())
    assert set(first.files) == {"browsertime.json", "video.mp4", "trial.json"}
    assert second.row is None and second.files == {}  # not reached: runs again
    assert packed.log == b"log" and packed.worker == "host-a/0"


def _tree(root: Path, dsl: str = "rtt_ms = 10\n") -> Path:
    (root / "testbed").mkdir(parents=True)
    (root / "testbed" / "a.py").write_text("x = 1\n")
    (root / "testbed" / "__pycache__").mkdir()
    (root / "testbed" / "__pycache__" / "a.pyc").write_bytes(b"junk")
    (root / "profiles" / "networks").mkdir(parents=True)
    (root / "profiles" / "networks" / "dsl.toml").write_text(dsl)
    return _recording(root / "recordings", "2024-01-02T03:04:05Z", b"<p>hello</p>")


def _recording(parent: Path, recorded_at: str, body: bytes) -> Path:
    x = {"scheme": "https", "host": "www.s.test", "port": 443, "ip": "10.0.0.1",
         "method": "GET", "target": "/", "request_headers": [["user-agent", "t"]],
         "status": 200, "response_headers": [["content-type", "text/html"],
                                              ["date", recorded_at]]}
    return recording.write(parent, {"name": "s", "url": "https://www.s.test/",
                                    "recorded_at": recorded_at, "loads": 1}, [(x, body)])


def test_digests_name_the_file_that_differs(tmp_path, monkeypatch):
    monkeypatch.setattr(worker, "quic_server_version", lambda name: f"{name} 1")
    a, b = tmp_path / "a", tmp_path / "b"
    ra, rb = _tree(a), _tree(b, dsl="rtt_ms = 11\n")
    da, db = worker.digests({"s": ra}, a), worker.digests({"s": rb}, b)
    assert "testbed/__pycache__/a.pyc" not in da
    assert worker.first_difference(da, da) is None
    assert worker.first_difference(da, db) == \
        "profiles/networks/dsl.toml: differs from the coordinator's"
    (b / "testbed" / "extra.py").write_text("")
    (b / "profiles" / "networks" / "dsl.toml").write_text("rtt_ms = 10\n")
    assert "testbed/extra.py: present here" in worker.first_difference(
        da, worker.digests({"s": rb}, b))
    # the same site recorded (or built) again: other times, the same content -> joins
    (b / "testbed" / "extra.py").unlink()
    shutil.rmtree(rb)
    rb = _recording(b / "recordings", "2025-06-07T08:09:10Z", b"<p>hello</p>")
    assert worker.first_difference(da, worker.digests({"s": rb}, b)) is None
    shutil.rmtree(rb)
    rb = _recording(b / "recordings", "2024-01-02T03:04:05Z", b"<p>hello!</p>")
    assert worker.first_difference(da, worker.digests({"s": rb}, b)) == \
        "recording s: content: differs from the coordinator's"


def _coordinator_with_changed_profile() -> tuple[dict, dict]:
    sites = {"local-news": "recordings/local-news"}
    mine = worker.digests({k: ROOT / v for k, v in sites.items()})
    theirs = dict(mine)
    theirs["profiles/networks/dsl.toml"] = "0" * 64  # the coordinator's file is another
    return theirs, sites


def test_a_worker_with_a_changed_profile_refuses_naming_the_file():
    theirs, sites = _coordinator_with_changed_profile()
    with pytest.raises(worker.Refused, match=r"refuses to join: profiles/networks/dsl.toml: "
                                             r"differs from the coordinator's"):
        worker.check_same(theirs, {k: ROOT / v for k, v in sites.items()})


def test_join_check_makes_the_worker_leave_before_any_work():
    from distributed import Client, LocalCluster

    theirs, sites = _coordinator_with_changed_profile()
    worker.REFUSED.clear()
    with LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                      resources={"testbed": 1}, dashboard_address=None) as lc, \
            Client(lc) as client:
        co = cluster.Coordinator.__new__(cluster.Coordinator)
        co.client, co.job = client, SimpleNamespace(digests=theirs, sites=sites)
        (refused,) = co.join_check()
        assert "refuses to join: profiles/networks/dsl.toml: differs" in refused
        assert worker.REFUSED and "profiles/networks/dsl.toml" in worker.REFUSED[0]
        # the refusing worker is gone (bounded wait, reporting what it waited for)
        for _ in range(100):
            if not client.scheduler_info(n_workers=-1)["workers"]:
                break
            time.sleep(0.05)
        assert not client.scheduler_info(n_workers=-1)["workers"], "the worker did not leave"
    worker.REFUSED.clear()


def test_calibration_differences_beyond_the_tolerance():
    cal = {"dsl": {"min_rtt_ms": 24.1}, "lte": {"min_rtt_ms": 70.0}}
    workers = {"a/0": {"calibration": {"dsl": {"min_rtt_ms": 24.5}, "lte": {"min_rtt_ms": 72.0}}},
               "b/1": {"calibration": {"dsl": {"min_rtt_ms": 24.0}}}}
    lines = cluster.calibration_differences(workers, cal, tolerance_ms=1.0)
    assert len(lines) == 1 and lines[0].startswith("network lte:")
    assert "70.00 ms on coordinator" in lines[0] and "72.00 ms on a/0" in lines[0]


def test_cluster_options():
    from testbed.campaign.cli import _cluster_options
    from testbed.errors import InputError

    assert _cluster_options(None, None) is None
    assert _cluster_options(None, "1") is None  # one local worker: today's runner
    assert _cluster_options(None, "2").workers == 2
    for bad in ("0", "x", "65"):
        with pytest.raises(InputError, match="--workers: expected a whole number"):
            _cluster_options(None, bad)
    with pytest.raises(InputError, match="--scheduler, --workers: expected one"):
        _cluster_options("tls://h:8786", "2")
    with pytest.raises(InputError, match="--scheduler tcp://h:8786: expected tls://HOST:PORT"):
        _cluster_options("tcp://h:8786", None)


def test_cluster_options_with_credentials(tmp_path):
    from testbed.campaign.cli import _cluster_options
    from testbed.campaign.cluster import credentials
    from testbed.errors import InputError

    (tmp_path / "p").mkdir(mode=0o700)
    certs = credentials.make(tmp_path / "p" / "c", ["coordinator"])
    opts = _cluster_options("tls://h:8786", None, certs / "coordinator")
    assert opts.scheduler == "tls://h:8786" and opts.tls == certs / "coordinator"
    with pytest.raises(InputError, match="--tls: expected with --scheduler only"):
        _cluster_options(None, "2", certs / "coordinator")


class FakeRunner:
    def __init__(self, tmp_path, retries=1):
        from testbed.campaign.run.retry import RetryPolicy
        from testbed.campaign.runner import Runner

        self.out = tmp_path / "out"
        (self.out / "trials").mkdir(parents=True)
        (self.out / "logs").mkdir()
        self.stats = {"ok": 0, "failed": 0}
        self.retry = RetryPolicy(retries, 10)
        self.manifest, self.calibrations, self._lines = {}, {}, None
        self.console = SimpleNamespace(print=lambda *a, **k: None)
        self._store = lambda store, row, files: Runner._store(self, store, row, files)


def test_coordinator_stores_each_trial_once_and_retries_a_failure(tmp_path):
    """Scripted blocks through _store: a failed trial comes back as a block of its own
    with its attempt counted; an unreached one without using an attempt."""
    setup = _setup(tmp_path)
    r = FakeRunner(tmp_path)
    co = cluster.Coordinator.__new__(cluster.Coordinator)
    co.runner, co.attempts, co.order = r, {}, 0
    t = [plan.Trial("s", "dsl", p, 0) for p in ("tcp", "quic")]

    def packed(results, attempts):
        return block_mod.pack(results, attempts, setup, "h/0", "x.log", b"log")

    progress = SimpleNamespace(update=lambda *a, **k: None)
    with Store(r.out / "trials.sqlite") as store:
        first = packed([(t[0], outcome(0, "tcp", ok=False),
                         TrialRecord(setup.settings["tcp"], before={}, after={})),
                        (t[1], None, TrialRecord(setup.settings["quic"]))], {})
        again = co._store(first, store, progress, None)
        assert again == t and co.attempts == {t[0].id: 1}
        second = packed([(t[0], outcome(0, "tcp"),
                          TrialRecord(setup.settings["tcp"], before={}, after={})),
                         (t[1], outcome(1, "quic"),
                          TrialRecord(setup.settings["quic"], before={}, after={}))],
                        {x.id: co.attempts.get(x.id, 0) for x in t})
        assert co._store(second, store, progress, None) == []
        got = dict(store.db.execute("SELECT trial_id, attempt FROM trials"))
    assert got == {t[0].id: 2, t[1].id: 1}
    assert r.stats == {"ok": 2, "failed": 0}
    assert (r.out / "logs" / "x.log").read_bytes() == b"log"
    for x in t:
        assert (r.out / "trials" / x.id / "trial.json").is_file()


def test_the_default_runner_does_not_load_dask():
    """No cluster option: the runner as before, without Dask in the process."""
    import subprocess
    import sys

    code = ("import sys, testbed.campaign.runner, testbed.campaign.cli, "
            "testbed.campaign.run.block; "
            "from testbed.campaign.cli import _cluster_options; _cluster_options(None, '1'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    cp = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        check=True, cwd=ROOT)
    assert cp.stdout.strip() == "[]"


def test_a_local_worker_that_refuses_stops_the_run_at_once():
    # a local lane's worker is restarted by its nanny and refuses again: the run would
    # wait for a worker that never comes (a hang seen with two lanes while a file of
    # the checkout changed); it stops instead, naming why
    co = cluster.Coordinator.__new__(cluster.Coordinator)
    co.runner = SimpleNamespace(console=SimpleNamespace(print=lambda *a, **k: None))
    co.local = True
    co.join_check = lambda: ["tls://127.0.0.1:1: refuses to join: x.toml: differs"]
    with pytest.raises(TestbedError, match="a local worker refused to join .*x.toml"):
        co.run([], None, None, None)
    co.local = False  # a remote cluster: other workers may still join
    co.client = SimpleNamespace(wait_for_workers=lambda n, timeout: (_ for _ in ()).throw(
        TimeoutError("no worker")))
    with pytest.raises(TimeoutError):
        co.run([], None, None, None)
