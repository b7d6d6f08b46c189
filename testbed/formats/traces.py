"""Mahimahi link traces from rates, exactly; drop-tail queue sizes; opportunity waits.

A Mahimahi trace lists delivery opportunities in ms, one line per 1500-byte
packet; mm-link repeats it with the last timestamp as its period. For a
fixed rate R, opportunities per ms = R / 12 (R in Mbit/s). With R as an
exact fraction C/N in lowest terms, a trace of N ms holds exactly C
opportunities, so the rate is exact over every period and nothing drifts:
opportunity k (1..C) is at floor(k*N/C) ms, spread as evenly as whole
milliseconds allow, the last at N.

Pure functions: no I/O except write_trace/read_trace. Bottom layer: profile
loading checks rates and trace files with it, the emulate stage builds its
links from it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from testbed.host import safefs

OPPORTUNITY_BYTES = 1500
"""IP bytes per delivery opportunity, the convention of Mahimahi's traces."""
MM_OPPORTUNITY_BYTES = 1504
"""What mm-link counts per opportunity: a 1500-byte packet plus the 4-byte TUN header."""
UDP_PAYLOAD = 1472
"""UDP payload of a 1500-byte IPv4 packet."""
MAX_PERIOD_MS = 60_000
MAX_OPPORTUNITIES = 1_000_000
"""Most opportunities in one period of a fixed-rate trace (a typo in a rate's decimals
would otherwise build a trace of millions of lines in memory)."""
MIN_MBIT = 0.0002
"""The smallest rate with an exact trace: one opportunity in MAX_PERIOD_MS."""
MAX_TRACE_MS = 2**31 - 1
"""Largest timestamp a trace file may hold (about 24.8 days)."""
MAX_TRACE_BYTES = 64 * 1024 * 1024
"""Largest trace file read (Mahimahi's largest, Verizon-LTE-driving.down, is 7.8 MB)."""


class TraceError(ValueError):
    """A rate that cannot be turned into an exact trace of reasonable length."""


@dataclass(frozen=True)
class Trace:
    """A delivery schedule: opportunity times in ms within one period."""

    times: tuple[int, ...]
    """Opportunity timestamps (ms), nondecreasing, the last equal to the period."""

    @property
    def period_ms(self) -> int:
        return self.times[-1]

    @property
    def count(self) -> int:
        return len(self.times)

    @property
    def per_ms(self) -> Fraction:
        """Opportunities per ms, exactly."""
        return Fraction(self.count, self.period_ms)

    @property
    def mbit(self) -> float:
        """IP rate in Mbit/s (1500-byte packets)."""
        return float(self.per_ms * OPPORTUNITY_BYTES * 8 / 1000)

    @property
    def udp_payload_mbit(self) -> float:
        """The most UDP payload this link delivers: one 1472-byte payload per opportunity."""
        return float(self.per_ms * UDP_PAYLOAD * 8 / 1000)

    def text(self) -> str:
        return "".join(f"{t}\n" for t in self.times)


def opportunities_per_ms(mbit: float) -> Fraction:
    """Exact opportunities per ms for a rate in Mbit/s (as written, e.g. 0.468 → 39/1000)."""
    rate = Fraction(str(mbit))
    if rate <= 0:
        raise TraceError(f"rate must be > 0, got {mbit}")
    return rate * 1000 / (OPPORTUNITY_BYTES * 8)


def check_rate(mbit: float) -> Fraction:
    """Opportunities per ms of a rate whose exact trace is of reasonable size;
    TraceError (saying what is expected) otherwise."""
    per_ms = opportunities_per_ms(mbit)
    if per_ms.denominator > MAX_PERIOD_MS:
        if per_ms < Fraction(1, MAX_PERIOD_MS):
            raise TraceError(f"expected a rate >= {MIN_MBIT} Mbit/s (one packet in "
                             f"{MAX_PERIOD_MS // 1000} s), got {mbit}")
        raise TraceError(f"{mbit} Mbit/s needs a trace period of {per_ms.denominator} ms to "
                         f"be exact (at most {MAX_PERIOD_MS}); give the rate with at most "
                         "3 decimals")
    if per_ms.numerator > MAX_OPPORTUNITIES:
        raise TraceError(f"{mbit} Mbit/s needs {per_ms.numerator} packets in one trace period "
                         f"to be exact (at most {MAX_OPPORTUNITIES}); give the rate with "
                         "fewer decimals")
    return per_ms


