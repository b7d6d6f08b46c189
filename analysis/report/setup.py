"""The campaign's setup as run, from its manifest (the paper's Tables 1 and 2):
networks with their rates, RTT, buffer, loss, calibration and video frame rate; protocol settings with
their stack, congestion control, initial window and pacing; with adaptive runs, the runs
each site x network got and why it stopped.

A manifest comes from someone's results folder: every value is checked for its type
and anything else is shown as missing, never trusted."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from analysis.statistics.precision import Precision, half_width, meets
from results_contract.schema import OK, networks_in, settings_in

NETWORK_COLUMNS = {
    "downlink_mbit": "downlink (Mbit/s)", "uplink_mbit": "uplink (Mbit/s)",
    "min_rtt_ms": "min RTT (ms)", "buffer_ms": "buffer (ms)",
    "downlink_loss_percent": "downlink loss (%)", "uplink_loss_percent": "uplink loss (%)",
}
"""Network profile key -> column of the networks table."""

CALIBRATION_COLUMNS = {"min_rtt_ms": "calibrated min RTT (ms)",
                       "median_rtt_ms": "calibrated median RTT (ms)"}
"""Calibration key (manifest `calibration`) -> column of the networks table."""

VIDEO_COLUMN = "video (fps)"
"""The networks table's column of the frame rate trials were recorded at (manifest
`networks.NAME.video_fps`; visual metrics move in steps of one frame)."""

SETTING_COLUMNS = {"stack": "stack", "congestion_control": "congestion control",
                   "initial_window_packets": "initial window (packets)", "pacing": "pacing",
                   "session_tickets": "session tickets", "early_data": "early data / 0-RTT"}
"""Protocol setting key -> column of the settings table."""


def _entries(manifest: dict[str, Any] | None, key: str) -> dict[str, Any]:
    value = (manifest or {}).get(key)
    return value if isinstance(value, dict) else {}


def _value(d: Any, key: str) -> Any:
    """d[key] when it is a plain number, text or flag; None otherwise."""
    v = d.get(key) if isinstance(d, dict) else None
    if isinstance(v, bool):
        return "yes" if v else "no"
    return v if isinstance(v, (int, float, str)) else None


def networks_table(manifest: dict[str, Any] | None, networks: Iterable[str] = ()) -> pd.DataFrame:
    """One row per network (of the manifest, and of `networks`, e.g. the trials'): the
    profile's rates, minimum RTT, buffer and loss; the calibrated RTTs when the
    manifest has them. A trace-driven link shows its trace's name as its rate."""
    listed, calibration = _entries(manifest, "networks"), _entries(manifest, "calibration")
    rows = []
    for name in networks_in({*map(str, listed), *map(str, networks)}):
        entry = listed.get(name)
        profile = entry.get("profile") if isinstance(entry, dict) else None
        row: dict[str, Any] = {"network": name}
        for key, column in NETWORK_COLUMNS.items():
            row[column] = _value(profile, key)
        for side in ("downlink", "uplink"):
            trace = _value(profile, f"{side}_trace")
            if row[NETWORK_COLUMNS[f"{side}_mbit"]] is None and trace is not None:
                row[NETWORK_COLUMNS[f"{side}_mbit"]] = f"trace {trace}"
        for key, column in CALIBRATION_COLUMNS.items():
            row[column] = _value(calibration.get(name), key)
        fps = _value(entry, "video_fps")
        row[VIDEO_COLUMN] = fps if isinstance(fps, int) and not isinstance(fps, bool) else None
        rows.append(row)
    columns = ["network", *NETWORK_COLUMNS.values(), *CALIBRATION_COLUMNS.values(),
               VIDEO_COLUMN]
    return _drop_empty(pd.DataFrame(rows, columns=columns, dtype=object))


def settings_table(manifest: dict[str, Any] | None, settings: Iterable[str] = ()) -> pd.DataFrame:
    """One row per protocol setting (of the manifest, and `settings`): stack, congestion
    control, initial window, pacing, session tickets and early data as run."""
    listed = _entries(manifest, "protocols")
    rows = []
    for name in settings_in({*map(str, listed), *map(str, settings)}):
        entry: dict[str, Any] = e if isinstance(e := listed.get(name), dict) else {}
        profile: dict[str, Any] = p if isinstance(p := entry.get("profile"), dict) else {}
        row: dict[str, Any] = {"setting": name}
        for key, column in SETTING_COLUMNS.items():
            row[column] = _value(profile, key) if key in profile else _value(entry, key)
        rows.append(row)
    columns = ["setting", *SETTING_COLUMNS.values()]
    return _drop_empty(pd.DataFrame(rows, columns=columns, dtype=object))


def _drop_empty(df: pd.DataFrame) -> pd.DataFrame:
    """Columns no row has a value in are left out (an old manifest, no calibration)."""
    keep = [c for i, c in enumerate(df.columns) if i == 0 or df[c].notna().any()]
    return df[keep]


def adaptive_runs(manifest: dict[str, Any] | None) -> tuple[int, int, Precision] | None:
    """(min, max, precision) of the campaign's adaptive `runs` as the manifest records
    it; None for a fixed number of runs or anything not in that shape."""
    campaign = _entries(manifest, "campaign")
    settings: dict[str, Any] = s if isinstance(s := campaign.get("settings"), dict) else {}
    runs = settings.get("runs")
    if not isinstance(runs, dict):
        return None
    low, high, text = runs.get("min"), runs.get("max"), runs.get("precision")
    if not (isinstance(low, int) and isinstance(high, int) and isinstance(text, str)) or \
            isinstance(low, bool) or isinstance(high, bool) or not 1 <= low <= high:
        return None
    try:
        return low, high, Precision.parse(text)
    except ValueError:
        return None


def runs_table(trials: pd.DataFrame, manifest: dict[str, Any] | None) -> pd.DataFrame:
    """Adaptive runs: per site and network, the runs it got, why it stopped (precision met
    before the maximum, or the maximum reached) and, recomputed from its ok trials, the
    widest 95 % interval half-width of a setting's PLT mean and whether every setting's
    meets the precision. Empty for a campaign with a fixed number of runs."""
    found = adaptive_runs(manifest)
    columns = ["site", "network", "runs", "stopped", "widest ± (%)", "widest ± (ms)",
               "precision met"]
    if found is None or trials.empty:
        return pd.DataFrame(columns=columns)
    _, most, bound = found
    rows = []
    for (site, network), g in trials.groupby(["site", "network"], observed=True, sort=True):
        runs = int(g["run"].max()) + 1
        ok = g[(g["status"] == OK) & (g["plt_ms"] > 0)]
        widths, met = [], True
        for protocol in g["protocol"].unique():
            values = ok.loc[ok["protocol"] == protocol, "plt_ms"].astype(float).tolist()
            met = met and meets(values, bound)
            if len(values) >= 2:
                widths.append((half_width(values), sum(values) / len(values)))
        rows.append({"site": site, "network": network, "runs": runs,
                     "stopped": "max reached" if runs >= most else "precision met",
                     "widest ± (%)": max((100 * w / m for w, m in widths), default=None),
                     "widest ± (ms)": max((w for w, _ in widths), default=None),
                     "precision met": "yes" if met else "no"})
    return pd.DataFrame(rows, columns=columns)
