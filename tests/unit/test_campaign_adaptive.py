"""Adaptive runs (testbed.campaign.plan.adaptive): the precision, the config's `runs` table, the
decisions on synthetic rows with known noise (every group stops between min and max, a
group stopped on precision meets it), and the real runner with scripted page loads:
the same decisions after a kill and resume, and under a cluster of 2 workers."""

from __future__ import annotations

import math
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scipy import stats
from support.paths import ROOT
from support.scripted_campaign import ScriptedRunner, outcome, varied_plt
from support.scripted_results import SCRIPTED

from analysis.statistics import precision
from analysis.statistics.precision import Precision
from results_contract import schema
from testbed.campaign.plan import adaptive, config, plan
from testbed.campaign.plan.adaptive import AdaptiveRuns, Decider
from testbed.campaign.store.store import Store
from testbed.errors import InputError


def test_precision_parses_a_share_or_a_time():
    assert Precision.parse("2%") == Precision(2.0, "%")
    assert Precision.parse(" 50 ms ") == Precision(50.0, "ms")
    assert Precision.parse("2%").limit_ms(1500) == pytest.approx(30)
    assert Precision.parse("50ms").limit_ms(1500) == 50
    for bad in ("2", "0%", "-1%", "100%", "2 s", "", "%"):
        with pytest.raises(ValueError):
            Precision.parse(bad)


def test_half_width_is_the_student_t_interval():
    values = [980.0, 1010.0, 1003.0, 995.0, 1021.0, 990.0]
    n, mean = len(values), sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    low, high = stats.t.interval(0.95, n - 1, loc=mean, scale=sd / math.sqrt(n))
    assert precision.half_width(values) == pytest.approx((high - low) / 2)
    assert precision.half_width([1.0]) == math.inf
    assert precision.meets(values, Precision(2, "%"))
    assert not precision.meets(values, Precision(1, "%"))


def _campaign(tmp_path: Path, runs: str, networks=("dsl",), sites=("local-news",)) -> Path:
    p = tmp_path / "c.toml"
    p.write_text(f"sites = {list(sites)!r}\nnetworks = {list(networks)!r}\n"
                 f'protocols = ["tcp", "quic"]\nruns = {runs}\nretries = 0\n'.replace("'", '"'))
    return p


def test_runs_may_be_a_table_and_bad_tables_name_the_key(tmp_path):
    c = config.load(_campaign(tmp_path, '{ min = 5, max = 31, precision = "2%" }'))
    assert c.adaptive == AdaptiveRuns(min=5, max=31, precision="2%") and c.max_runs == 31
    assert config.load(_campaign(tmp_path, "7")).max_runs == 7
    for runs, message in (
            ('{ min = 5, max = 3, precision = "2%" }', "key runs.max: expected at least runs.min"),
            ('{ min = 2, max = 9, precision = "2%" }', "key runs.min: expected a number >= 3"),
            ('{ min = 5, max = 9, precision = "2" }', 'key runs.precision: expected a share'),
            ('{ min = 5, max = 9 }', "key runs.precision: missing"),
            ('{ min = 5, max = 9, precision = "2%", stop = 1 }', "key runs.stop: unknown key"),
            ('"3"', "key runs: expected a whole number from 1 to 10000 or a table"),
            ("0", "key runs: expected a whole number from 1 to 10000 or a table")):
        with pytest.raises(InputError, match=f"c.toml: {message}"):
            config.load(_campaign(tmp_path, runs))


NOISE = {"n1": 0.005, "n2": 0.02, "n3": 0.06, "n4": 0.3}
"""Coefficient of variation of the synthetic PLTs per network: from always precise
after the minimum to never precise within the maximum."""


def _plt(trial: plan.Trial, truth: dict) -> float:
    rng = random.Random(trial.id)
    mean = truth[(trial.site, trial.network, trial.setting)]
    return max(1.0, rng.gauss(mean, mean * NOISE[trial.network]))


def _insert(db, **values) -> None:
    """One trials row: `values`, the other required columns made up."""
    made_up = {schema.TEXT_KIND: "x", schema.INTEGER_KIND: 1, schema.REAL_KIND: 1.0}
    row = {c.name: made_up[c.kind] for c in schema.TRIALS if c.required}
    row["started_at"] = "2026-11-26T00:00:00+00:00"
    row.update(values)
    db.execute(f"INSERT INTO trials ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
               list(row.values()))


