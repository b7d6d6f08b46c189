"""The analysis's HTML pages: one Jinja environment over analysis/report/templates/.

    html = render("trial.html.j2", view=...)    # a whole page, or a piece of one

Every page and every piece of HTML (the report, its trials list and trial
pages, compare's page, a scrolling table) is a template there, autoescaped;
Python prepares the values, never the markup (tests/unit/test_owners.py fails on a
tag in a Python string). Tables of numbers come from pandas' `to_html`.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2
from markupsafe import Markup


@cache
def environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("analysis.report", "templates"),
                              autoescape=jinja2.select_autoescape(["html", "j2"]),
                              trim_blocks=True, lstrip_blocks=True)


def render(template: str, **values: Any) -> str:
    """The template filled in with `values`."""
    return environment().get_template(template).render(**values)


def piece(template: str, **values: Any) -> Markup:
    """A piece of a page (safe to put into another template as it is)."""
    return Markup(render(template, **values))
