"""The analysis's figures (matplotlib). May import `analysis.statistics`,
`analysis.campaign` and `results_contract`.

- `plots`: the CDF, distribution and drift figures, and how every figure is saved;
- `bbr`: the BBR-vs-CUBIC figures.
"""