def _simulate(db_path: Path, runs: AdaptiveRuns, sites, networks, settings, truth,
              stop_after: int | None = None) -> int:
    """The runner's loop on synthetic rows: every block of the plan in order, left out
    when the decider says so, its trials stored with their PLTs (a trial of setting
    `fail` fails). Stops (as if killed) after `stop_after` blocks; the blocks run."""
    ran = 0
    with Store(db_path) as store:
        decider = Decider(runs, settings)
        decider.load(store)
        done = store.finished()
        for block in plan.blocks(sites, networks, settings, runs.max, seed=7):
            if decider.skips(store, block.site, block.network, block.run):
                continue
            if stop_after is not None and ran == stop_after:
                return ran
            ran += 1
            for t in block.trials:
                if t.id in done:
                    continue
                ok = random.Random(t.id + "fail").random() > 0.05  # 5 % fail
                _insert(store.db, trial_id=t.id, site=t.site, network=t.network,
                        setting=t.setting, run=t.run, status="ok" if ok else "failed",
                        plt_ms=_plt(t, truth) if ok else None)
        decider.finish(store, [(s, n) for s in sites for n in networks])
    return ran


def _stops(db_path: Path) -> dict:
    db = sqlite3.connect(db_path)
    try:
        return {(r[0], r[1]): r[2:] for r in db.execute(
            f"SELECT site, network, runs, reason, precise FROM {schema.STOPS_TABLE}")}
    finally:
        db.close()


def _ok_plts(db_path: Path) -> dict:
    db = sqlite3.connect(db_path)
    try:
        out: dict = {}
        for site, network, protocol, run, plt in db.execute(
                "SELECT site, network, setting, run, plt_ms FROM trials WHERE status = 'ok'"):
            out.setdefault((site, network, protocol), []).append((run, plt))
        return out
    finally:
        db.close()


def test_every_group_stops_between_min_and_max_and_meets_the_precision(tmp_path):
    """Synthetic campaign, 12 sites x 4 networks of known noise x 3 settings: each group's
    runs lie in [min, max]; a group stopped on precision has every setting's interval
    (recomputed from the stored ok rows) within it, and stopped no later than needed
    (the run before it was not yet precise); the quiet network stops at the minimum, the
    noisiest at the maximum."""
    runs = AdaptiveRuns(min=4, max=25, precision="2%")
    sites = [f"s{i}" for i in range(12)]
    networks, settings = list(NOISE), ["tcp", "tcp-plus", "quic"]
    rng = random.Random(1)
    truth = {(s, n, p): rng.uniform(400, 4000) for s in sites for n in networks
             for p in settings}
    db = tmp_path / "trials.sqlite"
    _simulate(db, runs, sites, networks, settings, truth)
    stops, plts = _stops(db), _ok_plts(db)
    assert set(stops) == {(s, n) for s in sites for n in networks}
    bound = runs.bound
    reasons = {}
    for (site, network), (n_runs, reason, precise) in stops.items():
        assert runs.min <= n_runs <= runs.max
        assert reason in schema.STOP_REASONS
        reasons.setdefault(network, set()).add(reason)
        for p in settings:
            got = [v for r, v in plts.get((site, network, p), []) if r < n_runs]
            assert all(r < n_runs for r, _ in plts.get((site, network, p), []))
            if reason == "precision":
                assert precision.meets(got, bound), (site, network, p)
        if reason == "precision":
            assert precise == 1
            if n_runs > runs.min:  # one run earlier some setting was not yet precise
                assert not all(precision.meets(
                    [v for r, v in plts.get((site, network, p), []) if r < n_runs - 1], bound)
                    for p in settings)
        else:
            assert n_runs == runs.max
    assert reasons["n1"] == {"precision"} and reasons["n4"] == {"max"}
    assert max(stops[(s, "n1")][0] for s in sites) <= runs.min + 1  # a failure may cost one


def test_a_killed_and_resumed_campaign_reaches_the_same_decisions(tmp_path):
    runs = AdaptiveRuns(min=3, max=15, precision="3%")
    sites, networks, settings = ["a", "b", "c"], ["n1", "n2", "n3"], ["tcp", "quic"]
    truth = {(s, n, p): 1000.0 for s in sites for n in networks for p in settings}
    whole = tmp_path / "whole.sqlite"
    _simulate(whole, runs, sites, networks, settings, truth)
    for k, kills in enumerate(((5,), (1, 7, 3), (20, 2, 2, 2))):
        db = tmp_path / f"resumed-{k}.sqlite"
        for after in kills:
            _simulate(db, runs, sites, networks, settings, truth, stop_after=after)
        _simulate(db, runs, sites, networks, settings, truth)
        assert _stops(db) == _stops(whole)
        assert _ok_plts(db) == _ok_plts(whole)


