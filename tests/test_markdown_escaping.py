"""Dataset text in memrun's markdown stays in its place (memrun.report.md): hostile questions,
answers, keys, categories and judge explanations cannot break a table, forge the sticky
marker, mention anyone or add HTML. Checked by parsing the documents back with markdown-it
(CommonMark with GFM tables), as GitHub would read them."""

from __future__ import annotations

import json
import re

import pytest
from markdown_it import MarkdownIt

from accuracy.helpers import execute_run, field, is_judge
from memrun.report import md
from memrun.report.model import SweepRow
from memrun.report.sweep_table import render as render_sweep
from servers.openai_server import prompt_text

HOSTILE = [
    "a|b\n|---|---|\n| x",
    "<!-- memrun-compare: synthetic/evil -->",
    "@everyone and @octocat/team ```fence``` `tick` \\`",
    "<img src=x onerror=alert(1)><script>alert(2)</script>",
    "[click](https://evil.example) ![t](https://evil.example/t.png) &lt;b&gt; &amp;",
    "$\\color{red}\\text{PASS}$ # not a heading *bold* _it_ ~~s~~ x\\",
    "1. list\u2028- item\r\n> quote",
    "--> -->",
    "- item",
    "   indented `",
    "#123 @@user",
]
MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9]")
PARSER = MarkdownIt("commonmark").enable("table").enable("strikethrough")


def tokens(doc: str) -> list:
    """Every token of ``doc``, inline children included."""
    out = []
    for tok in PARSER.parse(doc):
        out.append(tok)
        out.extend(tok.children or [])
    return out


def rendered(inline_token) -> str:
    """The text a reader sees of an inline token: entities decoded, escapes applied."""
    return "".join(c.content if c.type in ("text", "code_inline") else " " if "break" in c.type else ""
                   for c in inline_token.children or [])


def check_document(doc: str, marker: str | None) -> list[list[str]]:
    """Assert one marker (the first line, the only HTML), no mention, every table row as
    wide as its header; returns the rows of every table (cell texts)."""
    toks = tokens(doc)
    html = [t for t in toks if t.type in ("html_block", "html_inline")]
    if marker:
        assert doc.startswith(marker + "\n") and len(html) == 1 and html[0].content.strip() == marker, html
    else:
        assert not html, html
    assert doc.count("<!--") == (1 if marker else 0)
    assert not [t for t in toks if t.type in ("link_open", "image")], "a link or image from data"
    for t in toks:
        if t.type == "text":
            assert not MENTION.search(t.content), t.content
    rows, row, width = [], None, None
    for t in PARSER.parse(doc):
        if t.type == "tr_open":
            row = []
        elif t.type == "inline" and row is not None:
            row.append(rendered(t))
        elif t.type == "tr_close":
            width = width or len(row)
            assert len(row) == width, row
            rows.append(row)
            row = None
        elif t.type == "table_close":
            width = None
    # GFM: a row with more cells than the header is cut silently; count the raw pipes too
    for line in doc.splitlines():
        if line.startswith("| "):
            assert len(re.findall(r"(?<!\\)\|", line.replace("\\\\", ""))) in {len(r) + 1 for r in rows}, line
    return rows


@pytest.mark.parametrize("text", HOSTILE)
def test_each_position_renders_the_text_and_nothing_else(text):
    seen = md.one_line(text).replace("@", "@" + md.ZWJ)
    doc = "\n".join([
        "<!-- memrun-compare: x/y -->", f"### plan: {md.inline(text)} x {md.inline(text)}", "",
        f"- A = {md.inline(text)} and {md.code_span(text)}", "",
        *md.table(["one", "two"], [[text, "ok"], ["ok", text]]), "", *md.fenced([text, text], "diff"), "",
    ])
    rows = check_document(doc, "<!-- memrun-compare: x/y -->")
    assert rows == [["one", "two"], [seen.strip(), "ok"], ["ok", seen.strip()]]
    items = [t for t in PARSER.parse(doc) if t.type == "inline"]
    assert rendered(items[0]) == f"plan: {seen.strip()} x {seen.strip()}"
    assert rendered(items[1]).startswith(f"A = {seen.lstrip()} and ")
    fences = [t for t in PARSER.parse(doc) if t.type == "fence"]
    assert len(fences) == 1 and fences[0].info == "diff" and fences[0].content.count("\n") == 2


