"""LLM access for the accuracy axis: one chat client under the HTTP policy, one call cache.

- :mod:`memrun.llm.endpoint`: where calls go (base URL, API key from the environment),
  fake-provider detection, and redaction of secrets from everything memrun writes;
- :mod:`memrun.llm.client`: an OpenAI-compatible chat client (``openai`` SDK, no SDK
  retries) under :class:`memrun.core.http_policy.Retrier`;
- :mod:`memrun.llm.cache`: the on-disk call cache (sqlite) that makes re-runs free;
- :mod:`memrun.llm.service`: cache + bounded concurrency + token budget + counters;
- :mod:`memrun.llm.prompts`: prompt files, their rendering and their sha256;
- :mod:`memrun.llm.reader`: the reader (context from retrieved hits -> answer).
"""
