"""When a finished trial runs again, and when failures stop the campaign.

A trial whose row is not ok runs again while it has attempts left (its
attempt number is at most `retries`); a stored row ends a streak of failures
if ok, and `stop_after_failures` failed rows stored one after the other stop
the campaign: something is wrong with the setup, not with one trial.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from testbed.campaign.store.store import Row
from testbed.errors import TestbedError


@dataclass
class RetryPolicy:
    retries: int
    stop_after_failures: int
    in_a_row: int = 0
    """Failed rows stored one after the other, up to now."""

    def again(self, row: Row) -> bool:
        """Whether the trial of this row (not stored) runs again."""
        return row.status != "ok" and row.attempt <= self.retries

    def stored(self, row: Row, out: Path) -> None:
        """Count a stored row; TestbedError when too many failed in a row."""
        self.in_a_row = 0 if row.status == "ok" else self.in_a_row + 1
        if self.in_a_row >= self.stop_after_failures:
            raise TestbedError(
                f"{self.in_a_row} trials in a row failed, the last: {row.reason}; "
                f"something is wrong with the setup (see {out}/logs/). Fix it, "
                f"then resume with `testbed run ... --retry-failed`")
