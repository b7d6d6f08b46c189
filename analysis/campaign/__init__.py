"""One campaign's whole analysis and what it is compared with. May import
`analysis.statistics` and `results_contract`.

- `model`: what to compute (`Config`), every table of the analysis (`Analysis`) and
  the checks on them (pairs, verdicts, cautions, robustness);
- `analyse`: runs every statistic on a campaign's trials into an `Analysis`;
- `findings`: the paper's findings (findings.toml) beside the campaign's, with verdicts;
- `agreement`: whether two campaigns agree, setting by setting;
- `replication`: REPLICATION.md's findings block, regenerated from the report's.
"""
