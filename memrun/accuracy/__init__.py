"""The accuracy axis: an LLM reader answers from what the arm retrieved, a judge grades it.

- :mod:`memrun.accuracy.setup`: config -> reader, judges, LLM service (all checks
  before any work: keys, pins, prompts);
- :mod:`memrun.accuracy.stage`: the async stage (retrieve once per item, read and
  judge each repeat, one row per item x repeat as it finishes).

The run's orchestration (:func:`memrun.pipeline.run.execute`) calls both; the summary is
:func:`memrun.metrics.accuracy.summarize_accuracy`. User documentation: docs/accuracy.md.
"""
