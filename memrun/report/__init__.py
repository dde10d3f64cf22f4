"""Reports: render summaries and comparisons for people (terminal, markdown) and machines (JSON)."""