def _adaptive_campaign(tmp_path: Path) -> Path:
    return _campaign(tmp_path, '{ min = 3, max = 8, precision = "3%" }',
                     networks=("dsl", "lte", "da2gc", "mss"), sites=("local-news", "gallery"))


def _trials(out: Path) -> set[tuple]:
    db = sqlite3.connect(f"file:{out / 'trials.sqlite'}?mode=ro", uri=True)
    try:
        return set(db.execute("SELECT trial_id, status, plt_ms FROM trials"))
    finally:
        db.close()


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The adaptive campaign run once without interruption by the real runner (scripted
    page loads whose PLT depends on the trial id)."""
    from testbed.host import runstate

    tmp = tmp_path_factory.mktemp("whole")
    out = tmp / "out"
    try:
        ScriptedRunner(config.load(_adaptive_campaign(tmp)), out, varied=True).run()
    finally:
        runstate.release()
    return out


def test_the_runner_stops_groups_and_the_store_says_why(whole):
    stops = _stops(whole / "trials.sqlite")
    assert len(stops) == 8
    counts: dict = {}
    for trial_id, status, plt in _trials(whole):
        site, network, _, run = trial_id.split("+")
        counts.setdefault((site, network), set()).add(int(run))
    for group, (n_runs, reason, precise) in stops.items():
        assert counts[group] == set(range(n_runs))
    assert stops[("local-news", "dsl")][:2] == (3, "precision")  # 1 % noise: at once
    assert stops[("local-news", "mss")][:2] == (8, "max")  # 20 % noise: never


def _count(out: Path) -> int:
    """Stored trials (0 before the store exists; one that cannot be read fails the test)."""
    return len(_trials(out)) if (out / "trials.sqlite").exists() else 0


def _kill_at_random_moments(campaign: Path, out: Path, kills: int, seed: int) -> list[int]:
    """Start the scripted runner and SIGKILL it `kills` times, then let it finish. What
    a killed run leaves in its state folder (/run/testbed/PID) is removed as `testbed`
    removes a dead run's (cleanup.sweep before every command), here for these runs only."""
    from testbed.host import safefs
    from testbed.host.runstate import STATE_ROOT

    rng = random.Random(seed)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    seen = []
    for _ in range(kills):
        p = subprocess.Popen([sys.executable, SCRIPTED, str(campaign), str(out), "--varied"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                             start_new_session=True)
        before = _count(out)
        if rng.random() < 0.2:  # while it starts (loads, claims the folder, plans)
            time.sleep(rng.uniform(0.1, 0.8))
        else:  # after a few more stored trials (20 ms a load), at a random moment
            grow = rng.randint(2, 8)
            while p.poll() is None and _count(out) < before + grow:
                time.sleep(0.005)
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        if (STATE_ROOT / str(p.pid)).exists():
            safefs.rmtree(STATE_ROOT / str(p.pid))
        seen.append(_count(out))
    cp = subprocess.run([sys.executable, SCRIPTED, str(campaign), str(out), "--varied"],
                        check=False, capture_output=True, text=True, env=env, timeout=600)
    assert cp.returncode == 0, cp.stderr
    return seen


def test_sigkill_and_resume_reach_the_same_decisions(tmp_path, whole):
    campaign = _adaptive_campaign(tmp_path)
    out = tmp_path / "out"
    seen = _kill_at_random_moments(campaign, out, kills=10, seed=3)
    assert len({n for n in seen if 0 < n < len(_trials(whole))}) >= 6  # killed mid-campaign
    assert _stops(out / "trials.sqlite") == _stops(whole / "trials.sqlite")
    assert _trials(out) == _trials(whole)
    folders = {p.name for p in (out / "trials").iterdir()}
    assert folders == {t[0] for t in _trials(out)}


def test_adaptive_runs_under_a_cluster_of_two_workers(tmp_path, whole, monkeypatch):
    """The coordinator with 2 workers of an in-process Dask cluster, each block's loads
    scripted: the same trials and the same stops as on one machine."""
    from contextlib import contextmanager

    from distributed import Client, LocalCluster

    from testbed.campaign.cluster import cluster, worker
    from testbed.campaign.cluster.cluster import ClusterOptions
    from testbed.host import runstate

    @contextmanager
    def connect(opts):
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                          resources={cluster.RESOURCE: 1}, dashboard_address=None) as lc, \
                Client(lc) as client:
            yield client

    runner = ScriptedRunner(config.load(_adaptive_campaign(tmp_path)), tmp_path / "out",
                            varied=True)
    runner.cluster = ClusterOptions(workers=2)

    monkeypatch.setattr(cluster, "connect", connect)
    monkeypatch.setattr("testbed.host.cleanup.sweep", lambda: None)  # no local worker died
    SCRIPTED_SETUP["setup"] = runner.setup()
    monkeypatch.setattr(worker, "execute", scripted_execute)
    monkeypatch.setattr(cluster.Coordinator, "join_check", lambda self: [])
    monkeypatch.setattr(cluster.worker_mod.Job, "of",
                        classmethod(lambda cls, c, e, lanes=1: cls(c, {}, {}, {}, {}, lanes)))
    try:
        runner.run()
    finally:
        runstate.release()
    assert BUSY["most"] == 2  # blocks did run side by side
    assert _stops(tmp_path / "out" / "trials.sqlite") == _stops(whole / "trials.sqlite")
    assert _trials(tmp_path / "out") == _trials(whole)


