"""One trial's stored row and its trial.json, from what its page load left behind.

    row, files = build(trial, outcome, record, attempt, campaign, network, recording)

The verdict (testbed.measure.trial.judge) decides the status; metrics are
stored only for ok trials. `files` is the outcome's kept files plus
trial.json: the row and the evidence behind the verdict.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass, replace

from results_contract import trial_folder as tf
from results_contract.schema import COMPLETENESS_COLUMNS, LOAD_COLUMNS
from testbed.campaign.plan import plan as plan_mod
from testbed.campaign.plan.config import Campaign
from testbed.campaign.store.store import Row
from testbed.formats import recording as rec
from testbed.formats.profiles import NetworkProfile
from testbed.measure import completeness, metrics, trial_har
from testbed.measure.browser_process import Outcome
from testbed.measure.load import Load
from testbed.measure.trial import Evidence, Resumption, judge
from testbed.protocols import ServerOptions
from testbed.replay import server_summary


@dataclass
class TrialRecord:
    """What the runner saw around one trial's load."""

    setting: ServerOptions
    visit: str = "first"
    """"first" or "warm" (testbed.campaign.plan.config.VISITS)."""
    before: dict | None = None
    """The replay servers' summary before the load (requests, misses, bytes)."""
    after: dict | None = None
    server_error: str | None = None
    started_at: float | None = None
    warm_before: dict | None = None
    """A warm visit: the servers' summary before its unmeasured load..."""
    warm_after: dict | None = None
    """...and after it (the measured load is counted from `before`, read then)."""
    launched_at: float | None = None
    """When the trial's browser was launched (time.time()): its telemetry window opens."""
    captures: dict[str, dict[str, int]] | None = None
    """Capture -> its size before and after gzip (the campaign's `capture`); None: none."""
    connections: list[dict] | None = None
    """Its rows of table `connections` (testbed.measure.telemetry); None: no telemetry."""


def utc(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="milliseconds")


def resumption_columns(stack: str, r: Resumption | None) -> dict:
    """tls_resumed, early_data (TCP) and quic_0rtt (QUIC) as stored: 1, 0 or None."""
    def flag(v: bool | None) -> int | None:
        return None if v is None else int(v)

    resumed = r.all_resumed if r is not None else None
    early = (r.early if r is not None and r.connections > 0 else None)
    return {"tls_resumed": flag(resumed),
            "early_data": flag(early) if stack == "tcp" else None,
            "quic_0rtt": flag(early) if stack == "quic" else None}


def load_columns(load: Load | None) -> dict:
    """The columns of how busy the machine was during the load (schema.LOAD_COLUMNS),
    all None when it was not read."""
    if load is None:
        return dict.fromkeys(LOAD_COLUMNS)
    over = load.load_over_limit
    return {"cpu_busy": load.cpu_busy, "cpu_steal": load.cpu_steal,
            "browser_cpu_s": load.browser_cpu_s, "server_cpu_s": load.server_cpu_s,
            "loadavg_1m": load.loadavg_1m, "load_wait_s": load.load_wait_s,
            "load_over_limit": None if over is None else int(over)}


def completeness_columns(v: completeness.Verdict | None) -> dict:
    """missing_resources and after_onload_resources (schema.COMPLETENESS_COLUMNS)."""
    if v is None:
        return dict.fromkeys(COMPLETENESS_COLUMNS)
    return {"missing_resources": len(v.missing_before_onload) + len(v.missing_after_onload),
            "after_onload_resources": len(v.after_onload)}


def completeness_evidence(v: completeness.Verdict | None) -> dict | None:
    """What trial.json keeps of the judge's verdict: every missing URL, what the trial
    asked for after its load event, and how each URL was obtained when not over the
    network (a cache, a preload, a duplicate)."""
    if v is None:
        return None
    return {"missing": [*v.missing_before_onload, *v.missing_after_onload],
            "onload_ms": v.onload_ms,
            "after_onload": list(v.after_onload),
            "not_from_network": {u: o.how for u, o in sorted(v.obtained.items())
                                 if o.how != completeness.NETWORK},
            "duplicates": {u: o.entries for u, o in sorted(v.obtained.items())
                           if o.entries > 1}}


