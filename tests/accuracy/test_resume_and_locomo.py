"""Resume after a killed process (calls counted at the server), LoCoMo end to end, the subcommands."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from accuracy.helpers import KEY, execute_run, field, gold_judge, is_judge, rows, summary
from memrun.cli import main
from memrun.io.reader import read_run
from memrun.llm.cache import CallCache
from memrun.stats.calibration import JudgeCalibration
from servers.openai_server import prompt_text

REPO = Path(__file__).resolve().parents[2]


def test_resume_after_kill_makes_no_duplicate_calls(llm_env, tmp_path):
    server = llm_env
    server.latency = 0.2  # the 80 calls left after the 40th take 4 s: the kill lands before the end
    cache = tmp_path / "cache"
    total = 2 * 30 * 2  # reader + judge, 30 items, 2 repeats
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}
    cmd = [sys.executable, "-m", "memrun", "axis=accuracy", "judge=gpt41", "repeats=2", "concurrency=4",
           "progress=false", f"cache_dir={cache}", f"hydra.run.dir={tmp_path / 'killed'}"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while server.count() < 40 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    sent_before_kill = server.count()
    with CallCache(cache) as c:
        finished = len(c)
    assert 40 <= sent_before_kill < total and 0 < finished <= sent_before_kill
    assert sent_before_kill - finished <= 4  # at most the calls in flight were lost

    server.latency = 0.0
    out, _ = execute_run(tmp_path, "judge=gpt41", "repeats=2", "concurrency=4", name="resumed")
    resumed = server.count() - sent_before_kill
    assert resumed == total - finished  # every finished call came from the cache
    assert summary(out)["calls"]["cached"] == finished and len(rows(out)) == 60


def locomo_slice(data_dir: Path, tmp_path: Path, conversations: int = 1) -> list[str]:
    """Overrides selecting the first ``conversations`` of locomo10.json (a copy in tmp_path)."""
    source = data_dir / "locomo10.json"
    path = tmp_path / "locomo-slice.json"
    path.write_text(json.dumps(json.loads(source.read_text())[:conversations]))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return ["benchmark=locomo", f"benchmark.path={path}", f"benchmark.sha256={digest}"]


def locomo_responder(body: dict) -> str:
    """Reader: the first retrieved memory's text (a plausible, often wrong answer). Judge: gold in answer."""
    text = prompt_text(body)
    if is_judge(text):
        if "cannot be answered" in text:  # the abstention prompt
            verdict = "CORRECT" if "not mentioned" in (field(text, "Answer to grade") or "").lower() else "WRONG"
            return json.dumps({"verdict": verdict, "explanation": "abstention rule"})
        return gold_judge(text)
    memories = text.split("Memories:\n", 1)[1].split("\n")
    return memories[0].split("] ", 1)[-1] if memories and memories[0].startswith("[") else "Not mentioned in the conversation."


@pytest.mark.realdata
def test_locomo_accuracy_run_with_bm25(llm_env, data_dir, tmp_path, capsys):
    llm_env.responder = locomo_responder
    locomo = locomo_slice(data_dir, tmp_path)
    out, printed = execute_run(tmp_path, *locomo, "judge=gpt41", "arm=bm25")
    table = rows(out)
    n = len(table)
    assert n > 100 and llm_env.count() == 2 * n
    by_cat = {r["category"]: r for r in table}
    assert set(by_cat) == {"1", "2", "3", "4", "5"}
    assert {r["judge_prompt"] for r in table if r["category"] == "5"} == {"abstention"}
    assert {r["judge_prompt"] for r in table if r["category"] == "2"} == {"temporal"}
    # the reader saw dated memories, in rank order
    first_prompt = next(e.body for e in llm_env.log if not is_judge(prompt_text(e.body)))
    assert "Memories:\n[" in prompt_text(first_prompt)
    s = summary(out)
    assert s["comparable_categories"] == ["1", "2", "3", "4"]
    assert s["overall_comparable"]["n_items"] == sum(1 for r in table if r["category"] != "5")
    assert 0 < s["overall_all"]["correct"] < n and s["retrieval"]["overall_all"]["n_scored"] > 0
    assert sum(s["failure_stages"].values()) == s["overall_all"]["wrong"] + s["overall_all"]["abstained"]
    assert "retrieval_ranking" in s["failure_stages"] and "reader" in s["failure_stages"]
    assert "locomo x bm25 (accuracy axis)" in printed and "score" in printed

    # the lexical judge on the same answers (from the cache): no new calls
    out_f1, _ = execute_run(tmp_path, *locomo, "judge=f1", "arm=bm25", name="f1")
    assert llm_env.count() == 2 * n  # reader calls all cached, f1 needs none
    f1 = summary(out_f1)
    assert f1["instrument"]["judge_model"] == "f1/locomo" and f1["overall_all"]["mean_judge_score"] is not None

    # memrun failures shows the wrong items with their context
    assert main(["failures", str(out), "--limit", "2", "--hits", "2"]) == 0
    shown = capsys.readouterr().out
    assert "question" in shown and "gold" in shown and "stage" in shown and "2 of" in shown
    assert main(["failures", str(out), "--json", "--category", "2"]) == 0
    items = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert items and all(i["category"] == "2" and i["labels"] for i in items)
    assert all(len(i["retrieved"]) <= 5 for i in items)
    assert all(i["retrieved"][0]["text"] and all(g["text"] for g in i["gold_records"]) for i in items)
    assert main(["failures", str(out), "--k", "5"]) == 2  # --k reads a recall run


