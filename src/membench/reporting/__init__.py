"""The report, its findings and tables, the charts, and re-measurement diffs."""
