"""One run, start to end: its spec, the stages around and over its items, retrieval for one
history and for many in flight, the run-level checks, the plan, and progress lines."""
