"""bench/trial_overhead: what a trial costs beyond its page load, and proof that
the savings leave the measurement alone. Needs root and `make setup`.

    bench/trial_overhead [--loads N] [--site NAME] [--network NAME] [--skip-smoke]
                         [--only telemetry|captures|cheaper]

One page (a bundled recording) over one network profile and the TCP stack:

1. bare Browsertime, its defaults (video and visual metrics on) but the
   testbed's frame rate (VIDEO_FPS): one process, N iterations, in the same
   replay, shells and namespace as a trial;
2. bare Browsertime with its own tuning options (page-complete check, no video
   re-encoding, no filmstrip), as a user of Browsertime would tune it;
3. the testbed's session (testbed.measure.browser_process) with video and visual
   metrics at VIDEO_FPS, 3b. the same at Browsertime's 30 fps, and 4. without
   video;
5. the smoke campaign through `testbed run` (trials per hour);
6. the session with video with the campaign's TCP telemetry on and off
   (testbed.measure.telemetry: the sock_diag listener and 5 ms dumps in the
   server namespace), alternating halves: its CPU time per trial (this
   process's, where the recorder's thread runs), wall time, and whether PLT
   differs (`--only telemetry` runs just this);
7. the session without captures and with each capture alone (netlog, keylog,
   pcap): size per trial before and after gzip, wall and CPU per trial
   (`--only captures`).
8. the cheaper trial (`--only cheaper`): today's session against the same with
   the options it had before (BEFORE: 1 s of network quiet after the load
   event, a 400 ms orange start frame, a 0.3 s pause between browsers, the
   page-complete check asked every 0.1 s during the load) and against bare
   Browsertime, in alternating thirds: overhead per trial and where it went
   (browser start, wait before the load, the load's extra, block start and
   end), PLT against bare Browsertime's, and FVC/SI/LVC/FCP against BEFORE's;
   then today's CPU budget (bench/cpu_budget.py): the whole machine's CPU
   seconds per trial inside the load's window and outside it, the visual
   metrics' share, and what 1.5 s beyond PLT would leave between loads.

For each: wall time per load minus its PLT (mean), the CPU time per load of
the processes it started (Browsertime, Chromium, ffmpeg, Xvfb, visual
metrics; not the replay servers), and the PLTs; then whether the PLTs of 1
and 3 differ more than noise (Welch's t-test and Mann-Whitney U), and what
the frame rate costs (3 vs 3b: wall, CPU, and whether PLT rises).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from contextlib import ExitStack, nullcontext
from pathlib import Path

import cpu_budget
from drivers import FixedDriver

from testbed.formats import recording as rec
from testbed.host import enter, proc, safefs
from testbed.host.paths import ROOT
from testbed.host.runstate import current
from testbed.host.topology import ReplayTopology
from testbed.measure import browsertime, metrics, visual
from testbed.measure.browser_process import BrowsertimeProcess
from testbed.replay.env import ReplayEnv


def fmt(xs: list[float]) -> str:
    if not xs:
        return "n/a"
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.mean(xs):7.0f} ms (sd {sd:4.0f}, n {len(xs)})"


def children_cpu() -> float:
    """CPU seconds (user + system) of every finished child process so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


CPU: dict[str, float] = {}
"""Variant -> CPU seconds of its processes per load (filled as they run)."""


VISUAL: dict[str, dict[str, list[float]]] = {}
"""Session variant -> its visual metrics and paint timings per load (fvc_ms, si_ms, ...)."""

PHASES: dict[str, dict[str, list[float]]] = {}
"""Session variant -> where its time went, seconds per trial (see phases())."""

BUDGETS: list[cpu_budget.Budget] = []
"""Sessions measured with budget=True: the machine's CPU and wall time inside their
loads' windows and outside them."""

VISUAL_CPU: list[float] = []
"""CPU seconds of the visual metrics of one trial's video, run again alone."""

BEFORE = {"settle_ms": 1000, "orange_ms": 400, "browser_stop_ms": 300,
          "complete_in_page": False}
"""The session's options before the cheaper trial (BrowsertimeOptions), measured
against today's by `--only cheaper`."""


