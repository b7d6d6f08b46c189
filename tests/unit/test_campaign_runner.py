"""The runner's bookkeeping around a block (retries, unreached trials, a broken setup),
with the page loads replaced by made-up outcomes: no namespaces, no browser."""

from types import SimpleNamespace

import pytest
from support.scripted_campaign import outcome

from testbed.campaign.plan import config, plan
from testbed.campaign.run.rows import TrialRecord
from testbed.campaign.runner import Runner
from testbed.campaign.store.store import Store
from testbed.errors import TestbedError as SetupError
from testbed.protocols import server_options

PROTOS = ("tcp", "quic")


class Scripted(Runner):
    """A runner whose blocks return scripted outcomes: script[(trial id, attempt)] is
    True (ok), False (failed) or None (not reached)."""

    def __init__(self, campaign, out, script):
        super().__init__(campaign, out)
        self.script, self.calls = script, {}
        self.settings = {p: server_options(p, fq=False) for p in PROTOS}
        self.networks = {"dsl": SimpleNamespace(min_rtt_ms=24)}
        self.recordings = {"s": SimpleNamespace(hosts=["a.test", "b.test"], loads=1,
                                                exchanges=(), url="https://a.test/")}

    def _measure_block(self, block, servers, work, progress, task):
        out = []
        for k, t in enumerate(block.trials):
            n = self.calls[t.id] = self.calls.get(t.id, 0) + 1
            result = self.script.get((t.id, n), True)
            o = None if result is None else outcome(k, t.setting, result)
            out.append((t, o, TrialRecord(self.settings[t.setting], before={}, after={})))
        return out


def block():
    return plan.Block(0, "s", "dsl", tuple(plan.Trial("s", "dsl", p, 0) for p in PROTOS))


def campaign(tmp_path, **kw):
    text = 'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["tcp", "quic"]\n'
    text += "".join(f"{k} = {v}\n" for k, v in kw.items())
    (tmp_path / "c.toml").write_text(text)
    return config.load(tmp_path / "c.toml")


def run_block(tmp_path, script, **kw):
    r = Scripted(campaign(tmp_path, **kw), tmp_path / "out", script)
    (tmp_path / "out" / "trials").mkdir(parents=True)
    progress = SimpleNamespace(update=lambda *a, **k: None)
    with Store(tmp_path / "out" / "trials.sqlite") as store:
        try:
            r._run_block(block(), None, store, tmp_path, progress, None)
        finally:
            rows = {row_id: store.db.execute(
                "SELECT status, attempt, reason FROM trials WHERE trial_id = ?",
                (row_id,)).fetchone() for row_id in store.finished()}
    return r, rows


def test_a_failed_trial_is_tried_again_and_stored_once(tmp_path):
    r, rows = run_block(tmp_path, {("s+dsl+quic+0", 1): False}, retries=2)
    assert rows == {"s+dsl+tcp+0": ("ok", 1, None), "s+dsl+quic+0": ("ok", 2, None)}
    assert r.calls == {"s+dsl+tcp+0": 1, "s+dsl+quic+0": 2}


def test_a_trial_failing_every_attempt_is_stored_failed_with_its_reason(tmp_path):
    script = {("s+dsl+quic+0", n): False for n in (1, 2, 3)}
    _, rows = run_block(tmp_path, script, retries=2)
    assert rows["s+dsl+quic+0"] == ("failed", 3, "browser-error: UrlLoadError")


def test_trials_a_block_never_reached_run_again_without_using_an_attempt(tmp_path):
    r, rows = run_block(tmp_path, {("s+dsl+quic+0", 1): None}, retries=0)
    assert rows["s+dsl+quic+0"] == ("ok", 1, None)
    assert r.calls["s+dsl+quic+0"] == 2


def test_a_broken_setup_stops_the_campaign(tmp_path):
    script = {(f"s+dsl+{p}+0", 1): False for p in PROTOS}
    with pytest.raises(SetupError, match="2 trials in a row failed"):
        run_block(tmp_path, script, retries=0, stop_after_failures=2)


def test_ok_trials_store_the_browser_paint_timings_and_failed_ones_none(tmp_path):
    run_block(tmp_path, {("s+dsl+quic+0", n): False for n in (1, 2, 3)})
    with Store(tmp_path / "out" / "trials.sqlite") as store:
        got = {row[0]: row[1:] for row in store.db.execute(
            "SELECT trial_id, status, fp_ms, fcp_ms, lcp_ms, dcl_ms, plt_ms FROM trials")}
    assert got == {"s+dsl+tcp+0": ("ok", 95.0, 97.0, 310.0, 90.0, 500.0),
                   "s+dsl+quic+0": ("failed", None, None, None, None, None)}
