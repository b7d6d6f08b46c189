"""testbed.measure.load: the machine's load over a page load, and the wait for a quiet
machine (campaign key max_load_before_start)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from testbed.campaign.plan import config
from testbed.errors import InputError
from testbed.measure import load

# user nice system idle iowait irq softirq steal guest guest_nice
BEFORE = """cpu  1000 100 400 8000 500 0 0 0 50 0
cpu0 500 50 200 4000 250 0 0 0 25 0
intr 12345
"""
# +300 user, +50 system, +25 irq, +25 softirq (busy 400), +500 idle, +50 iowait,
# +50 steal: 1000 ticks, busy 40 %, steal 5 %; guest (+30) is inside user already
AFTER = """cpu  1300 100 450 8500 550 25 25 50 80 0
cpu0 650 50 225 4250 275 12 12 25 40 0
intr 12399
"""


def test_busy_and_steal_are_shares_of_the_whole_machine_between_two_readings():
    a, b = load.parse_stat(BEFORE), load.parse_stat(AFTER)
    assert a == load.CpuTimes(busy=1500, steal=0, total=10000)
    assert load.cpu_fractions(a, b) == (0.4, 0.05)


def test_an_old_kernels_short_cpu_line_and_no_time_passed():
    a = load.parse_stat("cpu 10 0 10 80\n")  # before iowait, irq, softirq and steal
    assert a == load.CpuTimes(busy=20, steal=0, total=100)
    assert load.cpu_fractions(a, a) == (None, None)
    with pytest.raises(ValueError, match="no aggregate 'cpu' line"):
        load.parse_stat("cpu0 1 2 3 4\n")


def test_the_real_proc_stat_reads_and_moves_forward():
    a = load.read_stat()
    time.sleep(0.05)
    busy, steal = load.cpu_fractions(a, load.read_stat())
    assert busy is None or 0 <= busy <= 1
    assert steal is None or 0 <= steal <= 1


BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {s}: pass\n"


def _burner(seconds: float, children: int = 0) -> subprocess.Popen:
    """A process that burns `seconds` of CPU itself, after starting `children` that each
    burn as much and are waited for (reaped) before it burns."""
    code = ("import subprocess, sys\n"
            f"kids = [subprocess.Popen([sys.executable, '-c', {BURN.format(s=seconds)!r}]) "
            f"for _ in range({children})]\n"
            "[k.wait() for k in kids]\n" + BURN.format(s=seconds) +
            "sys.stdin.read()\n")  # then idle until told to end
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE)


def _until(predicate, limit: float = 30.0) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < deadline, "the burner did not finish in time"
        time.sleep(0.05)


def test_a_process_trees_cpu_time_counts_its_reaped_children():
    """Parent and two children each burn 0.3 s of CPU; the children end (reaped) before
    the reading: the tree still has all of it."""
    p = _burner(0.3, children=2)
    try:
        _until(lambda: (load.tree_cpu_s(p.pid) or 0) >= 0.9)
        total = load.tree_cpu_s(p.pid)
        time.sleep(0.2)  # idle now: nothing more
        assert total is not None and 0.9 <= total < 1.5
        assert load.tree_cpu_s(p.pid) == pytest.approx(total, abs=0.05)
        assert load.trees_cpu_s([p.pid, p.pid]) == pytest.approx(2 * total, abs=0.1)
    finally:
        p.communicate(b"")
    assert load.tree_cpu_s(p.pid) is None  # gone
    assert load.trees_cpu_s([p.pid]) is None and load.trees_cpu_s([]) is None


def test_the_probe_measures_the_browser_and_the_servers_between_its_marks():
    browser, server = _burner(0.4), _burner(0.0)
    try:
        probe = load.Probe(lambda: [server.pid])
        mark = probe.start(browser.pid)
        _until(lambda: (load.tree_cpu_s(browser.pid) or 0) - (mark.browser_s or 0) >= 0.39)
        got = probe.end(mark)
    finally:
        browser.communicate(b"")
        server.communicate(b"")
    assert got.browser_cpu_s is not None and 0.35 <= got.browser_cpu_s < 1.0
    assert got.server_cpu_s is not None and got.server_cpu_s < 0.1
    assert got.cpu_busy is not None and 0 < got.cpu_busy <= 1
    assert got.loadavg_1m is not None and got.loadavg_1m >= 0
    assert got.load_wait_s is None and got.load_over_limit is None  # no limit


def test_a_browser_gone_by_the_end_is_unknown_not_negative():
    probe = load.Probe(list)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    mark = probe.start(gone.pid)
    gone.wait()
    got = probe.end(mark)
    assert got.browser_cpu_s is None and got.server_cpu_s is None


class FakeMachine:
    """A clock and a CPU whose busy share over each window is the next of `busy`."""

    def __init__(self, busy: list[float]):
        self.now = 100.0
        self.busy = list(busy)
        self.windows = 0

    def clock(self) -> float:
        return self.now

    def busy_over(self, window_s: float) -> float:
        self.now += window_s
        self.windows += 1
        return self.busy.pop(0) if self.busy else 1.0


def test_a_quiet_machine_costs_one_window():
    m = FakeMachine([0.2])
    assert load.wait_quiet(0.5, m.busy_over, m.clock) == load.Waited(1.0, False)


def test_the_wait_ends_when_the_machine_gets_quiet():
    m = FakeMachine([0.9, 0.8, 0.6, 0.5])
    assert load.wait_quiet(0.5, m.busy_over, m.clock) == load.Waited(4.0, False)


def test_a_machine_busy_for_the_whole_bound_is_measured_anyway_and_flagged():
    m = FakeMachine([])  # always 100 % busy
    got = load.wait_quiet(0.5, m.busy_over, m.clock, max_wait_s=60)
    assert got == load.Waited(60.0, True) and m.windows == 60


def test_the_probe_waits_only_with_a_limit_and_records_the_wait():
    m = FakeMachine([0.9, 0.3])
    ticks = iter(range(0, 10**6, 100))

    def stat() -> load.CpuTimes:
        return load.CpuTimes(busy=0, steal=0, total=next(ticks))

    assert load.Probe(list, None, stat=stat, clock=m.clock).quiet() is None
    probe = load.Probe(list, 0.5, stat=stat, clock=m.clock)
    probe.busy_over = m.busy_over  # type: ignore[method-assign]
    waited = probe.quiet()
    assert waited == load.Waited(2.0, False)
    got = probe.end(probe.start(None), waited)
    assert got.load_wait_s == 2.0 and got.load_over_limit is False
    assert got.cpu_busy == 0.0 and got.browser_cpu_s is None


def test_the_probes_own_window_reads_the_stat_around_its_sleep():
    readings = iter([load.CpuTimes(0, 0, 0), load.CpuTimes(70, 0, 100)])
    slept = []
    probe = load.Probe(list, 0.5, stat=lambda: next(readings), sleep=slept.append)
    assert probe.busy_over(1.0) == 0.7 and slept == [1.0]


CAMPAIGN = 'sites = ["local-news"]\nnetworks = ["dsl"]\nprotocols = ["tcp"]\nruns = 1\n'


@pytest.mark.parametrize("value, expected", [
    ("1.5", "expected a number <= 1, got 1.5"),
    ("0", "expected a number > 0, got 0"),
    ('"half"', 'expected a number, got "half"'),
])
def test_a_bad_max_load_before_start_is_one_line_naming_file_key_and_expected(
        tmp_path, value, expected):
    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN + f"max_load_before_start = {value}\n")
    with pytest.raises(InputError) as e:
        config.load(f, check_names=False)
    assert str(e.value) == f"{f}: key max_load_before_start: {expected}"
    assert e.value.exit_code == 2


def test_max_load_before_start_is_optional(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text(CAMPAIGN)
    assert config.load(f, check_names=False).max_load_before_start is None
    f.write_text(CAMPAIGN + "max_load_before_start = 0.5\n")
    assert config.load(f, check_names=False).max_load_before_start == 0.5


def test_a_trials_load_becomes_its_columns():
    from results_contract.schema import LOAD_COLUMNS
    from testbed.campaign.run.rows import load_columns

    assert load_columns(None) == dict.fromkeys(LOAD_COLUMNS)
    got = load_columns(load.Load(0.5, 0.0, 1.2, 0.05, 2.5, load_wait_s=60.0,
                                 load_over_limit=True))
    assert list(got) == list(LOAD_COLUMNS) and got["load_over_limit"] == 1
    assert got["cpu_busy"] == 0.5 and got["server_cpu_s"] == 0.05
