"""Did a setting's loads run on a busier machine than its partner's?

On a busy 2-core machine user-space QUIC (h3server) may lose to kernel TCP for
want of CPU. Every trial records the whole machine's CPU busy share during its
load (column `cpu_busy`, testbed.measure.load); this compares, per network and
client, the medians of the two settings of each compared pair (the profiles'
stack twins and BBR twins, profiles/comparisons.toml) over their ok trials, and
flags a pair whose medians differ by more than BUSIER_BY.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from analysis.statistics.stats import sort_table
from results_contract import profiles_meta
from results_contract.load import ok_trials

BUSIER_BY = 0.10
"""A pair is flagged when one setting's median cpu_busy is more than 10 percentage
points above its partner's. A page load alone keeps a 2-core machine some 30-60 %
busy, and the medians of a few dozen loads move by a few points between runs of the
same setting; a 10-point gap is beyond that, and is a share of the machine (a fifth
of a core on 2 cores) large enough to slow a CPU-bound user-space stack."""

COLUMNS = ["network", "client", "a", "b", "n_a", "n_b", "busy_a", "busy_b", "busy_diff",
           "busier"]


def pairs_of(meta: profiles_meta.ProfilesMeta | None = None) -> list[tuple[str, str]]:
    """The compared pairs: stack twins (TCP, QUIC) then BBR twins (BBR, CUBIC)."""
    meta = meta or profiles_meta.current()
    return list(dict.fromkeys([*meta.stack_twins, *meta.bbr_twins]))


def busier_pairs(trials: pd.DataFrame, pairs: Sequence[tuple[str, str]] | None = None,
                 threshold: float = BUSIER_BY) -> pd.DataFrame:
    """Per network x client x pair (a, b) with both settings' cpu_busy known: their ok
    trials' counts and median cpu_busy, busy_diff = busy_a - busy_b, and `busier`: the
    setting whose median is more than `threshold` above the other's, else ""."""
    if "cpu_busy" not in trials.columns:
        return pd.DataFrame(columns=COLUMNS)
    pairs = pairs_of() if pairs is None else pairs
    ok = ok_trials(trials)
    ok = ok[ok["cpu_busy"].notna()]
    if ok.empty:
        return pd.DataFrame(columns=COLUMNS)
    client = ok["client"].fillna("chromium") if "client" in ok.columns else "chromium"
    ok = ok.assign(client=client)
    groups = ok.groupby(["network", "client", "setting"], observed=True)["cpu_busy"]
    medians, counts = groups.median(), groups.size()
    rows = []
    for (network, cl) in sorted({(n, c) for n, c, _ in medians.index}):
        for a, b in pairs:
            ka, kb = (network, cl, a), (network, cl, b)
            if ka not in medians.index or kb not in medians.index:
                continue
            busy_a, busy_b = float(medians[ka]), float(medians[kb])
            diff = busy_a - busy_b
            busier = a if diff > threshold else b if -diff > threshold else ""
            rows.append((network, cl, a, b, int(counts[ka]), int(counts[kb]), busy_a, busy_b,
                         diff, busier))
    return sort_table(pd.DataFrame(rows, columns=COLUMNS))


def flagged(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of busier_pairs whose settings ran on machines unequally busy."""
    return table[table["busier"] != ""] if len(table) else table
