"""The BEAM 500K retrieval run with bm25 as a whole process, beside a plain script, and
peak memory on the largest conversation, in one run.

    MEMRUN_DATA_DIR=/work/shared/datasets python bench/bench_beam.py [--pairs 3]

1. Speed: alternates, in fresh subprocesses timed from start to exit (imports included),
   ``python -m memrun benchmark=beam benchmark.split=500K arm=bm25 progress=false``
   (composing the config, checking every file's sha256, streaming each chat, indexing,
   searching, scoring, writing items.parquet and summary.json) and a plain script with
   no memrun doing the same reading and searching: the same imports (hydra, omegaconf,
   pyarrow, bm25s), ``json.load`` of each conversation's chat (``chat_trunecated.json``
   when there is one) and questions, one bm25s index per conversation over
   ``"<role>: <content>"`` messages, every question searched in one batched
   ``BM25.retrieve`` (top 10, bm25s's fastest path) and one Parquet table of the hits.
   Target: memrun <= 1.5x the plain script (median of the pair ratios).
2. Memory: memrun's peak RSS on the whole 500K run beside its peak on the largest
   conversation alone (``benchmark.slice.ids`` of conversation 32, the largest chat):
   one conversation is in memory at a time, so the two should be close.
3. A 10M-shaped chat (a list of 10 plans, each the largest 500K chat with its ids
   renumbered, ~37 MB): the peak RSS of memrun's streaming reader
   (:func:`memrun.benchmarks.beam.read_chat`) beside ``json.load`` of the file building
   the same records. Both hold the records; the difference is the parse.
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

FLOOR = r'''
import json, os, sys
import bm25s, hydra, numpy as np, omegaconf, pyarrow as pa, pyarrow.parquet as pq

root = os.path.join(sys.argv[1], "beam", "chats", "500K")
split = bm25s.tokenization.Tokenizer(lower=True, stopwords="en")
splitter, stop = split.splitter, frozenset(split.stopwords)
rows = {"item_id": [], "keys": [], "scores": []}
for conv in sorted(os.listdir(root), key=int):
    folder = os.path.join(root, conv)
    chat = os.path.join(folder, "chat_trunecated.json")
    if not os.path.exists(chat):
        chat = os.path.join(folder, "chat.json")
    keys, texts = [], []
    for batch in json.load(open(chat, encoding="utf-8")):
        for turn in batch["turns"]:
            for m in turn:
                keys.append(str(m["id"])); texts.append(f"{m['role']}: {m['content']}")
    questions = json.load(open(os.path.join(folder, "probing_questions", "probing_questions.json"), encoding="utf-8"))
    asked = [(f"{conv}:{a}:{i}", q["question"]) for a, qs in questions.items() for i, q in enumerate(qs)]
    corpus = [[w for w in splitter(x.lower()) if w not in stop] for x in texts]
    index = bm25s.BM25(method="lucene")
    index.index(corpus, show_progress=False)
    queries = [[w for w in splitter(q.lower()) if w not in stop] for _, q in asked]
    docs, scores = index.retrieve(queries, k=10, show_progress=False)
    for (item_id, _), d, sc in zip(asked, docs, scores):
        top = [(keys[int(j)], float(x)) for j, x in zip(d, sc) if x > 0]
        rows["item_id"].append(item_id)
        rows["keys"].append([k for k, _ in top])
        rows["scores"].append([x for _, x in top])
pq.write_table(pa.table(rows), sys.argv[2])
'''

STREAM = r'''
import sys
from collections import Counter
from memrun.benchmarks.beam import read_chat
records = read_chat(__import__("pathlib").Path(sys.argv[1]), Counter())
print(len(records))
'''

LOAD = r'''
import json, sys
from memrun.records import Record
records = []
for plan in json.load(open(sys.argv[1], encoding="utf-8")):
    for name, batches in plan.items():
        for batch in batches:
            anchor = batch["turns"][0][0].get("time_anchor")
            for turn in batch["turns"]:
                for m in turn:
                    records.append(Record(str(m["id"]), f"{m['role']}: {m['content']}", anchor,
                                          f"{name}/batch_{batch['batch_number']}"))
print(len(records))
'''


def ten_million_shape(source: Path, target: Path, plans: int = 10) -> int:
    """Write ``plans`` copies of a chat as a 10M-shaped file (ids renumbered); returns bytes."""
    batches = json.loads(source.read_text())
    offset = 1 + max(m["id"] for b in batches for t in b["turns"] for m in t)
    out = []
    for p in range(plans):
        copy = json.loads(json.dumps(batches))
        for b in copy:
            for t in b["turns"]:
                for m in t:
                    m["id"] += p * offset
        out.append({f"plan-{p}": copy})
    target.write_text(json.dumps(out))
    return target.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    data_dir = Path(os.environ.get("MEMRUN_DATA_DIR", "/work/shared/datasets")).resolve()
    env = {"MEMRUN_DATA_DIR": str(data_dir)}
    memrun = ["memrun", "benchmark=beam", "benchmark.split=500K", "arm=bm25", "progress=false"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, text in (("floor.py", FLOOR), ("stream.py", STREAM), ("load.py", LOAD)):
            (work / name).write_text(text)
        pairs = alternate(
            lambda: run_child(memrun, cwd=work, env=env),
            lambda: run_child([str(work / "floor.py"), str(data_dir), str(work / "floor.parquet")], cwd=work),
            args.pairs,
        )
        largest = run_child([*memrun, "benchmark.slice.ids=[" + ",".join(
            f"32:{a}:{i}" for a in ("abstention", "contradiction_resolution", "event_ordering", "information_extraction",
                                     "instruction_following", "knowledge_update", "multi_session_reasoning",
                                     "preference_following", "summarization", "temporal_reasoning") for i in (0, 1)) + "]"],
                            cwd=work, env=env)
        size = ten_million_shape(data_dir / "beam" / "chats" / "500K" / "32" / "chat.json", work / "chat10m.json")
        stream = run_child([str(work / "stream.py"), str(work / "chat10m.json")], cwd=work,
                           env={"PYTHONPATH": str(Path(__file__).resolve().parents[1])})
        loaded = run_child([str(work / "load.py"), str(work / "chat10m.json")], cwd=work,
                           env={"PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    print(f"BEAM 500K retrieval run (35 conversations, 700 questions), whole process, {args.pairs} pairs (A B A B)")
    print(HEADER)
    print(line("memrun run vs plain script", pairs, "<= 1.5x", pairs.ratio <= 1.5))
    print("memrun s:", ", ".join(f"{c.seconds:.2f}" for c in pairs.a),
          "| plain s:", ", ".join(f"{c.seconds:.2f}" for c in pairs.b))
    print(f"peak RSS MiB: memrun whole 500K run {pairs.peak('a'):.0f}, memrun on the largest conversation (500K/32) "
          f"alone {largest.peak_mib:.0f}, plain script {pairs.peak('b'):.0f}")
    print(f"10M-shaped chat ({size / 1e6:.0f} MB, {stream.stdout.strip()} messages): peak RSS MiB streaming "
          f"read_chat {stream.peak_mib:.0f} vs json.load + the same records {loaded.peak_mib:.0f} "
          f"({stream.peak_mib / loaded.peak_mib:.2f}x)")


if __name__ == "__main__":
    main()
