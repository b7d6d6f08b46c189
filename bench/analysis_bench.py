"""Benchmark of the analysis: 38 sites x 4 networks x 5 settings x 31 runs = 23,560 trials.

Generates a synthetic campaign into a temporary trials.sqlite, then times
loading it, the full analysis (summaries, relative differences, CDFs, ANOVA,
1-RTT table, health) and writing the report (16 CDF figures as PNG and SVG,
CSV tables, index.html). Prints the figures; the goal is <= 5 s in total
(imports excluded: they are paid once per process). Run via bench/analysis.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

GOAL_S = 5.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed repetitions (best is kept)")
    parser.add_argument("--keep", type=Path, help="write the report here and keep it")
    args = parser.parse_args()

    t = time.perf_counter()
    from analysis import analyse, synthetic, write_report
    from results_contract.load import load
    import_s = time.perf_counter() - t

    t = time.perf_counter()
    trials = synthetic.campaign(sites=38, runs=31, seed=1)
    generate_s = time.perf_counter() - t

    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-analysis-") as tmp:
        store = Path(tmp) / "trials.sqlite"
        synthetic.write_sqlite(trials, store)
        for i in range(args.repeat):
            out = args.keep if args.keep and i == args.repeat - 1 else Path(tmp) / f"report-{i}"
            t0 = time.perf_counter()
            loaded = load(store)
            t1 = time.perf_counter()
            result = analyse(loaded)
            t2 = time.perf_counter()
            write_report(result, out, source=str(store))
            t3 = time.perf_counter()
            for name, s in (("load", t1 - t0), ("analyse", t2 - t1), ("report", t3 - t2),
                            ("total", t3 - t0)):
                best[name] = min(best.get(name, float("inf")), s)
        figures = len(list(out.glob("plots/*.png")))

    o = result.overview
    print(f"trials: {o['trials']:,} ({o['sites']} sites x {o['networks']} networks x "
          f"{o['settings']} settings x {o['runs']} runs; {o['ok']:,} ok, {o['failed']} failed)")
    print(f"import analysis:        {import_s:6.2f} s (once per process, not counted)")
    print(f"generate + store:       {generate_s:6.2f} s (not counted)")
    print(f"best of {args.repeat}:")
    print(f"  load trials.sqlite    {best['load']:6.2f} s")
    print(f"  analyse               {best['analyse']:6.2f} s "
          f"({len(result.summary):,} groups, {len(result.comparisons):,} ANOVAs)")
    print(f"  write report          {best['report']:6.2f} s ({figures} figures x PNG+SVG+PDF)")
    print(f"  total                 {best['total']:6.2f} s (goal <= {GOAL_S:.0f} s: "
          f"{'met' if best['total'] <= GOAL_S else 'NOT met'})")
    if args.keep:
        print(f"report kept: {args.keep / 'index.html'}")


if __name__ == "__main__":
    main()
