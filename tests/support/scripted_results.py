"""A small campaign for the scripted runner (support/scripted_campaign.py, also run as a
script: SCRIPTED) and what its results folder must hold."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from support.paths import SUPPORT

SCRIPTED = str(SUPPORT / "scripted_campaign.py")


def write_campaign(tmp_path: Path, runs: int = 2) -> Path:
    """tmp_path/c.toml: local-news over DSL, TCP and QUIC, `runs` runs, no retries."""
    p = tmp_path / "c.toml"
    p.write_text(f'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["tcp", "quic"]\n'
                 f"runs = {runs}\nretries = 0\n")
    return p


def stored(out: Path) -> set[str]:
    """The trial ids stored in `out`."""
    db = sqlite3.connect(f"file:{out / 'trials.sqlite'}?mode=ro", uri=True)
    try:
        return {r[0] for r in db.execute("SELECT trial_id FROM trials")}
    finally:
        db.close()


def assert_consistent(out: Path) -> set[str]:
    """Every stored row has its complete folder, every folder its row, nothing else."""
    rows = stored(out)
    folders = {p.name for p in (out / "trials").iterdir()}
    assert folders == rows
    for trial_id in rows:
        doc = json.loads((out / "trials" / trial_id / "trial.json").read_text())
        assert doc["row"]["trial_id"] == trial_id
    json.loads((out / "manifest.json").read_text())
    assert not list(out.glob("*.tmp"))
    return rows


PLANNED = {f"local-news+dsl+{p}+{r}" for p in ("tcp", "quic") for r in (0, 1)}
