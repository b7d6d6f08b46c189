"""The mixed model's error rate and coverage on many seeded synthetic campaigns.

analysis.statistics.across.mixed_fit (statsmodels MixedLM on log values: setting fixed, site
random in intercept and slope, run block within site as a variance component) is
fitted to --campaigns campaigns of analysis.synthetic.blocked (20 sites x 10 runs,
site-level effects spread around the truth with SD 2 %, a 3 % block shock, 5 % run
noise) with no true effect and as many with a true 3 % effect. Printed: how often
it calls a difference at alpha 0.01 and 0.05 without an effect, how often it finds
the 3 % one, and how often its 95 % interval covers the truth, with the normal
(Wald z) quantile and with Student's t on sites - 1 degrees of freedom (what
mixed_fit reports), beside the t test across sites on the same campaigns, and the
median ratio of the model's SE to the t test's. Too slow for a unit test (about 0.25 s
a fit on the 2-core VM). Run via bench/mixed-model.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=200, help="campaigns per truth")
    parser.add_argument("--sites", type=int, default=20)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()

    from analysis import synthetic
    from analysis.statistics import across
    started = time.perf_counter()
    print(f"{args.campaigns} campaigns per truth, {args.sites} sites x {args.runs} runs "
          f"(analysis.synthetic.blocked)")
    print("| truth | model | calls at 0.01 | calls at 0.05 | 95 % coverage (z) | "
          "95 % coverage (t, sites - 1) | block term | t test across sites: calls at 0.01, "
          "coverage | SE / t test's SE |")
    print("|---|---|---|---|---|---|---|---|---|")
    for truth, seed in ((0.0, 31), (0.03, 32)):
        v = synthetic.blocked(args.campaigns, sites=args.sites, runs=args.runs,
                              effects=(0.0, truth), seed=seed)
        fits = []
        for values in v:
            meas = synthetic.blocked_measurements(values, ("tcp", "quic"))
            g = meas.assign(x=(meas["setting"] == "quic").astype(float))
            fits.append(across.mixed_fit(g))
        est = np.array([f["estimate"] for f in fits])
        se = np.array([f["se"] for f in fits])
        ok = np.array([f["converged"] for f in fits])
        block = np.mean([f["block"] for f in fits])
        p_z = 2 * stats.norm.sf(np.abs(est / se))
        p_t = 2 * stats.t.sf(np.abs(est / se), args.sites - 1)
        zq, tq = stats.norm.isf(0.025), stats.t.isf(0.025, args.sites - 1)
        cover_z = np.abs(est - truth) <= zq * se
        cover_t = np.abs(est - truth) <= tq * se
        t = across.t_test(across.site_log_ratio(v[:, :, 1], v[:, :, 0]))
        t_cover = (t["low"] <= truth) & (truth <= t["high"])
        print(f"| {truth:.0%} | z | {np.mean(p_z[ok] < 0.01):.1%} | {np.mean(p_z[ok] < 0.05):.1%} "
              f"| {np.mean(cover_z[ok]):.1%} | | {block:.0%} | {np.mean(t['p'] < 0.01):.1%}, "
              f"{np.mean(t_cover):.1%} | {np.median(se[ok] / t['se'][ok]):.2f} |")
        print(f"| {truth:.0%} | t | {np.mean(p_t[ok] < 0.01):.1%} | {np.mean(p_t[ok] < 0.05):.1%} "
              f"| | {np.mean(cover_t[ok]):.1%} | | | |")
        if not ok.all():
            print(f"  ({int((~ok).sum())} fits did not converge and are left out)")
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
