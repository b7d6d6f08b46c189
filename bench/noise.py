"""bench/noise: how much of a trial's variation is the testbed's own. Needs root and
`make setup`.

    bench/noise [--runs N] [--site NAME] [--profiles LIST] [--stacks LIST]
                [--sources LIST] [--source-profiles LIST] [--json FILE]
    bench/noise --analyse FILE     (the figures of an earlier --json FILE again)

The same trial (one page, one network profile, one protocol setting) repeated N
times (default 31) in one Browsertime process, as a campaign's block runs it,
under `none` (no shaping), a lossless deep-buffer profile (DSL's rates and RTT
with a 1 s buffer: nothing is dropped; bench/dsl-deep.toml) and `dsl` (the
paper's: a 12 ms buffer that drops packets of a 32-packet burst), per stack
(default tcp-plus and quic). Prints the coefficient of variation (sd / mean)
of PLT, FCP and FVC for each, beside a robust one (1.4826 MAD / median: a CV
far above it says a few loads were slow, not all of them spread).

Then, under the --source-profiles (default none and the deep buffer), each
source of noise the testbed adds is switched off in turn, or on for the one
that is not there in a trial:
- video:   no screen recording (so no FVC);
- visual:  the recording is made but no visual metrics are computed on it;
- xvfb:    Chromium headless, no X server (and so no video);
- telemetry: no TCP telemetry (testbed.measure.telemetry's sock_diag listener and
           dumps, on in a campaign's trials and so in the baseline here);
- hog:     a busy loop pinned to the last core beside the trial (another
           process on the other core: switched on, not off);
- pin      (not by default: a way to cut, measured the same way): the screen
           recorder pinned to the last core with one encoder thread;
- poll     (not by default): the page-complete check asked by WebDriver every
           0.1 s while the page loads (each a call into the loading page), the
           default before it waited in the page (BrowsertimeOptions.complete_in_page:
           one WebDriver call per load; switched on, not off);
Each source's share is the part of the baseline's variance of a metric that
went away without it (negative: the variance grew), with the F-test's p-value
of the two variances and the Brown-Forsythe test's (robust to outliers, which
the F-test is not): a share whose p > 0.05 is within what two samples of N
loads differ by anyway.

The network's share (what `dsl`'s drops add over the deep buffer) is part of
the experiment, not noise: it is printed separately.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from drivers import FixedDriver

from testbed.errors import InputError
from testbed.formats import recording as rec
from testbed.host import proc, safefs
from testbed.host.paths import ROOT
from testbed.host.runstate import current
from testbed.host.topology import ReplayTopology
from testbed.measure import browsertime, metrics, telemetry
from testbed.measure.browser_process import BrowsertimeProcess
from testbed.protocols.apply import applied, server_options
from testbed.replay.env import ReplayEnv

DEEP = ROOT / "bench" / "dsl-deep.toml"
METRICS = ("plt_ms", "fcp_ms", "fvc_ms")
SOURCES = ("video", "visual", "xvfb", "telemetry", "hog")
CANDIDATES = ("pin", "poll")
"""Ways to cut the testbed's share, measured like a source (--sources pin)."""


@dataclass
class Sample:
    """The metrics of N loads of one variant."""

    values: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in METRICS})

    def cv(self, metric: str) -> float | None:
        xs = self.values[metric]
        if len(xs) < 2 or statistics.mean(xs) == 0:
            return None
        return statistics.stdev(xs) / statistics.mean(xs)

    def robust_cv(self, metric: str) -> float | None:
        """1.4826 × the median absolute deviation / the median: the CV a normal sample
        would have, untouched by a few outliers (a CV far above it: a few slow loads)."""
        xs = self.values[metric]
        if len(xs) < 2 or statistics.median(xs) == 0:
            return None
        med = statistics.median(xs)
        return 1.4826 * statistics.median(abs(x - med) for x in xs) / med


def share(base: list[float], without: list[float]) -> tuple[float, float, float] | None:
    """The part of base's variance that went away in `without` (1 - var_w / var_b),
    the two-sided F-test p-value of the two variances and the Brown-Forsythe test's
    (Levene's around the median: robust to the few slow loads the F-test is not)."""
    from scipy import stats
    if len(base) < 2 or len(without) < 2:
        return None
    vb, vw = statistics.variance(base), statistics.variance(without)
    if vb == 0:
        return None
    f = vw / vb
    d1, d2 = len(without) - 1, len(base) - 1
    p = 2 * min(stats.f.cdf(f, d1, d2), stats.f.sf(f, d1, d2))
    bf = float(stats.levene(base, without, center="median").pvalue) if vw > 0 else 0.0
    return 1 - f, min(p, 1.0), bf


