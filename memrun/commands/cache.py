"""``memrun cache merge SRC... DEST``: fold per-shard caches (node-local disk) into one.

Each SRC and DEST is a cache folder (``cache_dir`` of the call cache, ``arm.cache_dir``
of the embedding cache); entries are inserted or ignored by key (:mod:`memrun.core.cache_files`).
A SRC whose run was killed (a shard past its time limit) first has the replies its side
file kept written into its ``calls.sqlite`` (:mod:`memrun.llm.cache`), so they are merged too.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memrun.commands.usage import Parser
from memrun.errors import MemrunError
from memrun.lazy import lazy

if TYPE_CHECKING:
    from memrun.core import cache_files as memrun_cache_files
    from memrun.llm import cache as llm_cache
else:
    memrun_cache_files = lazy("memrun.core.cache_files")
    llm_cache = lazy("memrun.llm.cache")


def main(argv: Sequence[str]) -> int:
    """``memrun cache merge SRC... DEST``; returns 0, or raises MemrunError (exit 2)."""
    parser = Parser(prog="memrun cache", description="Manage memrun's caches.")
    sub = parser.add_subparsers(dest="action", required=True)
    merge = sub.add_parser("merge", help="copy the entries of SRC cache folders into DEST (insert or ignore)")
    merge.add_argument("folders", nargs="+", type=Path, metavar="SRC... DEST")
    args = parser.parse_args(list(argv))
    if len(args.folders) < 2:
        raise merge.usage_error("give at least one SRC folder and a DEST folder")
    *sources, dest = args.folders
    missing = [str(s) for s in sources if not s.is_dir()]
    if missing:
        raise MemrunError(f"no such cache folder: {', '.join(missing)}")
    for source in sources:
        if any(source.glob(llm_cache.SIDE_GLOB)):  # a killed run's replies: opening the cache replays them
            llm_cache.CallCache(source).close()
    for name, (added, read) in memrun_cache_files.merge_caches(sources, dest).items():
        print(f"{dest / name}: {added} new of {read} entries read from {len(sources)} folder(s)")
    return 0
