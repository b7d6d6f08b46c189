"""The documentation stays a guide plus reference pages that agree with the code:
the README and each page within their size, every page in MkDocs' nav, the results
columns generated from results_contract/schema.py, every campaign key in the campaign page."""

from __future__ import annotations

import re
import runpy

import yaml
from support.paths import ROOT

from testbed.campaign.plan.config import Campaign

DOCS = ROOT / "docs"
GEN = runpy.run_path(str(DOCS / "gen_columns.py"))


def test_the_readme_is_a_guide_and_each_page_is_short():
    assert (ROOT / "README.md").stat().st_size <= 15_000
    for page in DOCS.glob("*.md"):
        assert page.stat().st_size <= 20_000, page


def test_every_page_is_in_the_nav():
    conf = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert conf["docs_dir"] == "docs"
    listed = {next(iter(item.values())) for item in conf["nav"]}
    assert listed == {p.name for p in DOCS.glob("*.md")}


def test_the_results_columns_are_the_schemas():
    page = (DOCS / "results.md").read_text(encoding="utf-8")
    assert GEN["render"](page) == page, "run .venv/bin/python docs/gen_columns.py"


def test_the_machine_load_and_completeness_columns_are_on_their_own_pages():
    for path, tables in GEN["PAGES"].items():
        page = path.read_text(encoding="utf-8")
        assert GEN["render"](page, tables) == page, "run .venv/bin/python docs/gen_columns.py"
    shown = {c.name for tables in GEN["PAGES"].values() for t in tables.values() for c in t}
    assert shown >= set(GEN["schema"].COLUMNS)


def test_the_columns_table_follows_a_schema_change():
    page = (DOCS / "results.md").read_text(encoding="utf-8")
    column = GEN["schema"].Column("new_ms", "real", False, "A | new <metric>.")
    table = GEN["table"]((*GEN["schema"].TRIALS, column))
    assert "| `new_ms` | real | no | A \\| new &lt;metric&gt;. |" in table
    assert table not in page


def test_the_campaign_page_names_every_campaign_key():
    page = (DOCS / "campaigns.md").read_text(encoding="utf-8")
    keys = set(re.findall(r"^\| `(\w+)` \|", page, re.MULTILINE))
    fields = {name for name, f in Campaign.model_fields.items() if not f.exclude}
    assert keys == fields


LINK = re.compile(r"\]\(([^)\s#]+)(#[^)\s]*)?\)")


def test_links_outside_the_site_point_at_files():
    """The pages MkDocs does not build (it checks docs/ itself) link only to files
    that exist: they are read on a code host as they are."""
    pages = [ROOT / "README.md", ROOT / "ARCHITECTURE.md", ROOT / "CHANGELOG.md",
             ROOT / "bench" / "README.md", *(ROOT / "bench" / "results").glob("*.md")]
    for page in pages:
        for target, _ in LINK.findall(page.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)}: {target}"