def session_loads(env, chain, url, n, video, work,
                  fps: int = browsertime.VIDEO_FPS, tag: str = "",
                  recorder=None, captures=None, budget: bool = False,
                  **options) -> tuple[float, list[float]]:
    """n loads in one session; with budget, the machine's CPU time is sampled
    (BUDGETS) and each video's visual metrics are run again alone (VISUAL_CPU)."""
    opts = browsertime.BrowsertimeOptions(iterations=n, video=video, video_fps=fps, **options)
    s = BrowsertimeProcess(url, opts, work / f"s{int(video)}-{fps}{tag}", netns=env.client_netns,
                wrap=chain.argv([]), driver=FixedDriver(env, [], recorder, captures))
    sampler = cpu_budget.Sampler() if budget else None
    with sampler or nullcontext():
        cpu0, t0 = children_cpu(), time.monotonic()
        outcomes = s.run()
        wall = time.monotonic() - t0
    CPU[f"session-{video}-{fps}"] = (children_cpu() - cpu0) / n
    plts = []
    seen = VISUAL.setdefault(f"session-{video}-{fps}{tag}", {})
    for o in outcomes:
        m = metrics.extract(o.result, o.visual) if o else None
        if m is None or m.plt_ms is None or (video and m.si_ms is None):
            raise SystemExit(f"a session load failed: {o}")
        plts.append(m.plt_ms)
        for name in ("fvc_ms", "si_ms", "lvc_ms", "fcp_ms"):
            if getattr(m, name) is not None:
                seen.setdefault(name, []).append(getattr(m, name))
    phases(PHASES.setdefault(f"session-{video}-{fps}{tag}", {}), outcomes, plts, t0, t0 + wall)
    if sampler is not None:
        windows = [(o.load_began, o.ended) for o in outcomes]
        BUDGETS.append(sampler.samples().budget(t0, t0 + wall, windows))
        for o in outcomes:
            if o.video is not None:
                c0 = children_cpu()
                visual.run(o.video, work / "visualmetrics-again.log")
                VISUAL_CPU.append(children_cpu() - c0)
    s.remove()
    return wall, plts


PHASE_NAMES = {
    "start": "browser start (previous load's end to this browser's preScript: video stop, "
             "collect, browser stop, chromedriver, Chromium, start page, pause)",
    "wait": "wait before the load (the previous trial's visual metrics, when still running)",
    "load": "load's extra (video start with the orange frame, settle, video stop, collect)",
    "block": "block start and end (Browsertime and Xvfb starting, writing, exiting), "
             "per trial",
}


def phases(into: dict[str, list[float]], done, plts: list[float], t0: float,
           t1: float) -> None:
    """Append each trial's phases (PHASE_NAMES) in seconds, from the session's clock
    (done: the session's outcomes, all measured; plts: their PLTs in ms)."""
    for prev, o, plt in zip([None, *done], done, plts):
        if prev is not None:
            into.setdefault("start", []).append(o.ready - prev.ended)
        into.setdefault("wait", []).append(o.load_began - o.ready)
        into.setdefault("load", []).append(o.ended - o.load_began - plt / 1000)
    if done:
        # the first browser's start counts as block start: the others' start is "start"
        into.setdefault("block", []).append(
            (done[0].ready - t0 + t1 - done[-1].ended) / len(done))


def print_phases(name: str, tags: list[str]) -> None:
    got: dict[str, list[float]] = {}
    for tag in tags:
        for k, v in PHASES.get(tag, {}).items():
            got.setdefault(k, []).extend(v)
    parts = [f"{k} {statistics.mean(got[k]):.2f}" for k in PHASE_NAMES if got.get(k)]
    print(f"  {name}: " + ", ".join(parts) + " s")


