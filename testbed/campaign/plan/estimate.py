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
from typing import Any

from testbed.console import duration

FIXED_S = 2.5
"""Per-trial cost beyond the page load, measured (MEASURED): DSL's and LTE's trials
took 3.0 and 4.1 s for 0.61 and 1.50 s of PLT, 2.4-2.6 s more than their PLT, on a
2-core machine with the cheaper trial (300 ms of quiet after the load event; before
it, 5.4 s)."""

LOAD_SHARE = 0.15
"""Per-trial cost that grows with the load, as a share of it, at 60 fps: the video to
record and analyse for visual metrics, and the settle wait. In MEASURED (every network
at 60 fps) a trial took about 2.5 s + 0.11 x its PLT more than its PLT (da2gc 33.1 s
for 27.4 s of PLT, mss 48.6 s for 41.4 s); 0.15 also covers the model's load falling
short of da2gc's (it gives 21 s)."""

VIDEO_SHARE = 0.06
"""The part of LOAD_SHARE that scales with the frame rate (x fps / 60): bench/trial_overhead
measured 60 fps against 30 fps at +0.02 s of wall time per trial of 0.64 s PLT on DSL
(results/2026-11-23.md), 0.03 x PLT per 30 fps. The frames cost more CPU than wall time
(+0.6 CPU-s per trial there): the recorder encodes while the page waits on the link,
so on one lane a lower rate saves little wall time; it saves CPU for parallel trials."""

REFERENCE_FPS = 60
"""The frame rate LOAD_SHARE was measured at."""

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


def load_share(fps: int = REFERENCE_FPS) -> float:
    """LOAD_SHARE at a frame rate: its video part scaled by fps / REFERENCE_FPS."""
    return LOAD_SHARE - VIDEO_SHARE + VIDEO_SHARE * fps / REFERENCE_FPS


def trial_s(page: Page, link: Link, t: Transport, fixed_s: float = FIXED_S,
            fps: int = REFERENCE_FPS) -> float:
    return fixed_s + (1 + load_share(fps)) * load_s(page, link, t)


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
         "rate, loss and congestion control ({video:g} of the {factor:g} at 60 fps, scaled "
         "by the frame rate); fitted on a measured campaign ({what})")
"""The line saying what the estimate rests on."""


NOISE_CV = {
    "dsl": (0.21, "measured: the reference campaign's 38 corpus sites, 10 runs, 26 Nov 2026"),
    "lte": (0.06, "assumed (analysis.synthetic's model), not yet measured"),
    "da2gc": (0.10, "measured on one page: bench/lanes, 26 Nov 2026, local-news 9.9 %"),
    "mss": (0.10, "assumed (analysis.synthetic's model), not yet measured"),
}
"""Coefficient of variation of one site x setting's PLTs per network (the pooled SD of
log PLT, as measured_cv), for the expected runs of adaptive runs before a campaign has
measured its own; the source of each. The corpus's pages spread far more than the
bundled one: on DSL 21 % against 3.7 %."""
DEFAULT_CV = (0.10, "assumed")
"""For a network NOISE_CV does not name."""
SIMULATIONS = 400
"""Simulated groups per expected-runs figure (seeded: the same figure every time)."""


def expected_runs(cv: float, settings: int, low: int, high: int, percent: float | None,
                  ms: float | None = None, mean_ms: float = 1000.0, seed: int = 0) -> float:
    """Mean runs an adaptive group of `settings` settings gets when each setting's PLTs
    are log-normal with this CV: the first n >= low after which every setting's 95 %
    interval half-width is within `percent` % of its mean (or `ms`), else `high`;
    simulated (SIMULATIONS groups) with testbed.campaign.plan.adaptive's rule."""
    import numpy as np
    from scipy.stats import t

    rng = np.random.default_rng(seed)
    sigma = math.sqrt(math.log1p(cv ** 2))
    x = mean_ms * rng.lognormal(-sigma ** 2 / 2, sigma, (SIMULATIONS, settings, high))
    n = np.arange(1, high + 1)
    mean = np.cumsum(x, axis=2) / n
    var = np.maximum(np.cumsum(x ** 2, axis=2) - n * mean ** 2, 0) / np.maximum(n - 1, 1)
    half = t.ppf(0.975, np.maximum(n - 1, 1)) * np.sqrt(var / n)
    limit = mean * percent / 100 if percent is not None else np.full_like(mean, ms)
    precise = ((half <= limit) & (n >= 2)).all(axis=1)  # (simulations, runs so far)
    precise[:, : low - 1] = False  # decided from run `low` on: after low runs at least
    stop = np.where(precise.any(axis=1), precise.argmax(axis=1) + 1, high)
    return float(stop.mean())


