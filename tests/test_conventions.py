"""Issue 31: every degenerate case a metric can produce is counted, shown and kept out of a PASS.

Point 1 on the real LoCoMo file: a memory server that returns nothing scores 100 on
``evidence_share@K`` (the official convention: no retrieved context counts 1). The run
counts those items, its lines carry the caveat, and ``memrun compare`` never passes on them.
Point 5: empty searches are shown always; gold no record can match is counted.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from rich.console import Console

from arms.support import compose_run
from memrun.commands.compare import main as compare_main
from memrun.io.reader import read_run
from memrun.pipeline.run import execute
from memrun.records import Hit, Record
from memrun.stats import ExitCode


class EmptyArm:
    """A memory server that stores everything and finds nothing."""

    def __init__(self, **_: Any) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"search_mode": "lexical"}

    def ingest(self, history_id: str, records: list[Record]) -> None:
        pass

    def search(self, query: str, k: int) -> list[Hit]:
        return []

    def close(self) -> None:
        pass


def _run(out: Path, *overrides: str) -> tuple[dict[str, Any], str]:
    console = Console(file=io.StringIO(), width=200)
    summary = execute(compose_run(list(overrides)), out, console)
    return summary, console.file.getvalue()  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def locomo_runs(tmp_path_factory, data_dir) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("locomo")
    bm25 = _run(root / "bm25", "benchmark=locomo", "arm=bm25")
    empty = _run(root / "empty", "benchmark=locomo", "arm._target_=test_conventions.EmptyArm", "arm.name=empty")
    return {"root": root, "bm25": bm25, "empty": empty}


@pytest.mark.realdata
def test_an_arm_that_finds_nothing_is_counted_as_credited_on_evidence_share(locomo_runs) -> None:
    summary, out = locomo_runs["empty"]
    assert summary["overall_all"]["evidence_share@5"] == 1.0  # the official value is kept
    caveats = summary["caveats"]
    assert caveats["credited"]["evidence_share@K"] == {"no_evidence": 4, "empty_context": 1982}
    assert caveats["credited"]["session_evidence_share@K"] == {"no_evidence": 4, "empty_context": 1982}
    assert caveats["empty_searches"] == caveats["n_searches"] == 1986
    assert "evidence_share, overall_all: @1 100.0" in out and "1982 credited: nothing retrieved" in out
    assert "empty searches 1986 of 1986 (100.0%)" in out
    assert "credited by convention: evidence_share@K 4 (no evidence), 1982 (nothing retrieved)" in out
    assert any(w.startswith("evidence_share@K, session_evidence_share@K: 1982 items credited by a convention (nothing")
               for w in summary["warnings"])
    bm25, out = locomo_runs["bm25"]
    assert bm25["caveats"]["credited"]["evidence_share@K"] == {"no_evidence": 4}  # the dataset's, every arm's
    assert "empty searches 0 of 1986 (0.0%)" in out
    assert not any("credited by a convention" in w for w in bm25["warnings"])  # the dataset's own: shown, not warned


@pytest.mark.realdata
def test_compare_never_passes_on_items_credited_for_retrieving_nothing(locomo_runs, capsys) -> None:
    a, b = str(locomo_runs["root"] / "bm25"), str(locomo_runs["root"] / "empty")
    arms = ["--treatment", "lexical_scoring,ties"]  # bm25 reports its scoring and tie rule; the empty arm none
    code = compare_main([a, b, *arms, "--metric", "evidence_share@5", "--format", "json"])
    d = json.loads(capsys.readouterr().out)
    assert d["overall"]["delta"] > 0.5  # +56.5 pp for the empty server, as the issue found
    assert code != ExitCode.PASS and d["verdict"]["outcome"] == "unresolved"
    # compare reads LoCoMo's headline subset (categories 1-4, 1,536 items) by default
    assert d["verdict"]["reason"] == "credited_for_absence" and "1536 of B's paired items" in d["verdict"]["detail"]
    assert "scores an empty context 0 (recall@K, gold_share@K)" in d["verdict"]["detail"]
    assert d["data"]["credited"]["b"]["empty_context"] == 1536 and "empty_context" not in d["data"]["credited"]["a"]
    compare_main([a, b, *arms, "--metric", "evidence_share@5"])
    text = capsys.readouterr().out
    assert "PASS" not in text and "credited for absence" in text and "no pass: 1536 of B's paired items" in text
    # a metric without the convention reads the empty server as it is: far worse
    assert compare_main([a, b, *arms, "--metric", "recall@5"]) == ExitCode.FAIL


def _jsonl(path: Path) -> Path:
    lines = [
        {"conversation_id": "c1", "history": [{"role": "user", "content": "Our invoices go out on the 3rd."},
                                              {"role": "user", "content": "Staging is pg-stage-2."}],
         "questions": [{"question": "When do invoices go out?", "gold_keys": ["the 3rd"]},
                       {"question": "What is prod called?", "gold_keys": ["pg-prod-9"]},  # in no turn
                       {"question": "請求書はいつ送られますか", "gold_keys": ["invoices"]}]},
    ]
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n")
    return path


def test_unreachable_gold_and_empty_searches_are_counted_and_warned(tmp_path) -> None:
    bench = _jsonl(tmp_path / "b.jsonl")
    summary, out = _run(tmp_path / "run", "benchmark=jsonl", f"benchmark.path={bench}",
                        "benchmark.gold_match=substring", "arm=bm25")
    rows = {r["question"]: r for r in read_run(tmp_path / "run").table.to_pylist()}
    assert rows["What is prod called?"]["gold_unreachable"] == 1
    assert rows["When do invoices go out?"]["gold_unreachable"] == 0
    assert summary["caveats"]["unreachable"] == 1
    assert rows["請求書はいつ送られますか"]["retrieved_keys"] == []  # no token bm25 knows
    assert summary["caveats"]["empty_searches"] >= 1
    assert "unreachable gold 1" in out and "empty searches" in out
    assert any("1 items have gold that no record of their history can match" in w for w in summary["warnings"])
    assert any("returned no hit" in w for w in summary["warnings"])  # 1 of 3: above the low threshold
    assert any(w.startswith("arm=bm25: 0 queries tokenize to nothing") and "2 have no token any ingested record holds"
               in w for w in summary["warnings"])


def test_validate_finds_unreachable_gold_by_default(tmp_path, capsys) -> None:
    from memrun.commands.validate import main as validate_main

    bench = _jsonl(tmp_path / "b.jsonl")
    assert validate_main([str(bench)]) == 0  # no flag: gold that names no turn is read as phrases
    out = capsys.readouterr().out
    assert "read as phrases (gold_match=substring)" in out
    assert "item c1:1: 1 of 1 gold_keys appear in no turn of its history (unreachable" in out
    assert "gold_unreachable 1" in out and "c1:0" not in out


@pytest.mark.realdata
def test_report_and_view_show_the_counts(locomo_runs) -> None:
    from memrun.report.html.run_page import render_run, run_context

    page = render_run(locomo_runs["root"] / "empty")
    assert "evidence_share@K 4 (no evidence), 1982 (nothing retrieved)" in page
    assert "empty searches 1986 of 1986 (100.0%)" in page
    context = run_context(locomo_runs["root"] / "bm25", item_link="/item/x?id=")  # memrun view's run page
    assert context["caveats"] == ["empty searches 0 of 1986 (0.0%)",
                                  "credited by convention: evidence_share@K 4 (no evidence); "
                                  "session_evidence_share@K 4 (no evidence)"]


@pytest.mark.realdata
def test_session_cut_sessions_says_which_k_it_could_not_measure(tmp_path, data_dir) -> None:
    """Issue 31, point 4: with K counting distinct sessions, 10 turns reach fewer than 10
    sessions on most LoCoMo items; those Ks are null and the run says so, per K."""
    summary, _ = _run(tmp_path / "run", "benchmark=locomo", "arm=bm25", "benchmark.session_cut=sessions")
    rows = read_run(tmp_path / "run").table.to_pylist()
    scored = [r for r in rows if r["session_rr"] is not None]
    short = [r for r in scored if len({key.split(":")[0] for key in r["retrieved_keys"]}) < 10]
    assert len(short) == 1903  # + the 4 items without gold: the 1,907
    assert all(r["session_hit_at_10"] is None and r["session_evidence_share_at_10"] is None for r in short)
    assert all(r["session_hit_at_10"] is not None for r in scored if r not in short)
    (line,) = [w for w in summary["warnings"] if w.startswith("session metrics not measured at")]
    assert "@10 (1903 items)" in line and "arm.top_k=10" in line
    assert summary["session"]["overall_all"]["recall@10"] is None  # not a mean over fewer sessions
    assert summary["session"]["overall_all"]["recall@1"] is not None


def test_an_abstention_judged_right_on_nothing_retrieved_is_credited_for_absence() -> None:
    """LoCoMo's adversarial items are abstention items by their judge prompt, not by a flag."""
    from memrun.metrics.conventions import run_counts

    base = {"repeat": 0, "error": None, "gold_keys_raw": [], "extra": None}
    rows = [
        {**base, "retrieved_keys": [], "abstention": False, "judge_prompt": "abstention", "label": "correct"},
        {**base, "retrieved_keys": [], "abstention": True, "judge_prompt": "default", "label": "correct"},
        {**base, "retrieved_keys": ["D1:1"], "abstention": False, "judge_prompt": "abstention", "label": "correct"},
        {**base, "retrieved_keys": [], "abstention": False, "judge_prompt": "default", "label": "correct"},
        {**base, "retrieved_keys": [], "abstention": False, "judge_prompt": "abstention", "label": "wrong"},
        {**base, "retrieved_keys": [], "abstention": True, "judge_prompt": "abstention", "label": "correct",
         "error": "judge: boom"},
    ]
    counts = run_counts(rows)
    assert counts["credited"] == {"accuracy": {"abstained_on_empty_context": 2}}
    # the judge's error came after a search that returned (empty): it is a search, as the run's
    # arm checks count it (the footer said "2 of 22" beside the warning's "2 of 30")
    assert counts["empty_searches"] == 5 and counts["n_searches"] == 6


