"""BEAM's official score table from one fixed-answer run: memrun's ``benchmark.preset=official``
beside BEAM's own evaluation code on the same answers and the same judge replies.

    MEMRUN_DATA_DIR=/work/shared/datasets python bench/beam_official_table.py --beam-repo PATH

PATH: a checkout of github.com/mohammadtavakoli78/BEAM at commit b2a3ee8b (its ``src/``).
Not a timing: a figure (docs/reproducing.md). Steps:

1. Fixed answers for the 400 questions of the 100K size: each event-ordering question's
   rubric events in a seeded shuffled order, one a line; every other question the same
   sentence. A loopback OpenAI-compatible server (tests/servers/openai_server.py) plays
   the judge: a rubric item scores 0, 0.5 or 1 by a fixed function of its text (crc32),
   two events are equivalent when their texts are equal.
2. memrun: ``memrun axis=accuracy benchmark=beam benchmark.split=128K
   benchmark.preset=official arm=answers_file judge=beam_rubric`` against that server.
3. BEAM's code: ``src/evaluation/run_evaluation.py``'s ``run_evaluation`` on each chat's
   answers with a model object giving the same replies (its imports that need the network
   or GPUs are stubbed: ``src.llm``, the sentence-transformers models it never calls here,
   nltk's downloads), then ``src/evaluation/report_results.py``'s
   ``report_llms_accuracies`` (its Excel file captured as the table).
4. Prints both tables, ability by ability, with memrun's default (0.5 credited, rubric
   mean for event ordering) beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import types
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from servers.openai_server import OpenAIServer, prompt_text

CRITERION = re.compile(r"^- RUBRIC CRITERION[^:]*: (.*)$", re.MULTILINE)
SNIPPETS = re.compile(r"First snippet: (.*?) \n\s*Second snippet: (.*?)\s*$", re.DOTALL)


def item_score(rubric_item: str) -> float:
    """The judge's score of a rubric item: a fixed function of its text."""
    return (0.0, 0.5, 1.0)[zlib.crc32(rubric_item.strip().encode()) % 3]


def judge_reply(text: str) -> str | None:
    """The reply to a rubric or equivalence prompt; None for anything else."""
    if m := CRITERION.search(text):
        return json.dumps({"score": item_score(m.group(1)), "reason": "fixed"})
    if m := SNIPPETS.search(text):
        return "YES" if m.group(1).strip() == m.group(2).strip() else "NO"
    return None


def fixed_answers(items: list[Any]) -> dict[str, str]:
    out = {}
    for item in items:
        if item.category == "event_ordering":
            events = list(item.extra["rubric"])
            random.Random(item.item_id).shuffle(events)
            out[item.item_id] = "\n".join(events)
        else:
            out[item.item_id] = "The conversation does not say."
    return out


def run_memrun(answers_file: Path, out: Path, server: OpenAIServer) -> dict[str, Any]:
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test-loopback-0123456789abcdef"}
    command = [sys.executable, "-m", "memrun", "axis=accuracy", "benchmark=beam", "benchmark.split=128K",
               "benchmark.preset=official", "arm=answers_file", f"arm.path={answers_file}", "judge=beam_rubric",
               "progress=false", f"cache_dir={out.parent / 'llm-cache'}", f"hydra.run.dir={out}"]
    subprocess.run(command, env=env, check=True, capture_output=True)
    return json.loads((out / "summary.json").read_text())


class _Reply:
    def __init__(self, content: str) -> None:
        self.content = content


class FixedModel:
    """BEAM's code calls ``model.invoke(prompt or messages).content``: the same replies."""

    def invoke(self, prompt: Any) -> _Reply:
        text = prompt if isinstance(prompt, str) else "\n".join(m["content"] for m in prompt)
        reply = judge_reply(text)
        return _Reply(reply if reply is not None else "")  # fact extraction: its result is discarded


