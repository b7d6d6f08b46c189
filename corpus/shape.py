"""The corpus's shape: how many requests, bytes and origins each site has.

Targets (desktop home pages, HTTP Archive):
  requests per page p10/p25/p50/p75/p90 = 24/42/71/115/176
      (Web Almanac 2024, Page Weight chapter)
  median mix: 24 scripts, 18 images, 8 stylesheets, 4 fonts, 2 HTML (the rest:
      API calls, beacons, redirects, 404s) (Web Almanac 2024, Page Weight)
  bytes per page p10/p25/p50/p75/p90 = 607/1,275/2,412/4,570/9,179 KB
      (Web Almanac 2025, Page Weight)
  92 % of pages use at least one third party (Web Almanac 2024, Third Parties)

`plan(n, seed)` spreads n sites over these distributions: site i (in order
of size) takes the quantile (i + 0.5) / n of each, interpolated log-linearly
between the published points (and beyond p10/p90 with the slope of the
nearest segment); requests and bytes are then paired by a seeded shuffle
that keeps them correlated (large pages have many requests, not always).
Each site's addressing (`layout`) is drawn from the `today` set's shares in
corpus/addressing.py, by its own generator (the rest of the plan is as before).
Pure and deterministic: the same (n, seed) gives the same plan.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass

from corpus import addressing

REQUESTS = ((10, 24), (25, 42), (50, 71), (75, 115), (90, 176))
KBYTES = ((10, 607), (25, 1275), (50, 2412), (75, 4570), (90, 9179))
MEDIAN_MIX = {"js": 24, "image": 18, "css": 8, "font": 4, "html": 2}
MEDIAN_REQUESTS = 71
THIRD_PARTY_SHARE = 0.92
SOURCES = (
    ("HTTP Archive, Web Almanac 2024, Page Weight (desktop home pages): requests "
     "p10-p90 and the median mix by type"),
    "HTTP Archive, Web Almanac 2025, Page Weight (desktop home pages): bytes p10-p90",
    "HTTP Archive, Web Almanac 2024, Third Parties: 92 % of pages use a third party",
)
CATEGORIES = ("news", "shop", "blog", "travel", "recipes", "sport", "tech", "bank",
              "museum", "hotel", "school", "jobs", "music", "garden", "cars", "health",
              "games", "films", "books")
SINGLE_ORIGIN = 2
MIN_REQUESTS = 8


@dataclass(frozen=True)
class SitePlan:
    """What one corpus site must look like."""

    name: str
    index: int
    seed: int
    requests: int
    """Requests the page makes on one load (redirect, 404s and beacons included)."""
    kbytes: int
    """Bytes of all responses, as sent (compressed where the server compresses), in KB."""
    third_party: bool
    single_origin: bool
    js: int
    image: int
    css: int
    font: int
    html: int
    other: int
    """Requests that are none of the above: API calls, beacons, redirects, 404s."""
    layout: str = "cdn"
    """How the first-party hosts share addresses and certificates: "one", "cdn" or
    "split" (corpus/addressing.py)."""

    @property
    def www(self) -> str:
        return f"www.{self.name}.example"


def _interp(points: tuple[tuple[int, int], ...], q: float) -> float:
    """Log-linear interpolation of the value at quantile q (0-1) between (percent, value)."""
    pts = [(p / 100, math.log(v)) for p, v in points]
    if q <= pts[0][0]:
        (q0, v0), (q1, v1) = pts[0], pts[1]
    elif q >= pts[-1][0]:
        (q0, v0), (q1, v1) = pts[-2], pts[-1]
    else:
        (q0, v0), (q1, v1) = next((a, b) for a, b in itertools.pairwise(pts)
                                  if a[0] <= q <= b[0])
    return math.exp(v0 + (v1 - v0) * (q - q0) / (q1 - q0))


def _mix(requests: int, single: bool) -> dict[str, int]:
    """Requests by type, scaled from the median mix; the rest are "other"."""
    scale = requests / MEDIAN_REQUESTS
    mix = {k: max(1, round(v * scale)) for k, v in MEDIAN_MIX.items()}
    mix["html"] = min(mix["html"], 1 if single else 3)
    mix["font"] = min(mix["font"], 12)
    other = requests - sum(mix.values())
    floor = 3 if single else 4  # redirect, API call, favicon, a 404 (and a beacon)
    if other < floor:
        mix["image"] -= floor - other
        other = floor
    mix["other"] = other
    return mix


def plan(n: int = 38, seed: int = 2024) -> list[SitePlan]:
    if n < 1:
        raise ValueError("n must be >= 1")
    rng = random.Random(seed)
    qs = [(i + 0.5) / n for i in range(n)]
    reqs = [max(MIN_REQUESTS, round(_interp(REQUESTS, q))) for q in qs]
    kbs = [round(_interp(KBYTES, q)) for q in qs]
    # Pair by rank with a seeded jitter: keeps both marginals exactly, correlates them.
    jitter = [r + rng.gauss(0, n / 5) for r in range(n)]
    order = sorted(range(n), key=lambda i: jitter[i])
    pairs = [(reqs[i], kbs[order[i]]) for i in range(n)]
    rng.shuffle(pairs)
    n_single = min(SINGLE_ORIGIN, n) if n >= 10 else 0
    n_first_party = n - max(round(n * THIRD_PARTY_SHARE), n - n_single - 1) if n >= 10 else 0
    # Single-origin sites are mid-sized pages (as the paper's were), not the extremes.
    by_size = sorted(range(n), key=lambda i: pairs[i][0])
    mid = by_size[n // 3: 2 * n // 3] or by_size
    singles = set(rng.sample(mid, n_single))
    rest = [i for i in mid if i not in singles] or [i for i in range(n) if i not in singles]
    first_only = set(rng.sample(rest, max(0, n_first_party - n_single)))
    layouts = iter(addressing.draw("today", n - len(singles), seed))  # the others': one host
    out = []
    for i, (r, kb) in enumerate(pairs):
        single = i in singles
        mix = _mix(r, single)
        name = f"{CATEGORIES[i % len(CATEGORIES)]}{i + 1:02d}"
        out.append(SitePlan(name=name, index=i, seed=rng.randrange(2**32), requests=r,
                            kbytes=kb, third_party=not (single or i in first_only),
                            single_origin=single, layout="one" if single else next(layouts),
                            **mix))
    return out