def build(trial: plan_mod.Trial, o: Outcome, record: TrialRecord, attempt: int,
          campaign: Campaign, network: NetworkProfile, recording: rec.Recording,
          worker: str | None = None, lane: int = 0) -> tuple[Row, dict]:
    """The trial's row and its files (name -> content or a staged file); worker: who
    measured it (`<host>/<worker id>`), in which of its lanes."""
    setting = record.setting
    m = metrics.extract(o.result, o.visual)
    protocols = trial_har.protocols(o.har) if o.har is not None else {}
    diff = (server_summary.diff(record.before, record.after)
            if record.before is not None and record.after is not None else None)
    warm_up = (server_summary.diff(record.warm_before, record.warm_after)
               if record.warm_before is not None and record.warm_after is not None else None)
    evidence = Evidence(
        stack=setting.stack, measured=o.measured, metrics=m, protocols=protocols,
        misses=diff["misses"] if diff else None, server_error=record.server_error,
        browser_error=o.browser_error, timed_out=o.timed_out, visual_error=o.visual_error,
        video=campaign.video, max_misses=campaign.max_misses, warm=record.visit == "warm",
        early_data=setting.early_data, resumption=Resumption.of(diff, warm_up))
    needed = completeness.needed(recording)
    whole = (completeness.judge(needed.expected(), o.har, repeat_visit=record.visit == "warm",
                                answer=completeness.answered_by(recording), load_ms=m.plt_ms)
             if o.har is not None and needed.known else None)
    evidence = replace(evidence, incomplete=whole.reason() if whole is not None else None)
    verdict = judge(evidence)
    ok = verdict.ok
    kept = o.kept
    wall_s = kept.wall_s if kept is not None and kept.wall_s is not None else None
    row = Row(
        trial_id=trial.id, campaign=campaign.name, site=trial.site,
        network=trial.network, setting=trial.setting, run=trial.run,
        status=verdict.status, reason=verdict.reason, attempt=attempt,
        started_at=utc(record.started_at or time.time()),
        wall_s=float(wall_s if wall_s is not None else round(o.ended - o.began, 3)),
        plt_ms=m.plt_ms if ok else None, fvc_ms=m.fvc_ms if ok else None,
        lvc_ms=m.lvc_ms if ok else None, vc85_ms=m.vc85_ms if ok else None,
        si_ms=m.si_ms if ok else None, ttfb_ms=m.ttfb_ms if ok else None,
        fp_ms=m.fp_ms if ok else None, fcp_ms=m.fcp_ms if ok else None,
        lcp_ms=m.lcp_ms if ok else None, dcl_ms=m.dcl_ms if ok else None,
        requests=trial_har.requests(o.har) if o.har is not None else None,
        bytes=diff["bytes"] if diff else None,
        misses=diff["misses"] if diff else None,
        http_versions=Row.versions_json(protocols) if o.har is not None else None,
        max_in_flight=(Row.in_flight_json(trial_har.max_in_flight(o.har))
                       if o.har is not None else None),
        rtt_ms=float(network.min_rtt_ms),
        origins=len(recording.hosts),
        worker=worker,
        lane=lane,
        visit=record.visit,
        client=trial.client,
        **resumption_columns(setting.stack, evidence.resumption),
        **load_columns(o.load),
        **completeness_columns(whole),
    )
    files = dict(kept.files) if kept is not None else {}
    files[tf.TRIAL] = json.dumps({
        "row": row.__dict__, "evidence": {
            "measured": o.measured, "browser_error": o.browser_error,
            "timed_out": o.timed_out, "visual_error": o.visual_error,
            "server_error": record.server_error,
            "miss_urls": diff["miss_urls"] if diff else None,
            "metrics_all": m.__dict__,
            "resumption": evidence.resumption.__dict__ if evidence.resumption else None,
            "server": ({k: v for k, v in diff.items() if k != "miss_urls"} if diff else None),
            "warm_up": warm_up,
            "warm_up_s": o.warm_up_s,
            "completeness": completeness_evidence(whole),
            "window": o.window,
            "browsertime_log": kept.log if kept is not None else None},
        **({"captures": record.captures} if record.captures is not None else {}),
    }, indent=1).encode()
    if record.connections is not None:
        files[tf.CONNECTIONS] = json.dumps(
            [{"trial_id": row.trial_id, **c} for c in record.connections], indent=1).encode()
    return row, files
