"""Analysis of campaign results: pure data, no testbed needed."""
