"""What a command's `--json` prints: one JSON document on standard output and
nothing else there (messages go to standard error), so `testbed VERB --json |
jq` always parses. Values from pandas and NumPy become plain JSON: a missing
value (NaN, NA, NaT) is null, a table a list of row objects."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import click

MISSING_TYPES = frozenset({"NAType", "NaTType"})
"""pandas' missing values, told by their type's name (pandas is not imported here)."""


def plain(value):
    """`value` as what json.dumps takes, with no NaN (JSON has none)."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in (sorted(value) if isinstance(value, (set, frozenset))
                                   else value)]
    if isinstance(value, Path):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    if type(value).__name__ in MISSING_TYPES:
        return None
    if hasattr(value, "columns") and hasattr(value, "to_dict"):  # a DataFrame
        return plain(value.to_dict("records"))
    if hasattr(value, "to_dict"):  # a Series
        return plain(value.to_dict())
    if hasattr(value, "item"):  # a NumPy scalar
        return plain(value.item())
    return str(value)


def dumps(value) -> str:
    return json.dumps(plain(value), indent=1, allow_nan=False)


def echo(value) -> None:
    """Print `value` as the one JSON document of standard output."""
    click.echo(dumps(value))