def test_a_runs_rows_and_their_table_credit_the_same_rows() -> None:
    """A run counts its conventions over its row dicts, compare over the table: every
    convention, with nulls, missing columns and errors, masks the same rows both ways."""
    import random

    import pyarrow as pa

    from memrun.metrics.conventions import CONVENTIONS, _credited, _RowColumns, credited_mask

    rng = random.Random(4)
    pick = rng.choice
    rows = [{"item_id": f"q{rng.randrange(120)}", "repeat": 0, "error": pick([None, None, "search: boom"]),
             "retrieved_keys": pick([None, [], ["D1:1"]]),
             "gold_keys_raw": pick([None, [], ["D1:2"]]), "abstention": pick([None, True, False]),
             "judge_prompt": pick([None, "abstention", "default"]), "label": pick([None, "correct", "wrong"]),
             "extra": pick([None, "{}", '{"official_no_gold": true}']),
             "evidence_share_at_5": pick([None, 0.0, 1.0]), "session_evidence_share_at_5": pick([None, 0.5])}
            for _ in range(400)]
    rows[0]["abstention"] = True  # column types are read off the first row
    table = pa.Table.from_pylist(rows)
    for family in CONVENTIONS:
        by_rows, by_table = _credited(_RowColumns(rows), family), credited_mask(table, family)
        assert by_rows.keys() == by_table.keys()
        for name in by_rows:
            assert by_rows[name].tolist() == by_table[name].tolist(), (family, name)
            assert 0 < by_rows[name].sum() < len(rows), (family, name)  # the case occurs, and not everywhere
    bare = [{"repeat": 0, "retrieved_keys": []}]  # columns missing: read as null in both forms
    for family in CONVENTIONS:
        assert {k: v.tolist() for k, v in _credited(_RowColumns(bare), family).items()} == \
            {k: v.tolist() for k, v in credited_mask(pa.Table.from_pylist(bare), family).items()}


