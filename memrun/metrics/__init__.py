"""Metrics: per-item scores computed during a run, and their run-level aggregates."""