def measured_cv(rows: list[dict]) -> dict[str, float]:
    """Per network, the pooled within-group SD of log PLT of stored ok trials (about the
    CV; analysis.statistics.planner.pilot_spread) where groups have 3 runs or more."""
    if not rows:
        return {}
    import pandas as pd

    from analysis.statistics.planner import pilot_spread

    df = pd.DataFrame(rows)
    df = df[(df["status"] == "ok") & (df["plt_ms"].astype(float) > 0)]
    counts = df.groupby(["site", "network", "setting"])["plt_ms"].transform("count")
    df = df[counts >= 3]
    if df.empty:
        return {}
    spread = pilot_spread(df)
    return {str(r.network): float(r.sd_log) for r in spread.itertuples()
            if r.sd_log == r.sd_log and r.sd_log > 0}


def lanes_of(campaign) -> tuple[int, str]:
    """The campaign's lanes (parallel trials on this machine) and a note: its `lanes` key
    if it has one and it is a number; 1 otherwise ("auto" needs a measurement this
    estimate does not read)."""
    lanes = getattr(campaign, "lanes", None)
    if isinstance(lanes, int) and not isinstance(lanes, bool) and lanes >= 1:
        return lanes, ""
    if lanes is None:
        return 1, ""
    return 1, f"lanes = {lanes!r}: 1 assumed"


def _elapsed_s(rows: list[dict]) -> float | None:
    """From the first stored trial's start to the last one's end (started_at + wall_s)."""
    import datetime as dt

    spans = []
    for r in rows:
        try:
            start = dt.datetime.fromisoformat(str(r["started_at"])).timestamp()
        except (TypeError, ValueError):
            continue
        spans.append((start, start + float(r["wall_s"] or 0)))
    if not spans:
        return None
    return max(e for _, e in spans) - min(s for s, _ in spans)


def plan(campaign, runs: int | None = None, stored: set[str] | None = None,
         rows: list[dict] | None = None) -> dict:
    """What `testbed run --dry-run` shows, as data (`--json` prints it): the matrix, the
    trials in their order, how many of them the store already holds (`stored`: its
    trial ids; None: no store yet), per network its lanes, frame rate, expected runs and
    duration, and, with the store's `rows`, how far the model was off for the trials it
    holds (measured wall time against the model's for the same trials)."""
    from testbed.campaign.plan import config as config_mod
    from testbed.campaign.plan import plan as plan_mod
    from testbed.campaign.plan import settings as settings_mod
    from testbed.formats import recording as rec
    from testbed.formats.profiles import load_network

    adaptive = campaign.adaptive if runs is None else None
    runs = campaign.max_runs if runs is None else runs
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
    fps = {n: campaign.fps_of(p) for n, p in networks.items()}
    lanes, lanes_note = lanes_of(campaign)
    blocks = plan_mod.blocks(list(recordings), list(networks), list(settings), runs,
                             campaign.seed, groups={n: s.server_key for n, s in settings.items()},
                             clients=campaign.client)
    ids = [t.id for t in plan_mod.trials(blocks)]
    measured = measured_cv(rows or [])
    per_network = []
    for name, link in links.items():
        cv, source = ((measured[name], "measured: this campaign's stored trials")
                      if name in measured else NOISE_CV.get(name, DEFAULT_CV))
        site_runs = {}
        for site, page in pages.items():
            if adaptive is None:
                site_runs[site] = float(runs)
                continue
            bound = adaptive.bound
            mean_ms = 1000 * sum(load_s(page, link, t) for t in transports.values()) / max(
                len(transports), 1)
            site_runs[site] = expected_runs(
                cv, len(settings), adaptive.min, adaptive.max,
                bound.value if bound.unit == "%" else None,
                bound.value if bound.unit == "ms" else None, max(mean_ms, 1.0))
        trial_secs = sum(site_runs[site] * trial_s(page, link, t, fps=fps[name])
                         for site, page in pages.items() for t in transports.values())
        trials = sum(site_runs.values()) * len(transports)
        per_network.append({
            "name": name, "lanes": lanes, "video_fps": fps[name],
            "expected_runs": sum(site_runs.values()) / max(len(site_runs), 1),
            "cv": cv, "cv_source": source if adaptive is not None else None,
            "trials": trials, "trial_s": trial_secs / max(trials, 1),
            "seconds": trial_secs / lanes})
    off = _off(rows or [], pages, links, transports, fps, lanes) if rows else None
    total = sum(n["seconds"] for n in per_network)
    return {
        "campaign": campaign.name, "source": campaign.source,
        "sites": [{"name": n, **asdict(p)} for n, p in pages.items()],
        "networks": [{"name": n, **asdict(x)} for n, x in links.items()],
        "settings": [{"name": n, "visit": campaign.visit_of_label(n)} for n in settings],
        "clients": list(campaign.client),
        "runs": runs, "adaptive": None if adaptive is None else {
            "min": adaptive.min, "max": adaptive.max, "precision": adaptive.precision},
        "seed": campaign.seed, "trials": len(ids), "order": ids,
        "stored": None if stored is None else len(stored & set(ids)),
        "lanes": lanes, "lanes_note": lanes_note,
        "estimated_s": total,
        "expected_trials": sum(n["trials"] for n in per_network),
        "per_network_s": {n["name"]: n["seconds"] for n in per_network},
        "per_network": per_network,
        "measured": off,
        "basis": BASIS.format(fixed=FIXED_S, factor=1 + LOAD_SHARE, video=VIDEO_SHARE,
                              what=MEASURED["what"]),
    }


