"""The hostile-input suite covers every family with enough cases."""

import importlib
from pathlib import Path


def test_at_least_forty_hostile_cases():
    cases = []
    for f in sorted(Path(__file__).parent.glob("test_*.py")):
        if f.stem != "test_suite_size":
            cases += getattr(importlib.import_module(f.stem), "CASES", [])
    assert len(cases) >= 40, len(cases)
