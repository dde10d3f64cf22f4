"""Hydra jobs and what spans them: launching one job, a sweep's table, shards and their merge."""
