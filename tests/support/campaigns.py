"""Real campaigns (`testbed run`) and the rows they store."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from support.paths import BENCH, ROOT, TESTBED


def rows(out: Path) -> list[dict]:
    """The trials the campaign stored in `out`, one dict a row, by trial id."""
    db = sqlite3.connect(out / "trials.sqlite")
    db.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in db.execute("SELECT * FROM trials ORDER BY trial_id")]
    finally:
        db.close()


def run_warm(tmp_path: Path, campaign: str, out: Path) -> dict[str, dict]:
    """Run `campaign` (its network bench/dsl-deep.toml, copied beside it) into `out`;
    exit 0 asserted. The stored rows by protocol."""
    (tmp_path / "warm.toml").write_text(campaign)
    (tmp_path / "dsl-deep.toml").write_bytes((BENCH / "dsl-deep.toml").read_bytes())
    cp = subprocess.run(check=False, args=[TESTBED, "run", str(tmp_path / "warm.toml"),
                                           "--out", str(out)],
                        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert cp.returncode == 0, cp.stderr[-3000:]
    return {r["setting"]: r for r in rows(out)}
