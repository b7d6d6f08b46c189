"""The report folder and the analysis's HTML pages (Jinja2, templates/). The top of
`analysis`: may import every other package of it and `results_contract`.

- `report`: `write_report`, the report folder (index.html, plots/, tables/, findings.md);
- `report_sections`: the sections beside the statistics (distributions, per-site
  tests, setup, drift);
- `scorecard`: the scorecard (sites x settings per network) and a page per site;
- `report_inspect`: the sections that open trials (examples, BBR, transport);
- `setup`: the setup tables (networks, settings, runs as run);
- `trial_page`: one trial's page;
- `compare_page`: the page comparing two campaigns;
- `pages`: the one Jinja environment over templates/.
"""
