"""The walkthrough notebook executes, top to bottom, on the bundled fixture."""

from __future__ import annotations

from pathlib import Path

import nbformat
from jupyter_client.kernelspec import NATIVE_KERNEL_NAME
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "campaign.ipynb"
FIXTURE = ROOT / "tests" / "fixtures" / "results"


def test_campaign_notebook_runs_on_the_fixture(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTBED_RESULTS", str(FIXTURE))
    monkeypatch.setenv("TESTBED_REPORT_OUT", str(tmp_path / "report"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # The kernel of this interpreter (ipykernel in the venv); no installed kernelspec needed.
    client = NotebookClient(nb, kernel_name=NATIVE_KERNEL_NAME, timeout=300,
                            resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()

    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2  # the CDF figures
    text = "".join(o.get("text", "") for o in outputs)
    assert "2480 trials" in text
    assert "8619 connection rows; largest object known for 4 sites" in text
    assert "TCP on DA2GC (RTT 262 ms, loss 3.3 %): BBR" in text  # where BBR helped or hurt
    assert "HAR: " in text  # one trial, with its waterfall
    html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    assert "data-request=" in html and "BBR helps on lossy paths" in html
    # the answers across sites, the tests that use the design, diagnostics, planner
    for column in ("estimate_rtt", "site_slope_sd", "wilcoxon", "drift_per_hour", "runs_rtt"):
        assert column in html, column
    assert (tmp_path / "report" / "index.html").is_file()
