"""Trial health: what did not enter the statistics, and why.

Only ok trials are analysed; these tables account for the rest (failures by
reason, wrong protocol), for replay misses and retries, and cross-check that
ok trials used the protocol their setting names.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from analysis.statistics.stats import sort_table
from results_contract.schema import OK

H3 = "h3"
TCP_PROTOCOLS = frozenset({"h2", "http/1.1", "http/1.0", "h2c"})


def reason_kind(reason: object) -> str:
    """The reason's kind: the text before the first colon ('server-died: h3server' -> 'server-died')."""
    if reason is None or pd.isna(reason) or not str(reason).strip():
        return "(none)"
    return str(reason).split(":", 1)[0].strip()


def protocol_mismatch(setting: str, protocols: Any) -> bool:
    """Whether a trial's protocol counts contradict its setting.

    Settings named quic* must load over h3 only; the others must not use h3.
    Unknown or empty counts are no evidence either way (False).
    """
    if protocols is None or pd.isna(protocols):
        return False
    try:
        counts = json.loads(protocols)
    except ValueError:
        return False
    if not isinstance(counts, dict):
        return False
    used = {str(k).lower() for k, v in counts.items() if v}
    if setting.startswith("quic"):
        return bool(used & TCP_PROTOCOLS)
    return any(p.startswith(H3) for p in used)


def trial_health(trials: pd.DataFrame) -> pd.DataFrame:
    """Per network x setting: trials, ok, failed, wrong_protocol (failures), retried
    (attempt > 1), trials with replay misses and their total, and ok trials whose
    recorded protocols contradict the setting."""
    t = trials.assign(
        ok=trials["status"] == OK,
        failed=trials["status"] != OK,
        wrong_protocol=(trials["status"] != OK)
        & trials["reason"].fillna("").str.startswith("wrong-protocol"),
        retried=trials["attempt"] > 1,
        with_misses=trials["misses"].fillna(0) > 0,
        mismatch=[s == OK and protocol_mismatch(p, c) for s, p, c in
                  zip(trials["status"], trials["setting"], trials["http_versions"])],
    )
    g = t.groupby(["network", "setting"], sort=False, observed=True)
    out = g.agg(trials=("trial_id", "size"), ok=("ok", "sum"), failed=("failed", "sum"),
                wrong_protocol=("wrong_protocol", "sum"), retried=("retried", "sum"),
                with_misses=("with_misses", "sum"), misses=("misses", "sum"),
                ok_protocol_mismatch=("mismatch", "sum")).reset_index()
    out["misses"] = out["misses"].fillna(0).astype("int64")
    return sort_table(out)


def failures_by_reason(trials: pd.DataFrame) -> pd.DataFrame:
    """Failed trials per reason kind x network x setting, with up to three example reasons."""
    failed = trials[trials["status"] != OK]
    failed = failed.assign(kind=[reason_kind(r) for r in failed["reason"]])
    rows = []
    for (kind, network, protocol), group in failed.groupby(["kind", "network", "setting"],
                                                           sort=False, observed=True):
        examples = list(dict.fromkeys(group["reason"].dropna()))[:3]
        rows.append((kind, network, protocol, len(group), "; ".join(examples)))
    out = pd.DataFrame(rows, columns=["reason", "network", "setting", "trials", "examples"])
    out = sort_table(out)
    return out.sort_values("reason", kind="stable", ignore_index=True)


def overview(trials: pd.DataFrame) -> dict[str, Any]:
    """Campaign names, counts of sites, networks, settings, runs, trials, ok and failed."""
    return {
        "campaigns": sorted(set(trials["campaign"].dropna())),
        "sites": int(trials["site"].nunique()),
        "single_origin_sites": int((trials.groupby("site")["origins"].max() == 1).sum()),
        "networks": int(trials["network"].nunique()),
        "settings": int(trials["setting"].nunique()),
        "runs": int(trials["run"].max() + 1) if len(trials) else 0,
        "trials": len(trials),
        "ok": int((trials["status"] == OK).sum()),
        "failed": int((trials["status"] != OK).sum()),
    }
