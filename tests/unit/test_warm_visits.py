"""Warm visits without a browser: the campaign's `visit`, the settings that make the
servers resume (session_tickets, early_data), what the servers count, the verdict
`not-resumed`, the stored columns, Chromium's flags and the report's tables."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from analysis.statistics import visits as visits_mod
from testbed.campaign.plan import config
from testbed.campaign.run import block, rows
from testbed.errors import InputError
from testbed.formats import recording as rec
from testbed.formats.profiles import ProtocolProfile
from testbed.measure import launcher
from testbed.measure.metrics import Metrics
from testbed.measure.trial import Evidence, Resumption, judge
from testbed.protocols import server_options
from testbed.replay import nginx, server_summary
from testbed.replay.app import ReplayApp
from testbed.validate.site import exchange, write

# --------------------------------------------------------------- the campaign's `visit`


def campaign(tmp_path: Path, visit: str | None,
             protocols='["tcp-plus", "quic", "tcp-plus-0rtt", "quic-0rtt"]') -> config.Campaign:
    text = f'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = {protocols}\nruns = 1\n'
    if visit is not None:
        text += f"visit = {visit}\n"
    (tmp_path / "c.toml").write_text(text)
    return config.load(tmp_path / "c.toml")


def test_visits_default_to_first(tmp_path):
    c = campaign(tmp_path, None)
    assert [c.visit_of_label(p) for p in c.protocols] == ["first"] * 4


def test_visit_warm_for_every_setting_or_per_setting(tmp_path):
    c = campaign(tmp_path, '"warm"', '["tcp-plus-0rtt", "quic"]')
    assert c.visit_of_label("tcp-plus-0rtt") == c.visit_of_label("quic") == "warm"
    c = campaign(tmp_path, '{ tcp-plus-0rtt = "warm", quic-0rtt = "warm", quic = "first" }')
    assert {p: c.visit_of_label(p) for p in c.protocols} == {
        "tcp-plus": "first", "quic": "first", "tcp-plus-0rtt": "warm", "quic-0rtt": "warm"}


def test_a_setting_listed_by_path_is_named_by_its_file(tmp_path):
    (tmp_path / "mine.toml").write_text(
        (Path(config.profiles.PROTOCOLS_DIR) / "quic-0rtt.toml").read_text())
    c = campaign(tmp_path, '{ "./mine.toml" = "warm" }', '["./mine.toml", "quic"]')
    assert c.visit_of_label("mine") == "warm" and c.visit_of_label("quic") == "first"


@pytest.mark.parametrize("visit, protocols, expected", [
    ('"again"', '["quic"]', 'key visit: expected "first" or "warm" or a table'),
    ('{ quic = true }', '["quic"]', 'key visit.quic: expected "first" or "warm", got true'),
    ('{ tcp = "warm" }', '["quic"]', "key visit.tcp: expected a setting listed in protocols"),
    ('"warm"', '["tcp-plus"]', ("key visit: a warm visit of protocols.0 (tcp-plus) expected a "
                               "setting with session_tickets = true")),
])
def test_bad_visits_name_the_file_and_key(tmp_path, visit, protocols, expected):
    with pytest.raises(InputError) as e:
        campaign(tmp_path, visit, protocols)
    assert str(e.value).startswith(f"{tmp_path / 'c.toml'}: ") and expected in str(e.value)


def test_the_bundled_warm_campaign_compares_first_and_warm(tmp_path):
    c = config.load("warm")
    assert set(c.networks) == {"dsl", "lte"}
    assert {p: c.visit_of_label(p) for p in c.protocols} == {
        "tcp-plus": "first", "quic": "first", "tcp-plus-0rtt": "warm", "quic-0rtt": "warm"}


# ------------------------------------------------------------------ settings and servers

def profile(**kw) -> ProtocolProfile:
    base = {"stack": "tcp", "congestion_control": "cubic", "initial_window_packets": 10,
            "pacing": False}
    return ProtocolProfile.model_validate({**base, **kw})


def test_the_0rtt_settings_turn_resumption_and_early_data_on():
    tcp, quic = server_options("tcp-plus-0rtt"), server_options("quic-0rtt")
    assert tcp.session_tickets and tcp.early_data
    assert quic.early_data and quic.h3server_args[-2:] == ("--early-data", "on")
    # other servers than their first-visit twins: a block restarts them between the two
    assert tcp.server_key != server_options("tcp-plus").server_key
    assert quic.server_key != server_options("quic").server_key
    assert "--early-data" not in server_options("quic").h3server_args


@pytest.mark.parametrize("kw, key", [
    ({"stack": "quic", "session_tickets": True}, "session_tickets"),
    ({"early_data": True}, "early_data"),
])
def test_settings_that_cannot_resume_are_refused(kw, key):
    with pytest.raises(ValueError, match=key):
        profile(**kw)


def nginx_conf(**kw) -> str:
    return nginx.render(nginx.NginxConfig(
        prefix=Path("/v"), cert=Path("/c"), key=Path("/k"), socket=Path("/s"),
        listens=(nginx.Listen("192.0.2.1", 443, True),), **kw))


def test_nginx_issues_tickets_and_accepts_early_data_only_when_asked():
    off = nginx_conf()
    assert "ssl_session_tickets off;" in off and "NumTickets 0" in off
    assert "ssl_early_data on" not in off and "ssl_early_data off" not in off
    on = nginx_conf(session_tickets=True, early_data=True)
    assert "ssl_session_tickets on;" in on and "ssl_early_data on;" in on
    assert "NumTickets 0" not in on and "ssl_session_cache shared:" in on
    assert "ssl_early_data off;" in nginx_conf(session_tickets=True)
    # the app learns per request whether the session resumed and came in early data
    assert "uwsgi_param TESTBED_TLS_RESUMED $ssl_session_reused;" in on
    assert "uwsgi_param TESTBED_EARLY_DATA $ssl_early_data;" in on
    # and the TLS server name its connection asked for
    assert "uwsgi_param TESTBED_TLS_NAME $ssl_server_name;" in on


def test_the_app_counts_resumed_connections_and_early_data_requests(tmp_path):
    site = write(tmp_path, "site", "https://www.a.test/",
                 [exchange("https://www.a.test/", "192.0.2.10", b"<title>t</title>")])
    path = tmp_path / "summary.json"
    app = ReplayApp(rec.load(site), path)
    before = server_summary.read(path)
    for conn, resumed, early, name in (("1", ".", "", "www.a.test"),
                                       ("2", "r", "1", "www.a.test"),
                                       ("2", "r", "", "www.a.test"),
                                       ("3", "r", "", "cdn.a.test"),
                                       ("4", ".", "", "cdn.a.test")):
        environ = {"REQUEST_METHOD": "GET", "REQUEST_URI": "/", "wsgi.url_scheme": "https",
                   "TESTBED_HOST": "www.a.test", "TESTBED_CONNECTION": conn,
                   "TESTBED_TLS_RESUMED": resumed, "TESTBED_EARLY_DATA": early,
                   "TESTBED_TLS_NAME": name}
        result = app(environ, lambda s, h: None)
        b"".join(result)
        result.close()
    d = server_summary.diff(before, json.loads(path.read_text()))
    assert (d["connections"], d["resumed"], d["early_data"]) == (4, 2, 1)
    # per TLS server name: [connections, resumed]
    assert d["names"] == {"cdn.a.test": [2, 1], "www.a.test": [2, 1]}


def test_names_are_diffed_per_name_and_absent_from_summaries_without_them():
    before = {"connections": 2, "resumed": 0, "names": {"a.test": [1, 0], "b.test": [1, 0]}}
    after = {"connections": 5, "resumed": 2,
             "names": {"a.test": [3, 2], "b.test": [1, 0], "c.test": [1, 0]}}
    assert server_summary.diff(before, after)["names"] == {"a.test": [2, 2], "c.test": [1, 0]}
    # h3server's summary has no names: neither has the difference
    assert "names" not in server_summary.diff({"connections": 1}, {"connections": 2})
    # counts that are not two whole numbers are left out, not fatal
    bad = {"a.test": [1, "x"], "b.test": [True, 0], "c.test": 3, "d.test": [2, 1]}
    assert server_summary.diff({}, {"names": bad})["names"] == {"d.test": [2, 1]}


# ------------------------------------------------------------------ the verdict and row

def evidence(stack="quic", warm=True, early=True, diff=None) -> Evidence:
    return Evidence(stack=stack, measured=True, metrics=Metrics(plt_ms=500, ttfb_ms=50),
                    protocols={"h3" if stack == "quic" else "h2": 3}, video=False,
                    warm=warm, early_data=early, resumption=Resumption.of(diff))


@pytest.mark.parametrize("stack, early, diff, reason", [
    ("quic", True, {"connections": 5, "resumed": 5, "early_data": 20}, None),
    ("quic", True, {"connections": 5, "resumed": 4, "early_data": 20},
     "not-resumed: 4 of 5 connections resumed"),
    ("quic", True, {"connections": 5, "resumed": 5, "early_data": 0},
     "not-resumed: no request in 0-RTT"),
    ("tcp", True, {"connections": 2, "resumed": 2}, "not-resumed: no request in TLS early data"),
    ("tcp", False, {"connections": 2, "resumed": 2}, None),
    ("tcp", False, {"connections": 0, "resumed": 0},
     "not-resumed: no connection counted by the server"),
    ("tcp", False, None, "not-resumed: no server summary"),
])
def test_a_warm_visit_that_did_not_resume_fails_as_not_resumed(stack, early, diff, reason):
    v = judge(evidence(stack, early=early, diff=diff))
    assert v.reason == reason and v.ok == (reason is None)


WARM_UP = {"connections": 4, "resumed": 0,
           "names": {"www.a.test": [1, 0], "img.cdn.test": [2, 0], "api.a.test": [1, 0]}}


@pytest.mark.parametrize("names, resumed, reason", [
    # static.a.test's requests went over www's connection in the warm-up (coalesced):
    # no session of it to resume, its new connection is not the warm-up's failure
    ({"www.a.test": [1, 1], "static.a.test": [1, 0], "img.cdn.test": [1, 1],
      "api.a.test": [2, 2]}, 4, None),
    # img.cdn.test had a connection in the warm-up and one of its two did not resume
    ({"www.a.test": [1, 1], "img.cdn.test": [2, 1], "api.a.test": [2, 2]}, 4,
     "not-resumed: 4 of 5 connections resumed (img.cdn.test did not)"),
    # nothing resumed: the warm-up kept no session at all
    ({"static.a.test": [1, 0]}, 0, "not-resumed: 0 of 1 connections resumed"),
])
def test_a_name_the_warm_up_had_no_connection_of_need_not_resume(names, resumed, reason):
    diff = {"connections": sum(c for c, _ in names.values()), "resumed": resumed,
            "early_data": 3, "names": names}
    def verdict(d: dict) -> str | None:
        return judge(Evidence(stack="tcp", measured=True,
                              metrics=Metrics(plt_ms=500, ttfb_ms=50), protocols={"h2": 3},
                              video=False, warm=True, early_data=True,
                              resumption=Resumption.of(d, WARM_UP))).reason

    assert verdict(diff) == reason
    if resumed < diff["connections"]:
        # without the names (h3server, or an older summary) every connection must resume
        assert verdict({k: v for k, v in diff.items() if k != "names"}) is not None
        # as when a connection the server counted has no name (no TLS)
        assert verdict({**diff, "connections": diff["connections"] + 1}) is not None


def test_a_first_visit_never_fails_for_resumption():
    assert judge(evidence(warm=False, diff={"connections": 5, "resumed": 0})).ok


def test_the_stored_columns_say_what_the_servers_saw():
    r = Resumption.of({"connections": 5, "resumed": 5, "early_data": 3})
    assert rows.resumption_columns("tcp", r) == {"tls_resumed": 1, "early_data": 1,
                                                 "quic_0rtt": None}
    r = Resumption.of({"connections": 5, "resumed": 1, "early_data": 0})
    assert rows.resumption_columns("quic", r) == {"tls_resumed": 0, "early_data": None,
                                                  "quic_0rtt": 0}
    assert rows.resumption_columns("quic", None) == {"tls_resumed": None, "early_data": None,
                                                     "quic_0rtt": None}


# ------------------------------------------------------------------------- Chromium's flags

def test_a_warm_trial_gets_net_benchmarking_and_tls_early_data():
    class Env:
        def chromium_flags(self):
            return ["--rules"]

    class Servers:
        env = Env()

    from testbed.campaign.plan.plan import Block, Trial
    trials = (Trial("s", "dsl", "quic-0rtt", 0), Trial("s", "dsl", "quic", 0))
    settings = {"quic-0rtt": server_options("quic-0rtt"), "quic": server_options("quic")}
    d = block.BlockDriver(Block(0, "s", "dsl", trials), Servers(), settings,
                          visits={"quic-0rtt": "warm"})
    assert [r.visit for r in d.records] == ["warm", "first"]
    assert d.launch(0)[-2:] == ["--enable-net-benchmarking",
                                "--enable-features=EnableTLS13EarlyData"]
    assert "--enable-net-benchmarking" not in d.launch(1)


def test_a_warm_firefox_trial_gets_early_data_and_0rtt_prefs_and_a_first_one_not():
    class Env:
        def firefox_launch(self):
            return {"prefs": {"network.http.http3.enable": True}, "trust": "chain.pem"}

    class Servers:
        env = Env()

    from testbed.campaign.plan.plan import Block, Trial
    from testbed.host import firefox
    trials = (Trial("s", "dsl", "quic-0rtt", 0, "firefox"), Trial("s", "dsl", "quic", 0, "firefox"))
    settings = {"quic-0rtt": server_options("quic-0rtt"), "quic": server_options("quic")}
    d = block.BlockDriver(Block(0, "s", "dsl", trials, "firefox"), Servers(), settings,
                          visits={"quic-0rtt": "warm"})
    warm, first = d.launch(0), d.launch(1)
    assert warm["prefs"] == {"network.http.http3.enable": True,
                             "security.tls.enable_0rtt_data": True,
                             "network.http.http3.enable_0rtt": True}
    assert set(firefox.WARM_PREFS).isdisjoint(first["prefs"])
    assert warm["trust"] == first["trust"] == "chain.pem"


def test_a_firefox_campaign_may_have_warm_visits_of_tcp_settings_only(tmp_path):
    (tmp_path / "c.toml").write_text(
        'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["tcp-plus-0rtt", "quic-0rtt"]\n'
        'runs = 1\nclient = ["chromium", "firefox"]\nvisit = { tcp-plus-0rtt = "warm" }\n')
    c = config.load(tmp_path / "c.toml")
    assert [c.visit_of_label(p) for p in c.protocols] == ["warm", "first"]
    (tmp_path / "c.toml").write_text(
        (tmp_path / "c.toml").read_text().replace('{ tcp-plus-0rtt = "warm" }', '"warm"'))
    with pytest.raises(InputError, match=r"c\.toml: key visit: a warm visit of protocols\.1 "
                                         r"\(quic-0rtt\) in a campaign with client firefox: "
                                         "expected a TCP setting"):
        config.load(tmp_path / "c.toml")


def test_the_launcher_joins_feature_lists_chromium_takes_once():
    got = launcher.merged(["--x", "--enable-features=A", "--disable-features=B"],
                          ["--enable-features=C", "--disable-features=D", "--y"])
    assert got == ["--x", "--enable-features=A,C", "--disable-features=B,D", "--y"]
    assert launcher.merged(["--x"], ["--enable-features=C"]) == ["--x", "--enable-features=C"]


# ------------------------------------------------------------------------------ the report

def trials_frame() -> pd.DataFrame:
    rows_ = []
    for proto, visit, ttfb, resumed, early, q0 in (
            ("tcp-plus", "first", 120, 0, 0, None), ("tcp-plus-0rtt", "warm", 100, 1, 1, None),
            ("quic", "first", 100, 0, None, 0), ("quic-0rtt", "warm", 70, 1, None, 1)):
        for run in range(2):
            rows_.append({"trial_id": f"s+dsl+{proto}+{run}", "network": "dsl",
                          "setting": proto, "status": "ok", "reason": None, "visit": visit,
                          "ttfb_ms": ttfb + run, "fcp_ms": 200.0, "plt_ms": 500.0,
                          "si_ms": None, "tls_resumed": resumed, "early_data": early,
                          "quic_0rtt": q0})
    rows_.append({**rows_[-1], "trial_id": "s+dsl+quic-0rtt+2", "status": "failed",
                  "reason": "not-resumed: no request in 0-RTT", "tls_resumed": 1,
                  "quic_0rtt": 0})
    return pd.DataFrame(rows_)


def test_first_and_warm_visits_side_by_side():
    p = visits_mod.visit_pivot(trials_frame())
    assert list(p.columns) == ["network", "metric", "TCP+ · first", "QUIC · first",
                               "TCP+ 0-RTT · warm", "QUIC 0-RTT · warm"]
    ttfb = p[p["metric"] == "TTFB"].iloc[0]
    assert ttfb["TCP+ · first"] == "120 ms (2)" and ttfb["QUIC 0-RTT · warm"] == "70 ms (2)"
    assert list(p["metric"]) == ["TTFB", "FCP", "PLT"]  # no SI in any ok trial


def test_the_resumption_table_counts_the_proof():
    r = visits_mod.resumption(trials_frame()).set_index("setting")
    assert r.loc["quic-0rtt", ["trials", "ok", "tls_resumed", "quic_0rtt", "not_resumed"]
                 ].tolist() == [3, 2, 3, 2, 1]
    assert r.loc["tcp-plus-0rtt", ["tls_resumed", "early_data"]].tolist() == [2, 2]
    assert r.loc["tcp-plus", "visit"] == "first"


def test_an_older_store_without_visits_is_all_first_visits():
    t = trials_frame().drop(columns=["visit", "tls_resumed", "early_data", "quic_0rtt"])
    assert not visits_mod.has_warm(t)
    assert set(visits_mod.resumption(t)["visit"]) == {"first"}
