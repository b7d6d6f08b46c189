"""The campaign's setup as run, from its manifest (the paper's Tables 1 and 2):
networks with their rates, RTT, buffer, loss, calibration and video frame rate; protocol settings with
their stack, congestion control, initial window and pacing; with adaptive runs, the runs
each site x network got and why it stopped.

A manifest comes from someone's results folder: it is read through its model
(results_contract.manifest), which checked every value's type on load."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from analysis.statistics.precision import Precision, half_width, meets
from results_contract.manifest import AdaptiveRuns, Manifest
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


def _value(v: Any) -> Any:
    """v when it is a plain number, text or flag (a flag as yes/no); None otherwise."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    return v if isinstance(v, (int, float, str)) else None


def networks_table(manifest: Manifest | None, networks: Iterable[str] = ()) -> pd.DataFrame:
    """One row per network (of the manifest, and of `networks`, e.g. the trials'): the
    profile's rates, minimum RTT, buffer and loss; the calibrated RTTs when the
    manifest has them. A trace-driven link shows its trace's name as its rate. Each
    network's figures are those of the latest session that ran it (the manifest's top
    level: results_contract.manifest)."""
    listed = manifest.networks if manifest is not None else {}
    calibration = manifest.calibration if manifest is not None else {}
    rows = []
    for name in networks_in({*listed, *map(str, networks)}):
        entry = listed.get(name)
        profile = entry.profile if entry is not None else None
        row: dict[str, Any] = {"network": name}
        for key, column in NETWORK_COLUMNS.items():
            row[column] = _value(getattr(profile, key, None))
        for side in ("downlink", "uplink"):
            trace = _value(getattr(profile, f"{side}_trace", None))
            if row[NETWORK_COLUMNS[f"{side}_mbit"]] is None and trace is not None:
                row[NETWORK_COLUMNS[f"{side}_mbit"]] = f"trace {trace}"
        cal = calibration.get(name)
        for key, column in CALIBRATION_COLUMNS.items():
            row[column] = _value(getattr(cal, key, None))
        row[VIDEO_COLUMN] = entry.video_fps if entry is not None else None
        rows.append(row)
    columns = ["network", *NETWORK_COLUMNS.values(), *CALIBRATION_COLUMNS.values(),
               VIDEO_COLUMN]
    return _drop_empty(pd.DataFrame(rows, columns=columns, dtype=object))


def settings_table(manifest: Manifest | None, settings: Iterable[str] = ()) -> pd.DataFrame:
    """One row per protocol setting (of the manifest, and `settings`): stack, congestion
    control, initial window, pacing, session tickets and early data as run."""
    listed = manifest.protocols if manifest is not None else {}
    rows = []
    for name in settings_in({*listed, *map(str, settings)}):
        entry = listed.get(name)
        row: dict[str, Any] = {"setting": name}
        for key, column in SETTING_COLUMNS.items():
            value = getattr(entry.profile, key) if entry is not None else None
            if value is None and key == "stack" and entry is not None:
                value = entry.stack
            row[column] = _value(value)
        rows.append(row)
    columns = ["setting", *SETTING_COLUMNS.values()]
    return _drop_empty(pd.DataFrame(rows, columns=columns, dtype=object))


def _drop_empty(df: pd.DataFrame) -> pd.DataFrame:
    """Columns no row has a value in are left out (an old manifest, no calibration)."""
    keep = [c for i, c in enumerate(df.columns) if i == 0 or df[c].notna().any()]
    return df[keep]


def adaptive_runs(manifest: Manifest | None) -> tuple[int, int, Precision] | None:
    """(min, max, precision) of the campaign's adaptive `runs` as the manifest records
    it; None for a fixed number of runs or a precision that does not parse."""
    campaign = manifest.campaign if manifest is not None else None
    runs = campaign.settings.runs if campaign is not None else None
    if not isinstance(runs, AdaptiveRuns) or not 1 <= runs.min <= runs.max:
        return None
    try:
        return runs.min, runs.max, Precision.parse(runs.precision)
    except ValueError:
        return None


def runs_table(trials: pd.DataFrame, manifest: Manifest | None) -> pd.DataFrame:
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
        for protocol in g["setting"].unique():
            values = ok.loc[ok["setting"] == protocol, "plt_ms"].astype(float).tolist()
            met = met and meets(values, bound)
            if len(values) >= 2:
                widths.append((half_width(values), sum(values) / len(values)))
        rows.append({"site": site, "network": network, "runs": runs,
                     "stopped": "max reached" if runs >= most else "precision met",
                     "widest ± (%)": max((100 * w / m for w, m in widths), default=None),
                     "widest ± (ms)": max((w for w, _ in widths), default=None),
                     "precision met": "yes" if met else "no"})
    return pd.DataFrame(rows, columns=columns)
