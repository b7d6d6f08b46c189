"""Execute notebooks/campaign.ipynb on a results folder (the test fixture by default).

Imports only nbformat and nbclient, so the analysis-only install's interpreter can run it
by path: `python tests/notebook_run.py [OUT.ipynb]` executes the notebook and, given OUT,
writes it there with its outputs (how the committed outputs are made: see
docs/analysis-and-statistics.md).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import NATIVE_KERNEL_NAME
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "campaign.ipynb"
FIXTURE = ROOT / "tests" / "fixtures" / "results"
CELL_TIMEOUT = 300  # seconds one cell may take (the notebook's report cell takes ~15)


def execute(results: Path = FIXTURE, report_out: Path | None = None,
            notebook: Path = NOTEBOOK) -> nbformat.NotebookNode:
    """The notebook executed top to bottom on `results` (a cell's error raises)."""
    nb = nbformat.read(notebook, as_version=4)
    with tempfile.TemporaryDirectory() as scratch:
        env = {"TESTBED_RESULTS": str(results),
               "TESTBED_REPORT_OUT": str(report_out or Path(scratch) / "report")}
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            # The kernel of this interpreter (ipykernel beside it); no kernelspec needed.
            NotebookClient(nb, kernel_name=NATIVE_KERNEL_NAME, timeout=CELL_TIMEOUT,
                           resources={"metadata": {"path": str(notebook.parent)}}).execute()
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return nb


def main(argv: list[str]) -> None:
    nb = execute()
    if argv:
        nbformat.write(nb, argv[0])
    print(sum(len(c.get("outputs", [])) for c in nb.cells if c.cell_type == "code"), "outputs")


if __name__ == "__main__":
    main(sys.argv[1:])