def bare_loads(env, chain, url, n, tuned, work, tag: str = "") -> tuple[float, list[float]]:
    out = safefs.user_dir(work / f"bare-{tuned}{tag}")  # Browsertime writes here
    args = [str(browsertime.NODE), str(browsertime.BROWSERTIME), "-n", str(n),
            "--visualMetrics", "true", "--video", "false" if tuned else "true",
            "--videoParams.framerate", str(browsertime.VIDEO_FPS),
            "--resultDir", str(out),
            "--chrome.chromedriverPath", browsertime.CHROMEDRIVER,
            "--chrome.binaryPath", browsertime.CHROMIUM,
            "--chrome.ignoreCertificateErrors", "false",
            "--xvfbParams.display", "{display}",
            *[f"--chrome.args={f}" for f in env.chromium_flags()]]
    if tuned:
        check = safefs.write_file(work / "complete.js",
                                  browsertime.complete_check(browsertime.BrowsertimeOptions(1)))
        args += ["--pageCompleteCheck", str(check), "--pageCompleteCheckStartWait", "1",
                 "--pageCompleteCheckPollTimeout", "100", "--videoParams.convert", "false",
                 "--videoParams.addTimer", "false", "--videoParams.createFilmstrip", "false"]
    tmp = safefs.user_dir(work / f"bare-{tuned}{tag}-tmp")  # chromedriver's profiles
    # TMPDIR set inside the shells: setuid Mahimahi shells drop it from the environment
    inner = ["env", f"TMPDIR={tmp}", *proc.python("-m", "testbed.measure.xvfb", "--", *args, url,
                                                  interpreter=browsertime.PYTHON)]
    argv = enter.as_user([*chain.argv([]), *inner], netns=env.client_netns,
                         env={"PYTHON": str(browsertime.PYTHON)}, cwd=str(out))
    cpu0, t0 = children_cpu(), time.monotonic()
    cp = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=60 * n + 120)
    wall = time.monotonic() - t0
    CPU[f"bare-{tuned}"] = (children_cpu() - cpu0) / n
    if cp.returncode != 0:
        raise SystemExit(f"bare Browsertime failed: {cp.stdout[-2000:]}{cp.stderr[-2000:]}")
    data = json.loads(safefs.read_user(out / "browsertime.json"))[0]
    plts = [float(b["timings"]["pageTimings"]["pageLoadTime"]) for b in data["browserScripts"]]
    if len(plts) != n or not data.get("visualMetrics"):
        raise SystemExit("bare Browsertime: missing iterations or visual metrics")
    return wall, plts