def test_failures_reads_a_recall_run(tmp_path, capsys):
    out = tmp_path / "recall"
    assert main(["progress=false", f"hydra.run.dir={out}"]) == 0
    capsys.readouterr()
    assert main(["failures", str(out)]) == 0
    assert "recall@" in capsys.readouterr().out


def test_calibrate_judge_writes_rates_compare_can_read(llm_env, tmp_path, capsys):
    llm_env.responder = lambda body: gold_judge(prompt_text(body))
    target = tmp_path / "calib.json"
    args = ["calibrate-judge", "judge=gpt41", f"cache_dir={tmp_path / 'cache'}", "progress=false", "--out", str(target), "--n", "12"]
    assert main(args) == 0
    record = json.loads(target.read_text())
    calibration = JudgeCalibration.from_dict(record)
    assert calibration.n_pos == 12 and calibration.n_neg >= 10
    assert calibration.tpr == 1.0 and calibration.fpr < 0.2  # the gold-matching judge passes gold, rejects others
    assert record["judge_model"] == "gpt-4.1" and record["benchmark"] == "synthetic" and record["n_errors"] == 0
    calls = llm_env.count()
    assert calls == calibration.n_pos + calibration.n_neg
    assert main(args) == 0 and llm_env.count() == calls  # the second time from the cache
    assert "TPR 1.000" in capsys.readouterr().err
    assert main(["calibrate-judge", "--out", str(target)]) == 2  # judge=none
    assert "needs a judge" in capsys.readouterr().err


def test_longmemeval_accuracy_with_pins_dates_abstention_and_stale_check(llm_env, tmp_path):
    """A generated LongMemEval-schema file: pinned reader and judge, question dates in both
    prompts, abstention items graded with the abstention prompt, the stale check filled."""
    data = tmp_path / "lme.json"
    assert main(["datasets", "synth", "--size", "tiny", "--quiet", str(data)]) == 0
    llm_env.responder = lambda body: (
        json.dumps({"verdict": "WRONG", "explanation": "x"}) if is_judge(prompt_text(body)) else "I moved to Denver."
    )
    out, printed = execute_run(tmp_path, "benchmark=longmemeval", f"benchmark.path={data}", "judge=gpt4o",
                               "stale_check=true")
    assert "pinned" not in printed  # the pinned reader and judge: nothing overridden
    table = rows(out)
    inst = read_run(out).instrument
    assert inst.reader_model == "gpt-4o-mini-2024-07-18" and inst.judge_model == "gpt-4o-2024-08-06"
    prompts = [prompt_text(e.body) for e in llm_env.log]
    assert all("Current date:" in p for p in prompts if not is_judge(p))
    assert all("Date of the question:" in p for p in prompts if is_judge(p))
    abstention = [r for r in table if r["abstention"]]
    assert abstention and {r["judge_prompt"] for r in abstention} == {"abstention"}
    assert {r["judge_prompt"] for r in table if r["category"] == "temporal-reasoning" and not r["abstention"]} == {"temporal"}
    updates = [r for r in table if r["category"] == "knowledge-update"]
    planted = [r for r in updates if "superseded_answer" in (r["extra"] or "")]
    assert planted and all(r["stale"] is not None for r in planted)  # judged wrong, superseded value known
    assert all(r["stale"] is None for r in table if r["category"] != "knowledge-update")
