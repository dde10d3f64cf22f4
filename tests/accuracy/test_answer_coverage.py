"""arm=answers_file on real LoCoMo against the loopback judge: answer coverage, ids that
name no item, a partial headline (exit 2), and no failure stage the arm did not run.

Expected values are recomputed from the rows the run wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accuracy.helpers import gold_judge, rows, run_memrun, summary
from memrun.io.reader import read_run
from servers.openai_server import prompt_text

pytestmark = pytest.mark.realdata

UNKNOWN = ["conv-99:0", "conv-99:1", "q-from-another-split"]


@pytest.fixture
def judge(llm_env):
    llm_env.responder = lambda body: gold_judge(prompt_text(body))
    return llm_env


def answers_file(tmp_path: Path, data_dir: Path) -> tuple[Path, list[str]]:
    """Answers for the first 30 LoCoMo questions with a gold answer (20 right, 10 wrong),
    plus three ids that name no LoCoMo item."""
    conversations = json.loads((data_dir / "locomo10.json").read_text())
    picked = []
    for conv in conversations:
        for i, qa in enumerate(conv["qa"]):
            if "answer" in qa and len(picked) < 30:
                picked.append((f"{conv['sample_id']}:{i}", str(qa["answer"])))
    lines = [{"question_id": item_id, "hypothesis": answer if n < 20 else "no idea at all"}
             for n, (item_id, answer) in enumerate(picked)]
    lines += [{"question_id": item_id, "hypothesis": "x"} for item_id in UNKNOWN]
    path = tmp_path / "hyp.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path, [item_id for item_id, _ in picked]


def test_low_coverage_is_a_partial_headline_and_exits_2(judge, tmp_path, data_dir, capsys) -> None:
    path, answered_ids = answers_file(tmp_path, data_dir)
    common = ["benchmark=locomo", "arm=answers_file", f"arm.path={path}", "judge=gpt41", f"data_dir={data_dir}"]
    code, out = run_memrun(tmp_path, *common)
    printed = capsys.readouterr()
    table = rows(out)
    answered = sum(1 for r in table if r["reader_answer"] is not None)
    assert answered == len(answered_ids) == 30 and len(table) == 1986
    s = summary(out)
    assert s["coverage"] == {"answered": answered, "items": len(table), "share": answered / len(table),
                             "min_coverage": 0.95, "partial": True, "unknown_ids": 3, "unknown_id_examples": UNKNOWN}
    assert s["headline"]["partial"] is True
    assert code == 2 and printed.err.strip().splitlines()[-1].startswith(
        "memrun: error: arm=answers_file answered 30 of 1986 items (1.5%, below min_coverage=0.95): the headline is partial")
    out_text = " ".join(printed.out.split())  # the table's width wraps lines
    assert "PARTIAL" in out_text and "3 answer ids name no item (e.g. conv-99:0" in out_text
    assert any(w.startswith("the arm answered 30 of 1986 items") for w in s["warnings"])
    assert any(w.startswith("3 answer ids name no item of the benchmark") for w in s["warnings"])
    assert read_run(out).instrument.warnings == s["warnings"]
    # The arm retrieves nothing: no retrieval score, and no miss blamed on retrieval.
    wrong = [r for r in table if r["label"] == "wrong"]
    assert len(wrong) >= 10 and not any(r["failure_stage"] == "retrieval_ranking" for r in table)
    assert "retrieval_ranking" not in s["failure_stages"]
    assert all(r["rr"] is None and r["hit_at_1"] is None for r in table)
    assert s["retrieval"]["overall_all"]["n_scored"] == 0 and s["retrieval"]["overall_all"]["recall@1"] is None
    # ... and no search: not 1986 empty ones, nor a search latency of the no-op it stands in for
    assert all(r["retrieved_keys"] is None and r["search_latency_ms"] is None for r in table)
    assert s["search_latency_ms"] == {"p50": None, "p95": None}
    assert "empty searches: no search returned (the arm retrieves nothing" in out_text and "search ms -" in out_text

    # A slice to answered items is complete; answers for items the slice left out are not unknown ids.
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("\n".join(answered_ids[:20]) + "\n")
    code, out = run_memrun(tmp_path, *common, f"benchmark.slice.ids_file={ids_file}", name="sliced")
    s = summary(out)
    assert code == 0 and s["coverage"]["answered"] == s["coverage"]["items"] == 20
    assert s["coverage"]["unknown_ids"] == 3 and s["headline"]["partial"] is False

    code, out = run_memrun(tmp_path, *common, "min_coverage=0.01", name="accepted")
    assert code == 0 and summary(out)["coverage"]["partial"] is False
