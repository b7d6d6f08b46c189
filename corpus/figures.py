"""The corpus's figures: per site, and its quantiles against the published targets.

Reads each recording's manifest.json (requests, bytes, origins as recorded),
so the table shows what the browser really fetched, not what was planned.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from corpus import shape
from corpus.sets import CorpusSet

QUANTILES = (10, 25, 50, 75, 90)


def site_figures(recording: Path) -> dict:
    m = json.loads((recording / "manifest.json").read_text())
    hosts = {o["host"] for o in m["origins"]}
    return {"name": m["name"], "requests": len(m["exchanges"]),
            "kbytes": sum(e["body_size"] for e in m["exchanges"]) / 1024,
            "origins": len(m["origins"]), "hosts": len(hosts),
            "ips": len({o["ip"] for o in m["origins"]})}


def quantiles(values: list[float]) -> list[float]:
    return [float(v) for v in np.percentile(values, QUANTILES)]


def fit(values: list[float], targets: tuple[tuple[int, int], ...]) -> list[tuple[int, float, int, float]]:
    """(percentile, value, target, relative error) for each published point."""
    got = dict(zip(QUANTILES, quantiles(values), strict=True))
    return [(q, got[q], t, got[q] / t - 1) for q, t in targets]


def render(out: Path, plans: list[shape.SitePlan], aim: CorpusSet) -> str:
    rows = [site_figures(out / p.name) for p in plans if (out / p.name / "manifest.json").is_file()]
    if not rows:
        return f"no corpus recordings in {out}"
    layout = {p.name: p.layout for p in plans}
    lines = ["| site | requests | KB | origins | IPs | layout |",
             "|---|---:|---:|---:|---:|---|"]
    lines += [f"| {r['name']} | {r['requests']} | {r['kbytes']:.0f} | {r['origins']} | "
              f"{r['ips']} | {layout.get(r['name'], '')} |"
              for r in sorted(rows, key=lambda r: r["name"])]
    lines += ["", "| quantile | requests | target | KB | target |", "|---|---:|---:|---:|---:|"]
    req = fit([r["requests"] for r in rows], aim.requests)
    kb = fit([r["kbytes"] for r in rows], aim.kbytes)
    for (q, rv, rt, re), (_, kv, kt, ke) in zip(req, kb, strict=True):
        lines.append(f"| p{q} | {rv:.0f} ({re:+.0%}) | {rt} | {kv:.0f} ({ke:+.0%}) | {kt} |")
    five = sum(r["origins"] >= 5 for r in rows)
    single = sum(r["origins"] == 1 for r in rows)
    total_mb = sum(r["kbytes"] for r in rows) / 1024
    ips = quantiles([r["ips"] for r in rows])
    lines += ["", (f"{len(rows)} sites; {five} with >= 5 origins; {single} single-origin; "
                   f"server IPs p10/p50/p90 {ips[0]:.0f}/{ips[2]:.0f}/{ips[4]:.0f} (max "
                   f"{max(r['ips'] for r in rows)}); largest {max(r['kbytes'] for r in rows):.0f} "
                   f"KB; {sum(r['requests'] for r in rows)} requests, {total_mb:.0f} MB in all")]
    return "\n".join(lines)
