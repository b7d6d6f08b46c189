"""bench/quic-heavy: where QUIC's PLT gap to TCP+ on heavy multi-origin pages comes from
(issue 29). Needs root, `make setup` and `make corpus`.

    bench/quic-heavy [--runs N] [--sites A,B,...] [--suspects LIST] [--unpatched H3SERVER]
                     [--keep DIR] [--qlog]

The baseline is the gap as it was: `dsl` (12 ms drop-tail buffer), TCP+ vs QUIC, pacing
on, h3server on quiche 0.24.6 as published (--unpatched: a build from before the CUBIC
patch in h3server/vendor/quiche-0.24.6/VENDORED.md; without it the baseline is the
testbed's h3server and there is no `patch` suspect). Each suspect switches one thing:

- `deep`: the lossless deep-buffer DSL (bench/dsl-deep.toml: DSL's rates and RTT, 1 s
  buffer), both stacks;
- `patch`: QUIC on the testbed's h3server (TESTBED_H3SERVER or the built one), whose
  quiche keeps a CUBIC cut unless the loss is proven spurious; TCP+ as in the baseline;
- `pacing`: pacing off on both stacks (tcp-plus and quic with `pacing = false`);
- `split`: a copy of each page with every host on its own IP, both stacks (the corpus
  serves static.SITE and img.SITE from one IP, so Chromium pools them onto one QUIC
  connection, while over HTTP/2 it opens one connection to each);
- `quinn`: QUIC served by h3quinn (quinn + h3, the `quic-quinn` setting) instead of
  h3server (quiche), TCP+ as in the baseline: a share near 0 says the gap is not
  quiche's (another implementation of QUIC has it too), near 100 % that it is;
- `novideo`: the screen not recorded (campaign key `video = false`: no 60 fps capture
  beside the browser, PLT only) on a machine the campaign waits to be idle before
  each load (`max_load_before_start = 0.25`), both stacks: the share of the gap that
  is the CPU the campaign's usual conditions take from the stacks (user-space QUIC
  on 2 cores competes with the browser and the capture; kernel TCP less so);
- `busy`: the usual conditions plus one process spinning on a core for the whole
  round (another user's job on a shared 2-core machine), both stacks: a negative
  share says the gap grows when CPU is scarcer.
`cpu` stands for `novideo,busy`. Every trial records the machine's load
(docs/machine-load.md); the report prints each condition's median CPU busy and the
browser's and the servers' CPU seconds per load, per setting.

The gap of a condition is mean QUIC PLT / mean TCP+ PLT - 1 per site; a suspect's share
is 1 - gap(switched) / gap(baseline): 100 % means the switch closes the gap, more than
100 % that QUIC then wins. The interval is a 95 % percentile bootstrap over runs (each
of the four samples resampled on its own). The trials run as campaigns through
`testbed run`, one run of every condition per round, so drift over time hits all
conditions alike; --keep keeps the results folders (with --qlog, h3server's qlogs).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from results_contract.load import load, load_connections, ok_trials
from testbed.host import proc

ROOT = Path(__file__).resolve().parent.parent
DEEP = ROOT / "bench" / "dsl-deep.toml"
SUSPECTS = ("deep", "patch", "pacing", "split", "quinn", "novideo", "busy")
ALIASES = {"cpu": ("novideo", "busy")}
IDLE_BELOW = 0.25
"""novideo's max_load_before_start: CPU busy share the machine must be under."""
SITES = ("corpus/hotel10", "corpus/sport06", "corpus/news01", "corpus/museum09")
UNPACED = {"tcp-plus-nopace": "tcp-plus", "quic-nopace": "quic"}


def unpaced_settings(work: Path) -> None:
    """tcp-plus and quic with pacing off, as protocol files beside the campaigns."""
    for name, base in UNPACED.items():
        text = (ROOT / "profiles" / "protocols" / f"{base}.toml").read_text()
        lines = [ln for ln in text.splitlines() if not ln.startswith(("pacing", "description"))]
        (work / f"{name}.toml").write_text("\n".join(
            [f'description = "{base} without pacing (bench/quic-heavy)"', *lines,
             "pacing = false", ""]))


