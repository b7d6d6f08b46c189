"""bench/painting: does a campaign's pages paint in stages? Read-only on any store.

    bench/painting STORE [STORE ...] [--site GLOB] [--setting NAME ...]

STORE is a results folder (its trials.sqlite) or a trials.sqlite. For each
network (DSL, LTE, ...) over its ok trials prints:
- the share of trials whose VC85 equals their FVC (the page went from blank
  to 85 % visually complete in one video frame);
- the median of (SI - FVC) / (LVC - FVC): the mean visual incompleteness
  between first and last visual change (0: SI sits on first paint, the page
  painted all at once; 0.5: it filled in evenly). Trials with LVC == FVC
  count as 0.
Issue 51's acceptance: share <= 10 % and median >= 0.15 under DSL and LTE.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
from fnmatch import fnmatch
from pathlib import Path

SHARE_MAX = 0.10
RATIO_MIN = 0.15


def rows(store: Path) -> list[tuple]:
    db = store / "trials.sqlite" if store.is_dir() else store
    if not db.is_file():
        print(f"bench/painting: {store}: expected a results folder or a trials.sqlite",
              file=sys.stderr)
        sys.exit(2)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        columns = {r[1] for r in con.execute("PRAGMA table_info(trials)")}
        setting = "setting" if "setting" in columns else "protocol"  # older stores
        return con.execute(f"SELECT site, network, {setting}, fvc_ms, vc85_ms, si_ms, lvc_ms "
                           "FROM trials WHERE status = 'ok' AND fvc_ms IS NOT NULL AND "
                           "vc85_ms IS NOT NULL AND si_ms IS NOT NULL AND lvc_ms IS NOT NULL"
                           ).fetchall()
    finally:
        con.close()


def ratio(fvc: float, si: float, lvc: float) -> float:
    return (si - fvc) / (lvc - fvc) if lvc > fvc else 0.0


def figures(trials: list[tuple]) -> dict[str, tuple[int, float, float]]:
    """network -> (trials, share with VC85 == FVC, median SI ratio)."""
    out = {}
    for net in sorted({t[1] for t in trials}):
        ts = [t for t in trials if t[1] == net]
        share = sum(t[4] == t[3] for t in ts) / len(ts)
        out[net] = (len(ts), share, statistics.median(ratio(t[3], t[5], t[6]) for t in ts))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/painting", description=__doc__.splitlines()[0])
    ap.add_argument("stores", nargs="+", type=Path)
    ap.add_argument("--site", default="*", help="only sites matching this glob")
    ap.add_argument("--setting", action="append", help="only this protocol setting")
    ap.add_argument("--by-site", action="store_true", help="also per site")
    args = ap.parse_args(argv)
    trials = [t for s in args.stores for t in rows(s)
              if fnmatch(t[0].rsplit("/", 1)[-1], args.site)
              and (not args.setting or t[2] in args.setting)]
    if not trials:
        print("bench/painting: no ok trials with visual metrics", file=sys.stderr)
        return 2
    print("| network | trials | VC85 == FVC | median (SI-FVC)/(LVC-FVC) | pass |")
    print("|---|---:|---:|---:|---|")
    for net, (n, share, med) in figures(trials).items():
        ok = share <= SHARE_MAX and med >= RATIO_MIN
        print(f"| {net} | {n} | {share:.0%} | {med:.2f} | {'yes' if ok else 'no'} |")
    if args.by_site:
        print("\n| site | network | trials | VC85 == FVC | median ratio |\n|---|---|---:|---:|---:|")
        for site in sorted({t[0] for t in trials}):
            for net, (n, share, med) in figures([t for t in trials if t[0] == site]).items():
                print(f"| {site.rsplit('/', 1)[-1]} | {net} | {n} | {share:.0%} | {med:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
