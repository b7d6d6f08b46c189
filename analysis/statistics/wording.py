"""The words and number formats every reader of a campaign sees (the report, the
notebook, the command line): one wording per verdict, and a number that cannot be
had shown as a dash, never as None, nan or inf.

    pct(0.031)          # '+3.1%'
    pct(float("nan"))   # '–'
"""

from __future__ import annotations

import math
from typing import Any

NO_DIFFERENCE = "no significant difference"
"""A test that does not reject equal means at the campaign's alpha: the one wording
(never "no clear difference")."""

DASH = "–"
"""What stands where a number cannot be had (too few sites, no spread, no data)."""

BOOTSTRAP_MIN_SITES = 20
"""The across-site bootstrap interval is reported from this many sites: its coverage
was checked at 20 sites (95.4 %, tests/unit/test_analysis_across.py); with fewer it
is not known, and on 4 sites it ran to ±16,000,000 %."""
BOOTSTRAP_WHY = (f"bootstrap interval left out below {BOOTSTRAP_MIN_SITES} sites: "
                 f"its coverage was checked at {BOOTSTRAP_MIN_SITES}")


def finite(v: Any) -> bool:
    """Whether `v` is a real number that is neither NaN nor infinite."""
    try:
        return v is not None and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def pct(v: Any, digits: int = 1) -> str:
    """`v` (a ratio) as a signed percentage, or a dash when it is not a finite number."""
    return f"{float(v):+.{digits}%}" if finite(v) else DASH


def interval(low: Any, high: Any, digits: int = 1) -> str:
    """'[low, high]' in percent, or a dash when either end cannot be had."""
    return f"[{pct(low, digits)}, {pct(high, digits)}]" if finite(low) and finite(high) else DASH
