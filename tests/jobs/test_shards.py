"""One run split into shards and merged back: the merged run equals the unsharded one."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from memrun.cli import main
from memrun.commands.compare import main as compare_main
from memrun.io.reader import read_run
from memrun.jobs.merge import MergeError, merge
from memrun.jobs.shards import balanced, shard_of, take_shard
from memrun.records import Group, Item

SHARDS = 4


def _group(gid: str, n: int) -> Group:
    items = [Item(item_id=f"{gid}:{i}", history_id=gid, cluster=gid, category="1", question="q?",
                  answer=None, answer_raw=None, gold_keys=()) for i in range(n)]
    return Group(history_id=gid, records=[], items=items)


def test_every_group_lands_in_exactly_one_shard_whatever_the_order():
    rng = random.Random(0)
    groups = [_group(f"conv-{i}", rng.randint(100, 260)) for i in range(10)]
    owner = balanced(groups, SHARDS)
    shuffled = groups[:]
    rng.shuffle(shuffled)
    assert balanced(shuffled, SHARDS) == owner  # the split depends on the ids and sizes only
    loads = [sum(len(g.items) for g in groups if owner[g.history_id] == s) for s in range(SHARDS)]
    # longest-processing-time rule: the largest shard is within 4/3 of the ideal lower bound
    bound = max(sum(loads) / SHARDS, max(len(g.items) for g in groups))
    assert max(loads) <= 4 / 3 * bound
    assert all(0 <= shard_of(g.history_id, SHARDS) < SHARDS for g in groups)
    assert shard_of("conv-1", SHARDS) == shard_of("conv-1", SHARDS)


def test_lazy_groups_are_split_by_hash(tmp_path):
    from memrun.records import Dataset

    groups = [_group(f"q{i}", 1) for i in range(200)]
    dataset = Dataset(split="x", sha256=None, groups=iter(groups), categories={}, comparable_categories=None,
                      gold_match="key")
    dataset.groups = type("Lazy", (), {"__iter__": lambda self: iter(groups)})()
    parts = [list(take_shard(dataset, SHARDS, i).groups) for i in range(SHARDS)]
    ids = [g.history_id for part in parts for g in part]
    assert sorted(ids) == sorted(g.history_id for g in groups)  # each exactly once
    assert all(shard_of(g.history_id, SHARDS) == i for i, part in enumerate(parts) for g in part)
    assert min(len(p) for p in parts) > 30  # near even with many groups


def _table(folder: Path):
    table = pq.read_table(folder / "items.parquet").drop_columns(["run_id", "search_latency_ms"])
    return table.replace_schema_metadata(None).sort_by([("item_id", "ascending"), ("repeat", "ascending")])


@pytest.fixture(scope="module")
def locomo_runs(tmp_path_factory, data_dir):
    tmp = tmp_path_factory.mktemp("shards")
    common = ["benchmark=locomo", "progress=false", f"data_dir={data_dir}"]
    assert main([*common, f"hydra.run.dir={tmp / 'whole'}"]) == 0
    assert main(["-m", *common, f"shard.count={SHARDS}", f"shard.index=range(0,{SHARDS})",
                 f"hydra.sweep.dir={tmp / 'sharded'}"]) == 0
    return tmp, common


@pytest.mark.realdata
def test_a_merged_4_shard_locomo_run_equals_the_unsharded_run(locomo_runs, capsys):
    tmp, _ = locomo_runs
    sharded = tmp / "sharded"
    assert sorted(p.name for p in sharded.glob("shard-*")) == [f"shard-{i}-of-4" for i in range(SHARDS)]
    result = merge(sharded)
    assert result.status == "complete" and result.missing == [] and sum(result.items.values()) == 1986
    assert _table(sharded).equals(_table(tmp / "whole"))
    merged = json.loads((sharded / "summary.json").read_text())
    whole = json.loads((tmp / "whole" / "summary.json").read_text())
    for key in ("overall_all", "overall_comparable", "per_category", "n_items", "n_errors", "n_unscored",
                "intervals"):
        assert merged[key] == whole[key], key
    assert merged["arm_checks"] == whole["arm_checks"]
    instrument = read_run(sharded).instrument
    assert instrument.status == "complete" and instrument.shard["merged"] == [0, 1, 2, 3]
    assert instrument.n_items == 1986 and not instrument.diff(read_run(tmp / "whole").instrument)
    capsys.readouterr()
    # merged and unsharded compare as the same configuration: a null band of exactly 0
    assert compare_main([str(tmp / "whole"), str(sharded), "--format", "json"]) == 2
    assert json.loads(capsys.readouterr().out)["overall"]["wins"] == 0


@pytest.mark.realdata
def test_a_missing_shard_is_partial_until_it_is_rerun(locomo_runs, capsys, tmp_path):
    tmp, common = locomo_runs
    run = tmp_path / "run"
    shutil.copytree(tmp / "sharded", run, ignore=shutil.ignore_patterns("items.parquet", "summary.json"))
    for name in ("items.parquet", "summary.json"):
        for shard in run.glob("shard-*"):
            shutil.copy(tmp / "sharded" / shard.name / name, shard / name)
    shutil.rmtree(run / "shard-2-of-4")
    assert main(["merge", str(run)]) == 2
    err = capsys.readouterr().err
    assert "partial: shard(s) 2 of 4 are missing" in err
    instrument = read_run(run).instrument
    assert instrument.status == "partial" and instrument.shard["missing"] == [2]
    assert compare_main([str(tmp / "whole"), str(run)]) in (0, 1, 2)
    assert "ended partial (shards 2 missing)" in capsys.readouterr().err
    # re-run only the missing shard, into a folder of its own under the run, and merge again
    assert main([*common, "shard.count=4", "shard.index=2", f"hydra.run.dir={run / 'shard-2-of-4.rerun'}"]) == 0
    assert main(["merge", str(run)]) == 0
    assert _table(run).equals(_table(tmp / "whole"))


@pytest.mark.realdata
def test_shards_of_another_configuration_are_refused(locomo_runs, tmp_path, data_dir):
    tmp, common = locomo_runs
    run = tmp_path / "mixed"
    run.mkdir()
    shutil.copytree(tmp / "sharded" / "shard-0-of-4", run / "a")
    assert main([*common, "arm=bm25_nostop", "shard.count=4", "shard.index=1", f"hydra.run.dir={run / 'b'}"]) == 0
    with pytest.raises(MergeError, match="is not a shard of the same run"):
        merge(run)


@pytest.mark.parametrize("overrides, message", [
    (["shard.count=4", "shard.index=4"], "shard.index=4: must lie in [0, 4)"),
    (["shard.count=0"], "shard.count=0: must be at least 1"),
])
def test_a_bad_shard_layout_is_one_line(tmp_path, capsys, overrides, message, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["progress=false", *overrides]) == 2
    assert message in capsys.readouterr().err
    assert main(["merge", str(tmp_path)]) == 2
    assert "no shard here" in capsys.readouterr().err


def test_a_shard_that_owns_no_history_says_so_and_the_sweep_still_merges(tmp_path, capsys):
    """The synthetic benchmark's 5 histories over 8 shards: 3 own none. Each completes with 0
    items, exit 0 (legitimate in a sweep), with one warning line naming it, in its summary
    and instrument too; the merge is whole, so it leaves those lines out."""
    assert main(["-m", "benchmark=synthetic", "progress=false", "shard.count=8", "shard.index=range(0,8)",
                 f"hydra.sweep.dir={tmp_path}"]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "owns no history" in line]
    empty = [i for i in range(8) if read_run(tmp_path / f"shard-{i}-of-8").table.num_rows == 0]
    assert len(empty) == 3 and len(said) == 3
    for i in empty:
        line = f"shard.index={i} of shard.count=8 owns no history of benchmark=synthetic"
        assert sum(line in s for s in said) == 1
        folder = tmp_path / f"shard-{i}-of-8"
        assert [w for w in read_run(folder).instrument.warnings if "owns no history" in w] == [
            w for w in json.loads((folder / "summary.json").read_text())["warnings"] if "owns no history" in w]
        assert any(line in w for w in read_run(folder).instrument.warnings)
    result = merge(tmp_path)
    assert result.status == "complete" and sum(result.items.values()) == 30 and all(result.items[i] == 0 for i in empty)
    assert not [w for w in read_run(tmp_path).instrument.warnings if "owns no history" in w]
