"""Campaigns without the testbed: file validation, trial order, resume, the store."""

import json
import shutil
import sqlite3
import statistics
from collections import Counter, defaultdict

import pytest
from support.paths import ROOT

from results_contract import schema
from results_contract.schema import COLUMNS as NAMES
from testbed.campaign.plan import config, plan
from testbed.campaign.store.store import Row, Store, read_rows
from testbed.errors import InputError

SITES = ["a", "b", "c", "d"]
NETS = ["dsl", "lte", "da2gc", "mss"]
PROTOS = ["tcp", "tcp-plus", "tcp-plus-bbr", "quic", "quic-bbr"]


# --- campaign files ------------------------------------------------------------------------
def write(tmp_path, text, name="c.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


GOOD = 'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["tcp", "quic"]\n'


def test_bundled_campaigns_load(tmp_path, monkeypatch):
    smoke = config.load("profiles/campaigns/smoke.toml")
    assert smoke.name == "smoke" and smoke.runs == 1 and len(smoke.protocols) == 5 \
        and smoke.sites == ("local-news",)
    # paper.toml runs over the corpus's paper set in the search path (make corpus).
    shutil.copytree(ROOT / "recordings" / "local-news", tmp_path / "corpus" / "paper" / "local-news")
    monkeypatch.setenv("TESTBED_RECORDINGS", str(tmp_path))
    paper = config.load("paper")
    assert paper.networks == ("dsl", "lte", "da2gc", "mss") and paper.max_runs == 31
    assert paper.adaptive is not None and (paper.adaptive.min, paper.adaptive.precision) == (10, "2%")
    assert paper.sites == ("paper/*",)
    # (whether or not this checkout's own corpus is built: it is in the search path too)
    listed = [listed for _, listed, _ in config.sites_of(paper)]
    assert str(tmp_path / "corpus" / "paper" / "local-news") in listed
    assert all("/paper/" in x for x in listed)


def test_defaults(tmp_path):
    c = config.load(write(tmp_path, GOOD))
    assert (c.runs, c.retries, c.keep_video, c.seed) == (31, 2, False, 0)
    assert c.name == "c" and len(c.digest) == 64


@pytest.mark.parametrize("text, message", [
    (GOOD + "runs = 0\n", "key runs: expected a whole number from 1 to 10000 or a table"),
    (GOOD + "rusn = 3\n", "key rusn: unknown key"),
    (GOOD + "timeout_s = 'long'\n", 'key timeout_s: expected a number, got "long"'),
    (GOOD.replace('["tcp", "quic"]', "[]"), "key protocols: expected a list of at least 1 entry, got []"),
    (GOOD.replace('["dsl"]', '"dsl"'), 'key networks: expected a list, got "dsl"'),
    (GOOD.replace('["dsl"]', '["dsl", 3]'), "key networks.1: expected a string, got 3"),
    ('networks = ["dsl"]\nprotocols = ["tcp"]\n', "key sites: missing (required)"),
    (GOOD.replace('["tcp", "quic"]', '["tcp", "tcp"]'), "key protocols: listed twice: tcp"),
    (GOOD.replace('"dsl"', '"dls"'), "key networks.0: dls: no such profile"),
    (GOOD.replace('"local-news"', '"nosuchsite"'), "key sites.0: nosuchsite: no such recording"),
    (GOOD.replace('"quic"', '"quick"'), "key protocols.1: quick: no such profile"),
    ("sites = [", "not valid TOML"),
])
def test_bad_campaign_files_name_file_and_key(tmp_path, text, message):
    p = write(tmp_path, text)
    with pytest.raises(InputError) as e:
        config.load(p)
    assert str(e.value).startswith(f"{p}: ")
    assert message in str(e.value)


def test_missing_campaign_file_lists_the_available_ones():
    with pytest.raises(InputError, match="smoke"):
        config.load("nosuch")


# --- order -----------------------------------------------------------------------------------
def test_every_run_visits_every_combination_once():
    blocks = plan.blocks(SITES, NETS, PROTOS, runs=7, seed=3)
    trials = plan.trials(blocks)
    assert len(trials) == len({t.id for t in trials}) == 4 * 4 * 5 * 7
    for run in range(7):
        combos = {(t.site, t.network, t.setting) for t in trials if t.run == run}
        assert len(combos) == 4 * 4 * 5
    # runs come one after the other: a stopped campaign leaves complete runs
    assert [t.run for t in trials] == sorted(t.run for t in trials)


def test_blocks_group_one_site_and_network_with_all_protocols():
    blocks = list(plan.blocks(SITES, NETS, PROTOS, runs=3, seed=1))
    assert len(blocks) == len(SITES) * len(NETS) * 3
    for b in blocks:
        assert {t.setting for t in b.trials} == set(PROTOS)
        assert {(t.site, t.network, t.run) for t in b.trials} == {(b.site, b.network, b.run)}


def test_order_is_fixed_by_the_seed():
    a = plan.trials(plan.blocks(SITES, NETS, PROTOS, runs=3, seed=42))
    b = plan.trials(plan.blocks(SITES, NETS, PROTOS, runs=3, seed=42))
    c = plan.trials(plan.blocks(SITES, NETS, PROTOS, runs=3, seed=43))
    assert a == b
    assert a != c


def test_no_protocol_is_favoured_by_its_place_in_the_order():
    """Over the paper's 31 runs, each protocol's mean position within its block is
    near the middle, and each protocol is first in some blocks and last in others."""
    blocks = plan.blocks(SITES, NETS, PROTOS, runs=31, seed=2019)
    positions = defaultdict(list)
    first, last = Counter(), Counter()
    for b in blocks:
        for i, t in enumerate(b.trials):
            positions[t.setting].append(i)
        first[b.trials[0].setting] += 1
        last[b.trials[-1].setting] += 1
    middle = (len(PROTOS) - 1) / 2
    n = len(blocks)
    for p in PROTOS:
        # the mean of n uniform positions has sd sqrt(2/n); allow 4 sd
        assert abs(statistics.mean(positions[p]) - middle) < 4 * (2 / n) ** 0.5, p
        assert first[p] > n / 10 and last[p] > n / 10, p
    # sites (and so the time of day they are measured) also move between runs
    assert len({tuple(dict.fromkeys(b.site for b in blocks if b.run == r)) for r in range(31)}) > 1


def test_resume_skips_stored_trials_and_keeps_the_order():
    blocks = plan.blocks(SITES, NETS, PROTOS, runs=2, seed=5)
    trials = plan.trials(blocks)
    done = {t.id for t in trials[:37]}
    left = plan.trials(plan.pending(blocks, done))
    assert left == trials[37:]
    assert plan.pending(blocks, {t.id for t in trials}) == []


def test_trial_id_format():
    assert plan.Trial("local-news", "dsl", "tcp-plus", 3).id == "local-news+dsl+tcp-plus+3"


# --- store -------------------------------------------------------------------------------------
def row(trial_id="s+dsl+tcp+0", status="ok", **kw):
    site, network, protocol, run = trial_id.split("+")
    base = {"trial_id": trial_id, "campaign": "c", "site": site, "network": network, "setting": protocol,
                "run": int(run), "status": status, "reason": None if status == "ok" else "timeout",
                "attempt": 1, "started_at": "2026-01-01T00:00:00.000+00:00", "wall_s": 3.5,
                "plt_ms": 500.0, "fvc_ms": 200.0, "lvc_ms": 480.0, "vc85_ms": 300.0, "si_ms": 260.0,
                "ttfb_ms": 40.0, "requests": 30, "bytes": 100_000, "misses": 0,
                "http_versions": Row.versions_json({"h2": 30}),
                "max_in_flight": Row.in_flight_json({"a.test": 12, "b.test": 2}),
                "rtt_ms": 24.0, "origins": 4}
    return Row(**{**base, **kw})


def test_an_older_store_gets_the_added_columns(tmp_path):
    db = tmp_path / "trials.sqlite"
    old = [schema.sql_declaration(c) for c in schema.TRIALS if c.name not in schema.ADDED]
    con = sqlite3.connect(db)
    con.execute(f"CREATE TABLE trials ({', '.join(old)})")
    r = {k: v for k, v in row("s+dsl+tcp+0").__dict__.items() if k not in schema.ADDED}
    con.execute(f"INSERT INTO trials ({', '.join(r)}) VALUES ({', '.join('?' * len(r))})",
                list(r.values()))
    con.commit()
    con.close()
    with Store(db) as s:
        s.add(row("s+dsl+quic+0"))
    got = {x["trial_id"]: x for x in read_rows(db)}
    assert got["s+dsl+tcp+0"]["max_in_flight"] is None
    assert json.loads(got["s+dsl+quic+0"]["max_in_flight"]) == {"a.test": 12, "b.test": 2}


def test_store_keeps_each_trial_once_in_wal_mode(tmp_path):
    db = tmp_path / "trials.sqlite"
    with Store(db) as s:
        s.add(row())
        s.add(row("s+dsl+quic+0", status="failed", plt_ms=None))
        with pytest.raises(sqlite3.IntegrityError):
            s.add(row())
        assert s.finished() == {"s+dsl+tcp+0", "s+dsl+quic+0"}
        assert s.count() == {"ok": 1, "failed": 1}
    con = sqlite3.connect(db)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cols = [r[1] for r in con.execute("PRAGMA table_info(trials)")]
    assert tuple(cols) == NAMES
    rows = read_rows(db)
    assert [r["trial_id"] for r in rows] == ["s+dsl+quic+0", "s+dsl+tcp+0"]
    assert rows[1]["http_versions"] == '{"h2": 30}'


def test_a_failed_insert_leaves_nothing_half_written(tmp_path):
    db = tmp_path / "trials.sqlite"
    with Store(db) as s:
        with pytest.raises(sqlite3.IntegrityError):
            s.add(row(status="maybe"))  # violates the status check
        assert s.finished() == set()
        s.add(row())  # the connection is usable again (the transaction was rolled back)
        assert s.finished() == {"s+dsl+tcp+0"}


def test_store_reopens_with_what_was_stored(tmp_path):
    db = tmp_path / "trials.sqlite"
    with Store(db) as s:
        s.add(row())
    with Store(db) as s:
        assert s.finished() == {"s+dsl+tcp+0"}


def test_export_has_exactly_the_contract_columns(tmp_path):
    from click.testing import CliRunner

    from testbed.campaign.cli import export
    with Store(tmp_path / "trials.sqlite") as s:
        s.add(row())
        s.add(row("s+dsl+quic+0", status="failed", plt_ms=None, requests=None))
    out = CliRunner().invoke(export, [str(tmp_path), "--csv", "-"])
    assert out.exit_code == 0, out.output
    lines = out.stdout.strip().splitlines()  # what it wrote is said on stderr
    assert lines[0].split(",") == list(NAMES)
    assert len(lines) == 3
    pq = tmp_path / "t.parquet"
    out = CliRunner().invoke(export, [str(tmp_path), "--parquet", str(pq)])
    assert out.exit_code == 0, out.output
    import pandas as pd
    df = pd.read_parquet(pq)
    assert list(df.columns) == list(NAMES) and len(df) == 2
    assert df.loc[df.status == "failed", "plt_ms"].isna().all()


GROUPS = {"tcp": "tcp", "tcp-plus": "tcp", "tcp-plus-bbr": "tcp", "quic": "q1", "quic-bbr": "q2"}


def test_protocols_sharing_servers_stay_together_without_favouring_any():
    blocks = plan.blocks(SITES, NETS, PROTOS, runs=31, seed=2019, groups=GROUPS)
    positions = defaultdict(list)
    for b in blocks:
        order = [t.setting for t in b.trials]
        assert sorted(order) == sorted(PROTOS)
        tcp = [i for i, p in enumerate(order) if GROUPS[p] == "tcp"]
        assert tcp == list(range(tcp[0], tcp[0] + 3)), order  # one server start for the three
        for i, p in enumerate(order):
            positions[p].append(i)
    n = len(blocks)
    for p in PROTOS:
        assert abs(statistics.mean(positions[p]) - 2) < 4 * (2 / n) ** 0.5, p
    orders = {tuple(t.setting for t in b.trials) for b in blocks}
    assert len(orders) > 12  # many different orders, not a fixed rotation


def test_forgetting_failed_trials_lets_them_run_again(tmp_path):
    with Store(tmp_path / "trials.sqlite") as s:
        s.add(row())
        s.add(row("s+dsl+quic+0", status="failed", plt_ms=None))
        assert s.forget_failed() == ["s+dsl+quic+0"]
        assert s.finished() == {"s+dsl+tcp+0"}
        s.add(row("s+dsl+quic+0"))
        assert s.count() == {"ok": 2}


def test_forgetting_runs_forgets_only_those_runs_of_the_named_trials(tmp_path):
    with Store(tmp_path / "trials.sqlite") as s:
        for tid in ("s+dsl+tcp+0", "s+dsl+tcp+3", "s+dsl+quic+1", "s+dsl+tcp+4",
                    "s+lte+tcp+0", "t+dsl+tcp+0"):
            s.add(row(tid))
        s.add(row("s+dsl+tcp+2", client=None))  # a store older than the client column
        s.add(row("s+dsl+tcp+1", client="firefox"))
        gone = s.forget_runs({0, 1, 2, 3}, ["s"], ["dsl"], ["tcp", "quic"], ["chromium"])
        assert sorted(gone) == ["s+dsl+quic+1", "s+dsl+tcp+0", "s+dsl+tcp+2", "s+dsl+tcp+3"]
        assert s.finished() == {"s+dsl+tcp+4", "s+lte+tcp+0", "t+dsl+tcp+0", "s+dsl+tcp+1"}
        assert s.forget_runs({0}, ["s"], ["dsl"], ["tcp"], ["chromium"]) == []
        s.add(row("s+dsl+tcp+0"))  # measured again


@pytest.mark.parametrize("text, runs", [("0-3", {0, 1, 2, 3}), ("0,2,5", {0, 2, 5}),
                                        ("0-3,7", {0, 1, 2, 3, 7}), (" 9 ", {9}),
                                        ("2-2", {2})])
def test_rerun_runs_are_read_and_said_back(text, runs):
    assert config.parse_runs(text, 10) == runs
    assert config.parse_runs(config.runs_text(runs), 10) == runs
    assert config.runs_text({0, 1, 2, 3, 7}) == "0-3,7" and config.runs_text({4}) == "4"


@pytest.mark.parametrize("text", ["", "10", "3-1", "a", "-1", "0-", "1;2", "0-3,", "1.5"])
def test_rerun_runs_other_than_run_numbers_name_what_was_expected(text):
    with pytest.raises(InputError, match=r"--rerun-runs: expected run numbers from 0 to 9"):
        config.parse_runs(text, 10)


@pytest.mark.parametrize("folder", ["a#b", "a?b", "a%20b"])
def test_a_stores_folder_name_with_uri_characters_reads_its_own_store(tmp_path, folder):
    db = tmp_path / folder / "trials.sqlite"
    db.parent.mkdir()
    with Store(db) as s:
        s.add(row())
    assert [r["trial_id"] for r in read_rows(db)] == ["s+dsl+tcp+0"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [folder]  # nothing made beside it
