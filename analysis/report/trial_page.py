"""One trial, looked at: its row, HTTP versions, connections, a waterfall and a filmstrip.

    v = trial_view("results/paper", "local-news+dsl+quic+0")
    v.text()                        # what `testbed trial` prints
    write_trial_page(v, Path("t.html"))

The page is one self-contained HTML file (inline CSS, frames as data: URIs, no
script, no link out), readable from file:// anywhere. The waterfall has one row
per HAR entry (`data-request` on each), its bars the HAR's phases: blocked,
dns, connect, ssl, send, wait, receive. The filmstrip takes frames of the kept
video at the visual progress's changes, with ffmpeg (left out, with a note,
when there is no video or no ffmpeg).
"""

from __future__ import annotations

import base64
import datetime as dt
import fcntl
import math
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pandas as pd
from markupsafe import Markup

from analysis.report import pages
from analysis.statistics.connections import connections_of
from results_contract import trial_folder
from results_contract.load import ResultsError, load
from results_contract.schema import METRICS, label
from results_contract.trialfiles import TrialFiles

PHASES = ("blocked", "dns", "connect", "ssl", "send", "wait", "receive")
"""The HAR's timing phases, in order (HAR's `connect` includes `ssl`: drawn without it)."""
COLORS = {"blocked": "#c8c8c8", "dns": "#1f9e89", "connect": "#f28e2b", "ssl": "#b07aa1",
          "send": "#4e79a7", "wait": "#76b7b2", "receive": "#2f5597"}

FRAMES = 10
"""Most filmstrip frames."""
FRAME_WIDTH = 200
"""Filmstrip frame width in pixels (JPEG)."""
MAX_VIDEO = 256 << 20
"""Most bytes of a kept video the filmstrip is taken from."""

Runner = Callable[[list[str], tuple[int, ...], float], subprocess.CompletedProcess[bytes]]
"""Runs ffmpeg: (argv, fds it inherits, timeout in s) -> its exit status and bytes of
output. The command line's runs it as an unprivileged user."""


def run_here(argv: list[str], pass_fds: tuple[int, ...], timeout: float
             ) -> subprocess.CompletedProcess[bytes]:
    """ffmpeg as this process's user (the default Runner)."""
    return subprocess.run(argv, capture_output=True, timeout=timeout, pass_fds=pass_fds,
                          check=False)

SHOWN_CONNECTION_COLUMNS = (
    "transport", "origin", "server_ip", "server_port", "client_port", "cc", "requests",
    "handshake_ms", "duration_ms", "srtt_ms", "min_rtt_ms", "cwnd_initial_packets",
    "cwnd_packets", "bytes_sent", "bytes_retrans", "packets_lost", "delivery_rate_bps",
    "rwnd_limited_ms", "sndbuf_limited_ms")


