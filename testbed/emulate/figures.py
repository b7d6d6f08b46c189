"""Figures from probe results: RTTs, loss per direction, delivered rates. Pure."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Rtt:
    """Small-packet round trips of one probe run."""

    sent: int
    """Probes the client sent."""
    at_server: int
    """Probes the server received (and echoed)."""
    echoed: int
    """Echoes the client received."""
    rtt_ms: np.ndarray
    """Round-trip times of the echoed probes, ms."""
    up_ms: np.ndarray
    """One-way client → server delays, ms (all namespaces share CLOCK_MONOTONIC)."""
    down_ms: np.ndarray
    """One-way server → client delays, ms."""

    @property
    def min(self) -> float:
        return float(self.rtt_ms.min())

    @property
    def median(self) -> float:
        return float(np.median(self.rtt_ms))


def rtt(client: dict, server: dict) -> Rtt:
    """client: `probe rtt` output; server: the probe server's dump."""
    t_send = np.asarray(client["t_send"], dtype=np.int64)
    r = client["replies"]
    seq = np.asarray(r["seq"], dtype=np.int64)
    t_server = np.asarray(r["t_server"], dtype=np.int64)
    t_recv = np.asarray(r["t_recv"], dtype=np.int64)
    echo = server.get("echo", {}).get(str(client["session"]), {"seqs": []})
    if len(seq) == 0:
        empty = np.asarray([], dtype=float)
        return Rtt(len(t_send), len(echo["seqs"]), 0, empty, empty, empty)
    return Rtt(sent=len(t_send), at_server=len(echo["seqs"]), echoed=len(seq),
               rtt_ms=(t_recv - t_send[seq]) / 1e6, up_ms=(t_server - t_send[seq]) / 1e6,
               down_ms=(t_recv - t_server) / 1e6)


@dataclass(frozen=True)
class Loss:
    """Losses of one direction, with a 99 % binomial test against the configured rate."""

    trials: int
    lost: int
    configured: float
    """Configured loss fraction."""

    @property
    def fraction(self) -> float:
        return self.lost / self.trials if self.trials else float("nan")

    def interval(self, confidence: float = 0.99) -> tuple[float, float]:
        """Exact (Clopper-Pearson) confidence interval of the measured loss fraction."""
        from scipy.stats import binomtest  # SciPy (~0.6 s to import) only when measured

        ci = binomtest(self.lost, self.trials, max(self.configured, 1e-12)).proportion_ci(
            confidence_level=confidence, method="exact")
        return float(ci.low), float(ci.high)

    def consistent(self, confidence: float = 0.99) -> bool:
        """True when the configured loss lies inside the measured interval."""
        if self.trials == 0:
            return False
        low, high = self.interval(confidence)
        return low <= self.configured <= high


def losses(r: Rtt, up_configured: float, down_configured: float) -> tuple[Loss, Loss]:
    """Uplink: probes the server never saw. Downlink: echoes the client never saw."""
    return (Loss(r.sent, r.sent - r.at_server, up_configured),
            Loss(r.at_server, r.at_server - r.echoed, down_configured))


def delivered_mbit_windows(t_ns: list[int] | np.ndarray, payload_bytes: int,
                           window_s: float) -> tuple[float, int]:
    """Median payload rate over whole windows of window_s between the first and the
    last arrival, and the number of windows. A sender that missed its turn for a
    moment (the machine is shared) spoils one window, not the figure."""
    t = np.sort(np.asarray(t_ns, dtype=np.int64))
    if len(t) < 2:
        return 0.0, 0
    width = int(window_s * 1e9)
    n = int((t[-1] - t[0]) // width)
    if n < 1:
        return delivered_mbit(t, payload_bytes), 0
    edges = t[0] + width * np.arange(n + 1)
    counts = np.histogram(t, bins=edges)[0]
    return float(np.median(counts) * payload_bytes * 8 / window_s / 1e6), n


def delivered_mbit(t_ns: list[int] | np.ndarray, payload_bytes: int) -> float:
    """Payload rate of a stream at its receiver: bytes after the first arrival over the
    time from the first to the last arrival."""
    t = np.sort(np.asarray(t_ns, dtype=np.int64))
    if len(t) < 2 or t[-1] == t[0]:
        return 0.0
    return (len(t) - 1) * payload_bytes * 8 / ((t[-1] - t[0]) / 1e9) / 1e6
