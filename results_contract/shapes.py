"""The shapes a results folder's JSON files must have before anything reads them.

A HAR or a visual-metrics file of someone else's folder may hold
anything JSON can; the analysis reads only the keys below, so these are checked
on load (results_contract.results_io reads the file) and a wrong one is a ResultsError
naming the file, the key and what was expected (a manifest.json is a typed model:
results_contract.manifest):

    browsertime.har.gz  an object; log: an object; log.pages, log.entries: lists of
                        objects; each entry's request, response, timings: objects
    visualmetrics.json  an object; VisualProgress: text; videoRecordingStart: a
                        number >= 0
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from results_contract.results_io import ResultsError

_KINDS = {dict: "an object", list: "a list", str: "text", bool: "true or false"}


def _expect(value: Any, kind: type[Any], path: Path, key: str,
            each: type | None = None) -> None:
    """`value` (absent: None, accepted) is a `kind`, and every item of it an `each`."""
    if value is None:
        return
    if not isinstance(value, kind):
        raise ResultsError(f"{path}: key {key}: expected {_KINDS[kind]}, "
                           f"got {type(value).__name__}")
    if each is not None:
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for k, item in items:
            if not isinstance(item, each):
                raise ResultsError(f"{path}: key {key}.{k}: expected {_KINDS[each]}, "
                                   f"got {type(item).__name__}")


def _top(data: Any, path: Path, what: str) -> None:
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: (top level): expected a JSON object ({what}), "
                           f"got {type(data).__name__}")


def har(data: Any, path: Path) -> dict[str, Any]:
    """`data` if it has a HAR's shape (see the module)."""
    _top(data, path, "a HAR")
    log = data.get("log")
    _expect(log, dict, path, "log")
    log = log or {}
    _expect(log.get("pages"), list, path, "log.pages", dict)
    _expect(log.get("entries"), list, path, "log.entries", dict)
    for i, entry in enumerate(log.get("entries") or ()):
        for key in ("request", "response", "timings"):
            _expect(entry.get(key), dict, path, f"log.entries.{i}.{key}")
    result: dict[str, Any] = data
    return result


def visual_metrics(data: Any, path: Path) -> dict[str, Any]:
    """`data` if it has a visual-metrics file's shape (see the module)."""
    _top(data, path, "visual metrics")
    _expect(data.get("VisualProgress"), str, path, "VisualProgress")
    start = data.get("videoRecordingStart")
    if start is not None and (isinstance(start, bool) or not isinstance(start, int | float)
                              or not math.isfinite(start) or start < 0):
        raise ResultsError(f"{path}: key videoRecordingStart: expected a number >= 0 "
                           f"(ms), got {str(start)[:40]!r}")
    result: dict[str, Any] = data
    return result
