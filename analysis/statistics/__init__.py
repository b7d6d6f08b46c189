"""Statistics of a campaign's trials and connections, one question a module. The
bottom of `analysis`: may import `results_contract` and its own modules only.

- `stats`: per-group summaries, relative differences, the per-site tests;
- `inference`: tests, multiple-test correction, effect sizes and power;
- `across`: effects on sites in general (across-site estimates, equivalence);
- `claims`: the rules that judge a paper's claim (direction and size against its
  figure, equivalence, the 1-RTT residual, Holm's correction over a table);
- `paired`: tests that use the back-to-back design;
- `diagnostics`: checks of the tests' assumptions;
- `planner`: how many runs a campaign needs;
- `precision`: the precision of a mean (the adaptive campaigns' stopping rule);
- `design`: the protocol design impact (the 1-RTT handshake's share);
- `cdf`: empirical CDFs of the relative difference over sites;
- `health`: what did not enter the statistics, and why;
- `connections`: per-connection transport figures (table `connections`);
- `bbr`: where BBR beats CUBIC;
- `visits`: first and warm visits, and the proof that warm visits resumed;
- `workers`: results per worker;
- `machine_load`: whether a pair's settings ran on unequally busy machines;
- `clients`: the browsers of a campaign;
- `site_regression`: what a pair's per-site effect goes with (page bytes, origins,
  pooling, machine load; OLS with robust errors), and the pages like the paper's;
- `report_stats`: the reviewer's tables (across sites, paired, diagnostics, planner);
- `wording`: one wording per verdict and a dash for a number that cannot be had.
"""
