"""Render the results columns of docs/results.md from the one schema, results_contract/schema.py.

    .venv/bin/python docs/gen_columns.py           # rewrite the tables in docs/results.md
    .venv/bin/python docs/gen_columns.py --check   # exit 1 if the page is out of date

The page holds generated blocks, each between a `<!-- columns:NAME -->`
marker and `<!-- end columns:NAME -->` (NAME: trials, connections, stops); nothing
else of the page is touched. The columns of the machine's load during a trial
(schema.LOAD_COLUMNS) are the block `load` of docs/machine-load.md instead, and
those of what a trial obtained of the page (schema.COMPLETENESS_COLUMNS) the block
`completeness` of docs/completeness.md, not in results.md's `trials` (a page stays
under 20,000 bytes).
`tests/unit/test_docs_pages.py` fails when a committed page differs from what
this renders.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "results.md"
sys.path.insert(0, str(ROOT))

from results_contract import schema

ELSEWHERE = (*schema.LOAD_COLUMNS, *schema.COMPLETENESS_COLUMNS)
TABLES = {"trials": tuple(c for c in schema.TRIALS if c.name not in ELSEWHERE),
          "connections": schema.CONNECTIONS, "stops": schema.STOPS}
LOAD_PAGE = ROOT / "docs" / "machine-load.md"
LOAD_TABLES = {"load": tuple(c for c in schema.TRIALS if c.name in schema.LOAD_COLUMNS)}
COMPLETENESS_PAGE = ROOT / "docs" / "completeness.md"
COMPLETENESS_TABLES = {"completeness": tuple(c for c in schema.TRIALS
                                             if c.name in schema.COMPLETENESS_COLUMNS)}
PAGES = {PAGE: TABLES, LOAD_PAGE: LOAD_TABLES, COMPLETENESS_PAGE: COMPLETENESS_TABLES}
"""Each page and the blocks it holds."""


def _cell(text: str) -> str:
    """One table cell: on one line, `|` escaped, `<` and `>` outside code spans as
    entities (a bare `<trial_id>` would be read as an HTML tag)."""
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def table(columns) -> str:
    """A Markdown table of the columns: name, type, always set, meaning."""
    rows = ["| column | type | always set | meaning |", "|---|---|---|---|"]
    for c in columns:
        doc = c.doc
        if c.allowed:
            doc += f" One of: {', '.join(f'`{v}`' for v in c.allowed)}."
        if c.key:
            doc += " The primary key."
        rows.append(f"| `{c.name}` | {c.kind} | {'yes' if c.required else 'no'} | "
                    f"{_cell(doc)} |")
    return "\n".join(rows)


def render(page: str, tables: dict[str, tuple[schema.Column, ...]] = TABLES) -> str:
    """The page (results.md, unless `tables` says another's blocks) with each generated
    block replaced by the schema's table."""
    for name, columns in tables.items():
        pattern = re.compile(rf"(<!-- columns:{name} -->\n).*?(<!-- end columns:{name} -->)",
                             re.DOTALL)
        m = pattern.search(page)
        if m is None:
            where = next((p for p, t in PAGES.items() if t is tables), PAGE)
            raise SystemExit(f"{where}: expected a block <!-- columns:{name} --> ... "
                             f"<!-- end columns:{name} -->")
        page = page[:m.end(1)] + table(columns) + "\n" + page[m.start(2):]
    return page


def main(argv: list[str]) -> int:
    status = 0
    for path, tables in PAGES.items():
        page = path.read_text(encoding="utf-8")
        new = render(page, tables)
        if "--check" in argv:
            if new != page:
                print(f"{path}: out of date; run .venv/bin/python docs/gen_columns.py",
                      file=sys.stderr)
                status = 1
        elif new != page:
            path.write_text(new, encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
