"""The LoCoMo BM25 retrieval run as a whole process, beside a raw floor, in one run.

    MEMRUN_DATA_DIR=/work/shared/datasets python bench/bench_locomo_bm25.py [--pairs 5]

Alternates, in fresh subprocesses timed from start to exit (imports included):

* memrun: ``python -m memrun benchmark=locomo arm=bm25 progress=false`` (composing the
  config, loading, indexing, searching, scoring, writing items.parquet and summary.json);
* the raw floor: a script with no memrun that does the same imports (hydra, omegaconf,
  pyarrow, bm25s), loads locomo10.json, indexes each conversation's turns with bm25s,
  searches all of a conversation's questions in one batched ``BM25.retrieve`` call (top
  10; bm25s's fastest path, faster than scoring questions one at a time in a Python
  loop) and writes one Parquet table of the hits.

Target (issue 15, target 3): memrun <= 1.5x the floor (median of the pair ratios).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pairs import HEADER, alternate, line, run_child  # noqa: E402

FLOOR = r'''
import json, sys
import bm25s, hydra, numpy as np, omegaconf, pyarrow as pa, pyarrow.parquet as pq

raw = json.load(open(sys.argv[1], encoding="utf-8"))
split = bm25s.tokenization.Tokenizer(lower=True, stopwords="en")
splitter, stop = split.splitter, frozenset(split.stopwords)
rows = {"item_id": [], "keys": [], "scores": []}
for conv in raw:
    c = conv["conversation"]
    keys, texts = [], []
    for s in sorted((k for k in c if k.startswith("session_") and k.count("_") == 1), key=lambda k: int(k[8:])):
        for t in c[s] or []:
            body = f"{t.get('speaker')}: {t.get('text') or ''}"
            if t.get("blip_caption"):
                body += f" [image: {t['blip_caption']}]"
            keys.append(t["dia_id"]); texts.append(body)
    corpus = [[w for w in splitter(x.lower()) if w not in stop] for x in texts]
    index = bm25s.BM25(method="lucene")
    index.index(corpus, show_progress=False)
    queries = [[w for w in splitter(str(qa["question"]).lower()) if w not in stop] for qa in conv["qa"]]
    asked = [i for i, q in enumerate(queries) if q]
    found = {}
    if asked:
        docs, scores = index.retrieve([queries[i] for i in asked], k=min(10, len(texts)), show_progress=False)
        for i, d, sc in zip(asked, docs, scores):
            found[i] = [(keys[int(j)], float(x)) for j, x in zip(d, sc) if x > 0]
    for i in range(len(conv["qa"])):
        top = found.get(i, [])
        rows["item_id"].append(f"{conv['sample_id']}:{i}")
        rows["keys"].append([k for k, _ in top])
        rows["scores"].append([x for _, x in top])
pq.write_table(pa.table(rows), sys.argv[2])
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    data_dir = Path(os.environ.get("MEMRUN_DATA_DIR", "/work/shared/datasets")).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        floor = work / "floor.py"
        floor.write_text(FLOOR)
        env = {"MEMRUN_DATA_DIR": str(data_dir)}
        pairs = alternate(
            lambda: run_child(["memrun", "benchmark=locomo", "arm=bm25", "progress=false"], cwd=work, env=env),
            lambda: run_child([str(floor), str(data_dir / "locomo10.json"), str(work / "floor.parquet")], cwd=work),
            args.pairs,
        )
    print(f"LoCoMo retrieval run (1,986 questions), whole process, {args.pairs} pairs (A B A B)")
    print(HEADER)
    print(line("memrun run vs raw floor", pairs, "<= 1.5x", pairs.ratio <= 1.5))
    print("memrun s:", ", ".join(f"{c.seconds:.2f}" for c in pairs.a),
          "| floor s:", ", ".join(f"{c.seconds:.2f}" for c in pairs.b))


if __name__ == "__main__":
    main()
