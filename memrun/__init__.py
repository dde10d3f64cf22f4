"""memrun: a reproducible experiment runner for benchmarking agent-memory systems."""

__version__ = "0.1.0"