@dataclass
class TrialView:
    trial_id: str
    row: dict[str, Any]
    where: Path
    har: dict[str, Any] | None = None
    visual: dict[str, Any] | None = None
    connections: pd.DataFrame = field(default_factory=pd.DataFrame)
    has_connections_table: bool = False
    frames: list[tuple[float, bytes]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def entries(self) -> list[dict[str, Any]]:
        return waterfall(self.har) if self.har else []

    def text(self) -> str:
        """The trial as lines of text (what `testbed trial` prints)."""
        r = self.row
        out = [f"trial {self.trial_id}: {r['status']}"
               + (f" ({r['reason']})" if _present(r.get("reason")) else ""),
               (f"  site {r['site']}, network {r['network']} (RTT {r['rtt_ms']:g} ms), "
               f"setting {r['setting']}, run {r['run']}, attempt {r['attempt']}, "
               f"started {r['started_at']}")]
        metrics = [f"{label(m)} {r[c]:.0f}" for m, c in METRICS.items() if _present(r.get(c))]
        out.append("  metrics (ms): " + (", ".join(metrics) or "none"))
        out.append(f"  requests {_int(r.get('requests'))}, bytes {_int(r.get('bytes'))}, "
                   f"misses {_int(r.get('misses'))}, HTTP versions {r.get('http_versions') or '–'}")
        machine = machine_load(r)
        if machine:
            out.append(f"  machine during the load: {machine}")
        entries = self.entries
        if self.har is not None:
            hosts = {e["host"] for e in entries}
            conns = {e["connection"] for e in entries if e["connection"]}
            out.append(f"  HAR: {len(entries)} requests to {len(hosts)} hosts over "
                       f"{len(conns)} connections")
        if len(self.connections):
            out.append(f"  connections ({len(self.connections)}):")
            for c in self.connections.itertuples(index=False):
                out.append(f"    {c.transport} {c.server_ip}:{_int(c.server_port)} "
                           f"{c.origin or ''} cc {c.cc or '–'}, requests {_int(c.requests)}, "
                           f"sent {_int(c.bytes_sent)} B, retrans {_int(c.bytes_retrans)} B, "
                           f"srtt {_num(c.srtt_ms)} ms, cwnd {_int(c.cwnd_packets)} pkts")
        for note in self.notes:
            out.append(f"  note: {note}")
        return "\n".join(out)


def _present(v: object) -> bool:
    return v is not None and v is not pd.NA and not (isinstance(v, float) and math.isnan(v))


def _int(v: Any) -> str:
    return f"{int(v)}" if _present(v) else "–"


def _num(v: Any, fmt: str = "{:.1f}") -> str:
    return fmt.format(v) if _present(v) else "–"


def machine_load(r: dict[str, Any]) -> str | None:
    """How busy the machine was during the load (schema.LOAD_COLUMNS) in words, or None
    when the store did not record it."""
    if not _present(r.get("cpu_busy")):
        return None
    out = (f"CPU {r['cpu_busy']:.0%} busy (steal {_num(r.get('cpu_steal'), '{:.0%}')}), "
           f"browser {_num(r.get('browser_cpu_s'), '{:.2f}')} CPU s, "
           f"replay servers {_num(r.get('server_cpu_s'), '{:.2f}')} CPU s, "
           f"load average {_num(r.get('loadavg_1m'), '{:.2f}')}")
    if _present(r.get("load_wait_s")):
        out += f"; waited {r['load_wait_s']:.1f} s for a quiet machine"
        if _present(r.get("load_over_limit")) and int(r["load_over_limit"]):
            out += " and started over the campaign's limit"
    return out


def _epoch_ms(stamp: object) -> float | None:
    try:
        return dt.datetime.fromisoformat(str(stamp)).timestamp() * 1000
    except ValueError:
        return None


def _timing(timings: dict[str, Any], key: str) -> float:
    v = timings.get(key) if isinstance(timings, dict) else None
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and v > 0 else 0.0


def waterfall(har: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per HAR entry, in the HAR's order: url, host, HTTP version, connection,
    status, bytes, start (ms after the page started) and each phase's ms."""
    log = har.get("log", {}) if isinstance(har, dict) else {}
    entries = [e for e in log.get("entries", []) if isinstance(e, dict)]
    pages = [p for p in log.get("pages", []) if isinstance(p, dict)]
    starts = [s for s in (_epoch_ms(e.get("startedDateTime")) for e in entries) if s]
    page_start = _epoch_ms(pages[0].get("startedDateTime")) if pages else None
    zero = min([*starts, *([page_start] if page_start else [])], default=0.0)
    rows = []
    for e in entries:
        req: dict[str, Any] = r if isinstance(r := e.get("request"), dict) else {}
        res: dict[str, Any] = r if isinstance(r := e.get("response"), dict) else {}
        timings: dict[str, Any] = t if isinstance(t := e.get("timings"), dict) else {}
        url = str(req.get("url", ""))
        phases = {p: _timing(timings, p) for p in PHASES}
        phases["connect"] = max(phases["connect"] - phases["ssl"], 0.0)  # HAR: connect ⊇ ssl
        size = res.get("_transferSize", res.get("bodySize"))
        start = _epoch_ms(e.get("startedDateTime"))
        rows.append({
            "url": url, "host": urlsplit(url).hostname or url.split(":")[0],
            "http_version": str(res.get("httpVersion", "")), "connection": str(e.get("connection", "")),
            "status": res.get("status"), "bytes": size if isinstance(size, int) and size >= 0
            else None, "start": (start - zero) if start else 0.0, **phases})
    return rows


def trial_view(source: str | Path, trial_id: str, trials: pd.DataFrame | None = None,
               conns: pd.DataFrame | None = None, filmstrip: bool = True,
               runner: Runner = run_here) -> TrialView:
    """Everything about trial `trial_id` of the results folder `source`; ResultsError
    when the store has no such trial or a kept file is unsafe or broken. `runner`
    runs ffmpeg for the filmstrip."""
    source = Path(source)
    trials = load(source) if trials is None else trials
    match = trials[trials["trial_id"] == trial_id]
    if match.empty:
        raise ResultsError(f"{source}: no trial {trial_id!r} among its {len(trials)} trials; "
                           "expected an id as the store has it (site+network+setting+run)")
    row = {k: (None if not _present(v) else v) for k, v in match.iloc[0].to_dict().items()}
    folder = source if source.is_dir() else source.parent
    conns = connections_of(source) if conns is None else conns
    mine = conns[conns["trial_id"] == trial_id].reset_index(drop=True)
    view = TrialView(trial_id, row, folder / trial_folder.TRIALS_DIR / trial_id, connections=mine,
                     has_connections_table=len(conns) > 0)
    with TrialFiles(folder, trial_id) as files:
        if not files.exists:
            view.notes.append("no files kept for this trial (no trials/<id>/ folder)")
            return view
        view.har = files.json(trial_folder.HAR)
        view.visual = files.json(trial_folder.VISUAL_METRICS)
        if view.har is None:
            view.notes.append("no HAR kept: no waterfall")
        if not filmstrip:
            return view
        fd = files.open(trial_folder.VIDEO)
        if fd is None:
            view.notes.append("no video kept (campaign key keep_video): no filmstrip")
            return view
        try:
            view.frames = _frames(fd, view.visual, view.notes, runner)
        finally:
            os.close(fd)
    return view


def frame_times(visual: dict[str, Any] | None, limit: int = FRAMES) -> list[float]:
    """When to take filmstrip frames (ms after navigation): the visual progress's
    changes, at most `limit` of them spread over the load, first and last kept."""
    times = []
    for item in str((visual or {}).get("VisualProgress", "")).split(","):
        ts, _sep, _ = item.partition("=")
        try:
            times.append(float(ts))
        except ValueError:
            continue
    times = sorted({t for t in times if 0 <= t < 10 ** 7})
    if not times:
        return [0.0]
    if len(times) <= limit:
        return times
    step = (len(times) - 1) / (limit - 1)
    return [times[round(i * step)] for i in range(limit)]


def _frames(fd: int, visual: dict[str, Any] | None, notes: list[str],
            runner: Runner = run_here) -> list[tuple[float, bytes]]:
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        notes.append("no ffmpeg on this machine: no filmstrip")
        return []
    video = _sealed_copy(fd)
    if video is None:
        notes.append(f"the video has more than {MAX_VIDEO} bytes: no filmstrip")
        return []
    offset = float((visual or {}).get("videoRecordingStart") or 0) / 1000
    frames: list[tuple[float, bytes]] = []
    try:
        for t in frame_times(visual):
            try:
                cp = runner(_frame_argv(ffmpeg, video, offset + t / 1000), (video,), 30)
            except subprocess.TimeoutExpired:
                notes.append("ffmpeg took too long: filmstrip cut short")
                break
            if cp.returncode != 0 or not cp.stdout.startswith(b"\xff\xd8"):
                notes.append("ffmpeg could not read the video: no filmstrip"
                             if not frames else "ffmpeg stopped early: filmstrip cut short")
                break
            frames.append((t, cp.stdout))
    finally:
        os.close(video)
    return frames


def _frame_argv(ffmpeg: str, video: int, at_s: float) -> list[str]:
    """One JPEG frame at `at_s` of the mp4 in fd `video`. The format is pinned and only
    the file protocol allowed: a playlist (HLS, ffconcat) or an mp4's external
    references in its place make ffmpeg read nothing else."""
    return [ffmpeg, "-nostdin", "-loglevel", "error", "-protocol_whitelist", "file",
            "-f", "mp4", "-enable_drefs", "0", "-ss", f"{at_s:.3f}",
            "-i", f"/proc/self/fd/{video}", "-frames:v", "1",
            "-vf", f"scale={FRAME_WIDTH}:-2", "-f", "image2", "-c:v", "mjpeg", "-q:v", "6",
            "pipe:1"]


def _sealed_copy(fd: int) -> int | None:
    """The video's bytes (at most MAX_VIDEO, else None) in a sealed memory file: what
    ffmpeg reads, whoever it runs as, and nobody can change while it does."""
    if os.fstat(fd).st_size > MAX_VIDEO:
        return None
    mem = os.memfd_create(trial_folder.VIDEO, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        copied = 0
        with open(mem, "wb", closefd=False) as f:
            while copied <= MAX_VIDEO and (chunk := os.read(fd, 1 << 20)):
                f.write(chunk)
                copied += len(chunk)
        if copied > MAX_VIDEO:  # it grew while being read
            os.close(mem)
            return None
        fcntl.fcntl(mem, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK
                    | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE)
    except BaseException:
        os.close(mem)
        raise
    return mem


# -- the page ----------------------------------------------------------------------

def _waterfall(rows: list[dict[str, Any]], marks: dict[str, float]) -> dict[str, Any]:
    """The waterfall's values for the template: its end (ms), the legend, and per row
    its cells and its bars' positions (percent of the end)."""
    end = max([r["start"] + sum(r[p] for p in PHASES) for r in rows] + list(marks.values())
              + [1.0])
    shown = []
    for i, r in enumerate(rows):
        left, bars = r["start"], []
        for p in PHASES:
            if r[p] > 0:
                bars.append({"phase": p, "ms": f"{r[p]:.1f}", "color": COLORS[p],
                             "left": f"{100 * left / end:.3f}",
                             "width": f"{max(100 * r[p] / end, 0.15):.3f}"})
            left += r[p]
        parts = urlsplit(r["url"])
        path = parts.path + (f"?{parts.query}" if parts.query else "") if parts.scheme else r["url"]
        shown.append({
            "i": i, "number": i + 1, "host": r["host"], "url": r["url"], "path": path[:200],
            "http_version": r["http_version"], "connection": r["connection"], "status": str(r["status"]),
            "bytes": _int(r["bytes"]), "start": f"{r['start']:.0f}",
            "total": f"{sum(r[p] for p in PHASES):.0f}",
            "title": " · ".join(f"{p} {r[p]:.1f}" for p in PHASES if r[p] > 0),
            "bars": bars, "marks": [f"{100 * v / end:.3f}" for v in marks.values()]})
    return {"end": f"{end:.0f}", "rows": shown, "phases": [(p, COLORS[p]) for p in PHASES],
            "marks": [(k, f"{v:.0f}") for k, v in marks.items()]}


def _connections_table(view: TrialView) -> Markup | None:
    if view.connections.empty:
        return None
    shown = view.connections[list(SHOWN_CONNECTION_COLUMNS)]
    shown = shown.loc[:, shown.notna().any()]
    return Markup(shown.to_html(index=False, na_rep="–", border=0, escape=True,
                                float_format=lambda v: f"{v:.1f}" if v % 1 else f"{v:.0f}",
                                table_id="connections"))


def render(view: TrialView) -> str:
    """The trial's page: one self-contained HTML document (templates/trial.html.j2)."""
    r = view.row
    facts = [("status", r["status"] + (f": {r['reason']}" if r.get("reason") else "")),
             ("site", r["site"]), ("network", f"{label(r['network'])} (RTT {r['rtt_ms']:g} ms)"),
             ("setting", label(r["setting"])), ("run", str(r["run"])),
             ("attempt", str(r["attempt"])), ("started", str(r["started_at"])),
             ("requests", _int(r.get("requests"))), ("bytes", _int(r.get("bytes"))),
             ("replay misses", _int(r.get("misses"))),
             ("HTTP versions", str(r.get("http_versions") or "–")), ("worker", str(r.get("worker") or "–"))]
    machine = machine_load(r)
    if machine:
        facts.append(("machine during the load", machine))
    metrics = [(f"{label(m)} (ms)", f"{r[c]:.0f}") for m, c in METRICS.items()
               if _present(r.get(c))]
    marks = {label(m): float(r[c]) for m, c in (("fcp", "fcp_ms"), ("plt", "plt_ms"))
             if _present(r.get(c))}
    no_connections = ("the store has a connections table, but none for this trial"
                      if view.has_connections_table else
                      "this store has no connections table (results stored before "
                      "per-connection figures were recorded, or an export)")
    return pages.render(
        "trial.html.j2", trial_id=view.trial_id, notes=view.notes, facts=facts,
        metrics=metrics, connections=_connections_table(view), no_connections=no_connections,
        frames=[{"at": f"{t:.0f}", "jpeg": base64.b64encode(jpeg).decode()}
                for t, jpeg in view.frames],
        har_kept=view.har is not None, waterfall=_waterfall(view.entries, marks),
        frame_width=FRAME_WIDTH)


def write_trial_page(view: TrialView, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(view), encoding="utf-8")
    return path


def page_name(trial_id: str) -> str:
    """The trial page's file name in a report's trials/ folder."""
    return f"{trial_id}.html"
