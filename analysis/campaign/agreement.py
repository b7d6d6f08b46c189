"""Two campaigns compared: do they reach the same verdicts? (`testbed compare A B`)

Two result folders of the same matrix (two machines, two dates, two versions
of a server) are analysed alike; per pair x network x metric x site this
gives each campaign's verdict (win / tie / loss), whether they agree, and the
difference of their relative differences with a 95 % CI. The CI combines the
two campaigns' bootstrap CIs as independent normal errors: half-width
sqrt(h_A^2 + h_B^2), h being each CI's half-width. The overall agreement
score is the share of sites tested in both whose verdicts agree. The
manifests' differences (versions, calibration, sysctls, hashes) are listed,
suspects first, because they are the first suspects when verdicts differ; an
export carries no manifest, so a folder and its own export show none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.campaign.model import Config, choose_baseline, few_runs, pairs_of, verdicts
from analysis.statistics.across import DEFAULT_MARGIN, equivalence_table, site_table
from analysis.statistics.stats import DEFAULT_ALPHA, measurements, sort_pairs, summarize
from results_contract.cells import spreadsheet_safe
from results_contract.load import load, load_manifest
from results_contract.manifest import Manifest

KEYS = ["a", "b", "network", "metric", "site"]

EQUIVALENCE_POWER = 0.8
"""Power the runs printed for an inconclusive cell aim at (analysis.statistics.planner)."""

SUSPECTS = ("version", "calibration", "sysctl", "kernel", "chromium", "browsertime", "hash")
"""Manifest keys containing these words are listed first."""


@dataclass(frozen=True)
class Agreement:
    sites: pd.DataFrame
    """Per pair x network x metric x site: verdict_a, verdict_b, agree, rel_a, rel_b,
    diff_rel (rel_a - rel_b) with diff_low, diff_high."""
    summary: pd.DataFrame
    """Per pair x network x metric: sites compared, agreeing, agreement share, median
    diff_rel."""
    manifest_diff: pd.DataFrame
    """key, a, b: every manifest entry that differs (suspects first)."""
    score: float
    """Share of the sites tested in both campaigns whose verdicts agree (NaN if none)."""
    baseline: str
    pairs: tuple[tuple[str, str], ...]
    equivalence: pd.DataFrame | None = None
    """Per pair x network x metric: TOST across sites on the difference of the two
    campaigns' log ratios (`cell_equivalence`): equivalent / different / inconclusive."""
    margin: float = DEFAULT_MARGIN
    equivalence_alpha: float = DEFAULT_ALPHA
    """Level of the two one-sided tests: the per-site tests' (the report's) alpha unless
    given."""
    warnings: tuple[str, ...] = ()
    """Why the verdicts deserve caution, as `testbed report` says it (few runs), per
    campaign ("A: …", "B: …")."""

    def tables(self) -> dict[str, pd.DataFrame]:
        extra = {} if self.equivalence is None else {"equivalence": self.equivalence}
        return {"sites": self.sites, "summary": self.summary, "manifest_diff": self.manifest_diff,
                **extra}


def read_manifest(folder: Path) -> Manifest | None:
    """The folder's manifest.json (None when there is none), by the results loader (never
    through a symlink, checked and upgraded by its model)."""
    return load_manifest(folder)


def _document(manifest: Manifest | None) -> dict[str, Any]:
    """The manifest as its file would hold it now ({} for none)."""
    return manifest.document() if manifest is not None else {}


