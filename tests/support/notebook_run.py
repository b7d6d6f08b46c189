"""Execute notebooks/campaign.ipynb on the test fixture, as stored with its outputs.

Imports only nbformat and nbclient, so the analysis-only install's interpreter can run it
by path. `python tests/support/notebook_run.py notebooks/campaign.ipynb` (`make notebook`)
re-executes the notebook and stores it with its outputs; tests/unit/test_notebook.py checks
that the stored outputs are what executing it gives.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import NATIVE_KERNEL_NAME
from nbclient import NotebookClient
from traitlets.config import Config

ROOT = Path(__file__).resolve().parents[2]  # run as a script too: no support.paths
NOTEBOOK = ROOT / "notebooks" / "campaign.ipynb"
CELL_TIMEOUT = 300  # seconds one cell may take (the notebook's slowest takes ~15)
DEFAULT_REPORT_OUT = "../reports/notebook"  # the notebook's own default, as printed


def kernel_config(scratch: str) -> Config:
    """The kernel talks over Unix sockets in `scratch` (a folder only its owner can
    enter), not over loopback TCP ports, which every local account can reach (the
    messages are signed, but a port open to all is an open door to knock on)."""
    return Config({"KernelManager": {
        "transport": "ipc",
        "ip": str(Path(scratch) / "kernel"),
        "connection_file": str(Path(scratch) / "kernel.json"),
    }})


SAME_ARITHMETIC = {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_NUM_THREADS": "1",
                   "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"}
"""The kernel's numpy and OpenBLAS use the same AVX2 code paths on every x86-64 CPU
that has AVX2, one thread: the mixed model's optimum on the 4-site fixture moved in the
third digit between an AVX-512 machine and one without it (27 Nov), which made the
stored outputs depend on the machine that stored them."""


def execute(notebook: Path = NOTEBOOK) -> nbformat.NotebookNode:
    """The notebook executed top to bottom in its folder on its default results (the
    fixture); its report goes to a temporary folder, printed as its default. A cell's
    error raises."""
    nb = nbformat.read(notebook, as_version=4)
    with tempfile.TemporaryDirectory() as scratch:
        report_out = str(Path(scratch) / "report")
        env = {k: v for k, v in os.environ.items() if not k.startswith("TESTBED_")}
        env["TESTBED_REPORT_OUT"] = report_out
        env.update(SAME_ARITHMETIC)
        # The kernel of this interpreter (ipykernel beside it); no kernelspec needed.
        client = NotebookClient(nb, kernel_name=NATIVE_KERNEL_NAME, timeout=CELL_TIMEOUT,
                                record_timing=False, config=kernel_config(scratch),
                                resources={"metadata": {"path": str(notebook.parent)}})
        client.execute(env=env)  # the kernel's environment
        if not (Path(report_out) / "index.html").is_file():
            raise AssertionError(f"the notebook wrote no {report_out}/index.html")
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if "text" in out:
                out["text"] = out["text"].replace(report_out, DEFAULT_REPORT_OUT)
    return nb


def text_parts(nb: nbformat.NotebookNode) -> list[list[str]]:
    """Per code cell, the text of its outputs (streams, text/plain, errors): what must
    not change between the stored notebook and a fresh execution."""
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        texts = []
        for out in cell.outputs:
            if out.output_type == "stream":
                texts.append(out.text)
            elif out.output_type == "error":
                texts.append(f"{out.ename}: {out.evalue}")
            else:
                texts.append(out.get("data", {}).get("text/plain", ""))
        cells.append(texts)
    return cells


def main(argv: list[str]) -> None:
    nb = execute()
    if argv:
        nbformat.write(nb, argv[0])
    print(sum(len(c.get("outputs", [])) for c in nb.cells if c.cell_type == "code"), "outputs")


if __name__ == "__main__":
    main(sys.argv[1:])