def split_copy(site: str, out: Path) -> Path:
    """A copy of recording `site` where no two hosts share an IP (the later ones of a
    shared IP move to free addresses of its /24), so Chromium pools no connections."""
    from testbed.formats import recording as rec
    src = rec.load(site).path
    dst = out / src.name
    shutil.copytree(src, dst)
    manifest = json.loads((dst / "manifest.json").read_text())
    used = {o["ip"] for o in manifest["origins"]}
    moved, seen = {}, set()
    for o in manifest["origins"]:
        if o["ip"] in seen:
            net = o["ip"].rsplit(".", 1)[0]
            moved[o["host"]] = next(f"{net}.{k}" for k in range(10, 250)
                                    if f"{net}.{k}" not in used)
            used.add(moved[o["host"]])
            o["ip"] = moved[o["host"]]
        seen.add(o["ip"])
    for e in manifest["exchanges"]:
        e["ip"] = moved.get(e["host"], e["ip"])
    (dst / "manifest.json").write_text(json.dumps(manifest))
    return dst


def campaign(work: Path, name: str, sites, networks, protocols, qlog: bool,
             extra: str = "") -> Path:
    path = work / f"{name}.toml"
    q = lambda xs: "[" + ", ".join(json.dumps(x) for x in xs) + "]"
    path.write_text(f'description = "bench/quic-heavy {name}"\nsites = {q(sites)}\n'
                    f"networks = {q(networks)}\nprotocols = {q(protocols)}\nruns = 1\n"
                    f"retries = 1\nseed = 29\ncapture = {q(['qlog'] if qlog else [])}\n"
                    + extra)
    return path


def plans(suspects, sites, work: Path, unpatched: Path, patched: Path, qlog: bool):
    """(campaign file, h3server binary, results folder) of each campaign a round runs."""
    networks = ["dsl", *([str(DEEP)] if "deep" in suspects else [])]
    protocols = ["tcp-plus", "quic", *(["quic-quinn"] if "quinn" in suspects else [])]
    if "pacing" in suspects:
        unpaced_settings(work)
        protocols += [str(work / f"{n}.toml") for n in UNPACED]
    out = [(campaign(work, "before", sites, networks, protocols, qlog), unpatched,
            work / "results-before")]
    if "split" in suspects:
        (work / "split").mkdir(exist_ok=True)
        copies = [str(work / "split" / x.rsplit("/", 1)[-1]) if (work / "split" / x.rsplit(
            "/", 1)[-1]).exists() else str(split_copy(x, work / "split")) for x in sites]
        out.append((campaign(work, "split", copies, ["dsl"], ["tcp-plus", "quic"], qlog),
                    unpatched, work / "results-split"))
    if "patch" in suspects:
        nets = ["dsl", *([str(DEEP)] if "deep" in suspects else [])]
        out.append((campaign(work, "patched", sites, nets, ["quic"], qlog), patched,
                    work / "results-patched"))
    if "novideo" in suspects:
        out.append((campaign(work, "novideo", sites, ["dsl"], ["tcp-plus", "quic"], qlog,
                             f"video = false\nmax_load_before_start = {IDLE_BELOW}\n"),
                    unpatched, work / "results-novideo"))
    if "busy" in suspects:
        out.append((campaign(work, "busy", sites, ["dsl"], ["tcp-plus", "quic"], qlog),
                    unpatched, work / "results-busy"))
    return out


@contextmanager
def spinning(on: bool):
    """One process spinning on a core while the block runs (the `busy` condition)."""
    if not on:
        yield
        return
    hog = subprocess.Popen(proc.python("-c", "while True: pass"))
    try:
        yield
    finally:
        hog.kill()
        hog.wait(timeout=10)