def official_table(beam_repo: Path, data_dir: Path, items: list[Any], answers: dict[str, str], work: Path) -> Any:
    sys.path.insert(0, str(beam_repo))
    stub_llm = types.ModuleType("src.llm")
    stub_llm.gpt_llm = None  # type: ignore[attr-defined]
    sys.modules["src.llm"] = stub_llm
    for name in ("rouge_score", "json_repair"):
        module = types.ModuleType(name)
        module.rouge_scorer = None  # type: ignore[attr-defined]
        module.repair_json = lambda s: s  # type: ignore[attr-defined]
        sys.modules[name] = module
    import nltk
    nltk.download = lambda *a, **k: True  # no network
    import pandas as pd
    from src.evaluation import report_results, run_evaluation  # type: ignore[import-not-found]
    run_evaluation.initialize_models = lambda: None  # the embedding models the llm alignment never uses
    by_chat: dict[str, dict[str, list[dict[str, str]]]] = {}
    for item in items:
        by_chat.setdefault(item.cluster, {}).setdefault(item.category, []).append(
            {"question": item.question, "llm_response": answers[item.item_id]})
    for chat, abilities in by_chat.items():
        folder = work / "official" / chat
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "answers.json").write_text(json.dumps(abilities))
        run_evaluation.run_evaluation(
            probing_questions_address=str(data_dir / "beam" / "chats" / "100K" / chat / "probing_questions" / "probing_questions.json"),
            answers_directory=str(folder / "answers.json"), output_address=str(folder / "evaluation-results.json"),
            model=FixedModel())
    captured: dict[str, Any] = {}
    pd.DataFrame.to_excel = lambda self, *a, **k: captured.setdefault("df", self)  # type: ignore[method-assign]
    report_results.report_llms_accuracies(str(work / "official"), ["evaluation-results.json"], "table.xlsx")
    return captured["df"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beam-repo", type=Path, required=True, help="a checkout of BEAM at b2a3ee8b")
    args = parser.parse_args()
    data_dir = Path(os.environ["MEMRUN_DATA_DIR"])
    sys.path.insert(0, str(ROOT))
    import yaml

    from memrun.benchmarks.beam import Beam
    categories = yaml.safe_load((ROOT / "conf" / "benchmark" / "beam.yaml").read_text())["categories"]
    items = [i for g in Beam(split="100K", url="http://127.0.0.1:9", categories=categories).load(data_dir).groups
             for i in g.items]
    answers = fixed_answers(items)
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer() as server:
        work = Path(tmp)
        server.responder = lambda body: judge_reply(prompt_text(body)) or "unexpected prompt"
        answers_file = work / "answers.jsonl"
        answers_file.write_text("".join(json.dumps({"question_id": i, "hypothesis": a}) + "\n" for i, a in answers.items()))
        summary = run_memrun(answers_file, work / "memrun", server)
        df = official_table(args.beam_repo, data_dir, items, answers, work)
    official = summary["beam_official"]
    theirs = {c: float(df[c].iloc[0]) for c in df.columns if c != "RowName"}
    print(f"BEAM 100K (README: 128K), {len(items)} questions, fixed answers, fixed judge replies")
    print(f"{'ability':<26} {'memrun official':>16} {'BEAM code':>10} {'equal':>6} {'memrun default':>15}")
    for ability, value in official["per_ability"].items():
        default = summary["per_category"][ability]["mean_judge_score"]
        print(f"{ability:<26} {value:>16.4f} {theirs[ability]:>10.4f} {abs(value - theirs[ability]) < 1e-12!s:>6} "
              f"{default:>15.4f}")
    mean_theirs = sum(theirs.values()) / len(theirs)
    print(f"{'ten-ability mean':<26} {official['ten_ability_mean']:>16.4f} {mean_theirs:>10.4f} "
          f"{abs(official['ten_ability_mean'] - mean_theirs) < 1e-12!s:>6} "
          f"{summary['category_averaged']['mean_judge_score']:>15.4f}")
    print(f"headline ({summary['headline']['metric']}): {summary['headline']['value']:.4f}; "
          f"rows the official truncation changed: {official['n_rows_truncated']}")


if __name__ == "__main__":
    main()
