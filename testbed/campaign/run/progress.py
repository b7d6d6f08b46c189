"""What a running campaign shows: a progress bar with ETA on a terminal, one line
per finished trial otherwise (a log file, CI); both from testbed.console."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import Progress

from testbed.campaign.plan import plan as plan_mod
from testbed.campaign.store.store import Row
from testbed.console import Eta, progress_bar


class TrialLines:
    """One log line per finished trial (id, status, PLT, ETA), for output that is not a
    terminal; the ETA is the mean time per trial so far times the trials left."""

    def __init__(self, total: int, clock=time.monotonic):
        self.total, self.eta = total, Eta(total, clock)

    def line(self, row: Row) -> str:
        left = self.eta.step()
        status = row.status if row.status == "ok" else f"{row.status} ({row.reason})"
        plt_ = "–" if row.plt_ms is None else f"{row.plt_ms:.0f} ms"
        return (f"trial {self.eta.done}/{self.total} {row.trial_id} {status} PLT {plt_} "
                f"ETA {left}")


def bar(console: Console, disable: bool) -> Progress:
    """The campaign's progress bar (disabled: nothing drawn)."""
    return progress_bar(console, "{task.description}", counts="{task.fields[counts]}",
                        spinner=True, disable=disable)


def counts(stats: dict[str, int]) -> str:
    return f"[green]{stats['ok']} ok[/] [red]{stats['failed']} failed[/]"


def describe(t: plan_mod.Trial) -> str:
    """The bar's description while trial t runs."""
    return f"run {t.run + 1} · {t.site} · {t.network} · {t.setting}"
