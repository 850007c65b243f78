"""Outcome rules, the bench loop, results table, audit, multi-seed runs and metrics."""