def telemetry_loads(env, chain, topo, r, n, work) -> None:
    """Telemetry off and on, in alternating halves of n loads each; prints the cost."""
    from testbed.measure import telemetry

    plts: dict[bool, list[float]] = {False: [], True: []}
    walls = {False: 0.0, True: 0.0}
    cpu = {False: 0.0, True: 0.0}
    conns = 0
    half = max(1, n // 2)
    for i, on in enumerate((False, True, False, True)):
        recorder = telemetry.Recorder(topo.server.name, r.ips) if on else None
        c0 = time.process_time()
        with recorder or nullcontext():
            wall, p = session_loads(env, chain, r.url, half, True, work, tag=f"-tele{i}",
                                    recorder=recorder)
        cpu[on] += time.process_time() - c0
        walls[on] += wall
        plts[on] += p
        if recorder is not None:
            conns += len(recorder.connections())
    for on in (False, True):
        report(f"testbed session, video, telemetry {'on' if on else 'off'}",
               walls[on], plts[on], cpu[on] / len(plts[on]))
    k = len(plts[True])
    print(f"telemetry cost per trial: CPU {(cpu[True] - cpu[False]) / k * 1000:+.0f} ms "
          f"(this process), wall {(walls[True] - walls[False]) / k:+.2f} s; "
          f"{conns / k:.1f} TCP connections recorded per trial; PLT "
          f"{statistics.mean(plts[False]):.0f} (off) vs {statistics.mean(plts[True]):.0f} ms "
          f"(on), {differ(plts[False], plts[True])}")


def capture_loads(env, chain, topo, r, n, work) -> None:
    """The session without captures and with each capture alone, n loads each: wall,
    CPU (its processes and this one's, where gzip runs) and stored size per trial."""
    from testbed.measure.captures import Captures

    base = None
    for kind in ("", "netlog", "keylog", "pcap"):
        kinds = (kind,) if kind else ()
        cap = Captures(kinds, work / f"captures-{kind or 'none'}", topo.server.name,
                       topo.server_dev)
        c0, own0 = children_cpu(), time.process_time()
        with cap:
            wall, plts = session_loads(env, chain, r.url, n, True, work, tag=f"-cap{kind}",
                                       captures=cap)
            cap.stop()
            t0 = time.monotonic()
            got = [cap.collect(k) for k in range(n)]
            wall += time.monotonic() - t0
        cpu = (children_cpu() - c0 + time.process_time() - own0) / n
        stored = [sum(v["stored_bytes"] for v in sizes.values()) for _, sizes in got]
        raw = [sum(v["bytes"] for v in sizes.values()) for _, sizes in got]
        name = f"testbed session, video, capture {kind or 'none'}"
        report(name, wall, plts, cpu)
        if base is None:
            base = (wall / n, cpu, plts)
            continue
        print(f"  capture {kind}: {statistics.mean(raw) / 1e6:.2f} MB a trial, "
              f"{statistics.mean(stored) / 1e6:.2f} MB gzipped; cost per trial: wall "
              f"{wall / n - base[0]:+.2f} s, CPU {cpu - base[1]:+.2f} s; PLT "
              f"{statistics.mean(plts):.0f} vs {statistics.mean(base[2]):.0f} ms, "
              f"{differ(base[2], plts)}")


def cheaper_loads(env, chain, r, n, work) -> None:
    """Today's session against the options it had before (BEFORE) and bare
    Browsertime, n loads each in alternating thirds (drift over the bench favours
    none): wall time per load beyond PLT, whether PLT agrees with bare
    Browsertime's, and whether the visual metrics agree with BEFORE's."""
    part = max(1, n // 3)
    walls: dict[str, float] = {"bare": 0.0, "before": 0.0, "today": 0.0}
    plts: dict[str, list[float]] = {"bare": [], "before": [], "today": []}
    for i in range(3):
        for kind in ("bare", "before", "today"):
            if kind == "bare":
                w, p = bare_loads(env, chain, r.url, part, False, work, tag=f"-{i}")
            else:
                w, p = session_loads(env, chain, r.url, part, True, work, tag=f"-{kind}{i}",
                                     budget=kind == "today",
                                     **(BEFORE if kind == "before" else {}))
            walls[kind] += w
            plts[kind] += p
    fps = browsertime.VIDEO_FPS
    over = {k: report(f"{name}, video {fps} fps + visual metrics", walls[k], plts[k])
            for k, name in (("bare", "bare Browsertime, defaults"),
                            ("before", "testbed session, options before"),
                            ("today", "testbed session, today's options"))}
    print(f"today's options save {over['before'] - over['today']:.2f} s per trial; overhead "
          f"{over['today']:.2f} s beyond PLT")
    print("where a trial's time beyond PLT went (mean s per trial):")
    for k, text in PHASE_NAMES.items():
        print(f"  {k}: {text}")
    for kind in ("before", "today"):
        print_phases(kind, [f"session-True-{browsertime.VIDEO_FPS}-{kind}{i}" for i in range(3)])
    print_budget(over["today"], plts["today"])
    for a, b in (("bare", "today"), ("bare", "before"), ("before", "today")):
        print(f"PLT {a} vs {b}: {statistics.mean(plts[a]):.0f} vs "
              f"{statistics.mean(plts[b]):.0f} ms, {differ(plts[a], plts[b])}")
    for name in ("fvc_ms", "si_ms", "lvc_ms", "fcp_ms"):
        x = [v for i in range(3) for v in VISUAL[f"session-True-{fps}-before{i}"].get(name, [])]
        y = [v for i in range(3) for v in VISUAL[f"session-True-{fps}-today{i}"].get(name, [])]
        if len(x) > 1 and len(y) > 1:
            print(f"  {name[:-3].upper():4s} before vs today: {statistics.median(x):.0f} vs "
                  f"{statistics.median(y):.0f} ms (median), {differ(x, y)}")


def print_budget(overhead: float, plts: list[float], goal: float = 1.5) -> None:
    """Today's trials' CPU budget (BUDGETS, VISUAL_CPU; plts: the same trials' PLTs
    in ms) and what `goal` seconds beyond PLT would leave for the work between loads."""
    if not BUDGETS:
        return
    cores = os.cpu_count() or 1
    n, plt = len(plts), statistics.mean(plts) / 1000
    all_ = sum(BUDGETS[1:], BUDGETS[0])
    cpu_in, wall_in, cpu_out, wall_out = (all_.cpu_in / n, all_.wall_in / n,
                                          all_.cpu_out / n, all_.wall_out / n)
    vm = statistics.mean(VISUAL_CPU) if VISUAL_CPU else float("nan")
    print(f"CPU budget of today's trial (the whole machine, /proc/stat; {n} trials, "
          f"{cores} cores): {cpu_in + cpu_out:.2f} CPU-s per trial")
    print(f"  in the load's window (video start to metrics collected): {cpu_in:.2f} CPU-s "
          f"in {wall_in:.2f} s ({100 * all_.share(cores, inside=True):.0f} % of the cores)")
    print(f"  outside it (next browser, visual metrics, Browsertime): {cpu_out:.2f} CPU-s "
          f"in {wall_out:.2f} s ({100 * all_.share(cores, inside=False):.0f} % of the "
          f"cores); the visual metrics of one video, run again alone: {vm:.2f} CPU-s")
    left = goal - (wall_in - plt)
    print(f"  {goal} s beyond PLT would leave {left:.2f} s between loads (today "
          f"{overhead - (wall_in - plt):.2f} s); the work outside the load needs at least "
          f"{cpu_out / cores:.2f} s on {cores} cores, unless it runs during a load")


def report(name: str, wall: float, plts: list[float], cpu: float | None = None) -> float:
    per = wall / len(plts) - statistics.mean(plts) / 1000
    cpu_text = f"  CPU {cpu:5.2f} s/load" if cpu is not None else ""
    print(f"{name:<46} {wall / len(plts):6.2f} s/load  overhead {per:5.2f} s{cpu_text}  "
          f"PLT {fmt(plts)}")
    return per


def differ(x: list[float], y: list[float]) -> str:
    """Welch's t and Mann-Whitney U p-values of two PLT samples, and the verdict."""
    from scipy import stats
    t = stats.ttest_ind(x, y, equal_var=False)
    u = stats.mannwhitneyu(x, y)
    return (f"Welch t p={t.pvalue:.2f}, Mann-Whitney U p={u.pvalue:.2f} "
            f"({'no difference beyond noise' if min(t.pvalue, u.pvalue) >= 0.05 else 'DIFFERENT'})")


def smoke_rate() -> None:
    from testbed.campaign.plan import config
    from testbed.campaign.store.store import read_rows
    try:
        config.load("smoke")
        from testbed.campaign.plan import settings
        settings.load("tcp")
    except Exception as e:  # noqa: BLE001 - the bench reports what it cannot measure
        print(f"smoke campaign: not measured ({e})")
        return
    out = Path(tempfile.mkdtemp(prefix="bench-smoke-"))
    try:
        t0 = time.monotonic()
        cp = subprocess.run([str(ROOT / ".venv/bin/testbed"), "run", "smoke", "--out", str(out)],
                            check=False, capture_output=True, text=True, timeout=1800, cwd=ROOT)
        wall = time.monotonic() - t0
        if cp.returncode != 0:
            print(f"smoke campaign failed: {cp.stderr[-1000:]}")
            return
        rows = read_rows(out / "trials.sqlite")
        ok = [r for r in rows if r["status"] == "ok"]
        over = [r["wall_s"] - r["plt_ms"] / 1000 for r in ok]
        print(f"smoke campaign: {len(ok)}/{len(rows)} ok in {wall:.1f} s wall "
              f"(incl. start-up); trials' own wall {sum(r['wall_s'] for r in rows):.1f} s; "
              f"overhead per trial {statistics.mean(over):.2f} s beyond PLT; "
              f"{3600 * len(rows) / wall:.0f} trials/hour "
              f"({3600 * len(rows) / sum(r['wall_s'] for r in rows):.0f} at steady state)")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="bench/trial_overhead")
    ap.add_argument("--loads", type=int, default=8, help="page loads per variant (default 8)")
    ap.add_argument("--site", default="local-news")
    ap.add_argument("--network", default="dsl")
    ap.add_argument("--skip-smoke", action="store_true")
    ap.add_argument("--only", choices=["telemetry", "captures", "cheaper"],
                    help="run only this part (telemetry: on vs off; captures: none vs each; "
                         "cheaper: today's options against the earlier ones and bare "
                         "Browsertime)")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("bench/trial_overhead needs root (namespaces); run with sudo")
    problem = browsertime.missing()
    if problem:
        raise SystemExit(problem)
    from testbed.emulate import calibrate
    from testbed.formats.profiles import load_network
    r = rec.load(a.site)
    profile = load_network(a.network)
    work = Path(tempfile.mkdtemp(prefix="bench-", dir=current().dir))
    os.chmod(work, 0o755)
    print(f"page {r.url} ({len(r.exchanges)} requests), network {a.network}, TCP stack, "
          f"{a.loads} loads per variant; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores")
    try:
        chain = calibrate.chain_for(profile, work)
        with ExitStack() as exits:
            topo = exits.enter_context(ReplayTopology(r.ips))
            env = exits.enter_context(ReplayEnv(r, "tcp", topology=topo))
            if a.only == "telemetry":
                telemetry_loads(env, chain, topo, r, a.loads, work)
                return
            if a.only == "captures":
                capture_loads(env, chain, topo, r, a.loads, work)
                return
            if a.only == "cheaper":
                cheaper_loads(env, chain, r, a.loads, work)
                return
            results = {}
            fps = browsertime.VIDEO_FPS
            results["bare"] = bare_loads(env, chain, r.url, a.loads, False, work)
            o_bare = report(f"bare Browsertime, defaults (video+VM, {fps} fps)",
                            *results["bare"], CPU["bare-False"])
            results["bare-tuned"] = bare_loads(env, chain, r.url, a.loads, True, work)
            report("bare Browsertime, tuned options (VM, no video)", *results["bare-tuned"],
                   CPU["bare-True"])
            results["video"] = session_loads(env, chain, r.url, a.loads, True, work)
            o_video = report(f"testbed session, video {fps} fps + visual metrics",
                             *results["video"], CPU[f"session-True-{fps}"])
            results["video30"] = session_loads(env, chain, r.url, a.loads, True, work, fps=30)
            o_video30 = report("testbed session, video 30 fps + visual metrics",
                               *results["video30"], CPU["session-True-30"])
            results["novideo"] = session_loads(env, chain, r.url, a.loads, False, work)
            report("testbed session, no video", *results["novideo"], CPU[f"session-False-{fps}"])
            telemetry_loads(env, chain, topo, r, a.loads, work)
            capture_loads(env, chain, topo, r, a.loads, work)
        x, y = results["bare"][1], results["video"][1]
        print(f"PLT bare defaults vs testbed session (both {fps} fps): {statistics.mean(x):.0f} "
              f"vs {statistics.mean(y):.0f} ms, difference "
              f"{statistics.mean(y) - statistics.mean(x):+.0f} ms; {differ(x, y)}")
        print(f"saving per trial vs bare Browsertime defaults: {o_bare - o_video:.1f} s")
        x30 = results["video30"][1]
        print(f"{fps} fps vs 30 fps per trial: wall {o_video - o_video30:+.2f} s, CPU "
              f"{CPU[f'session-True-{fps}'] - CPU['session-True-30']:+.2f} s; PLT "
              f"{statistics.mean(y):.0f} vs {statistics.mean(x30):.0f} ms "
              f"({statistics.mean(y) - statistics.mean(x30):+.0f} ms), {differ(y, x30)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not a.skip_smoke:
        smoke_rate()


if __name__ == "__main__":
    from testbed.host import runstate
    try:
        main()
    finally:
        runstate.release()
