"""bench/sender for real, in a tiny mode: one row per server kind, 1 s transfers of at
least 20 MB, the figures positive, the bottleneck verdicts computed, nothing left."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.needs import need
from support.paths import BENCH, ROOT

sys.path.insert(0, str(BENCH))  # the benchmarks import each other by name

import sender

pytestmark = pytest.mark.e2e

ROWS = ["tcp", "tls", "quic-gso-on-1350-chromium"]


def test_tiny_bench_one_row_per_server_kind(tmp_path):
    need(sender.missing_tools())
    out = tmp_path / "sender.json"
    cp = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "sender.py"), "--repeats", "1", "--seconds", "1",
         "--min-mb", "20", "--body-mb", "10", "--rows", ",".join(ROWS), "--json", str(out)],
        check=False, capture_output=True, text=True, timeout=600)
    assert cp.returncode == 0, cp.stderr[-3000:]
    data = {r["row"]["name"]: r["samples"] for r in json.loads(out.read_text())}
    assert list(data) == ROWS
    for name, samples in data.items():
        (x,) = samples
        assert x["bytes"] >= 20_000_000, name
        assert x["seconds"] >= 1.0, name
        for key in ("mbit_s", "server_cpu", "client_cpu", "server_s_per_gb",
                    "one_core_mbit_s", "server_core", "client_core"):
            assert x[key] > 0, (name, key, x[key])
        assert x["bottleneck"] in ("server", "client", "neither"), name
        assert isinstance(x["client_not_bottleneck"], bool), name
        assert x["share"] == sender.SHARES[name.split("-")[0]]
    assert data["quic-gso-on-1350-chromium"][0]["acks_per_100"] < 20  # every 10th, not 2nd
    assert data["quic-gso-on-1350-chromium"][0]["extra"]["client"]["max_datagram"] == 1350
    # The table and its notes were printed; the server-bound column is filled.
    assert "| TLS 1.3 over TCP (nginx) |" in cp.stdout and "Bottleneck:" in cp.stdout
    # The CPU quota's cgroup is gone.
    left = [p for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/cpu")) if root.is_dir()
            for p in root.glob("tb-*-sender")]
    assert not left
