"""Adaptive runs: a site x network group gets more runs until its PLT means are precise.

    # a campaign file
    runs = { min = 10, max = 31, precision = "2%" }   # or precision = "50ms"

The plan (testbed.campaign.plan.plan) holds `max` runs, run-major in the campaign's seeded
order, as with a fixed number of runs. Before the block of run r of a site and
network starts, the group is asked whether it is done (`Decider.skips`): from run
`min` on, it is when every setting of the block has, over its stored ok trials of
runs 0 .. r-1 of that site and network, a 95 % confidence interval of the PLT mean
(Student t) whose half-width is within the precision (a share of the mean, or ms).
A group that is done gets no more blocks; the others keep their places in the order,
so the design stays interleaved and randomised: what a setting is compared with
still ran seconds apart, in random order, in the same runs.

The decision for run r reads only stored ok rows of earlier runs of its group, never
the outcome of a test between settings (stopping when a difference looks
significant would make p-values invalid; stopping when an estimate is precise does
not, docs/statistics.md). So a resumed campaign reaches the same decisions: the rows
of runs before r are stored before run r's block is asked about (on a cluster the
coordinator holds a group's next block until its earlier blocks are stored).

Each decision is kept in the store's table `stops` (results_contract.schema.STOPS): per site
and network the runs done and why the group stopped: `precision` (met after `runs`
runs) or `max` (all runs done; `precise` says whether the last interval met it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, StrictStr, field_validator, model_validator

if TYPE_CHECKING:
    from analysis.statistics.precision import Precision

# analysis.statistics.precision is imported where a precision is used: importing the
# analysis loads pandas, SciPy and matplotlib (~1 s), which a campaign without
# adaptive runs never needs.


class AdaptiveRuns(BaseModel):
    """`runs` as a table: at least `min` and at most `max` runs per site and network,
    more while a setting's PLT mean is less precise than `precision`."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True,
                              use_attribute_docstrings=True)

    min: int = Field(ge=3, le=10_000)
    """Runs every site x network gets (at least 3: an interval needs a spread)."""
    max: int = Field(ge=3, le=10_000)
    """Runs no site x network gets more of."""
    precision: StrictStr
    """The 95 % confidence interval of each setting's PLT mean within +-this: a share of
    the mean ("2%") or a time ("50ms")."""

    @field_validator("precision")
    @classmethod
    def _parses(cls, v: str) -> str:
        from analysis.statistics.precision import Precision

        Precision.parse(v)
        return v

    @model_validator(mode="after")
    def _ordered(self) -> AdaptiveRuns:
        if self.max < self.min:
            from testbed.formats.tomlfile import KeyProblem

            raise KeyProblem("runs.max", f"expected at least runs.min ({self.min}), "
                                         f"got {self.max}")
        return self

    @property
    def bound(self) -> Precision:
        from analysis.statistics.precision import Precision

        return Precision.parse(self.precision)

    def __str__(self) -> str:
        return f"{self.min} to {self.max} runs, until the PLT mean is within ±{self.bound}"


@dataclass(frozen=True)
class Stop:
    """Why a group got no more runs (a row of the store's table `stops`)."""

    site: str
    network: str
    runs: int
    """Runs the group was planned for (0 .. runs-1)."""
    reason: str
    """"precision" (met before max) or "max" (every run done)."""
    precise: bool
    """Every setting's interval met the precision after those runs."""
    worst_percent: float | None
    """The widest half-width among its settings, in % of that setting's mean."""
    worst_ms: float | None
    """The widest half-width among its settings, in ms."""


def judge(site: str, network: str, runs: int, reason: str,
          plts: Mapping[str, Sequence[float]], settings: Iterable[str],
          precision: Precision) -> Stop:
    """The Stop of a group from its settings' ok PLTs."""
    from analysis.statistics.precision import half_width, meets

    settings = list(settings)
    widths = [(half_width(plts.get(s, ())), plts.get(s, ())) for s in settings]
    finite = [(w, v) for w, v in widths if math.isfinite(w)]
    precise = all(meets(plts.get(s, ()), precision) for s in settings)
    return Stop(site, network, runs, reason, precise,
                max((100 * w / (sum(v) / len(v)) for w, v in finite), default=None),
                max((w for w, _ in finite), default=None))


def decide(plts: Mapping[str, Sequence[float]], settings: Iterable[str], run: int,
           runs: AdaptiveRuns) -> str | None:
    """Whether run `run` of a group is left out: "precision" when run >= min and every
    setting's ok PLTs of the runs before are within the precision, "max" at or beyond
    max; None: it runs."""
    if run >= runs.max:
        return "max"
    if run < runs.min:
        return None
    from analysis.statistics.precision import meets

    bound = runs.bound
    return "precision" if all(meets(plts.get(s, ()), bound) for s in settings) else None


class StopsStore(Protocol):
    """What the Decider asks of the campaign's store (testbed.campaign.store.store.Store)."""

    def stops(self) -> list[tuple[Any, ...]]: ...

    def ok_plts(self, site: str, network: str, before: int) -> list[tuple[str, float]]: ...

    def keep_stop(self, stop: dict[str, Any]) -> None: ...


class Decider:
    """The runner's side: asks the store before a group's block whether it runs, and
    keeps each stop in the store (table `stops`)."""

    def __init__(self, runs: AdaptiveRuns, settings: Sequence[str]):
        self.runs = runs
        self.settings = tuple(settings)
        self.stopped: dict[tuple[str, str], Stop] = {}

    def load(self, store: StopsStore) -> None:
        """The stops the store holds (a resumed campaign's)."""
        for site, network, runs, reason, precise, pct, ms in store.stops():
            self.stopped[(site, network)] = Stop(site, network, runs, reason, bool(precise),
                                                 pct, ms)

    def plts(self, store: StopsStore, site: str, network: str,
             before: int) -> dict[str, list[float]]:
        """Each setting's ok PLTs of the group's runs before `before` (ms), in run order."""
        out: dict[str, list[float]] = {s: [] for s in self.settings}
        for protocol, plt in store.ok_plts(site, network, before):
            out.setdefault(protocol, []).append(plt)
        return out

    def skips(self, store: StopsStore, site: str, network: str, run: int) -> bool:
        """Whether the block of run `run` of this site and network is left out (the
        group is done); a new stop is stored."""
        key = (site, network)
        stop = self.stopped.get(key)
        if stop is not None:
            return run >= stop.runs
        if run < self.runs.min:
            return False
        plts = self.plts(store, site, network, run)
        reason = decide(plts, self.settings, run, self.runs)
        if reason is None:
            return False
        self._keep(store, judge(site, network, run, reason, plts, self.settings,
                                self.runs.bound))
        return True

    def finish(self, store: StopsStore, groups: Iterable[tuple[str, str]]) -> None:
        """After the last block: every group without a stop ran to max."""
        for site, network in groups:
            if (site, network) not in self.stopped:
                plts = self.plts(store, site, network, self.runs.max)
                self._keep(store, judge(site, network, self.runs.max, "max", plts,
                                        self.settings, self.runs.bound))

    def _keep(self, store: StopsStore, stop: Stop) -> None:
        store.keep_stop({**asdict(stop), "precise": int(stop.precise)})
        self.stopped[(stop.site, stop.network)] = stop


def run_counts(runs: int | AdaptiveRuns) -> tuple[int, int]:
    """(min, max) runs of `runs` (a fixed number: both)."""
    if isinstance(runs, AdaptiveRuns):
        return runs.min, runs.max
    return runs, runs
