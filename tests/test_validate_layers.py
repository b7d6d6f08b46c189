"""The validation layer sits above the stages, the Chromium driver in the bottom layer:
read from the source's import statements."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "testbed"
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


def test_no_stage_imports_the_validation_layer():
    assert len(sources(*STAGES)) > 30
    offending = {str(p.relative_to(PACKAGE)): sorted(n for n in imported(p)
                                                     if n.startswith("testbed.validate"))
                 for p in sources(*STAGES)}
    assert {k: v for k, v in offending.items() if v} == {}


def test_validation_imports_only_stages_and_the_bottom_layer():
    above = ("testbed.campaign", "testbed.doctor", "testbed.report", "testbed.compare")
    for p in sources("validate"):
        names = imported(p)
        assert not [n for n in names if n.startswith(above)], p
        if p.name != "cli.py":  # the command line part may use the command line's group
            assert "testbed.cli" not in names, p


def test_the_chromium_driver_imports_only_the_bottom_layer():
    names = imported(PACKAGE / "chromium.py")
    assert names and not [n for n in names
                          if n.startswith(tuple(f"testbed.{s}" for s in (*STAGES, "validate")))]
    assert not (PACKAGE / "replay" / "browser.py").exists()
    for user in ("record/browser.py", "doctor.py", "validate/servers.py",
                 "validate/protocols.py", "replay/env.py", "protocols/apply.py"):
        assert any(n.startswith("testbed.chromium") for n in imported(PACKAGE / user)), user