class Hog:
    """A busy loop pinned to the machine's last core while the block runs."""

    def __enter__(self):
        core = (os.cpu_count() or 1) - 1
        self.proc = subprocess.Popen(
            proc.python("-c", "while True: pass"),
            preexec_fn=lambda: os.sched_setaffinity(0, {core}))  # noqa: PLW1509 (no threads here)
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def options(variant: str, n: int) -> browsertime.BrowsertimeOptions:
    if variant == "video":
        return browsertime.BrowsertimeOptions(iterations=n, video=False)
    if variant == "visual":
        return browsertime.BrowsertimeOptions(iterations=n, visual_metrics=False)
    if variant == "pin":
        return browsertime.BrowsertimeOptions(iterations=n,
                                              video_cpus=str((os.cpu_count() or 1) - 1))
    if variant == "poll":
        return browsertime.BrowsertimeOptions(iterations=n, complete_in_page=False)
    if variant == "xvfb":
        return browsertime.BrowsertimeOptions(iterations=n, video=False, headless=True)
    return browsertime.BrowsertimeOptions(iterations=n)


def block(r: rec.Recording, profile, setting: str, variant: str, n: int, work: Path) -> Sample:
    """n loads of one page over one profile and setting, `variant` switched."""
    from testbed.emulate import calibrate
    opts = server_options(setting)
    work.mkdir(mode=0o755)
    chain = calibrate.chain_for(profile, work)
    with ExitStack() as exits:
        topo = exits.enter_context(ReplayTopology(r.ips))
        change = exits.enter_context(applied(opts, topo))
        env = exits.enter_context(ReplayEnv(r, opts.stack, h3server_args=opts.h3server_args,
                                            nginx_env=change.nginx_env, topology=topo,
                                            quic_server=opts.quic_server))
        if variant == "hog":
            exits.enter_context(Hog())
        recorder = (None if variant == "telemetry"  # as a campaign's block runs it otherwise
                    else telemetry.Recorder(topo.server.name, r.ips))
        exits.enter_context(recorder or nullcontext())
        s = BrowsertimeProcess(r.url, options(variant, n), work / "session", netns=env.client_netns,
                    wrap=chain.argv([]),
                    driver=FixedDriver(env, list(opts.chromium_flags), recorder=recorder))
        outcomes = s.run()
        env.check_alive()
    out = Sample()
    for o in outcomes:
        m = metrics.extract(o.result, o.visual) if o else None
        if m is None or m.plt_ms is None:
            raise SystemExit(f"a load failed ({setting}, {profile.name}, {variant}): {o}")
        for k in METRICS:
            v = getattr(m, k, None)
            if v is not None:
                out.values[k].append(float(v))
    s.remove()
    shutil.rmtree(work, ignore_errors=True)
    return out


def pct(x: float | None) -> str:
    return "   n/a" if x is None else f"{100 * x:5.1f}%"


def print_cvs(rows: dict[tuple[str, str, str], Sample], variant: str) -> None:
    print(f"{'profile':<10} {'stack':<9} " + " ".join(f"{m[:-3].upper() + ' CV':>8}"
                                                    for m in METRICS)
          + "   robust: " + " ".join(f"{m[:-3].upper():>6}" for m in METRICS)
          + "   PLT median   (N loads)")
    for (profile, stack, v), s in rows.items():
        if v != variant:
            continue
        print(f"{profile:<10} {stack:<9} " + " ".join(f"{pct(s.cv(m)):>8}" for m in METRICS)
              + "           " + " ".join(f"{pct(s.robust_cv(m)):>6}" for m in METRICS)
              + f"   {statistics.median(s.values['plt_ms']):7.0f} ms"
              + f"   ({len(s.values['plt_ms'])})")


def read_samples(path: Path) -> dict[tuple[str, str, str], Sample] | None:
    """The samples of a --json file written before; None if it is not one (not a regular
    file, a symlink, too large, or any other shape): nothing of it is shown then."""
    try:
        got = json.loads(safefs.read_capped(path, 16 << 20, follow_symlinks=False))
        rows = {}
        for key, values in got.items():
            parts = tuple(key.split("|"))
            if len(parts) != 3 or not isinstance(values, dict):
                return None
            lists = {m: values.get(m, []) for m in METRICS}
            if not all(isinstance(v, list) and all(isinstance(x, (int, float))
                                                   and not isinstance(x, bool) for x in v)
                       for v in lists.values()):
                return None
            rows[parts] = Sample({m: [float(x) for x in v] for m, v in lists.items()})
        return rows
    except (OSError, ValueError, AttributeError):
        return None


