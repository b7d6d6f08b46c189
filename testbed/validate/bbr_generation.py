"""Which BBR generation a sender ran, read from what it leaves behind.

Pure functions over evidence already collected (no I/O, no root):

- TCP: `ss -ti` (or `ss -tinm`) text from the server namespace during a transfer,
  and the kernel's net.ipv4.tcp_available_congestion_control. Linux's `bbr`
  module is BBRv1 (mainline has no other); `ss` names it on each connection and
  prints its model, `bbr:(bw:...,mrtt:...,pacing_gain:G,cwnd_gain:C)`. BBRv1's
  gains are a closed set (tcp_bbr.c: startup 739/256 for both, drain pacing
  88/256, ProbeBW pacing cycling 5/4, 3/4, 1 with cwnd gain 2, ProbeRTT 1), so a
  gain outside it (BBRv3's startup 2.77 or ProbeBW_DOWN 0.9, say) is not BBRv1.
- QUIC: h3server's summary names the controller quiche ran by quiche's own
  name (`"cc": "bbr"` is BBRv1, `"bbr2_gcongestion"` BBRv2), and its qlogs name
  the congestion states: BBRv1 has one ProbeBW state (`bbr_probe_bw`, gains
  cycling inside it), BBRv2 four (`bbr_probe_bw_up/_down/_cruise/_refill`).
  Startup, drain and ProbeRTT are named alike in both, so a load too short to
  reach ProbeBW proves nothing from states alone.

Each function returns a Finding: the generation ("bbr1", "bbr2" or None when
the evidence does not show one) and a short reason, for a verdict row.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

BBR1 = "bbr1"
BBR2 = "bbr2"

# tcp_bbr.c (BBRv1), gains in units of 1/256 as `ss` divides them.
_V1_PACING_GAINS = {739 / 256, 88 / 256, 320 / 256, 192 / 256, 1.0}
_V1_CWND_GAINS = {739 / 256, 2.0, 1.0}
_GAIN_TOLERANCE = 0.005  # ss prints %g (6 significant digits)

_SS_BBR_INFO = re.compile(r"\bbbr:\(([^)]*)\)")

# quiche's names (recovery/congestion/{bbr,bbr2}, recovery/gcongestion/bbr2).
_QUICHE_CC = {"bbr": BBR1, "bbr2": BBR2, "bbr2_gcongestion": BBR2}
_NOT_BBR = {"cubic", "reno"}
_V1_STATES = {"bbr_probe_bw"}
_V2_STATES = {"bbr_probe_bw_up", "bbr_probe_bw_down", "bbr_probe_bw_cruise",
              "bbr_probe_bw_refill"}


@dataclass(frozen=True)
class Finding:
    generation: str | None
    """"bbr1", "bbr2", or None: not BBR, or the evidence does not tell."""
    why: str
    """What the evidence showed, one line."""


def _gain_in(value: float, allowed: set[float]) -> bool:
    return any(abs(value - a) <= _GAIN_TOLERANCE for a in allowed)


def _ss_details(text: str) -> list[str]:
    """The detail line of every connection in `ss -ti` output (the one naming the
    congestion control: it starts with whitespace and carries `rtt:`)."""
    # ss may be read without line breaks between two runs: split before each header
    text = re.sub(r"(?<=\S)(Recv-Q\s)", r"\n\1", text)
    return [ln for ln in text.splitlines() if ln[:1].isspace() and "rtt:" in ln]


def _cc_name(detail: str) -> str | None:
    """The congestion control a detail line names: its first word without a colon
    (`ss -tim` puts `skmem:(...)` before it)."""
    return next((w for w in detail.split() if ":" not in w), None)


def tcp_generation(ss: str | Iterable[str], available: str | Iterable[str] | None = None
                   ) -> Finding:
    """The BBR generation of the TCP connections `ss -ti` showed.

    ss: one or more `ss -ti` outputs (server side, during a transfer), or the
    detail lines of the connections that count (one per sample).
    available: net.ipv4.tcp_available_congestion_control (text or names); when
    given, `bbr` must be among them.
    """
    names = set(available.split() if isinstance(available, str) else available or ())
    if available is not None and "bbr" not in names:
        return Finding(None, f"kernel offers no bbr ({' '.join(sorted(names)) or 'none'})")
    details = _ss_details(ss) if isinstance(ss, str) else [d for d in ss if "rtt:" in d]
    ccs = {cc for d in details if (cc := _cc_name(d))}
    if not details:
        return Finding(None, "no connection in the ss output")
    if ccs != {"bbr"}:
        if ccs == {"bbr2"}:
            return Finding(BBR2, "ss names bbr2 on every connection")
        return Finding(None, f"ss names {', '.join(sorted(ccs))}, not bbr alone")
    pacing: set[float] = set()
    cwnd: set[float] = set()
    for d in details:
        for info in _SS_BBR_INFO.findall(d):
            fields = dict(kv.split(":", 1) for kv in info.split(",") if ":" in kv)
            try:
                if "pacing_gain" in fields:
                    pacing.add(float(fields["pacing_gain"]))
                if "cwnd_gain" in fields:
                    cwnd.add(float(fields["cwnd_gain"]))
            except ValueError:
                return Finding(None, f"unreadable bbr gains: bbr:({info})")
    if not pacing and not cwnd:
        return Finding(None, "ss names bbr but shows no BBR gains (no bbr:(...) with gains)")
    odd = sorted({g for g in pacing if not _gain_in(g, _V1_PACING_GAINS)}
                 | {g for g in cwnd if not _gain_in(g, _V1_CWND_GAINS)})
    shown = (f"pacing_gain {', '.join(f'{g:g}' for g in sorted(pacing))}; "
             f"cwnd_gain {', '.join(f'{g:g}' for g in sorted(cwnd))}")
    if odd:
        return Finding(None, f"bbr with gains outside BBRv1's ({', '.join(f'{g:g}' for g in odd)}): "
                             + shown)
    return Finding(BBR1, f"ss: bbr, BBRv1 gains only ({shown}), {len(details)} samples")


def quic_generation(summary: dict | None = None, states: Iterable[str] = ()) -> Finding:
    """The BBR generation h3server ran, from its summary (the `cc` key) and/or the
    congestion states of its qlogs (see testbed.validate.evidence.qlog_states). Both given: they must agree."""
    states = set(states)
    by_cc: str | None = None
    cc = summary.get("cc") if isinstance(summary, dict) else None
    if cc is not None and not isinstance(cc, str):
        return Finding(None, f"summary cc is not a name: {cc!r}")
    if cc is not None:
        if cc in _NOT_BBR:
            return Finding(None, f"summary: quiche ran {cc}")
        if cc not in _QUICHE_CC:
            return Finding(None, f"summary: unknown controller {cc!r}")
        by_cc = _QUICHE_CC[cc]
    v1, v2 = states & _V1_STATES, states & _V2_STATES
    by_states = (None if v1 and v2 else BBR1 if v1 else BBR2 if v2 else None)
    seen = ", ".join(sorted(states)) or "none"
    if v1 and v2:
        return Finding(None, f"qlog names both BBRv1 and BBRv2 ProbeBW states: {seen}")
    if by_cc and by_states and by_cc != by_states:
        return Finding(None, f"summary cc {cc} ({by_cc}) but qlog states say {by_states}: {seen}")
    if by_cc and by_states:
        return Finding(by_cc, f"summary cc {cc}; qlog states {seen}")
    if by_cc:
        return Finding(by_cc, f"summary cc {cc}" + (f"; qlog states {seen} (no ProbeBW)"
                                                     if states else ""))
    if by_states:
        return Finding(by_states, f"qlog states {seen}")
    if cc is None and not states:
        return Finding(None, "no summary cc and no qlog state")
    return Finding(None, f"qlog states {seen} name no ProbeBW phase")