def run_rounds(plan, runs: int) -> None:
    testbed = ROOT / ".venv" / "bin" / "testbed"
    for r in range(1, runs + 1):
        for toml, binary, out in plan:
            env = {**os.environ, "TESTBED_H3SERVER": str(binary)}
            print(f"round {r}/{runs}: {toml.stem} ({binary}); load average "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
            with spinning(toml.stem == "busy"):
                subprocess.run([str(testbed), "run", str(toml), "--runs", str(r), "--out",
                                str(out)], env=env, check=True, stdout=subprocess.DEVNULL,
                               timeout=3600)


def samples(plan) -> dict[tuple[str, str, str, str], np.ndarray]:
    """PLTs (ms) of the ok trials by (build, site, network, setting)."""
    out = {}
    for toml, _b, folder in plan:
        t = ok_trials(load(folder))
        for (site, net, proto), g in t.groupby(["site", "network", "setting"]):
            out[(toml.stem, site, net, proto)] = g["plt_ms"].to_numpy(float)
    return out


def cwnd_events(qlog_tar: Path) -> tuple[int, int]:
    """(congestion events, undone ones) over a trial's qlogs: ssthresh going down, and
    ssthresh going back up to an earlier value (only CUBIC's rollback raises it)."""
    from testbed.validate import evidence
    cuts = undone = 0
    with tarfile.open(qlog_tar) as tar:
        for m in tar.getmembers():
            if not m.isfile():
                continue
            last = None
            for e in evidence.parse_qlog(tar.extractfile(m).read().decode(errors="replace")):
                ss = (e.get("data") or {}).get("ssthresh")
                if not str(e.get("name", "")).endswith("metrics_updated") or ss is None:
                    continue
                cuts += last is not None and ss < last
                undone += last is not None and ss > last
                last = ss
    return cuts, undone


def print_cwnd_events(plan) -> None:
    """Per build and network: QUIC trials, congestion events and rollbacks (with --qlog)."""
    for toml, _b, folder in plan:
        by: dict[str, list[int]] = {}
        for tar in sorted(folder.glob("trials/*+quic+*/qlog.tar.gz")):
            net = tar.parent.name.split("+")[1]
            got = by.setdefault(net, [0, 0, 0])
            cuts, undone = cwnd_events(tar)
            got[0], got[1], got[2] = got[0] + 1, got[1] + cuts, got[2] + undone
        for net, (n, cuts, undone) in by.items():
            print(f"qlog {toml.stem} {net}: {n} QUIC trials, {cuts} congestion events, "
                  f"{undone} undone by CUBIC's rollback")


def print_pooling(plan) -> None:
    """Per results folder, site, network and setting: connections per trial and the
    busiest connection's share of the bytes sent (from the connections table)."""
    for toml, _b, folder in plan:
        c = load_connections(folder)
        if c.empty:
            continue
        parts = c["trial_id"].str.split("+", expand=True)
        c = c.assign(site=parts[0], network=parts[1], setting=parts[2])
        per = c.groupby(["site", "network", "setting", "trial_id"])["bytes_sent"].agg(
            ["size", "max", "sum"])
        per = per.assign(top=per["max"] / per["sum"]).groupby(level=[0, 1, 2]).mean()
        for (site, net, proto), r in per.iterrows():
            if net != "dsl" or proto not in ("tcp-plus", "quic", "quic-quinn"):
                continue
            print(f"connections {toml.stem} {site} {net} {proto}: {r['size']:.0f} per trial, "
                  f"the busiest carries {r['top']:.0%} of the bytes")


def gap(quic: np.ndarray, tcp: np.ndarray) -> float:
    return quic.mean() / tcp.mean() - 1


def resample(x: np.ndarray, rng) -> np.ndarray:
    return x[rng.integers(0, len(x), len(x))]


def gap_interval(q, t, rng, n=2000) -> tuple[float, float]:
    """95 % percentile bootstrap interval of gap(q, t) over runs."""
    return tuple(np.percentile([gap(resample(q, rng), resample(t, rng)) for _ in range(n)],
                               [2.5, 97.5]))


def share(base_q, base_t, sw_q, sw_t, rng, n=2000):
    """The suspect's share of the baseline gap and its 95 % bootstrap interval."""
    est = 1 - gap(sw_q, sw_t) / gap(base_q, base_t)
    boot = []
    for _ in range(n):
        g0 = gap(resample(base_q, rng), resample(base_t, rng))
        if g0 != 0:
            boot.append(1 - gap(resample(sw_q, rng), resample(sw_t, rng)) / g0)
    lo, hi = np.percentile(boot, [2.5, 97.5])
    return est, lo, hi


def switched(s, suspect: str, site: str):
    """(QUIC, TCP+) PLTs of the suspect's condition, or None when missing."""
    keys = {"deep": (("before", "dsl-deep", "quic"), ("before", "dsl-deep", "tcp-plus")),
            "patch": (("patched", "dsl", "quic"), ("before", "dsl", "tcp-plus")),
            "pacing": (("before", "dsl", "quic-nopace"), ("before", "dsl", "tcp-plus-nopace")),
            "split": (("split", "dsl", "quic"), ("split", "dsl", "tcp-plus")),
            "quinn": (("before", "dsl", "quic-quinn"), ("before", "dsl", "tcp-plus")),
            "novideo": (("novideo", "dsl", "quic"), ("novideo", "dsl", "tcp-plus")),
            "busy": (("busy", "dsl", "quic"), ("busy", "dsl", "tcp-plus"))}
    (bq, nq, pq), (bt, nt, pt) = keys[suspect]
    q, t = s.get((bq, site, nq, pq)), s.get((bt, site, nt, pt))
    return None if q is None or t is None else (q, t)


def report(s, suspects, sites) -> None:
    rng = np.random.default_rng(29)
    med = lambda x: f"{np.median(x):5.0f}"
    for site in (x.rsplit("/", 1)[-1] for x in sites):
        bq, bt = s.get(("before", site, "dsl", "quic")), s.get(("before", site, "dsl", "tcp-plus"))
        if bq is None or bt is None:
            print(f"{site}: no baseline trials")
            continue
        lo, hi = gap_interval(bq, bt, rng)
        print(f"{site}: baseline dsl: QUIC mean {bq.mean():.0f} (median {med(bq)}) ms, TCP+ "
              f"{bt.mean():.0f} (median {med(bt)}) ms, gap {gap(bq, bt):+.1%} [{lo:+.1%}, "
              f"{hi:+.1%}] (n={len(bq)}/{len(bt)})"
              + ("; the gap's interval holds 0: shares are not defined" if lo <= 0 <= hi else ""))
        for sus in suspects:
            got = switched(s, sus, site)
            if got is None:
                print(f"  {sus:7s} no trials")
                continue
            q, t = got
            est, lo, hi = share(bq, bt, q, t, rng)
            print(f"  {sus:7s} QUIC {q.mean():5.0f} (median {med(q)}) ms, TCP+ {t.mean():5.0f} "
                  f"(median {med(t)}) ms, gap {gap(q, t):+.1%}; share of the gap "
                  f"{est:+.0%} [{lo:+.0%}, {hi:+.0%}]")
        pd_ = s.get(("patched", site, "dsl-deep", "quic"))
        dq = s.get(("before", site, "dsl-deep", "quic"))
        if pd_ is not None and dq is not None:
            print(f"  patch on the deep buffer: QUIC {dq.mean():.0f} -> {pd_.mean():.0f} ms "
                  f"({pd_.mean() / dq.mean() - 1:+.1%})")


def print_across(s, suspects, sites) -> None:
    """Over the sites: the median gap, and on how many QUIC was slower (and with the
    gap's bootstrap interval above 0), as it was and under each suspect."""
    rng = np.random.default_rng(29)
    names = [x.rsplit("/", 1)[-1] for x in sites]
    base = {n: (s.get(("before", n, "dsl", "quic")), s.get(("before", n, "dsl", "tcp-plus")))
            for n in names}
    rows = {"as it was": base} | {sus: {n: switched(s, sus, n) or (None, None) for n in names}
                                  for sus in suspects}
    for label, pairs in rows.items():
        gaps = [(gap(q, t), gap_interval(q, t, rng)[0]) for q, t in pairs.values()
                if q is not None and t is not None]
        if len(gaps) > 1:
            print(f"across {len(gaps)} sites, {label}: median gap "
                  f"{np.median([g for g, _ in gaps]):+.1%}; QUIC slower on "
                  f"{sum(g > 0 for g, _ in gaps)} (interval above 0 on "
                  f"{sum(lo > 0 for _, lo in gaps)})")


def print_load(plan) -> None:
    """Per condition and setting (DSL): how busy the machine was during the loads (the
    trials' load columns, docs/machine-load.md): median CPU busy, the browser's and the
    servers' CPU seconds per load, the 1-minute load average."""
    for toml, _b, folder in plan:
        t = ok_trials(load(folder))
        if "cpu_busy" not in t or t["cpu_busy"].isna().all():
            continue
        for proto, g in t[t["network"] == "dsl"].groupby("setting"):
            print(f"load {toml.stem} {proto}: CPU busy {g['cpu_busy'].median():.0%}, browser "
                  f"{g['browser_cpu_s'].median():.1f} CPU-s, servers "
                  f"{g['server_cpu_s'].median():.2f} CPU-s per load, load average "
                  f"{g['loadavg_1m'].median():.1f} (n={len(g)})")


def print_cpu_share(s, suspects, sites) -> None:
    """Over the sites where QUIC loses (the baseline gap's interval above 0): the share
    of the pooled gap the CPU accounts for (novideo), with a bootstrap interval over
    sites and runs; and the same for the busy condition."""
    rng = np.random.default_rng(52)
    names = [x.rsplit("/", 1)[-1] for x in sites]
    for sus in (x for x in ("novideo", "busy") if x in suspects):
        losing = []
        for n in names:
            bq, bt = s.get(("before", n, "dsl", "quic")), s.get(("before", n, "dsl", "tcp-plus"))
            got = switched(s, sus, n)
            if bq is None or bt is None or got is None:
                continue
            if gap_interval(bq, bt, rng)[0] > 0:
                losing.append((bq, bt, *got))
        if len(losing) < 2:
            continue

        def pooled(rows) -> float:
            g0 = np.mean([gap(bq, bt) for bq, bt, _q, _t in rows])
            g1 = np.mean([gap(q, t) for _bq, _bt, q, t in rows])
            return 1 - g1 / g0 if g0 else float("nan")
        boot = []
        for _ in range(2000):
            pick = [losing[i] for i in rng.integers(0, len(losing), len(losing))]
            boot.append(pooled([tuple(resample(x, rng) for x in r) for r in pick]))
        lo, hi = np.nanpercentile(boot, [2.5, 97.5])
        print(f"cpu {sus}: over the {len(losing)} sites where QUIC loses, the share of the "
              f"mean gap this condition removes {pooled(losing):+.0%} [{lo:+.0%}, {hi:+.0%}] "
              "(95 % bootstrap over sites and runs)")


def summarise(plan, suspects, sites) -> None:
    got = samples(plan)
    report(got, suspects, sites)
    print_across(got, suspects, sites)
    print_cpu_share(got, suspects, sites)
    print_load(plan)
    print_pooling(plan)
    print_cwnd_events(plan)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="bench/quic-heavy")
    ap.add_argument("--runs", type=int, default=3, help="rounds (runs per condition; default 3)")
    ap.add_argument("--sites", default=",".join(SITES), help="recordings, comma-separated")
    ap.add_argument("--suspects", default=",".join(SUSPECTS),
                    help=f"comma-separated, of {', '.join((*SUSPECTS, *ALIASES))}")
    ap.add_argument("--unpatched", type=Path,
                    help="h3server built on quiche 0.24.6 as published (needed for the baseline)")
    ap.add_argument("--keep", type=Path, help="keep the campaigns and results here (a new folder)")
    ap.add_argument("--qlog", action="store_true", help="keep h3server's qlogs (with --keep)")
    ap.add_argument("--analyse", type=Path, help="only report an earlier --keep folder")
    a = ap.parse_args(argv)
    suspects = list(dict.fromkeys(y for x in a.suspects.split(",") if x
                                  for y in ALIASES.get(x, (x,))))
    sites = [x for x in a.sites.split(",") if x]
    if any(x not in SUSPECTS for x in suspects):
        ap.error(f"--suspects: expected some of {', '.join((*SUSPECTS, *ALIASES))}")
    from testbed.host.paths import H3SERVER
    if a.analyse:
        with tempfile.TemporaryDirectory() as tmp:  # the plan's files, not needed after
            plan = plans(suspects, sites, Path(tmp), Path(), Path(), False)
            plan = [(t, b, a.analyse / o.name) for t, b, o in plan
                    if (a.analyse / o.name).exists()]
            return summarise(plan, suspects, sites)
    if a.unpatched is not None and not a.unpatched.is_file():
        ap.error("--unpatched: expected an h3server binary built on the published quiche 0.24.6")
    if a.unpatched is None and "patch" in suspects:
        ap.error("--suspects patch needs --unpatched (an h3server on the published quiche 0.24.6)")
    baseline = (a.unpatched or H3SERVER).resolve()
    if os.geteuid() != 0:
        raise SystemExit("bench/quic-heavy needs root (namespaces); run with sudo")
    if a.keep:
        a.keep.mkdir(mode=0o755, exist_ok=True)  # an earlier --keep folder: resumed
    work = (a.keep or Path(tempfile.mkdtemp(prefix="bench-quic-heavy-"))).resolve()
    print(f"sites {', '.join(sites)}; suspects {', '.join(suspects)}; {a.runs} rounds; "
          f"baseline h3server {baseline}, patched {H3SERVER}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    try:
        plan = plans(suspects, sites, work, baseline, H3SERVER, a.qlog)
        run_rounds(plan, a.runs)
        summarise(plan, suspects, sites)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