def _off(rows: list[dict], pages, links, transports, fps, lanes: int) -> dict | None:
    """The stored trials' wall time per network against the model's for the same trials
    (each trial's site, network and setting; one lane), and the elapsed time from the
    first trial's start to the last one's end against the model's over its lanes."""
    out: dict[str, dict[str, Any]] = {}
    for name in links:
        mine = [r for r in rows if r.get("network") == name and r.get("site") in pages
                and r.get("setting") in transports]
        if not mine:
            continue
        wall = sum(float(r["wall_s"] or 0) for r in mine)
        model = sum(trial_s(pages[r["site"]], links[name], transports[r["setting"]],
                            fps=fps[name]) for r in mine)
        out[name] = {"trials": len(mine), "wall_s": wall, "model_s": model,
                     "off_percent": 100 * (wall / model - 1) if model > 0 else None}
    if not out:
        return None
    every = [r for r in rows if r.get("network") in out]
    elapsed = _elapsed_s(every)
    model = sum(v["model_s"] for v in out.values()) / lanes
    return {"per_network": out, "elapsed_s": elapsed, "model_s": model,
            "off_percent": None if not elapsed or model <= 0 else 100 * (elapsed / model - 1)}


def plan_text(campaign, runs: int | None = None, sample: int = 8,
              stored: set[str] | None = None, rows: list[dict] | None = None) -> list[str]:
    """The lines `testbed run --dry-run` prints (plan() as text): the matrix, the trial
    count, what the store holds, the first trials in their order and the estimate per
    network (lanes, frame rate, expected runs, duration), and how far it was off for the
    trials the store holds."""
    d = plan(campaign, runs, stored, rows)
    ids = d["order"]
    n = len(ids)
    a = d["adaptive"]
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
             f"  runs      {d['runs']}" if a is None else
             (f"  runs      adaptive: {a['min']} to {a['max']} per site and network, until "
              f"every setting's 95 % interval of the PLT mean is within ±{a['precision']}"),
             (f"trials: {len(d['sites'])} x {len(d['networks'])} x {len(d['settings'])} x "
              + (f"{len(d['clients'])} x " if d["clients"] != ["chromium"] else "")
              + f"{d['runs']} = {n}" + ("" if a is None else " at most")),
             ("stored: none (no results yet)" if d["stored"] is None else
              f"stored: {d['stored']} of these {n} trials are in the results; "
              f"{n - d['stored']} to run" + ("" if a is None else " at most")),
             f"order (first {min(sample, n)} of {n}, seed {d['seed']}):"]
    lines += [f"  {t}" for t in ids[:sample]]
    expected = d["expected_trials"]
    lines.append(f"estimated duration: {duration(d['estimated_s'])} "
                 f"({d['estimated_s'] * d['lanes'] / max(expected, 1):.1f} s a trial"
                 + (f", {expected:.0f} trials expected" if a is not None else "") + ")")
    for x in d["per_network"]:
        runs_text = (f"runs {x['expected_runs']:.1f} expected (CV {100 * x['cv']:.1f} %, "
                     f"{x['cv_source']})" if a is not None else f"runs {d['runs']}")
        lines.append(f"  {x['name']}: {duration(x['seconds'])} (lanes {x['lanes']}, video "
                     f"{x['video_fps']} fps, {runs_text}, {x['trial_s']:.1f} s a trial)")
    if d["lanes_note"]:
        lines.append(f"  {d['lanes_note']}")
    lines.append("  " + d["basis"])
    m = d["measured"]
    if m is not None:
        lines.append("measured so far (the stored trials against the model for the same "
                     "trials):")
        for name, v in m["per_network"].items():
            lines.append(f"  {name}: {v['trials']} trials took {duration(v['wall_s'])}, the "
                         f"model says {duration(v['model_s'])}: "
                         f"{_signed(v['off_percent'])}")
        if m["elapsed_s"]:
            lines.append(f"  elapsed from the first start to the last end: "
                         f"{duration(m['elapsed_s'])}, the model over {d['lanes']} lane(s) "
                         f"{duration(m['model_s'])}: {_signed(m['off_percent'])}")
    return lines


def _signed(percent: float | None) -> str:
    return "-" if percent is None else f"{percent:+.0f} % against the model"
