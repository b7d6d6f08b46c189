"""Lanes (testbed.campaign.plan.lanes): the campaign key and --lanes, the gate that lets
blocks start, the lane of a local worker process, "auto" from a stored bench/lanes
answer, and the coordinator taking blocks in the plan's order as lanes free up."""

from __future__ import annotations

import json

import pytest

from testbed.campaign.plan import config, lanes
from testbed.campaign.plan import plan as plan_mod
from testbed.errors import InputError
from testbed.formats.profiles import load_network

CAMPAIGN = 'sites = ["local-news"]\nnetworks = ["none"]\nprotocols = ["tcp"]\n'


@pytest.mark.parametrize("value", ["0", "17", "2.0", '"4"', "true", '"many"', "[2]"])
def test_a_bad_lanes_key_names_the_key(tmp_path, value):
    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN + f"lanes = {value}\n")
    with pytest.raises(InputError, match=r"c\.toml: key lanes: expected a whole number from 1 "
                                         r"to 16 or \"auto\""):
        config.load(f)


@pytest.mark.parametrize(("value", "expected"), [("1", 1), ("4", 4), ('"auto"', "auto")])
def test_lanes_key(tmp_path, value, expected):
    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN + f"lanes = {value}\n")
    assert config.load(f).lanes == expected


def test_lanes_default_to_one(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN)
    assert config.load(f).lanes == 1


@pytest.mark.parametrize("value", ["0", "x", "17", "-1", "2.5"])
def test_a_bad_lanes_option_exits_2_naming_it(tmp_path, value, capsys, monkeypatch):
    import os

    from testbed import cli

    monkeypatch.setattr(os, "geteuid", lambda: 1000)  # no sweep before the command
    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", str(f), "--lanes", value, "--dry-run"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2, err
    assert err.count("\n") == 1 and "--lanes: expected a whole number from 1 to 16 or auto" \
        in err, err


def test_the_gate_lets_the_smallest_lane_count_of_the_running_networks_decide():
    g = lanes.Gate({"dsl": 1, "da2gc": 4, "mss": 3})
    assert g.allows("da2gc", []) and g.allows("da2gc", ["da2gc"] * 3)
    assert not g.allows("da2gc", ["da2gc"] * 4)
    assert g.allows("dsl", []) and not g.allows("dsl", ["da2gc"])
    assert not g.allows("da2gc", ["dsl"])
    assert g.allows("mss", ["da2gc", "da2gc"]) and not g.allows("mss", ["da2gc"] * 3)
    assert not g.allows("da2gc", ["mss"] * 3)
    two = lanes.Gate({"da2gc": 4, "dsl": 1}, machines=2)
    assert two.allows("da2gc", ["da2gc"] * 7) and not two.allows("da2gc", ["da2gc"] * 8)
    assert two.allows("dsl", ["dsl"]) and not two.allows("dsl", ["dsl", "dsl"])


def test_a_local_process_is_a_lane_of_its_worker():
    assert lanes.slot(0, 1) == ("0", 0) and lanes.slot(3, 1) == ("3", 0)
    assert [lanes.slot(n, 2) for n in range(4)] == [("0", 0), ("0", 1), ("1", 0), ("1", 1)]
    assert lanes.slot("7", 4) == ("1", 3)
    assert lanes.slot("gpu-box", 4) == ("gpu-box", 0)


def test_auto_takes_the_stored_measurement_of_this_machine_else_one_lane(tmp_path,
                                                                         monkeypatch):
    monkeypatch.setattr(lanes, "CACHE", tmp_path)
    nets = {"da2gc": load_network("da2gc"), "dsl": load_network("dsl")}
    counts, why = lanes.resolve("auto", nets)
    assert counts == {"da2gc": 1, "dsl": 1}
    assert "no lanes measurement" in why["da2gc"] and "bench/lanes" in why["da2gc"]
    path = lanes.store(nets["da2gc"], 4, 0.02, [{"lanes": 4, "plt": "equivalent"}])
    counts, why = lanes.resolve("auto", nets)
    assert counts == {"da2gc": 4, "dsl": 1} and why["da2gc"].startswith("auto: bench/lanes of")
    assert lanes.resolve(3, nets)[0] == {"da2gc": 3, "dsl": 3}
    # another machine's (or another profile file's) measurement is not used
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "host": "elsewhere"}))
    assert lanes.resolve("auto", nets)[0]["da2gc"] == 1
    path.write_text(json.dumps({**doc, "profile_digest": "0" * 64}))
    assert lanes.resolve("auto", nets)[0]["da2gc"] == 1
    path.write_text("{not json")
    assert lanes.resolve("auto", nets)[0]["da2gc"] == 1


class FakeFuture:
    def __init__(self, client, block):
        self.client, self.block = client, block
        self.key = f"k{len(client.submitted)}"

    def done(self):
        return True

    def result(self):
        return "packed", {}


class FakeClient:
    """Records what was submitted and how many blocks ran at once."""

    def __init__(self):
        self.submitted: list[plan_mod.Block] = []

    def submit(self, fn, job, block, attempts, **kw):
        self.submitted.append(block)
        return FakeFuture(self, block)

    def cancel(self, futures):
        pass


def test_the_coordinator_starts_blocks_in_plan_order_as_the_gate_allows(monkeypatch):
    """Blocks of a 4-lane network go four at a time, a one-lane network's alone, and
    always in the plan's order."""
    from testbed.campaign.cluster import cluster

    sites = list("abcdef")
    plan = (plan_mod.blocks(sites, ["da2gc"], ["tcp", "quic"], 1, seed=2)
            + plan_mod.blocks(sites[:2], ["dsl"], ["tcp", "quic"], 1, seed=2)
            + plan_mod.blocks(sites, ["da2gc", "dsl"], ["tcp", "quic"], 2, seed=2))
    gate = lanes.Gate({"da2gc": 4, "dsl": 1})
    client = FakeClient()
    in_flight: list[str] = []
    seen_at_once: list[list[str]] = []

    class Pending:
        """as_completed: hands back the oldest running future."""

        def __init__(self):
            self.futs = []

        def add(self, f):
            self.futs.append(f)
            in_flight.append(f.block.network)
            seen_at_once.append(list(in_flight))

        def count(self):
            return len(self.futs)

        def __iter__(self):
            while self.futs:
                f = self.futs.pop(0)
                in_flight.remove(f.block.network)
                yield f

    monkeypatch.setattr("distributed.as_completed", Pending)
    co = cluster.Coordinator.__new__(cluster.Coordinator)
    co.client, co.gate, co.attempts, co.order, co.in_flight = client, gate, {}, 0, {}
    co.group_of = {}
    co.job = None
    co.runner = type("R", (), {"console": None, "decider": None})()
    monkeypatch.setattr(co, "join_check", list)
    client.wait_for_workers = lambda n, timeout: None
    monkeypatch.setattr(co, "_worker", lambda info: None)
    monkeypatch.setattr(co, "_store", lambda packed, store, progress, task: [])
    co.run(list(plan), None, None, None)
    assert client.submitted == plan
    for running in seen_at_once:
        limit = min(gate.counts[n] for n in running)
        assert len(running) <= limit, running
    assert max(len(r) for r in seen_at_once) == 4
    assert ["dsl"] in seen_at_once
