"""The clients of a campaign: which are present, one client's trials, and the clients
side by side, each setting against the baseline of its own client (synthetic data
with known medians)."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.statistics import clients


def frame(rows: list[tuple[str | None, str, str, float, str]]) -> pd.DataFrame:
    """(client, network, protocol, plt_ms, status) rows."""
    return pd.DataFrame(
        [{"trial_id": f"s+{n}+{p}+{k}" + (f"+{c}" if c == "firefox" else ""), "client": c,
          "network": n, "setting": p, "plt_ms": v, "status": s}
         for k, (c, n, p, v, s) in enumerate(rows)]).astype({"client": "string",
                                                              "setting": "category"})


def two_clients() -> pd.DataFrame:
    rows = []
    for v in (990.0, 1000.0, 1010.0):  # chromium: quic 10 % faster than tcp
        rows += [(None, "dsl", "tcp", v, "ok"), ("chromium", "dsl", "quic", 0.9 * v, "ok")]
    for v in (1990.0, 2000.0, 2010.0):  # firefox: quic 25 % faster than its own tcp
        rows += [("firefox", "dsl", "tcp", v, "ok"), ("firefox", "dsl", "quic", 0.75 * v, "ok")]
    rows += [("firefox", "dsl", "quic", 10.0, "failed")]  # never counted
    return frame(rows)


def test_an_older_store_is_chromium_only():
    t = frame([(None, "dsl", "tcp", 1.0, "ok")]).drop(columns="client")
    assert clients.present(t) == ["chromium"]
    assert clients.of_client(t, "chromium") is t


def test_one_clients_trials_lose_the_others_categories():
    t = two_clients()
    t.loc[t.client == "firefox", "setting"] = "tcp"
    t["setting"] = t["setting"].cat.add_categories(["tcp-plus"])
    ff = clients.of_client(t, "firefox")
    assert set(ff.trial_id.str.endswith("+firefox")) == {True}
    assert len(ff) == 7
    assert list(ff.setting.cat.categories) == ["tcp"]
    chromium = clients.of_client(t, "chromium")  # NULL client rows are chromium's
    assert len(chromium) == 6 and not chromium.trial_id.str.endswith("+firefox").any()


def test_side_by_side_relates_each_setting_to_its_own_clients_baseline():
    wide = clients.side_by_side(two_clients(), "tcp")
    assert list(wide.columns.get_level_values(0).unique()) == ["chromium", "firefox"]
    assert wide.loc[("dsl", "quic"), ("chromium", "vs_tcp")] == pytest.approx(-0.10)
    assert wide.loc[("dsl", "quic"), ("firefox", "vs_tcp")] == pytest.approx(-0.25)
    assert wide.loc[("dsl", "tcp"), ("firefox", "vs_tcp")] == pytest.approx(0.0)
    assert wide.loc[("dsl", "quic"), ("firefox", "n")] == 3  # the failed trial left out
    assert wide.loc[("dsl", "tcp"), ("firefox", "median")] == pytest.approx(2000.0)


def test_side_by_side_without_the_baseline_says_nothing_relative():
    wide = clients.side_by_side(two_clients(), "tcp-plus")
    assert wide[("firefox", "vs_tcp-plus")].isna().all()


def test_a_client_without_trials_is_named_with_those_present():
    with pytest.raises(ValueError, match="client firefox: no trial of that client; clients "
                                         "present: chromium"):
        clients.of_client(two_clients().query("client != 'firefox'"), "firefox")
