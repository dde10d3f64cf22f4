"""``memrun merge RUN``: the shards of one run as one ``items.parquet`` and ``summary.json``.

Exit codes: 0 merged complete, 2 merged partial (shards missing; the table names them)
or nothing could be merged (one line saying why).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memrun.commands.usage import Parser
from memrun.errors import MemrunError
from memrun.lazy import lazy

if TYPE_CHECKING:
    from memrun.jobs import merge as memrun_merge
else:
    memrun_merge = lazy("memrun.jobs.merge")


def main(argv: Sequence[str]) -> int:
    """``memrun merge RUN``; returns 0 (complete) or 2 (partial)."""
    parser = Parser(prog="memrun merge", description="Merge the shards of one run.")
    parser.add_argument("run", type=Path, help="the run folder holding the shard folders (a sweep folder)")
    args = parser.parse_args(list(argv))
    if not args.run.is_dir():
        raise MemrunError(f"{args.run}: no such folder")
    result = memrun_merge.merge(args.run)
    items = ", ".join(f"shard {i}: {n}" for i, n in result.items.items())
    print(f"merged {len(result.merged)} of {result.count} shards ({items} items), {result.n_rows} rows "
          f"in {result.seconds:.2f} s -> {result.run_dir}")
    for index, n in result.copies.items():
        print(f"shard {index}: {n} complete copies; merged the newest, {result.chosen[index]}")
    if result.missing:
        sys.stderr.write(f"memrun: warning: partial: shard(s) {', '.join(map(str, result.missing))} of "
                         f"{result.count} are missing or did not complete; re-run them (e.g. memrun ... "
                         f"shard.count={result.count} shard.index={result.missing[0]} "
                         f"hydra.run.dir={result.run_dir}/shard-{result.missing[0]}-of-{result.count}.rerun) "
                         "and merge again\n")
        return 2
    return 0
