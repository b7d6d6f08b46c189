"""The walkthrough notebook executes, top to bottom, on the bundled fixture, and the
outputs stored with it (what a reader sees on a code host) are what it gives."""

from __future__ import annotations

import nbformat
import pytest
from support.notebook_run import NOTEBOOK, execute, text_parts

MAX_BYTES = 2_000_000  # stored with its figures; a code host shows it without running it


@pytest.fixture(scope="module")
def executed():
    return execute()


def test_campaign_notebook_runs_on_the_fixture(executed):
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2  # the CDF figures
    text = "".join(o.get("text", "") for o in outputs)
    assert "2480 trials" in text
    assert "8619 connection rows; largest object known for 4 sites" in text
    assert "TCP on DA2GC (RTT 262 ms, loss 3.3 %): BBR" in text  # where BBR helped or hurt
    assert "HAR: " in text  # one trial, with its waterfall
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    assert "data-request=" in html and "BBR helps on lossy paths" in html
    # effect sizes and robustness; the answers across sites, the tests that use the
    # design, diagnostics, planner
    for column in ("hedges_g", "mannwhitney_bh", "ci_excludes_0", "estimate_rtt",
                   "site_slope_sd", "wilcoxon", "paired_t", "drift_per_hour", "runs_rtt"):
        assert column in html, column


def test_sections_are_numbered_in_order():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    numbers = [c.source.split(".")[0].removeprefix("## ") for c in nb.cells
               if c.cell_type == "markdown" and c.source.startswith("## ")]
    assert numbers == [str(n) for n in range(1, len(numbers) + 1)]
    assert len(numbers) >= 11


def test_stored_outputs_are_current(executed):
    stored = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in stored.cells if c.cell_type == "code"]
    assert all(c.outputs for c in code), "a code cell without stored outputs"
    assert [c.source for c in code] == [c.source for c in executed.cells
                                        if c.cell_type == "code"]
    assert text_parts(stored) == text_parts(executed), (
        "the stored outputs are stale: `make notebook` re-executes and stores them")
    assert NOTEBOOK.stat().st_size <= MAX_BYTES


def test_the_kernels_channels_are_unix_sockets(tmp_path):
    """The kernel's five channels (shell and control run code) are Unix sockets in a
    folder of the caller's, not loopback ports every local account can reach. One TCP
    listener remains, and cannot be configured away: ipykernel's pipe for the output of
    forked subprocesses (iostream.py, `_setup_pipe_in`), which drops any message not
    carrying a random 16-byte key and can only print, never run code."""
    import psutil
    from jupyter_client.kernelspec import NATIVE_KERNEL_NAME
    from jupyter_client.manager import KernelManager
    from support.notebook_run import kernel_config

    scratch = tmp_path / "scratch"
    scratch.mkdir(mode=0o700)
    km = KernelManager(kernel_name=NATIVE_KERNEL_NAME, config=kernel_config(str(scratch)))
    km.start_kernel()
    try:
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)  # bounded: the kernel answered on its sockets
        kernel = psutil.Process(km.provisioner.pid)
        tcp = [c for p in [kernel, *kernel.children(recursive=True)]
               for c in p.net_connections(kind="tcp")]
        info = km.get_connection_info()
        assert info["transport"] == "ipc" and info["ip"].startswith(str(scratch))
        sockets = sorted(p.name for p in scratch.iterdir() if p.is_socket())
        assert len(sockets) == 5, sockets  # shell, iopub, stdin, control, heartbeat
        listening = [c for c in tcp if c.status == "LISTEN"]
        assert len(listening) <= 1 and all(c.laddr.ip == "127.0.0.1" for c in listening), tcp
        kc.stop_channels()
    finally:
        km.shutdown_kernel(now=True)


def test_with_two_clients_the_notebook_walks_through_one_and_faces_both(tmp_path):
    """The loading cells on an export of two clients (the fixture's trials again as
    Firefox's, 20 % slower): the client chosen by TESTBED_CLIENT is walked through, the
    side-by-side table shows both, each against its own baseline."""
    import os

    import pandas as pd
    from jupyter_client.kernelspec import NATIVE_KERNEL_NAME
    from nbclient import NotebookClient
    from support.notebook_run import kernel_config

    chromium = pd.read_csv(NOTEBOOK.parent.parent / "tests/fixtures/results/trials.csv")
    firefox = chromium.assign(trial_id=chromium.trial_id + "+firefox", client="firefox",
                              plt_ms=chromium.plt_ms * 1.2)
    export = tmp_path / "two-clients.csv"
    pd.concat([chromium, firefox]).to_csv(export, index=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells = nb.cells[:3]  # the introduction, loading, the clients side by side
    env = {k: v for k, v in os.environ.items() if not k.startswith("TESTBED_")}
    env.update(TESTBED_RESULTS=str(export), TESTBED_CLIENT="firefox")
    scratch = tmp_path / "kernel"
    scratch.mkdir(mode=0o700)
    NotebookClient(nb, kernel_name=NATIVE_KERNEL_NAME, timeout=120,
                   config=kernel_config(str(scratch)),
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute(env=env)
    loading, facing = nb.cells[1].outputs, nb.cells[2].outputs
    text = "".join(o.get("text", "") for o in loading)
    assert f"2480 trials from {export}, client firefox (present: chromium, firefox)" in text
    assert "+firefox" in loading[-1]["data"]["text/plain"]  # trials.head(): Firefox's
    table = facing[-1]["data"]["text/plain"]
    assert "chromium" in table and "firefox" in table
    assert table.count("-0.114261") == 2  # da2gc quic vs tcp: the same in each client