def fixed_rate(mbit: float, offset: Fraction = Fraction(0), min_period_ms: int = 0) -> Trace:
    """The shortest exact trace for a fixed rate, opportunities spread evenly.

    offset (in opportunity gaps, 0 <= offset < 1) moves every opportunity that
    much later. A trace must end on an opportunity (its last line is its
    period), so with an offset the last one is moved onto the period's end,
    late by `offset` gaps; min_period_ms repeats the pattern until the period
    is at least that long, so this happens rarely.
    """
    per_ms = check_rate(mbit)
    count, period = per_ms.numerator, per_ms.denominator
    if not 0 <= offset < 1:
        raise TraceError(f"offset must be in [0, 1) gaps, got {offset}")
    repeat = max(1, -(-min_period_ms // period))
    count, period = count * repeat, period * repeat
    offset = Fraction(offset)
    times = [math.floor((k - offset) * period / count) for k in range(1, count + 1)]
    times[-1] = period
    return Trace(tuple(times))


def read_trace(path: Path, beneath: Path | None = None) -> Trace:
    """A trace file: whole ms (at most MAX_TRACE_MS), nondecreasing, the last > 0.

    Opened as safefs.open_user does: no symbolic link at any step below
    `beneath` (default: the file's folder); a FIFO or device is refused, not
    waited on; at most MAX_TRACE_BYTES. No error quotes the file's content.
    """
    where = f"{path}: not a Mahimahi trace"
    try:
        raw = safefs.read_user_capped(path, MAX_TRACE_BYTES, beneath=beneath)
    except safefs.UnsafePath:
        raise TraceError(f"{where} (a symbolic link or not a regular file)") from None
    except OSError as e:
        raise TraceError(f"{where} ({e.strerror})") from None
    except ValueError as e:
        raise TraceError(f"{where} ({e})") from None
    stray = raw.translate(None, b"0123456789 \t\r\n")
    if stray:
        line = raw.count(b"\n", 0, raw.index(stray[:1])) + 1
        raise TraceError(f"{where} (line {line}: expected one whole number of ms a line)")
    tokens = raw.split()
    if not tokens:
        raise TraceError(f"{where} (empty)")
    longest = max(tokens, key=len)
    if len(longest) > len(str(MAX_TRACE_MS)) or int(longest) > MAX_TRACE_MS:
        line = raw.count(b"\n", 0, raw.index(longest)) + 1
        raise TraceError(f"{where} (line {line}: expected at most {MAX_TRACE_MS} ms)")
    times = tuple(map(int, tokens))
    if times[-1] <= 0 or any(b < a for a, b in itertools.pairwise(times)):
        raise TraceError(f"{where} (expected nondecreasing ms, the last > 0)")
    return Trace(times)


def starting_at(trace: Trace, start_ms: int) -> Trace:
    """The same trace begun at its first opportunity at or after start_ms (mod its
    period): same period, same opportunities, rotated."""
    period = trace.period_ms
    start = start_ms % period
    times = trace.times
    first = next((t for t in times if t >= start), None)
    if first is None or start == 0:
        return trace
    later = [t - first for t in times if t > first]
    wrapped = [t + period - first for t in times if t <= first]
    return Trace(tuple(later + wrapped))


def longest_gap_ms(trace: Trace) -> int:
    """The longest time without a delivery opportunity, the wrap included."""
    t = np.asarray(trace.times, dtype=np.int64)
    gaps = np.diff(np.concatenate([t, [t[0] + trace.period_ms]]))
    return int(max(gaps.max(), t[0]))


def write_trace(path: Path, trace: Trace) -> Path:
    """Write a trace into one of root's folders (safefs.write_file: a new file renamed
    into place, mode 0644 so that mm-link, run as the testbed user, reads it)."""
    return safefs.write_file(Path(path), trace.text(), mode=0o644)


def queue_bytes(buffer_ms: float, trace: Trace) -> int:
    """Drop-tail queue in mm-link's bytes holding buffer_ms of drain time at the trace's
    mean rate (Mahimahi counts 1504 bytes per full packet)."""
    return math.floor(Fraction(str(buffer_ms)) * trace.per_ms * MM_OPPORTUNITY_BYTES)


def opportunity_wait_quantile(trace: Trace, q: float) -> float:
    """Quantile q of the wait of a small packet arriving at a uniformly random time
    until mm-link delivers it (ms), on an otherwise idle link.

    mm-link works in whole ms and, before queueing an arrival at ms t, uses up
    the opportunities at or before t; the packet leaves at the first
    opportunity after t. For an arrival in [t, t+1) that is o(t) - arrival,
    uniform on (o(t)-t-1, o(t)-t].
    """
    period = trace.period_ms
    ops = np.unique(np.asarray(trace.times, dtype=np.int64) % period)
    ticks = np.arange(period, dtype=np.int64)
    idx = np.searchsorted(ops, ticks, side="right")  # first op strictly after t
    nxt = np.where(idx < len(ops), ops[np.minimum(idx, len(ops) - 1)], ops[0] + period)
    hi = (nxt - ticks).astype(float)  # each tick contributes uniform(hi - 1, hi]
    # CDF(x) = mean(clip(x - (hi - 1), 0, 1)); bisect for the quantile.
    lo_x, hi_x = 0.0, float(hi.max())
    for _ in range(60):
        mid = (lo_x + hi_x) / 2
        if np.clip(mid - (hi - 1), 0, 1).mean() < q:
            lo_x = mid
        else:
            hi_x = mid
    return hi_x