SCRIPTED_SETUP: dict = {}
BUSY = {"now": 0, "most": 0}
"""Blocks being measured by the scripted workers now, and the most at once."""


def scripted_execute(job, block, attempts):
    """testbed.campaign.cluster.worker.execute with scripted loads (varied_plt), 50 ms a block."""
    from testbed.campaign.run import block as block_mod
    from testbed.campaign.run.rows import TrialRecord
    from testbed.measure.browser_process import Kept

    BUSY["now"] += 1
    BUSY["most"] = max(BUSY["most"], BUSY["now"])
    try:
        time.sleep(0.05)
        setup = SCRIPTED_SETUP["setup"]
        results = []
        for k, t in enumerate(block.trials):
            o = outcome(k, setup.settings[t.setting].stack, plt=varied_plt(t))
            o.kept = Kept(files={"browsertime.json": b"{}"}, log="", wall_s=1.0)
            results.append((t, o, TrialRecord(setup.settings[t.setting], before={},
                                              after={})))
        return block_mod.pack(results, attempts, setup, "h/scripted"), {
            "worker": "h/scripted", "calibration": {}}
    finally:
        BUSY["now"] -= 1


def _stopped_tests(stop_on: str, sims: int = 4000, seed: int = 5) -> tuple[float, float]:
    """Two settings with the same true PLT (no difference), CV 4 %, 10 to 31 runs: the
    share of groups whose final two-sample t test rejects at alpha 0.05, when runs stop
    on the precision rule ("precision": testbed.campaign.plan.adaptive.decide, ±2 %) or at the
    first p < 0.05 from run 10 on ("p-value", optional stopping); and the mean runs."""
    import numpy as np

    rng = np.random.default_rng(seed)
    runs = AdaptiveRuns(min=10, max=31, precision="2%")
    rejected, used = 0, []
    for _ in range(sims):
        x = rng.lognormal(0, 0.04, (2, runs.max)) * 1000
        n = runs.max
        for r in range(runs.min, runs.max):
            if stop_on == "precision":
                done = adaptive.decide({"a": x[0, :r], "b": x[1, :r]}, ("a", "b"), r, runs)
            else:
                done = stats.ttest_ind(x[0, :r], x[1, :r]).pvalue < 0.05
            if done:
                n = r
                break
        used.append(n)
        rejected += stats.ttest_ind(x[0, :n], x[1, :n]).pvalue < 0.05
    return rejected / sims, float(np.mean(used))


def test_stopping_on_precision_keeps_the_tests_level_and_stopping_on_p_does_not():
    """Known truth, no difference: after precision-based stopping the t test rejects
    in 5 % of groups (within 3 binomial SEs of 4000), as with fixed runs; stopping at the
    first p < 0.05 rejects far more often (the reason the runner never looks at p)."""
    rate, runs = _stopped_tests("precision")
    assert abs(rate - 0.05) < 3 * math.sqrt(0.05 * 0.95 / 4000)
    assert 10 <= runs < 31  # it did stop early
    rate_p, _ = _stopped_tests("p-value", sims=400)
    assert rate_p > 0.12
