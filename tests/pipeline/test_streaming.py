"""Streaming: peak memory of loading LongMemEval does not grow with the file's size."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memrun.benchmarks.lme_synth import SynthSpec, write

ROOT = Path(__file__).parent.parent.parent
# Peak RSS from /proc (VmHWM): ru_maxrss would carry over the parent's peak through exec.
CHILD = """
import json, sys
from pathlib import Path
path = Path(sys.argv[2])
if sys.argv[1] == "stream":
    from memrun.benchmarks.longmemeval import LongMemEval
    loader = LongMemEval(split="x", files={"x": {"file": path.name}}, categories={}, path=str(path))
    dataset = loader.load(path.parent)
    n = sum(len(g.records) for g in dataset.groups)
else:
    n = len(json.load(path.open()))
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(int(hwm.split()[1]) * 1024, n)
"""


def _peak_rss(mode: str, path: Path) -> tuple[int, int]:
    """Peak RSS in bytes of a fresh interpreter that loads ``path`` (stream or json.load)."""
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(path)], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, check=True).stdout.split()
    return int(out[0]), int(out[1])


pytestmark = pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="peak RSS is read from /proc")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("lme")
    shape = {"sessions": 10, "turns": 8, "turn_chars": 600, "seed": 1}
    small, big = folder / "small.json", folder / "big.json"
    write(small, SynthSpec(questions=40, **shape))  # ~2 MB
    write(big, SynthSpec(questions=800, **shape))  # ~41 MB
    return small, big


def test_peak_memory_does_not_scale_with_file_size(files: tuple[Path, Path]) -> None:
    small, big = files
    growth = big.stat().st_size - small.stat().st_size
    rss_small, records_small = _peak_rss("stream", small)
    rss_big, records_big = _peak_rss("stream", big)
    assert records_big > 19 * records_small  # the big file was read in full
    # 20x the data, yet peak RSS grows by less than 10% of the extra bytes.
    assert rss_big - rss_small < 0.10 * growth, (rss_small, rss_big, growth)
    # The measurement can see growth: a plain json.load of the big file does grow.
    rss_json, _ = _peak_rss("json", big)
    assert rss_json - rss_small > 1.0 * growth, (rss_small, rss_json, growth)
