"""What recording the texts costs: ``items.parquet`` with and without the text columns.

Since issue 34 every row carries ``retrieved_texts`` (each hit's text, rank order) and
``gold_texts`` (each gold record's text), so ``memrun view``, ``memrun report`` and
``memrun failures`` show the text behind every key from the run folder alone. This script
runs memrun as a user does (a whole process, ``arm=bm25``) on each benchmark asked for and
prints, side by side, the file memrun wrote and the same rows without the two text columns
written with the same options (``pyarrow.parquet.write_table``, page checksums): bytes,
the growth ratio, and the seconds each write takes (the median of ``--writes``).

    PYTHONPATH=. MEMRUN_DATA_DIR=/work/shared/datasets python bench/bench_texts.py \\
        --locomo --beam 500K --lme-s [--lme-file FILE]

``--lme-s`` writes a LongMemEval-S-shaped file first (``memrun datasets synth --size s``,
~280 MB, pseudo-words) unless ``--lme-file`` names one; it runs with ``arm.top_k=50``
(the LongMemEval config's advice), the others with their configs' top_k.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pairs import run_child  # noqa: E402

TEXT_COLUMNS = ("retrieved_texts", "gold_texts")


def _write_seconds(table, writes: int) -> tuple[int, float]:
    """(bytes, median seconds) of writing ``table`` as the run writer does."""
    sizes, times = [], []
    for _ in range(writes):
        sink = io.BytesIO()
        t0 = time.perf_counter()
        pq.write_table(table, sink, write_page_checksum=True)
        times.append(time.perf_counter() - t0)
        sizes.append(sink.tell())
    return sizes[0], statistics.median(times)


def measure(name: str, overrides: list[str], work: Path, writes: int) -> None:
    out = work / name
    child = run_child(["memrun", "progress=false", "arm=bm25", f"hydra.run.dir={out}", *overrides])
    table = pq.read_table(out / "items.parquet")
    written = (out / "items.parquet").stat().st_size
    bare = table.drop_columns([c for c in TEXT_COLUMNS if c in table.column_names])
    with_bytes, with_s = _write_seconds(table, writes)
    bare_bytes, bare_s = _write_seconds(bare, writes)
    texts = sum(len(t or "") for c in TEXT_COLUMNS for v in table.column(c).to_pylist() for t in (v or ()))
    print(f"{name:<14}{table.num_rows:>7}{written / 1e6:>11.2f}{bare_bytes / 1e6:>11.2f}"
          f"{with_bytes / max(bare_bytes, 1):>8.2f}x{(with_bytes - bare_bytes) / 1e6:>9.2f}"
          f"{texts / 1e6:>10.1f}{1000 * with_s:>9.0f}{1000 * bare_s:>9.0f}{child.seconds:>8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", action="store_true", help="LoCoMo (locomo10.json)")
    parser.add_argument("--beam", action="append", default=[], metavar="SPLIT", help="BEAM split, e.g. 500K")
    parser.add_argument("--lme-s", action="store_true", help="a LongMemEval-S-shaped file (generated)")
    parser.add_argument("--lme-file", type=Path, help="the LongMemEval-schema file to use with --lme-s")
    parser.add_argument("--writes", type=int, default=3, help="writes timed per table (median)")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    args = parser.parse_args()
    if not os.environ.get("MEMRUN_DATA_DIR") and (args.locomo or args.beam):
        raise SystemExit("set MEMRUN_DATA_DIR (e.g. /work/shared/datasets)")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        work = Path(tmp)
        print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
        print(f"{'benchmark':<14}{'rows':>7}{'file MB':>11}{'no text MB':>11}{'ratio':>9}{'+MB':>9}"
              f"{'text MB':>10}{'write ms':>9}{'bare ms':>9}{'run s':>8}")
        if args.locomo:
            measure("locomo", ["benchmark=locomo"], work, args.writes)
        for split in args.beam:
            measure(f"beam {split}", ["benchmark=beam", f"benchmark.split={split}"], work, args.writes)
        if args.lme_s:
            path = args.lme_file
            if path is None:
                path = work / "lme_s.json"
                subprocess.run([sys.executable, "-m", "memrun", "datasets", "synth", str(path), "--size", "s",
                                "--quiet"], check=True)
            measure("lme-s shape", ["benchmark=longmemeval", f"benchmark.path={path}", "arm.top_k=50"], work,
                    args.writes)
        print("file MB: items.parquet as memrun wrote it; no text MB: the same rows less retrieved_texts and "
              "gold_texts, same writer options; text MB: characters of text held; run s: the whole memrun process")


if __name__ == "__main__":
    main()