def _abstention_runs(tmp_path: Path) -> tuple[str, str]:
    """40 abstention items in 8 clusters, 3 repeats. A retrieved something and is wrong on
    every repeat. On 28 items (2 to 5 a cluster) B retrieved nothing and abstained, judged
    wrong on repeat 0 and right on repeats 1 and 2: right by the majority label, which is
    what B's accuracy counts; on the others B retrieved something and is wrong."""
    from tests.run_tables import accuracy_run

    items = [f"c{g}-{i}" for g in range(8) for i in range(5)]
    credited = {f"c{g}-{i}" for g in range(8) for i in range(2 + g % 4)}
    common = {"abstention": (pa.bool_(), lambda item, r: True), "judge_prompt": (pa.string(), lambda item, r: "abstention")}
    a = accuracy_run(tmp_path / "a", {it: ["wrong"] * 3 for it in items}, repeats=3,
                     columns={**common, "retrieved_keys": (pa.list_(pa.string()), lambda item, r: ["D1:1"])})
    b = accuracy_run(tmp_path / "b", {it: ["wrong", "correct", "correct"] if it in credited else ["wrong"] * 3
                                      for it in items}, repeats=3,
                     columns={**common, "retrieved_keys": (pa.list_(pa.string()),
                                                           lambda item, r: [] if item in credited else ["D1:1"])})
    return str(a), str(b)


