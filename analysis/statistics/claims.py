"""Testing a paper's claim against a campaign: the rules behind the findings' verdicts
(analysis.campaign.findings), as small functions of numbers.

- `resolution`: the half-step of a figure as the paper prints it (-0.05: 0.005; -87: 0.5),
  the range a printed figure stands for;
- `magnitude`: whether an interval reaches the paper's figure, or lies nearer zero
  (smaller) or beyond it (larger);
- `direction_verdict`: a directional claim (a is faster than b, by the paper's figure)
  from the across-site test's corrected p, its sign and `magnitude`;
- `tost` / `beyond`: two one-sided tests that a normal estimate lies inside a margin
  (equivalence), and the one-sided test that it lies outside it;
- `holm`: Holm's step-down correction over the table's tests (statsmodels).

A verdict is one of VERDICTS; docs/analysis-and-statistics.md, "The paper's findings:
the verdict rules", states the rules in prose.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

REPRODUCED = "reproduced"
SMALLER = "reproduced, smaller than the paper"
LARGER = "reproduced, larger than the paper"
ONLY_SMALLER = "smaller than the paper"
EQUIVALENT = "equivalent"
CONTRADICTED = "contradicted"
INCONCLUSIVE = "inconclusive"
NOT_TESTED = "not tested"
VERDICTS = (REPRODUCED, SMALLER, LARGER, ONLY_SMALLER, EQUIVALENT, CONTRADICTED,
            INCONCLUSIVE, NOT_TESTED)
"""Every verdict a finding's row can get, in the order summaries list them."""


def decimals(figure: float) -> int:
    """The decimals `figure` is printed with (its shortest decimal form)."""
    text = repr(float(figure)).rstrip("0").rstrip(".")
    return len(text.split(".")[1]) if "." in text else 0


def resolution(figure: float) -> float:
    """Half the last printed step of `figure`: the paper's -0.05 stands for
    [-0.055, -0.045], its -87 ms for [-87.5, -86.5]."""
    return 0.5 * 10.0 ** -decimals(figure)


def magnitude(low: float, high: float, figure: float) -> str:
    """Where the interval [low, high] lies against the paper's `figure` (the range of
    `resolution` around it): 'reaches', 'smaller' (nearer zero, or past it) or
    'larger' (beyond the figure, away from zero); '' when either is unknown."""
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(figure)):
        return ""
    half = resolution(figure)
    lo, hi = figure - half, figure + half
    if low <= hi and lo <= high:
        return "reaches"
    beyond = high < lo if figure < 0 else low > hi
    return "larger" if beyond else "smaller"


def direction_verdict(estimate: float, p: float, alpha: float, expect_negative: bool,
                      size: str) -> str:
    """A directional claim's verdict. Significant (corrected p < alpha) in the claim's
    direction: reproduced, qualified by `size` (magnitude against the paper's figure;
    '' when the paper gives none); significant the other way: contradicted; not
    significant: 'smaller than the paper' when the interval excludes the paper's
    figure on zero's side, else inconclusive."""
    significant = math.isfinite(p) and p < alpha
    if significant and (estimate < 0) == expect_negative and estimate != 0:
        return {"smaller": SMALLER, "larger": LARGER}.get(size, REPRODUCED)
    if significant:
        return CONTRADICTED
    return ONLY_SMALLER if size == "smaller" else INCONCLUSIVE


def tost(estimate: float, se: float, df: float, bound: float) -> float:
    """p of two one-sided t tests that the true value lies in (-bound, bound)
    (Schuirmann 1987): the larger of the two one-sided p-values; NaN without an
    error."""
    if not (se > 0 and df > 0 and math.isfinite(estimate)):
        return math.nan
    p_low = stats.t.sf((estimate + bound) / se, df)
    p_high = stats.t.cdf((estimate - bound) / se, df)
    return float(max(p_low, p_high))


def beyond(estimate: float, se: float, df: float, bound: float) -> float:
    """p of the one-sided t test that the true value lies outside [-bound, bound] on
    the estimate's side (H0: |value| <= bound); NaN without an error."""
    if not (se > 0 and df > 0 and math.isfinite(estimate)):
        return math.nan
    return float(stats.t.sf((abs(estimate) - bound) / se, df))


def holm(p: Sequence[float]) -> np.ndarray:
    """Holm's step-down correction (Holm 1979) of the finite p-values in `p`
    (statsmodels.stats.multitest.multipletests); NaN stays NaN and is not counted."""
    from statsmodels.stats.multitest import multipletests

    values = np.asarray(p, dtype=float)
    out = np.full(values.shape, np.nan)
    ok = np.isfinite(values)
    if ok.any():
        out[ok] = multipletests(values[ok], method="holm")[1]
    return out


def noninferior(estimate: float, se: float, df: float, bound: float) -> tuple[float, float]:
    """One-sided t tests of a claim "a is not slower than b by more than bound": p that
    it holds (H0: value >= bound) and p that it fails (H0: value <= bound); NaN
    without an error."""
    if not (se > 0 and df > 0 and math.isfinite(estimate)):
        return math.nan, math.nan
    return (float(stats.t.cdf((estimate - bound) / se, df)),
            float(stats.t.sf((estimate - bound) / se, df)))
