"""The precision of a mean: the half-width of its Student t confidence interval, and a
bound on it given as a share of the mean ("2%") or a time ("50ms"). Adaptive runs
(testbed.campaign.plan.adaptive) stop a site x network when every setting's PLT mean is
within the bound; the report recomputes the same intervals (analysis.report.setup.runs_table).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

LEVEL = 0.95
"""Confidence level of the interval the precision bounds."""

_PRECISION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%|ms)\s*$")


@dataclass(frozen=True)
class Precision:
    """A bound on the half-width of the PLT mean's 95 % interval: `value` percent of the
    mean, or `value` ms."""

    value: float
    unit: str
    """"%" or "ms"."""

    @classmethod
    def parse(cls, text: str) -> Precision:
        m = _PRECISION.match(text)
        if m is None or float(m.group(1)) <= 0:
            raise ValueError(f'expected a share of the mean such as "2%" or a time such as '
                             f'"50ms" (> 0), got {json.dumps(text)}')
        value = float(m.group(1))
        if m.group(2) == "%" and value >= 100:
            raise ValueError(f"expected a share below 100 %, got {json.dumps(text)}")
        return cls(value, m.group(2))

    def limit_ms(self, mean_ms: float) -> float:
        """The largest half-width (ms) allowed around a mean of mean_ms."""
        return self.value / 100 * mean_ms if self.unit == "%" else self.value

    def __str__(self) -> str:
        return f"{self.value:g}{self.unit}"


@lru_cache(maxsize=4096)
def t_quantile(df: int, level: float = LEVEL) -> float:
    from scipy.stats import t

    return float(t.ppf(0.5 + level / 2, df))


def half_width(values: Sequence[float], level: float = LEVEL) -> float:
    """Half-width (ms) of the Student t interval of the mean of `values`; inf below 2."""
    n = len(values)
    if n < 2:
        return math.inf
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return t_quantile(n - 1, level) * sd / math.sqrt(n)


def meets(values: Sequence[float], precision: Precision) -> bool:
    """Whether the mean of `values` is within the precision (2 values or more)."""
    if len(values) < 2:
        return False
    return half_width(values) <= precision.limit_ms(sum(values) / len(values))


