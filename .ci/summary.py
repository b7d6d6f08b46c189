"""What a CI run spent its time on: each stage's seconds, the slowest tests, the totals.

    python3 .ci/summary.py OUT      # OUT: the folder .ci/run wrote (stages.tsv, *.xml)

Reads `stages.tsv` (a stage and its seconds a line, written by .ci/run) and every
JUnit XML file pytest wrote into OUT (`make unit|e2e|faults` with JUNIT_DIR=OUT), writes
`durations.tsv` (every test, slowest first: seconds, stage, test id) and prints the
summary. Its last line is the totals over every pytest stage, as
`total: N passed, N failed, N skipped`. Standard library only: it runs when the
virtual environment may not exist (a failed setup).
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SLOWEST = 15


def stages(out: Path) -> list[tuple[str, float, str]]:
    """(stage, seconds, status) in the order they ran."""
    rows = []
    path = out / "stages.tsv"
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            name, seconds, status = line.split("\t")
            rows.append((name, float(seconds), status))
    return rows


def cases(out: Path) -> tuple[list[tuple[float, str, str]], dict[str, int]]:
    """Every test case of the JUnit files: (seconds, stage, id), and the outcome counts."""
    found: list[tuple[float, str, str]] = []
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for xml in sorted(out.glob("*.xml")):
        try:
            root = ET.parse(xml).getroot()
        except ET.ParseError as e:  # a stage killed while writing it
            print(f"summary: {xml.name}: not read ({e})")
            continue
        for case in root.iter("testcase"):
            test = f"{case.get('classname', '')}::{case.get('name', '')}"
            found.append((float(case.get("time") or 0), xml.stem, test))
            if case.find("failure") is not None or case.find("error") is not None:
                counts["failed"] += 1
            elif case.find("skipped") is not None:
                counts["skipped"] += 1
            else:
                counts["passed"] += 1
    found.sort(reverse=True)
    return found, counts


def main(out: Path) -> None:
    ran = stages(out)
    found, counts = cases(out)
    (out / "durations.tsv").write_text(
        "".join(f"{s:.2f}\t{stage}\t{test}\n" for s, stage, test in found), encoding="utf-8")
    print("== CI durations (JUnit XML and durations.tsv in " + str(out) + ")")
    for name, seconds, status in ran:
        print(f"  {name:<8} {seconds:7.0f} s  {status}")
    if ran:
        whole = sum(s for _, s, _ in ran)
        print(f"  {'whole':<8} {whole:7.0f} s  ({whole / 60:.1f} min)")
    print(f"-- the {min(SLOWEST, len(found))} slowest tests")
    for seconds, stage, test in found[:SLOWEST]:
        print(f"  {seconds:7.1f} s  {stage:<6} {test}")
    print(f"total: {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 .ci/summary.py OUT")
    main(Path(sys.argv[1]))