def test_a_marker_name_cannot_close_or_open_a_comment():
    for text in HOSTILE:
        name = md.marker_name(text)
        assert re.fullmatch(r"[A-Za-z0-9_.=/+:-]+", name) and "--" not in name


def test_the_sweep_table_keeps_its_shape():
    rows = [SweepRow(job=i, overrides=text, status="complete", exit_code=0, headline=text, value=0.5, n_items=1,
                     n_errors=0, seconds=1.0, run_dir="x", error=None) for i, text in enumerate(HOSTILE)]
    table = check_document(render_sweep(rows, "markdown"), None)
    assert len(table) == len(HOSTILE) + 1 and [r[1] for r in table[1:]] == [
        md.one_line(t).replace("@", "@" + md.ZWJ).strip() for t in HOSTILE]


def hostile_benchmark(path):
    """Two conversations, every free-text field hostile; the categories are hostile names."""
    lines = []
    for c in range(2):
        cid = f"conv{c}|{HOSTILE[c]}"
        history = [{"role": "user", "content": f"fact {i}: {HOSTILE[i]}", "key": f"{cid}:{HOSTILE[i]}"}
                   for i in range(len(HOSTILE))]
        questions = [{"item_id": f"{cid}:q{i}", "question": f"what is fact {i}? {HOSTILE[i]}",
                      "answer": f"answer {i} {HOSTILE[-1 - i]}", "gold_keys": [history[i]["key"]],
                      "category": HOSTILE[i % 4]} for i in range(len(HOSTILE))]
        lines.append(json.dumps({"conversation_id": cid, "history": history, "questions": questions}))
    path.write_text("\n".join(lines) + "\n")
    return path


def hostile_llm(body: dict) -> str:
    """Judges explain with hostile text; readers answer with it."""
    text = prompt_text(body)
    if is_judge(text):
        return json.dumps({"verdict": "CORRECT" if "1" in (field(text, "Question") or "") else "WRONG",
                           "explanation": " ".join(HOSTILE)})
    return "answer: " + HOSTILE[len(text) % len(HOSTILE)]


def test_compare_and_plan_markdown_of_a_hostile_benchmark(llm_env, tmp_path, capsys):
    from memrun.commands.compare import main as compare_main
    from memrun.commands.plan import main as plan_main

    llm_env.responder = hostile_llm
    bench = hostile_benchmark(tmp_path / "bench.jsonl")
    common = ["benchmark=jsonl", f"benchmark.path={bench}", "judge=gpt41", "reader.model=gpt-4.1-mini",
              "reader.prompt=default"]
    a, _ = execute_run(tmp_path, *common, "arm=bm25", "arm.top_k=10", name="a")
    b, _ = execute_run(tmp_path, *common, "arm=bm25", "arm.top_k=1", name="b")
    capsys.readouterr()
    code = compare_main([str(a), str(b), "--treatment", "top_k", "--format", "markdown"])  # the change: the depth
    doc = capsys.readouterr().out
    assert code in (0, 1, 2), doc
    marker = doc.splitlines()[0]
    assert marker == "<!-- memrun-compare: jsonl/bm25 -->"
    table = check_document(doc, marker)
    categories = {md.one_line(h).replace("@", "@" + md.ZWJ).strip() for h in HOSTILE[:4]}
    assert {r[0] for r in table[1:]} == categories and all(len(r) == 8 for r in table)

    assert plan_main(["axis=accuracy", f"cache_dir={tmp_path / 'cache'}", *common, "arm=bm25"]) == 0
    capsys.readouterr()
    assert plan_main(["axis=accuracy", f"cache_dir={tmp_path / 'cache'}", *common, "arm=bm25",
                      "--format", "markdown"]) == 0
    plan = capsys.readouterr().out
    check_document(plan, plan.splitlines()[0])
