"""The browsers (clients) of a campaign: which are present, one client's trials, and
the clients side by side.

Comparisons are made within a client: each setting against another on the same
browser's trials. A campaign with `client = ["chromium", "firefox"]` is analysed
once per client (`testbed report` writes a report per client; the notebook walks
through one, `TESTBED_CLIENT`); `side_by_side` faces the clients' figures, each
setting's median relative to the baseline of its own client, and tests nothing
between them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from results_contract.schema import CLIENTS, DEFAULT_CLIENT


def client_of(trials: pd.DataFrame) -> pd.Series:
    """Each trial's client (a store made before the column: chromium)."""
    if "client" not in trials.columns:
        return pd.Series([DEFAULT_CLIENT] * len(trials), index=trials.index, dtype="string")
    return trials["client"].astype("string").fillna(DEFAULT_CLIENT)


def present(trials: pd.DataFrame) -> list[str]:
    """The clients with a trial in `trials`, in CLIENTS' order (chromium first)."""
    clients = client_of(trials)
    return [c for c in CLIENTS if (clients == c).any()]


def only(trials: pd.DataFrame, mask: pd.Series | np.ndarray) -> pd.DataFrame:
    """The rows of `mask`, their categorical columns without the categories they no
    longer hold (the analysis groups by them)."""
    out = trials[np.asarray(mask, dtype=bool)].reset_index(drop=True)
    for column in out.columns:
        if isinstance(out[column].dtype, pd.CategoricalDtype):
            out[column] = out[column].cat.remove_unused_categories()
    return out


def of_client(trials: pd.DataFrame, client: str) -> pd.DataFrame:
    """The trials of one client (all of them when it is the only one present); a
    ValueError naming the clients present when it has none."""
    there = present(trials)
    if there == [client]:
        return trials
    if client not in there:
        raise ValueError(f"client {client}: no trial of that client; clients present: "
                         f"{', '.join(there) or 'none'}")
    return only(trials, (client_of(trials) == client).to_numpy())


def side_by_side(trials: pd.DataFrame, baseline: str, metric: str = "plt_ms") -> pd.DataFrame:
    """Per network and setting, for each client: the ok trials, the median of `metric`
    and that median relative to the baseline setting's median of the same client and
    network (negative: faster than the baseline). One column group per client."""
    ok = trials[trials["status"] == "ok"].assign(client=client_of(trials))
    ok = ok[ok[metric].notna()]
    if ok.empty:
        return pd.DataFrame()
    g = ok.groupby(["client", "network", "setting"], observed=True)[metric]
    table = pd.DataFrame({"n": g.size(), "median": g.median()}).reset_index()
    base = table[table["setting"] == baseline].set_index(["client", "network"])["median"]
    keys = pd.MultiIndex.from_frame(table[["client", "network"]])
    table["vs_" + baseline] = table["median"].to_numpy() / base.reindex(keys).to_numpy() - 1
    table["setting"] = table["setting"].astype(str)
    wide = table.set_index(["network", "setting", "client"]).unstack("client")
    wide.columns = wide.columns.swaplevel(0, 1)
    order = [c for c in CLIENTS if c in wide.columns.get_level_values(0)]
    return wide[[(c, v) for c in order for v in ("n", "median", "vs_" + baseline)
                 if (c, v) in wide.columns]]
