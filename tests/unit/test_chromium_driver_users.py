"""Everyone takes Chromium from the one driver, testbed.host.chromium (the layers as a
whole: test_layers.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from support.paths import ROOT

PACKAGE = ROOT / "testbed"
STAGES = ("record", "replay", "emulate", "protocols", "measure")


def imported(path: Path) -> set[str]:
    """The testbed modules a source file imports (absolute imports, anywhere in it)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    return {n for n in names if n == "testbed" or n.startswith("testbed.")}


def sources(*folders: str) -> list[Path]:
    return sorted(p for f in folders for p in (PACKAGE / f).rglob("*.py"))


def test_the_chromium_driver_imports_only_the_bottom_layer():
    names = imported(PACKAGE / "host" / "chromium.py")
    assert names and not [n for n in names
                          if n.startswith(tuple(f"testbed.{s}" for s in (*STAGES, "validate")))]
    assert not (PACKAGE / "replay" / "browser.py").exists()
    for user in ("record/browser.py", "commands/doctor.py", "validate/servers.py",
                 "validate/protocols.py", "replay/env.py", "protocols/apply.py"):
        assert any(n.startswith("testbed.host.chromium") for n in imported(PACKAGE / user)), user
