"""Each corpus site's addressing: which of its hosts share an address and a certificate.

A site's first-party hosts are www (the page), static (scripts, styles, fonts),
img (images) and api (JSON); a single-origin site has www only. Its plan's
`layout` says how they are addressed:

- "one":   every first-party host on one address (one CDN fronts the whole site);
- "cdn":   static and img on one address (a CDN serving assets together), www and
           api each on its own;
- "split": every host on its own address.

Hosts on one address are one server with one certificate naming them all, so
Chromium may pool them onto one connection (it pools only hosts that resolve to
the address of an open connection whose certificate names them); hosts on
different addresses never share a connection. The recorder sees each host at
its address, and the replay serves each recorded address. Third parties (CDNs,
fonts, tags) are each on their own address, as different organisations' hosts
are (THIRD_PARTY_IPS).

The recording carries the layout as data: its manifest's origins give each
host's IP, and hosts with one IP are one group (`groups` reads it back).

Distributions (per set, drawn with a seeded generator, deterministic). We found
no published figure for the share of sites whose same-site subdomains share an
IP, so the shares are assumptions, stated here and in the sets' docs pages:
- `today`: 50 % "cdn", 25 % "one", 25 % "split" (asset hosts behind one CDN is
  the common case today; whole-site CDNs and separately hosted subdomains both
  occur);
- `paper`: 40 % "cdn", 20 % "one", 40 % "split" (2019's sites more often served
  subdomains from separate servers, domain sharding being an HTTP/1.1 habit).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable

LAYOUTS = ("one", "cdn", "split")
SHARES = {
    "today": {"cdn": 0.50, "one": 0.25, "split": 0.25},
    "paper": {"cdn": 0.40, "one": 0.20, "split": 0.40},
}
"""Share of sites per layout, per set (assumptions, see the module's docstring)."""
THIRD_PARTY_IPS = {
    "cdn.jsdelivr.net": "10.81.0.1", "unpkg.com": "10.81.0.2",
    "cdnjs.cloudflare.com": "10.81.0.3", "ajax.googleapis.com": "10.81.0.4",
    "fonts.googleapis.com": "10.81.0.5", "fonts.gstatic.com": "10.81.0.6",
    "www.googletagmanager.com": "10.81.0.7", "www.google-analytics.com": "10.81.0.8",
    "stats.g.doubleclick.net": "10.81.0.9", "connect.facebook.net": "10.81.0.10",
    "www.facebook.com": "10.81.0.11", "bat.bing.com": "10.81.0.12",
    "static.hotjar.com": "10.81.0.13", "www.youtube-nocookie.com": "10.81.0.14",
    "i.ytimg.com": "10.81.0.15",
}
"""Each third-party host on its own address."""


def draw(set_name: str, n: int, seed: int) -> list[str]:
    """The layouts of a set's n sites: the set's shares, rounded to whole sites (largest
    remainders first), in a seeded order. Its own generator, so drawing layouts never
    changes anything else of a plan."""
    shares = SHARES[set_name]
    counts = {k: int(v * n) for k, v in shares.items()}
    by_rest = sorted(shares, key=lambda k: (-(shares[k] * n - counts[k]), LAYOUTS.index(k)))
    for k in by_rest[:n - sum(counts.values())]:
        counts[k] += 1
    out = [k for k in LAYOUTS for _ in range(counts[k])]
    random.Random(f"layout-{set_name}-{seed}").shuffle(out)
    return out


def first_party(index: int, layout: str, www: str, static: str, img: str,
                api: str) -> dict[str, str]:
    """host -> IP of a site's first-party hosts (one host when all four are www)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout: expected one of {', '.join(LAYOUTS)}, got {layout!r}")
    net = f"10.80.{index % 250 + 1}"  # first-party hosts: 10.80.<site>.1-4
    if len({www, static, img, api}) == 1:
        return {www: f"{net}.1"}
    last = {"one": (1, 1, 1, 1), "cdn": (1, 2, 2, 3), "split": (1, 2, 4, 3)}[layout]
    return {h: f"{net}.{x}" for h, x in zip((www, static, img, api), last, strict=True)}


def groups(ips: dict[str, str] | Iterable[tuple[str, str]]) -> list[list[str]]:
    """Hosts that share an address (and so a certificate), each group sorted, groups
    in order of their first host: the layout as a recording carries it."""
    by_ip: dict[str, list[str]] = defaultdict(list)
    for host, ip in (ips.items() if isinstance(ips, dict) else ips):
        by_ip[ip].append(host)
    return sorted(sorted(g) for g in by_ip.values())
