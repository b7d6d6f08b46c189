"""The `paper` set's shape: 38 pages like Wolsing et al.'s (ANRW 2019) selection.

The paper recorded "38 popular websites" chosen "to spread page size and number of
server IPs"; its largest page was 4 MB, and two were single-origin (gnu.org and
wikipedia.org, its 1-RTT table). It gives no other figure of its pages, so:

- Bytes follow the 2019 desktop page-weight distribution truncated at 4 MB. HTTP
  Archive's Web Almanac 2019 (Page Weight chapter) gives a median page of about
  1,900 KB and 74 requests, and a 90th percentile above 6 MB and 179 requests. A
  log-normal through those two points (bytes: median 1,900 KB, p90 6,144 KB) is
  the period's distribution; the paper's cap keeps its part below 4,096 KB (about
  80 % of it), and site i of n takes the quantile (i + 0.5) / n of that part. Why
  not log-uniform: the paper's sites were popular sites of 2019, whose weight
  clustered around the period's median, not spread evenly over decades.
- Requests follow the 2019 log-normal (median 74, p90 179) truncated at the same
  share (an assumption: as if requests and bytes were rank-correlated), and are
  paired with bytes by a seeded, correlated shuffle as the `today` set's are.
- The two single-origin pages (gnu.org's and wikipedia.org's analogues) take the
  two smallest slots: those home pages are light (an assumption, no figure
  published in the paper).
- Server IPs spread from 1 to about 16 (the most this generator's catalog gives:
  four first-party hosts and the third-party hosts real sites load libraries,
  fonts and tags from). The paper gives no range; we assume its popular sites
  spanned about as wide, and spread them by choice, not sample: besides the 2
  single-origin pages, FIRST_PARTY_ONLY pages load nothing from third parties (1
  to 4 IPs, by their addressing), the others 5 to 16 (by page size and
  addressing). The addressing of each page is drawn in corpus/addressing.py.

Pure and deterministic: the same (n, seed) gives the same plan.
"""

from __future__ import annotations

import math
import random
from statistics import NormalDist

from corpus import addressing
from corpus.shape import MIN_REQUESTS, SitePlan, _mix

MEDIAN_KB, P90_KB = 1900, 6144
MEDIAN_REQUESTS, P90_REQUESTS = 74, 179
MAX_KB = 4096
"""The paper's largest page: 4 MB, where the 2019 distribution is cut."""
BUILD_CAP_KB = 3700
"""No page is planned heavier: a recorded page can exceed its plan by a few per cent,
and stays below 4 MB (4,000,000 bytes) so."""
SINGLE_ORIGIN = 2
FIRST_PARTY_ONLY = 6
"""Pages without third parties besides the single-origin ones (1-4 server IPs)."""
SEED = 2019
SOURCES = (
    ("Wolsing et al., ANRW 2019: 38 popular sites spread over page size and server IPs, "
    "largest 4 MB, two single-origin (gnu.org, wikipedia.org)"),
    ("HTTP Archive, Web Almanac 2019, Page Weight: median page about 1,900 KB and 74 "
    "requests; p90 above 6 MB and 179 requests"),
)
CATEGORIES = ("portal", "news", "shop", "video", "social", "search", "forum", "mail",
              "maps", "weather", "travel", "sport", "bank", "blog", "music", "games")
"""Kinds of popular 2019 sites; paper pages are named p<NN>-<kind> (gnu, wiki for the
single-origin pair), never like a `today` page, so a campaign can list both sets."""
_Z = NormalDist()


def _lognormal(median: float, p90: float, q: float) -> float:
    sigma = (math.log(p90) - math.log(median)) / _Z.inv_cdf(0.9)
    return median * math.exp(sigma * _Z.inv_cdf(q))


def _cap_share(median: float, p90: float, cap: float) -> float:
    """The share of the log-normal below `cap`."""
    sigma = (math.log(p90) - math.log(median)) / _Z.inv_cdf(0.9)
    return _Z.cdf((math.log(cap) - math.log(median)) / sigma)


def _targets(median: float, p90: float) -> tuple[tuple[int, int], ...]:
    """(percentile, value) of the truncated distribution aimed at (the bytes' cap share)."""
    share = _cap_share(MEDIAN_KB, P90_KB, MAX_KB)
    return tuple((q, round(_lognormal(median, p90, share * q / 100)))
                 for q in (10, 25, 50, 75, 90))


REQUESTS = _targets(MEDIAN_REQUESTS, P90_REQUESTS)
KBYTES = _targets(MEDIAN_KB, P90_KB)


def plan(n: int = 38, seed: int = SEED) -> list[SitePlan]:
    if n < 1:
        raise ValueError("n must be >= 1")
    rng = random.Random(seed)
    share = _cap_share(MEDIAN_KB, P90_KB, MAX_KB)
    qs = [share * (i + 0.5) / n for i in range(n)]
    kbs = [min(BUILD_CAP_KB, round(_lognormal(MEDIAN_KB, P90_KB, q))) for q in qs]
    reqs = [max(MIN_REQUESTS, round(_lognormal(MEDIAN_REQUESTS, P90_REQUESTS, q)))
            for q in qs]
    # Pair by rank with a seeded jitter (both marginals kept, correlated), smallest first.
    jitter = [r + rng.gauss(0, n / 6) for r in range(n)]
    order = sorted(range(n), key=lambda i: jitter[i])
    pairs = sorted(((reqs[order[i]], kbs[i]) for i in range(n)), key=lambda p: p[1])
    n_single = min(SINGLE_ORIGIN, n) if n >= 10 else 0
    n_first = min(FIRST_PARTY_ONLY, n - n_single) if n >= 10 else 0
    singles = set(range(n_single))  # the two lightest pages
    first_only = set(rng.sample(range(n_single, n), n_first))
    single_names = iter(("gnu", "wiki"))
    layouts = iter(addressing.draw("paper", n - len(singles), seed))  # the others': one host
    out = []
    for i, (r, kb) in enumerate(pairs):
        single = i in singles
        kind = next(single_names) if single else CATEGORIES[i % len(CATEGORIES)]
        out.append(SitePlan(name=f"p{i + 1:02d}-{kind}", index=i, seed=rng.randrange(2**32),
                            requests=r, kbytes=kb, third_party=not (single or i in first_only),
                            single_origin=single, layout="one" if single else next(layouts),
                            **_mix(r, single)))
    return out
