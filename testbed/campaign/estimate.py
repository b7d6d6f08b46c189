"""How long a campaign will take, from the recordings' sizes and the network profiles
(`testbed run CAMPAIGN --dry-run`; pure: nothing is started).

One trial = a fixed cost per trial (browser start, video, visual metrics, the
settle wait, storing), measured on this testbed, plus the page load under the
network profile, modelled from the recording:

    load = (handshake + REQUEST_ROUNDS) x min RTT + bytes / downlink rate / (1 - loss)

with a handshake of 2 RTTs for TCP + TLS 1.3 and 1 for QUIC. The model is
coarse on lossy, long-RTT links (it ignores congestion control), which is why
its fixed part is calibrated on a measured campaign (FIXED_S).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

FIXED_S = 5.4
"""Per-trial cost beyond the page load, measured: two smoke campaigns (local-news x
DSL x 5 settings x 3 runs, 15 trials each) took 83.8 s and 93.4 s from their start
to the end of their last trial on a 2-core machine, 5.6 and 6.2 s a trial (5.9 on
average), of which the model gives 0.5 s to the page load itself."""

REQUEST_ROUNDS = 4
"""Round trips after the handshake: the HTML, then waves of dependent resources."""


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


def load_s(page: Page, link: Link, quic: bool) -> float:
    """Modelled page-load time in seconds (see the module doc)."""
    rounds = (1 if quic else 2) + REQUEST_ROUNDS
    transfer = 0.0
    if link.downlink_mbit:
        transfer = page.bytes * 8 / (link.downlink_mbit * 1e6)
    return rounds * link.rtt_ms / 1000 + transfer / max(1 - link.loss_percent / 100, 0.05)


def trial_s(page: Page, link: Link, quic: bool, fixed_s: float = FIXED_S) -> float:
    return fixed_s + load_s(page, link, quic)


def campaign_s(pages: Mapping[str, Page], links: Mapping[str, Link],
               quic: Mapping[str, bool], runs: int, fixed_s: float = FIXED_S) -> float:
    """Seconds for every site x network x setting x run."""
    return runs * sum(trial_s(p, n, q, fixed_s) for p in pages.values()
                      for n in links.values() for q in quic.values())


def per_network_s(pages: Mapping[str, Page], links: Mapping[str, Link],
                  quic: Mapping[str, bool], runs: int,
                  fixed_s: float = FIXED_S) -> dict[str, float]:
    return {name: campaign_s(pages, {name: link}, quic, runs, fixed_s)
            for name, link in links.items()}


def duration(seconds: float) -> str:
    s = round(seconds)
    if s >= 86400:
        return f"{s // 86400} d {s // 3600 % 24} h {s // 60 % 60:02d} min"
    if s >= 3600:
        return f"{s // 3600} h {s // 60 % 60:02d} min"
    return f"{s // 60} min {s % 60:02d} s"


def plan_text(campaign, runs: int | None = None, sample: int = 8) -> list[str]:
    """The lines `testbed run --dry-run` prints: the matrix, the trial count, the first
    trials in their order and the estimated duration per network and in all."""
    from testbed import recording as rec
    from testbed.campaign import config as config_mod
    from testbed.campaign import plan as plan_mod
    from testbed.campaign import settings as settings_mod
    from testbed.profiles import load_network

    runs = campaign.runs if runs is None else runs
    entries = config_mod.resolve(campaign)
    recordings = {label: rec.load(e.file)
                  for label, e in entries["sites"].items()}
    networks = {label: load_network(e.found) for label, e in entries["networks"].items()}
    settings = {label: settings_mod.load(e.found)
                for label, e in entries["protocols"].items()}
    pages = {n: Page(r.total_bytes, len(r.exchanges), len(r.origins))
             for n, r in recordings.items()}
    links = {n: Link(p.min_rtt_ms, p.downlink_mbit, p.downlink_loss_percent)
             for n, p in networks.items()}
    quic = {n: s.stack == "quic" for n, s in settings.items()}
    blocks = plan_mod.blocks(list(recordings), list(networks), list(settings), runs,
                             campaign.seed, groups={n: s.server_key for n, s in settings.items()})
    trials = plan_mod.trials(blocks)
    lines = [f"campaign {campaign.name} ({campaign.source}): dry run, nothing started",
             f"  sites     {len(recordings)}: " + ", ".join(
                 f"{n} ({p.bytes / 1e6:.2f} MB, {p.requests} requests, {p.origins} origins)"
                 for n, p in pages.items()),
             f"  networks  {len(networks)}: " + ", ".join(
                 f"{n} ({x.rtt_ms:g} ms RTT, {x.downlink_mbit or 'unshaped'} Mbit/s down, "
                 f"{x.loss_percent:g} % loss)" for n, x in links.items()),
             f"  settings  {len(settings)}: " + ", ".join(settings),
             f"  runs      {runs}",
             (f"trials: {len(recordings)} x {len(networks)} x {len(settings)} x {runs} = "
              f"{len(trials)}"),
             f"order (first {min(sample, len(trials))} of {len(trials)}, seed {campaign.seed}):"]
    lines += [f"  {t.id}" for t in trials[:sample]]
    total = campaign_s(pages, links, quic, runs)
    lines.append(f"estimated duration: {duration(total)} ({total / max(len(trials), 1):.1f} s "
                 f"a trial: {FIXED_S:g} s fixed + the modelled page load)")
    for name, secs in per_network_s(pages, links, quic, runs).items():
        lines.append(f"  {name}: {duration(secs)}")
    return lines
