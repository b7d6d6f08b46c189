"""What `pip install .` installs: every file of the packages that is not Python
(templates, hooks, configs) is named by pyproject's package-data, so an
installed testbed has what the checkout has (hooks/pre.mjs was once left out).
The corpus (corpus/, its js/ scripts) runs from the checkout and is not installed."""

from __future__ import annotations

import tomllib
from pathlib import Path

from support.paths import ROOT


def package_data() -> dict[str, list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return config["tool"]["setuptools"]["package-data"]


def left_out(root: Path, patterns: dict[str, list[str]], files: list[str]) -> list[str]:
    """The files (paths from the root) that no pattern of their package names."""
    covered = {p.relative_to(root).as_posix() for package, globs in patterns.items()
               for g in globs for p in (root / package).glob(g)}
    return sorted(f for f in files if not f.endswith(".py") and f not in covered)


def package_files(root: Path, packages) -> list[str]:
    """Every file under the packages' folders (paths from the root), bytecode left out.
    Read from the tree, not from git: the image's checkout has no .git."""
    return sorted(p.relative_to(root).as_posix() for package in packages
                  for p in (root / package).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)


def test_every_data_file_of_the_packages_is_installed():
    patterns = package_data()
    files = package_files(ROOT, patterns)
    assert "testbed/measure/hooks/pre.mjs" in files
    assert left_out(ROOT, patterns, files) == []


def test_a_file_no_pattern_names_is_found(tmp_path):
    (tmp_path / "testbed" / "hooks").mkdir(parents=True)
    for name in ("a.js", "b.mjs", "c.py"):
        (tmp_path / "testbed" / "hooks" / name).touch()
    (tmp_path / "testbed" / "hooks" / "__pycache__").mkdir()
    (tmp_path / "testbed" / "hooks" / "__pycache__" / "c.cpython-311.pyc").touch()
    files = package_files(tmp_path, ["testbed"])
    assert files == ["testbed/hooks/a.js", "testbed/hooks/b.mjs", "testbed/hooks/c.py"]
    assert left_out(tmp_path, {"testbed": ["**/*.js"]}, files) == ["testbed/hooks/b.mjs"]
