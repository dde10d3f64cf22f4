"""``memrun --cfg job`` prints the same bytes as the files under ``printed/``: a change to how
memrun composes its config (its schemas, the compose itself, start-up shortcuts around it)
must not change the config a user reads or a run saves.

A deliberate change to ``conf/`` or the schemas changes these files too; write them again
with ``MEMRUN_WRITE_PRINTED=1 pytest tests/config/test_printed_config.py`` and read the diff.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent / "printed"
CASES = {
    "default": [],
    "locomo_http_accuracy": ["benchmark=locomo", "benchmark.limit=1", "arm=http", "arm.base_url=http://127.0.0.1:9",
                             "axis=accuracy", "judge=gpt41", "judge2=f1"],
    "longmemeval_hybrid": ["benchmark=longmemeval", "arm=hybrid", "arm/embedder=minilm", "ks=[1,5]"],
    "beam_mcp": ["benchmark=beam", "arm=mcp_logbook", "seed=3"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cfg_job_prints_the_recorded_bytes(name, tmp_path):
    done = subprocess.run([sys.executable, "-m", "memrun", "--cfg", "job", *CASES[name]], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, "MEMRUN_DATA_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    path = HERE / f"{name}.yaml"
    if os.environ.get("MEMRUN_WRITE_PRINTED"):
        path.write_text(done.stdout)
    assert done.stdout == path.read_text(), f"memrun --cfg job {' '.join(CASES[name])} printed another config"
