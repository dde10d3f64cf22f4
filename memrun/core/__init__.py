"""Shared ground under every layer: paths and caches, secrets' redaction, the HTTP policy,
provenance, the instrument (comparability fields), the run's warnings, signals, plugin construction."""
