"""Builders of run tables written like real runs (the documented items.parquet schema and
instrument), shared by the compare tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from memrun.commands.compare import main as compare_main
from memrun.core.instrument import DENOMINATOR_ABSTAIN_WRONG, DENOMINATOR_RETRIEVAL, Instrument
from memrun.io.metadata import seal_table
from memrun.io.schema import items_schema
from memrun.io.writer import ItemsWriter

KS = (1, 5)


def base_instrument(**kw) -> Instrument:
    fields = dict(axis="recall", benchmark="locomo", split="locomo10", dataset_sha256="abc", search_mode="lexical",
                  denominator=DENOMINATOR_RETRIEVAL, ks=list(KS), status="complete")
    fields.update(kw)
    return Instrument(**fields)


def retrieval_run(folder: Path, hits: list[bool | None], clusters: list[str] | None = None, *,
                  errors: dict[int, str] | None = None, ids: list[str] | None = None,
                  categories: list[str] | None = None, gold_sessions: list[list[str]] | None = None, **inst) -> Path:
    """A retrieval-axis run: item i hits at rank 1 when hits[i] (None: no gold); optional
    per-item categories (default: "1"/"2" alternating) and gold session ids."""
    writer = ItemsWriter(folder, items_schema(KS), base_instrument(**inst))
    for i, h in enumerate(hits):
        scored = h is not None
        writer.add({
            "run_id": folder.name, "item_id": ids[i] if ids else f"it{i}", "repeat": 0,
            "cluster": clusters[i] if clusters else f"c{i % 4}",
            "category": categories[i] if categories else str(1 + i % 2),
            "category_label": categories[i] if categories else ("odd" if i % 2 == 0 else "even"),
            **({"gold_sessions": gold_sessions[i]} if gold_sessions else {}),
            "error": (errors or {}).get(i),
            "rr": (1.0 if h else 0.0) if scored else None,
            "hit_at_1": h if scored else None, "hit_at_5": h if scored else None,
        })
    writer.close()
    return folder


def accuracy_run(folder: Path, labels: dict[str, list[str]], *, denominator=DENOMINATOR_ABSTAIN_WRONG,
                 cluster_of: Callable[[str], str | None] = lambda item: item[:2],
                 category_of: Callable[[str], str] = lambda item: "x",
                 columns: dict[str, tuple[pa.DataType, Callable[[str, int], Any]]] | None = None, **inst) -> Path:
    """An accuracy-axis run: labels[item] = one label per repeat ("error" sets the error column);
    cluster_of / category_of give an item's cluster (default: its first two characters) and category;
    columns: more columns, name -> (type, value of (item, repeat))."""
    rows = {"run_id": [], "item_id": [], "repeat": [], "cluster": [], "category": [], "category_label": [],
            "error": [], "label": [], **{name: [] for name in columns or {}}}
    for item, per_repeat in labels.items():
        for r, label in enumerate(per_repeat):
            for name, (_, value) in (columns or {}).items():
                rows[name].append(value(item, r))
            rows["run_id"].append(folder.name)
            rows["item_id"].append(item)
            rows["repeat"].append(r)
            rows["cluster"].append(cluster_of(item))
            rows["category"].append(category_of(item))
            rows["category_label"].append(category_of(item))
            rows["error"].append("HTTP 500" if label == "error" else None)
            rows["label"].append(None if label == "error" else label)
    instrument = base_instrument(axis="accuracy", denominator=denominator, reader_model="r", judge_model="j", **inst)
    types = {"repeat": pa.int32(), **{name: t for name, (t, _) in (columns or {}).items()}}
    table = pa.table(rows, schema=pa.schema([(k, types.get(k, pa.string())) for k in rows]))
    table = seal_table(table, instrument)
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "items.parquet")
    return folder


def own_clusters(n: int) -> list[str]:
    """A cluster per item (LongMemEval's shape: one history a question), for tests that read
    items as independent (``--cluster-by none`` is refused where items share a history)."""
    return [f"q{i}" for i in range(n)]


def compare_json(capsys, *args: str) -> tuple[int, dict]:
    """``memrun compare ARGS --format json`` in-process: (exit code, the JSON document)."""
    code = compare_main([*args, "--format", "json"])
    out = capsys.readouterr().out
    return code, (json.loads(out) if out.strip() else {})


def wtl(wins: int, ties: int, losses: int) -> tuple[list[bool], list[bool]]:
    """Hit lists for A and B with these wins, ties and losses of B over A (wins first)."""
    a = [False] * wins + [True] * losses + [True] * ties
    b = [True] * wins + [False] * losses + [True] * ties
    return a, b


def cli_run(root: Path, name: str, *overrides: str) -> Path:
    """A run of the command line (in this process, ``progress=false``) into ``root / name``,
    asserted to exit 0; returns its folder."""
    from memrun.cli import main

    out = root / name
    assert main(["progress=false", f"hydra.run.dir={out}", *overrides]) == 0
    return out


def compare_cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    """``memrun compare ARGV`` through the command line, in this process: its exit code, stdout
    and stderr (``capsys``: pytest's fixture; what was captured before is dropped)."""
    from memrun.cli import main

    capsys.readouterr()
    code = main(["compare", *argv])
    out, err = capsys.readouterr()
    return code, out, err
