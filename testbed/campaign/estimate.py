"""How long a campaign will take, from the recordings' sizes, the network profiles and
the protocol settings (`testbed run CAMPAIGN --dry-run`; pure: nothing is started).

One trial = a fixed cost (browser start, storing), plus the page load under the
network profile, modelled from the recording, plus a share of that load again
(the video to analyse and the settle wait grow with it):

    trial = FIXED_S + (1 + LOAD_SHARE) x load
    load  = (handshake + REQUEST_ROUNDS) x min RTT + bytes / goodput
    goodput = downlink rate x PAYLOAD x (1 - loss)
              ... for a loss-based congestion control (CUBIC) on a lossy link at most
              MATHIS_C x segment / RTT / sqrt(loss)   (Mathis et al. 1997)

with a handshake of 2 RTTs for TCP + TLS 1.3 and 1 for QUIC. BBR does not
slow down for random loss; CUBIC does, which is what makes the in-flight
profiles (DA2GC: 3.3 % loss, 262 ms; MSS: 6 %, 760 ms) slow. The constants are
fitted on a measured campaign (MEASURED) and pinned by a unit test on it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

FIXED_S = 2.5
"""Per-trial cost beyond the page load, measured (MEASURED): DSL's and LTE's trials
took 3.0 and 4.1 s for 0.61 and 1.50 s of PLT, 2.4-2.6 s more than their PLT, on a
2-core machine with the cheaper trial (300 ms of quiet after the load event; before
it, 5.4 s)."""

LOAD_SHARE = 0.15
"""Per-trial cost that grows with the load, as a share of it: the video to analyse
for visual metrics and the settle wait. In MEASURED a trial took about 2.5 s + 0.11 x
its PLT more than its PLT (da2gc 33.1 s for 27.4 s of PLT, mss 48.6 s for 41.4 s);
0.15 also covers the model's load falling short of da2gc's (it gives 21 s)."""

REQUEST_ROUNDS = 4
"""Round trips after the handshake: the HTML, then waves of dependent resources."""

PAYLOAD = 1448 / 1500
"""Payload of a full 1500-byte packet (TCP with timestamps); profiles' rates are of
IP packets."""

SEGMENT_BYTES = 1448
MATHIS_C = 2.44
"""Mathis's constant sqrt(3/2) = 1.22 for one connection, times 2: a page loads over
several connections at once (MEASURED: CUBIC settings on MSS 48-68 s, on DA2GC
25-36 s, as this gives with 2)."""

LOSS_BASED = frozenset({"cubic", "reno"})
"""Congestion controls that halve their window at every loss."""

MEASURED = {
    "what": "paper over local-news with 1 run, 20 trials, 2-core machine, 2026-11-25: 7 min 24 s",
    "campaign": "paper",
    "runs": 1,
    "seconds": {"dsl": 15.2, "lte": 20.5, "da2gc": 165.3, "mss": 242.8},
}
"""The campaign the model is fitted on: each network's trials' wall times summed
(trials.sqlite's wall_s; calibration before the first trial not counted)."""


@dataclass(frozen=True)
class Page:
    bytes: int
    requests: int
    origins: int


@dataclass(frozen=True)
class Link:
    rtt_ms: float
    downlink_mbit: float | None
    loss_percent: float


@dataclass(frozen=True)
class Transport:
    """What of a protocol setting the model uses."""

    quic: bool
    loss_based: bool
    """Its congestion control slows down for random loss (LOSS_BASED)."""


def transport(stack: str, congestion_control: str) -> Transport:
    return Transport(stack == "quic", congestion_control in LOSS_BASED)


def goodput_bit_s(link: Link, t: Transport) -> float | None:
    """Payload bits per second the page's transfer gets (None: unshaped)."""
    if not link.downlink_mbit:
        return None
    loss = min(link.loss_percent / 100, 0.95)
    rate = link.downlink_mbit * 1e6 * PAYLOAD * (1 - loss)
    if t.loss_based and loss > 0 and link.rtt_ms > 0:
        rate = min(rate, MATHIS_C * SEGMENT_BYTES * 8 / (link.rtt_ms / 1000) / math.sqrt(loss))
    return rate


def load_s(page: Page, link: Link, t: Transport) -> float:
    """Modelled page-load time in seconds (see the module doc)."""
    rounds = (1 if t.quic else 2) + REQUEST_ROUNDS
    goodput = goodput_bit_s(link, t)
    transfer = 0.0 if goodput is None else page.bytes * 8 / goodput
    return rounds * link.rtt_ms / 1000 + transfer


def trial_s(page: Page, link: Link, t: Transport, fixed_s: float = FIXED_S) -> float:
    return fixed_s + (1 + LOAD_SHARE) * load_s(page, link, t)


def campaign_s(pages: Mapping[str, Page], links: Mapping[str, Link],
               transports: Mapping[str, Transport], runs: int,
               fixed_s: float = FIXED_S) -> float:
    """Seconds for every site x network x setting x run."""
    return runs * sum(trial_s(p, n, t, fixed_s) for p in pages.values()
                      for n in links.values() for t in transports.values())


def per_network_s(pages: Mapping[str, Page], links: Mapping[str, Link],
                  transports: Mapping[str, Transport], runs: int,
                  fixed_s: float = FIXED_S) -> dict[str, float]:
    return {name: campaign_s(pages, {name: link}, transports, runs, fixed_s)
            for name, link in links.items()}


BASIS = ("based on: per trial {fixed:g} s + {factor:g} x the page load modelled from RTT, "
         "rate, loss and congestion control; fitted on a measured campaign ({what})")
"""The line saying what the estimate rests on."""


def duration(seconds: float) -> str:
    s = round(seconds)
    if s >= 86400:
        return f"{s // 86400} d {s // 3600 % 24} h {s // 60 % 60:02d} min"
    if s >= 3600:
        return f"{s // 3600} h {s // 60 % 60:02d} min"
    return f"{s // 60} min {s % 60:02d} s"


def plan(campaign, runs: int | None = None, stored: set[str] | None = None) -> dict:
    """What `testbed run --dry-run` shows, as data (`--json` prints it): the matrix, the
    trials in their order, how many of them the store already holds (`stored`: its
    trial ids; None: no store yet) and the estimated duration per network and in all."""
    from testbed import recording as rec
    from testbed.campaign import config as config_mod
    from testbed.campaign import plan as plan_mod
    from testbed.campaign import settings as settings_mod
    from testbed.profiles import load_network

    runs = campaign.runs if runs is None else runs
    entries = config_mod.resolve(campaign)
    recordings = {label: rec.load(e.file) for label, e in entries["sites"].items()}
    networks = {label: load_network(e.found) for label, e in entries["networks"].items()}
    settings = {label: settings_mod.load(e.found)
                for label, e in entries["protocols"].items()}
    pages = {n: Page(r.total_bytes, len(r.exchanges), len(r.origins))
             for n, r in recordings.items()}
    links = {n: Link(p.min_rtt_ms, p.downlink_mbit, p.downlink_loss_percent)
             for n, p in networks.items()}
    transports = {n: transport(s.stack, s.setting.congestion_control)
                  for n, s in settings.items()}
    blocks = plan_mod.blocks(list(recordings), list(networks), list(settings), runs,
                             campaign.seed, groups={n: s.server_key for n, s in settings.items()},
                             clients=campaign.client)
    ids = [t.id for t in plan_mod.trials(blocks)]
    return {
        "campaign": campaign.name, "source": campaign.source,
        "sites": [{"name": n, **asdict(p)} for n, p in pages.items()],
        "networks": [{"name": n, **asdict(x)} for n, x in links.items()],
        "settings": [{"name": n, "visit": campaign.visit_of_label(n)} for n in settings],
        "clients": list(campaign.client),
        "runs": runs, "seed": campaign.seed, "trials": len(ids), "order": ids,
        "stored": None if stored is None else len(stored & set(ids)),
        # every client loads every page: runs x clients (Firefox timed as Chromium)
        "estimated_s": campaign_s(pages, links, transports, runs * len(campaign.client)),
        "per_network_s": per_network_s(pages, links, transports,
                                       runs * len(campaign.client)),
        "basis": BASIS.format(fixed=FIXED_S, factor=1 + LOAD_SHARE, what=MEASURED["what"]),
    }


def plan_text(campaign, runs: int | None = None, sample: int = 8,
              stored: set[str] | None = None) -> list[str]:
    """The lines `testbed run --dry-run` prints (plan() as text): the matrix, the trial
    count, what the store holds, the first trials in their order and the estimate."""
    d = plan(campaign, runs, stored)
    ids = d["order"]
    n = len(ids)
    lines = [f"campaign {d['campaign']} ({d['source']}): dry run, nothing started",
             f"  sites     {len(d['sites'])}: " + ", ".join(
                 f"{p['name']} ({p['bytes'] / 1e6:.2f} MB, {p['requests']} requests, "
                 f"{p['origins']} origins)" for p in d["sites"]),
             f"  networks  {len(d['networks'])}: " + ", ".join(
                 f"{x['name']} ({x['rtt_ms']:g} ms RTT, {x['downlink_mbit'] or 'unshaped'} "
                 f"Mbit/s down, {x['loss_percent']:g} % loss)" for x in d["networks"]),
             f"  settings  {len(d['settings'])}: " + ", ".join(
                 s["name"] + (" (warm visits)" if s["visit"] == "warm" else "")
                 for s in d["settings"]),
             *([f"  clients   {len(d['clients'])}: " + ", ".join(d["clients"])]
               if d["clients"] != ["chromium"] else []),
             f"  runs      {d['runs']}",
             (f"trials: {len(d['sites'])} x {len(d['networks'])} x {len(d['settings'])} x "
              + (f"{len(d['clients'])} x " if d["clients"] != ["chromium"] else "")
              + f"{d['runs']} = {n}"),
             ("stored: none (no results yet)" if d["stored"] is None else
              f"stored: {d['stored']} of these {n} trials are in the results; "
              f"{n - d['stored']} to run"),
             f"order (first {min(sample, n)} of {n}, seed {d['seed']}):"]
    lines += [f"  {t}" for t in ids[:sample]]
    lines.append(f"estimated duration: {duration(d['estimated_s'])} "
                 f"({d['estimated_s'] / max(n, 1):.1f} s a trial)")
    for name, secs in d["per_network_s"].items():
        lines.append(f"  {name}: {duration(secs)}")
    lines.append("  " + d["basis"])
    return lines
