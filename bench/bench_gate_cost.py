"""What the design-calibrated gate costs: `memrun compare` as a whole process, this tree
against a tree from before the design check (``--before DIR``, e.g. ``git archive ae67702 |
tar -x -C /tmp/before``), alternated in pairs, on LoCoMo-, BEAM 500K- and 1M-item-sized pairs.

    nice python bench/bench_gate_cost.py --before /tmp/before [--pairs 3]

Sizes (synthetic retrieval runs with bench_bootstrap's schema, B a few points better):
LoCoMo (1,986 questions in 10 conversations), BEAM 500K (700 questions in 35 conversations)
and 1M items in 1,000 clusters. Goals (issue 33): under 1 s extra for LoCoMo and BEAM,
under 5 s at 1M. Prints each side's median wall seconds, the extra and the ratio.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from _pairs import alternate, run_child  # noqa: E402
from bench_bootstrap import write_runs  # noqa: E402

SIZES = (("LoCoMo (1,986 items, 10 clusters)", 1986, 10, 1.0),
         ("BEAM 500K (700 items, 35 clusters)", 700, 35, 1.0),
         ("1M items, 1,000 clusters", 1_000_000, 1000, 5.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="a memrun source tree from before the check")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--only", help="only sizes whose name contains this")
    args = parser.parse_args()
    print(f"{'size':40}{'now s':>9}{'before s':>10}{'extra s':>9}{'ratio':>7}  goal")
    for name, n, g, goal in SIZES:
        if args.only and args.only not in name:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            a, b = write_runs(Path(tmp), n, g)
            cmd = ["memrun", "compare", str(a), str(b), "--format", "json"]
            before = args.before.resolve()
            pairs = alternate(lambda cmd=cmd: run_child(cmd, cwd=ROOT, env={"PYTHONPATH": str(ROOT)}, ok=(0, 1, 2)),
                              lambda cmd=cmd, tree=before: run_child(cmd, cwd=tree, env={"PYTHONPATH": str(tree)},
                                                                     ok=(0, 1, 2)),
                              args.pairs)
        now, before = pairs.median("a"), pairs.median("b")
        extra = now - before
        print(f"{name:40}{now:9.2f}{before:10.2f}{extra:9.2f}{now / before:7.2f}  < {goal:g} s extra: "
              f"{'met' if extra < goal else 'MISSED'}", flush=True)


if __name__ == "__main__":
    main()