def report(rows: dict[tuple[str, str, str], Sample], stacks: list[str],
           names: list[str]) -> None:
    """The CVs of the trial as a campaign runs it, each source's share and the network's."""
    print("\nThe trial as a campaign runs it (TCP telemetry on, video at "
          f"{browsertime.VIDEO_FPS} fps, visual metrics, Xvfb):")
    print_cvs(rows, "trial")
    print("\nEach source's share of the trial's variance (1 - var without / var with; "
          "F-test p):")
    for (pname, stack, v), s in rows.items():
        if v == "trial":
            continue
        base = rows.get((pname, stack, "trial"))
        if base is None:
            continue
        cells = []
        for m in METRICS:
            got = share(base.values[m], s.values[m])
            cells.append(f"{m[:-3].upper()} " + ("n/a" if got is None else
                                                 f"{100 * got[0]:+.0f}% (p {got[1]:.2f}, "
                                                 f"BF {got[2]:.2f})"))
        what = {"hog": "on", "pin": "pin", "poll": "on"}.get(v, "off")
        print(f"  {pname:<10} {stack:<9} {v:<6} {what:<4}  " + "  ".join(cells))
    if "dsl" in names and "dsl-deep" in names:
        print("\nThe network's share (dsl's 12 ms drop-tail buffer vs the deep buffer; the "
              "experiment, not noise):")
        for stack in stacks:
            if ("dsl", stack, "trial") not in rows or ("dsl-deep", stack, "trial") not in rows:
                continue
            got = share(rows[("dsl", stack, "trial")].values["plt_ms"],
                        rows[("dsl-deep", stack, "trial")].values["plt_ms"])
            if got:
                print(f"  {stack:<9} PLT variance from the drops: {100 * got[0]:+.0f}% "
                      f"(p {got[1]:.2f}, BF {got[2]:.2f})")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="bench/noise")
    ap.add_argument("--runs", type=int, default=31, help="loads per variant (default 31)")
    ap.add_argument("--site", default="local-news")
    ap.add_argument("--profiles", default=f"none,{DEEP},dsl")
    ap.add_argument("--stacks", default="tcp-plus,quic")
    ap.add_argument("--sources", default=",".join(SOURCES))
    ap.add_argument("--source-profiles", default=f"none,{DEEP}")
    ap.add_argument("--json", type=Path, help="also write every sample here")
    ap.add_argument("--analyse", type=Path, metavar="FILE",
                    help="print the figures of a --json FILE written before; run nothing")
    a = ap.parse_args(argv)
    if a.analyse:
        rows = read_samples(a.analyse)
        if rows is None:
            print(f"{ap.prog}: error: --analyse {a.analyse}: expected a bench/noise --json "
                  "file (a regular file, not a symlink, at most 16 MB: keys profile|stack|"
                  "variant, each with lists of numbers)", file=sys.stderr)
            raise SystemExit(2)
        report(rows, list(dict.fromkeys(k[1] for k in rows)),
               list(dict.fromkeys(k[0] for k in rows)))
        return
    if a.json:
        try:
            safefs.check_out_file(a.json, "--json")  # root writes it: checked first
        except InputError as e:
            print(f"{ap.prog}: error: {e}", file=sys.stderr)
            raise SystemExit(2) from None
    if os.geteuid() != 0:
        raise SystemExit("bench/noise needs root (namespaces); run with sudo")
    problem = browsertime.missing()
    if problem:
        raise SystemExit(problem)
    from testbed.formats.profiles import load_network
    sources = [s for s in a.sources.split(",") if s]
    unknown = sorted(set(sources) - set(SOURCES) - set(CANDIDATES))
    if unknown:
        raise SystemExit(f"--sources: unknown {', '.join(unknown)}; expected "
                         f"{', '.join(SOURCES + CANDIDATES)}")
    r = rec.load(a.site)
    profiles = {p: load_network(Path(p) if "/" in p else p) for p in a.profiles.split(",")}
    source_profiles = [p for p in a.source_profiles.split(",") if p in profiles]
    stacks = a.stacks.split(",")
    work = Path(tempfile.mkdtemp(prefix="bench-noise-", dir=current().dir))
    os.chmod(work, 0o755)
    print(f"page {r.url} ({len(r.exchanges)} requests), {a.runs} loads per variant; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    rows: dict[tuple[str, str, str], Sample] = {}
    i = 0
    try:
        for pname, profile in profiles.items():
            for stack in stacks:
                variants = ["trial", *(sources if pname in source_profiles else [])]
                for v in variants:
                    i += 1
                    rows[(profile.name, stack, v)] = block(r, profile, stack, v, a.runs,
                                                           work / f"b{i}")
                    s = rows[(profile.name, stack, v)]
                    print(f"  measured {profile.name} {stack} {v}: PLT CV {pct(s.cv('plt_ms'))}",
                          flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(rows, stacks, [p.name for p in profiles.values()])
    if a.json:
        safefs.write_out_file(a.json, json.dumps({"|".join(k): s.values for k, s in rows.items()},
                                                indent=1), "--json")


if __name__ == "__main__":
    from testbed.host import runstate
    try:
        main()
    finally:
        runstate.release()
