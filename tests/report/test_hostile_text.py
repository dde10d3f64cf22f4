"""Text from a dataset or a model never escapes its place in a page, and tables written by
other tools (a pandas round-trip) still report.

Hostile text (an HTML comment opener, a closing script tag, an image with an onerror
handler, U+2028/U+2029, ``&``) goes into questions, answers, categories, retrieved
records, the reader's answer and the judge's explanation; every row renders with the
text exactly as written, no script of it runs, no console error."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from accuracy.helpers import execute_run, gold_judge, is_judge
from memrun.cli import main
from memrun.report.html.common import embed_json
from report.browser import open_page, rows_shown
from servers.openai_server import prompt_text

HOSTILE = ["<!-- an open comment", "</script><script>window.PWNED = 1</script>",
           '<img src=x onerror="window.PWNED = 2">', "line\u2028separator\u2029paragraph", "a & b > c <!--"]


def hostile_benchmark(path: Path) -> Path:
    """A jsonl benchmark: one conversation per hostile string, in every text field."""
    lines = []
    for i, h in enumerate(HOSTILE):
        lines.append(json.dumps({
            "conversation_id": f"c{i}",
            "history": [{"role": "user", "content": f"fact {h} number {i}", "key": f"c{i}:0"},
                        {"role": "user", "content": "filler", "key": f"c{i}:1"}],
            "questions": [{"item_id": f"c{i}:q0", "question": f"what {h}?", "answer": f"ans {h}",
                           "gold_keys": [f"c{i}:0"], "category": f"cat {h}"}]}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_embed_json_escapes_every_html_significant_character():
    value = {"s": "".join(HOSTILE), "n": [float("nan"), 1.5], "k<>": "&"}
    text = embed_json(value)
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    assert json.loads(text) == {"s": "".join(HOSTILE), "n": [None, 1.5], "k<>": "&"}


def _check_rows(page, n: int) -> None:
    assert rows_shown(page) == n
    body = page.page.text_content("#items tbody")
    for h in HOSTILE:
        assert f"what {h}?" in body, h
    assert page.page.evaluate("window.PWNED === undefined")
    assert page.page.locator("#items tbody img").count() == 0
    for i in range(n):  # every row's details open and show the text as written
        page.page.locator("tbody tr.row").nth(i).click()
    details = page.page.text_content("#items tbody")
    for h in HOSTILE:
        assert f"ans {h}" in details
    assert page.page.evaluate("window.PWNED === undefined")
    page.check_clean()


def test_hostile_text_recall_page(browser, tmp_path, capsys):
    bench = hostile_benchmark(tmp_path / "hostile.jsonl")
    run = tmp_path / "run"
    assert main(["progress=false", "benchmark=jsonl", f"benchmark.path={bench}", f"hydra.run.dir={run}"]) == 0
    assert main(["report", str(run)]) == 0
    html = (run / "report.html").read_text()
    assert "<!-- an" not in html and "</script><script>" not in html
    page = open_page(browser, run / "report.html")
    _check_rows(page, len(HOSTILE))
    options = page.page.locator("select[data-key=cat] option").all_text_contents()
    assert {f"cat {h}" for h in HOSTILE} <= set(options)


def hostile_llm(body: dict) -> str:
    """The reader answers with hostile text; the judge explains with it."""
    text = prompt_text(body)
    if is_judge(text):
        verdict = json.loads(gold_judge(text))
        return json.dumps({**verdict, "explanation": "judge says " + " ".join(HOSTILE)})
    return "reader says " + HOSTILE[len(text) % len(HOSTILE)]


def test_hostile_text_accuracy_page(browser, llm_env, tmp_path, capsys):
    bench = hostile_benchmark(tmp_path / "hostile.jsonl")
    llm_env.responder = hostile_llm
    with ThreadPoolExecutor(1) as pool:  # the browser fixture's Playwright holds this thread's event loop
        run, _ = pool.submit(execute_run, tmp_path, "judge=gpt41", "benchmark=jsonl", "reader.model=gpt-4o-mini", "reader.prompt=default",
                             f"benchmark.path={bench}", name="acc").result()
    assert main(["report", str(run)]) == 0
    page = open_page(browser, run / "report.html")
    _check_rows(page, len(HOSTILE))
    body = page.page.text_content("#items tbody")
    for row in pq.read_table(run / "items.parquet", columns=["judge_explanation", "reader_answer"]).to_pylist():
        assert row["judge_explanation"].startswith("judge says ") and row["judge_explanation"] in body
        assert row["reader_answer"] in body


def pandas_round_trip(run: Path, out: Path) -> Path:
    """``items.parquet`` read into pandas and written back with its instrument kept, as a
    user's notebook does: lists become numpy arrays, int columns with nulls float64 with
    NaN; a Timestamp column and a NaN-holding float column are added on the way."""
    pd = pytest.importorskip("pandas")
    original = pq.read_table(run / "items.parquet")
    df = pd.read_parquet(run / "items.parquet")
    df["reviewed_at"] = pd.Timestamp("2026-01-02T03:04:05")
    df["score_note"] = float("nan")
    table = pa.Table.from_pandas(df, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), **original.schema.metadata})
    out.mkdir(parents=True)
    pq.write_table(table, out / "items.parquet")
    return out / "items.parquet"


@pytest.mark.parametrize("which", ["recall_dir", "accuracy_dir"])
def test_a_pandas_round_trip_reports(browser, which, request, tmp_path, capsys):
    run = request.getfixturevalue(which)
    items = pandas_round_trip(run, tmp_path / "pandas")
    assert pq.read_table(items).schema.field("first_gold_rank").type == pa.float64()  # what pandas did
    assert main(["report", str(items)]) == 0, capsys.readouterr().err
    page = open_page(browser, tmp_path / "pandas" / "report.html")
    n = pq.read_metadata(run / "items.parquet").num_rows
    assert page.page.text_content("#count") == str(n)
    ranks = [r["rank"] for r in json.loads(page.page.text_content("#rows")) if r["rank"] is not None]
    assert ranks and all(isinstance(r, int) for r in ranks)
    page.check_clean()