def flatten(value: Any, prefix: str = "") -> dict[str, object]:
    """Nested dicts and lists as {"a.b.0": leaf}."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    if isinstance(value, list):
        out = {}
        for i, v in enumerate(value):
            out.update(flatten(v, f"{prefix}.{i}" if prefix else str(i)))
        return out or {prefix: "[]"}
    return {prefix: value}


def manifest_diff(a: dict[str, Any], b: dict[str, Any]) -> pd.DataFrame:
    """Every flattened manifest key whose value differs; suspects first, then by key."""
    fa, fb = flatten(a), flatten(b)
    rows = [(k, _text(fa.get(k)), _text(fb.get(k))) for k in sorted(set(fa) | set(fb))
            if fa.get(k, _MISSING) != fb.get(k, _MISSING)]
    rows.sort(key=lambda r: (not any(w in r[0].lower() for w in SUSPECTS), r[0]))
    return pd.DataFrame(rows, columns=["key", "a", "b"])


_MISSING = object()


def manifests_diff(a: Manifest | None, b: Manifest | None) -> pd.DataFrame:
    """manifest_diff() of two campaigns' manifests; none when either has no manifest (an
    export carries none: a folder and its own export are one campaign, not 45 keys
    "(absent)" apart)."""
    if a is None or b is None:
        return manifest_diff({}, {})
    return manifest_diff(_document(a), _document(b))


def _text(value: object) -> str:
    return "(absent)" if value is None else str(value)


def agreement(trials_a: pd.DataFrame, trials_b: pd.DataFrame,
              manifest_a: Manifest | None = None,
              manifest_b: Manifest | None = None, baseline: str | None = None,
              pairs: Sequence[tuple[str, str]] | None = None, alpha: float = DEFAULT_ALPHA,
              test: str = "anova", correction: str = "none",
              metrics: Sequence[str] | None = None, resamples: int = 2000,
              margin: float = DEFAULT_MARGIN,
              equivalence_alpha: float | None = None) -> Agreement:
    """Compare two campaigns' verdicts on the settings, networks, sites and metrics they
    share, and test per cell whether their effects are equivalent within ±margin (two
    one-sided tests at `equivalence_alpha`, by default `alpha`)."""
    equivalence_alpha = alpha if equivalence_alpha is None else equivalence_alpha
    common = set(trials_a["setting"]) & set(trials_b["setting"])
    if baseline is not None and baseline not in common:
        raise ValueError(f"no setting {baseline} in both campaigns; "
                         f"in both: {', '.join(sorted(common)) or 'none'}")
    baseline, _ = choose_baseline(common, baseline)
    config = Config(baseline=baseline, alpha=alpha, test=test, correction=correction,
                    resamples=resamples, pairs=None if pairs is None else tuple(pairs))
    pairs = pairs_of(common, baseline, config)
    parts, logs, warnings = [], [], []
    for name, trials in (("A", trials_a), ("B", trials_b)):
        meas = measurements(trials, metrics) if metrics else measurements(trials)
        warnings += [f"{name}: {w}" for w in few_runs(summarize(meas))]
        logs.append(site_table(meas, pairs))
        outcomes, effects = verdicts(meas, pairs, config)
        parts.append(outcomes[KEYS + ["outcome"]].merge(
            effects[KEYS + ["rel", "rel_low", "rel_high"]], on=KEYS))
    sites = parts[0].merge(parts[1], on=KEYS, suffixes=("_a", "_b"))
    sites = sites.rename(columns={"outcome_a": "verdict_a", "outcome_b": "verdict_b"})
    tested = (sites["verdict_a"] != "untested") & (sites["verdict_b"] != "untested")
    sites["agree"] = pd.array(np.where(tested, sites["verdict_a"] == sites["verdict_b"], None),
                              dtype="boolean")
    sites["diff_rel"] = sites["rel_a"] - sites["rel_b"]
    half = np.sqrt(((sites["rel_high_a"] - sites["rel_low_a"]) / 2) ** 2
                   + ((sites["rel_high_b"] - sites["rel_low_b"]) / 2) ** 2)
    sites["diff_low"] = sites["diff_rel"] - half
    sites["diff_high"] = sites["diff_rel"] + half
    sites = sort_pairs(sites[KEYS + ["verdict_a", "verdict_b", "agree", "rel_a", "rel_b",
                                     "diff_rel", "diff_low", "diff_high"]], list(pairs))
    summary = (sites.assign(tested=sites["agree"].notna(), agreeing=sites["agree"].fillna(False))
               .groupby(KEYS[:4], sort=False, observed=True)
               .agg(sites=("site", "count"), tested=("tested", "sum"),
                    agreeing=("agreeing", "sum"), median_diff_rel=("diff_rel", "median"))
               .reset_index())
    with np.errstate(invalid="ignore", divide="ignore"):
        summary.insert(7, "agreement", summary["agreeing"] / summary["tested"].replace(0, np.nan))
    summary = sort_pairs(summary, list(pairs)) if len(summary) else summary
    tested_total = int(sites["agree"].notna().sum())
    score = float(sites["agree"].sum()) / tested_total if tested_total else float("nan")
    return Agreement(sites=sites, summary=summary,
                     manifest_diff=manifests_diff(manifest_a, manifest_b),
                     score=score, baseline=baseline, pairs=pairs,
                     equivalence=cell_equivalence(logs[0], logs[1], pairs, margin,
                                                  equivalence_alpha),
                     margin=margin, equivalence_alpha=equivalence_alpha,
                     warnings=tuple(warnings))


def cell_equivalence(logs_a: pd.DataFrame, logs_b: pd.DataFrame,
                     pairs: Sequence[tuple[str, str]],
                     margin: float = DEFAULT_MARGIN, alpha: float = DEFAULT_ALPHA,
                     power: float = EQUIVALENCE_POWER) -> pd.DataFrame:
    """Per pair x network x metric: do the two campaigns find the same effect? Per site,
    the difference of their log ratios a/b (analysis.statistics.across.site_table), then two
    one-sided tests across sites (analysis.statistics.across.equivalence, a random-effects shift:
    the sites' spread is its error) at ±margin: shift (ratio - 1) with its
    (1 - 2 alpha) interval, p_tost, p_diff and the verdict. Beside it: runs, the
    campaigns' runs per setting and site (the harmonic mean over the four groups and
    the sites), and runs_needed, the runs per setting and site each campaign would
    need for the test to say "equivalent" with probability `power` if both measure the
    same thing (analysis.statistics.planner.equivalence_runs, from the sites' observed spread)."""
    from analysis.statistics.planner import equivalence_runs

    both = logs_a.merge(logs_b, on=KEYS, suffixes=("_a", "_b"))
    both["d"] = both["d_a"] - both["d_b"]
    # each site's variance factor 1/n_a + 1/n_b (A) + the same (B); 4 / it is its runs
    inverse = sum(1 / both[c] for c in ("n_a_a", "n_b_a", "n_a_b", "n_b_b"))
    both["runs"] = 4 / inverse
    out = equivalence_table(both, KEYS[:4], margin, alpha)
    keys = KEYS[:4]
    spread = both.groupby(keys, sort=False, observed=True).agg(
        runs=("runs", lambda r: len(r) / (1 / r).sum()), sd=("d", "std"), n=("d", "count"))
    out = out.merge(spread.reset_index(), on=keys, how="left")
    out["runs_needed"] = [equivalence_runs(sd * np.sqrt(r), n, margin, alpha, power)
                          if n >= 2 else np.nan
                          for sd, r, n in zip(out["sd"], out["runs"], out["n"])]
    out = out.drop(columns=["sd", "n"])
    return sort_pairs(out, list(pairs)) if len(out) else out


def agreement_of(folder_a: Path, folder_b: Path, **options: Any) -> Agreement:
    """agreement() of two results folders (or exports), with their manifests."""
    ta, tb = load(folder_a), load(folder_b)
    ma = read_manifest(folder_a) if Path(folder_a).is_dir() else None
    mb = read_manifest(folder_b) if Path(folder_b).is_dir() else None
    return agreement(ta, tb, ma, mb, **options)


def csv_files(result: Agreement) -> dict[str, bytes]:
    """Each table as the bytes of <name>.csv (cells a spreadsheet would run neutralised:
    results_contract.cells); the caller writes them where it checked it may."""
    return {f"{name}.csv": spreadsheet_safe(table).to_csv(index=False).encode()
            for name, table in result.tables().items()}
