"""What the design-calibrated gate costs: `memrun compare` as a whole process, this tree
against the same tree with the design check switched off (a copy of ``memrun/`` and
``conf/`` whose compare calls the gate with ``check=False``: no simulation, no simulated
MDE), alternated in pairs, on LoCoMo-, BEAM 500K- and 1M-item-sized pairs.

    nice python bench/bench_gate_cost.py [--pairs 3] [--only LoCoMo]
    nice python bench/bench_gate_cost.py --before DIR   # or against another tree (an older commit)

Sizes (synthetic retrieval runs with bench_bootstrap's schema, B a few points better):
LoCoMo (1,986 questions in 10 conversations), BEAM 500K (700 questions in 35 conversations)
and 1M items in 1,000 clusters. Goals (issue 33): under 1 s extra for LoCoMo and BEAM,
under 5 s at 1M. Prints each side's median wall seconds, the extra and the ratio, and the
same for CPU seconds (user + system: on a loaded machine the wall extra is inflated by the
wait for a core, the CPU extra much less).
"""

from __future__ import annotations

import argparse
import json
import shutil
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


CHECKED = "paired.evidence, check=True)"
"""The one call in memrun/comparison/analysis.py that runs the design check (the overall block)."""


def without_check(folder: Path) -> Path:
    """A copy of this tree's ``memrun/`` and ``conf/`` under ``folder`` whose compare runs the
    gate without the design check; exits with a message when the call is not found."""
    for name in ("memrun", "conf"):
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
    analysis = folder / "memrun" / "comparison" / "analysis.py"
    text = analysis.read_text()
    if text.count(CHECKED) != 1:
        raise SystemExit(f"bench_gate_cost: {analysis.relative_to(folder)} no longer holds {CHECKED!r} once: "
                         "update CHECKED, or pass --before DIR")
    analysis.write_text(text.replace(CHECKED, CHECKED.replace("True", "False")))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path,
                        help="a memrun source tree to compare with (default: this tree, the design check off)")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--only", help="only sizes whose name contains this")
    args = parser.parse_args()
    scratch = tempfile.TemporaryDirectory()
    before = args.before.resolve() if args.before else without_check(Path(scratch.name))
    print(f"with the design check: {ROOT}; without: {args.before or 'this tree, check=False'}; "
          f"{args.pairs} pairs alternated, whole processes")
    print(f"{'size':40}{'with s':>9}{'without s':>11}{'extra s':>9}{'ratio':>7}{'CPU extra s':>12}{'CPU ratio':>10}  goal  (the check)")
    for name, n, g, goal in SIZES:
        if args.only and args.only not in name:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            a, b = write_runs(Path(tmp), n, g)
            cmd = ["memrun", "compare", str(a), str(b), "--format", "json"]
            pairs = alternate(lambda cmd=cmd: run_child(cmd, cwd=ROOT, env={"PYTHONPATH": str(ROOT)}, ok=(0, 1, 2)),
                              lambda cmd=cmd, tree=before: run_child(cmd, cwd=tree, env={"PYTHONPATH": str(tree)},
                                                                     ok=(0, 1, 2)),
                              args.pairs)
        now, off = pairs.median("a"), pairs.median("b")
        extra = now - off
        check = json.loads(pairs.a[-1].stdout)["overall"]["design_check"]
        if check is None or (not args.before and json.loads(pairs.b[-1].stdout)["overall"]["design_check"]):
            raise SystemExit("bench_gate_cost: the tree with the check did not run it, or the one without did")
        cpu_now, cpu_off = pairs.median_cpu("a"), pairs.median_cpu("b")
        print(f"{name:40}{now:9.2f}{off:11.2f}{extra:9.2f}{now / off:7.2f}{cpu_now - cpu_off:12.2f}"
              f"{cpu_now / cpu_off:10.2f}  < {goal:g} s extra: "
              f"{'met' if extra < goal else 'MISSED'}  ({check['method']}, {check['replications']:,} replications "
              f"a scenario)", flush=True)


if __name__ == "__main__":
    main()