def test_compare_reads_the_credited_items_by_their_majority_label(tmp_path, capsys) -> None:
    """The guard read repeat 0 (wrong), so B's 28 items right by the majority label with
    nothing retrieved were not credited and B PASSed by +70 pp on them."""
    from tests.run_tables import compare_json

    a, b = _abstention_runs(tmp_path)
    code, d = compare_json(capsys, a, b)
    assert d["overall"]["delta"] == pytest.approx(0.7)
    assert d["data"]["credited"]["b"] == {"abstained_on_empty_context": 28}
    assert code != ExitCode.PASS and d["verdict"]["reason"] == "credited_for_absence"
    # on the accuracy axis the hint names what the abstentions rest on, not a retrieval metric in their place
    assert "retrieved nothing" in d["verdict"]["detail"] and "gold_share@K" not in d["verdict"]["detail"]


def test_a_runs_count_reads_the_majority_label_too() -> None:
    """One item, three repeats with nothing retrieved: credited when its majority label is
    right, whatever repeat 0's label; not credited when the majority is wrong."""
    from memrun.metrics.conventions import run_counts

    def rows(labels: list[str]) -> list[dict[str, Any]]:
        return [{"item_id": "q1", "repeat": r, "error": None, "retrieved_keys": [], "abstention": True,
                 "judge_prompt": "abstention", "label": label} for r, label in enumerate(labels)]

    assert run_counts(rows(["wrong", "correct", "correct"]))["credited"] == {"accuracy": {"abstained_on_empty_context": 1}}
    assert run_counts(rows(["correct", "wrong", "wrong"]))["credited"] == {}
    assert run_counts(rows(["correct", "wrong", "abstain"]))["credited"] == {}  # a tie is wrong


def test_the_footer_and_the_arm_checks_count_the_same_searches(tmp_path) -> None:
    """A run whose judge failed on some items said "2 of 30 searches returned no hit" in its
    warning and "empty searches 2 of 22" under its table: the footer left out the items whose
    search returned but whose judge failed."""
    from memrun.metrics.conventions import run_counts

    rows = [{"repeat": 0, "error": "judge: boom" if i % 4 == 0 else None, "retrieved_keys": [] if i < 2 else ["k"],
             "gold_keys_raw": [], "extra": None, "label": "correct"} for i in range(30)]
    rows.append({"repeat": 0, "error": "search: timeout", "retrieved_keys": None, "gold_keys_raw": [], "extra": None,
                 "label": "error"})  # a search that failed is no search
    counts = run_counts(rows)
    assert (counts["empty_searches"], counts["n_searches"]) == (2, 30)
