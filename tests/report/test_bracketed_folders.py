"""Folder names are printed as written: rich read '[v2]' in 'runs[v2]' as a style tag and
dropped it, so a run's last line said it wrote a folder that does not exist."""

from __future__ import annotations

import pytest

from memrun import cli


@pytest.mark.parametrize("axis", ["retrieval", "accuracy"])
def test_a_run_names_its_bracketed_folder(monkeypatch, tmp_path, capsys, axis, request):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMRUN_DATA_DIR", str(tmp_path / "empty"))
    folder = tmp_path / "runs[v2]" / "bm25"
    extra = []
    if axis == "accuracy":  # the reader asks the loopback OpenAI server; exact match needs no judge call
        request.getfixturevalue("llm_env")
        extra = ["axis=accuracy", "judge=exact", f"cache_dir={tmp_path / 'cache'}"]
    assert cli.main(["benchmark=synthetic", "arm=bm25", "progress=false", *extra, f"hydra.run.dir='{folder}'"]) == 0
    out = capsys.readouterr().out
    assert f"wrote {folder}" in out
    assert cli.main(["failures", str(folder)]) == 0
    assert f"{folder}/items.parquet" in capsys.readouterr().out.replace("\n", "")  # the line may wrap
