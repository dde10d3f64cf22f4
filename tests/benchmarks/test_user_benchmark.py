"""A benchmark class of the user's own is held to what load() must return
(memrun.benchmarks.checked): one line naming the class, the group or item and the field,
never a traceback at the end of the run, nor numbers over duplicated or misfiled items."""

from __future__ import annotations

import pytest

from memrun.benchmarks.checked import checked_load
from memrun.errors import DataError

from . import bad_benchmarks as bad

NAME = "benchmarks.bad_benchmarks"


@pytest.mark.parametrize("cls, needle", [
    (bad.ReturnsDict, "ReturnsDict.load() returned dict; it must return a memrun.records.Dataset"),  # 'item_index'
    (bad.Raises, "Raises.load() raised RuntimeError: cannot load"),  # a traceback
    (bad.BadGoldMatch, "gold_match='fuzzy'; use 'key' or 'substring'"),  # a ValueError traceback
    (bad.GroupsNotGroups, "groups[0]: is tuple; each group must be a memrun.records.Group"),
    (bad.DupHistories, "group 'h0': its history_id is another group's too"),  # silently ran
    (bad.DupRecords, "group 'h0', records[2].key: 'h0:0' repeats an earlier record's key"),  # silently ran
    (bad.DupItems, "item 'q0': its item_id is another item's too"),  # silently ran: compare pairs by id
    (bad.WrongHistoryId, "item 'q0'.history_id: is 'other', but the item is in group 'h0'"),  # silently ran
    (bad.IntCategory, "item 'q0'.category: must be non-empty text, got 3"),  # ArrowTypeError at the end
    (bad.NoneQuestion, "item 'q0'.question: must be non-empty text, got None"),  # every search failed
    (bad.GoldStr, "item 'q0'.gold_keys: must be a tuple of str, got 'h0:0' (one str is read letter by letter"),
])
def test_data_of_the_wrong_shape_is_one_line(tmp_path, cls, needle):
    with pytest.raises(DataError) as err:
        dataset = checked_load(cls(), tmp_path)
        list(dataset.groups)
    assert str(err.value).startswith(f"benchmark: {NAME}.{cls.__name__}.load()") and needle in str(err.value)
    assert "\n" not in str(err.value)


def test_lazy_groups_are_checked_as_produced_and_start_over(tmp_path):
    dataset = checked_load(bad.Lazy(), tmp_path)
    for _ in range(2):  # each pass starts over: ids seen in the last pass are not "repeated"
        groups = iter(dataset.groups)
        assert next(groups).history_id == "h0"
        with pytest.raises(DataError, match="item 'q0': its item_id is another item's too"):
            next(groups)


def test_a_good_benchmark_loads_as_it_is(tmp_path):
    dataset = checked_load(bad.Good(), tmp_path)
    assert isinstance(dataset.groups, list) and [i.item_id for i in dataset.items()] == ["q0", "q1"]


@pytest.mark.parametrize("cls, needle", [
    ("IntCategory", "item 'q0'.category: must be non-empty text, got 3"),
    ("NoItems", "benchmark=synthetic: s holds no item, so a run of it measures nothing"),  # a run exiting 0
    # lazily: 'items 0', a table of dashes, exit 0; then a second wording of the same condition
    ("NoItemsLazily", "benchmark=synthetic: s holds no item, so a run of it measures nothing"),
])
def test_a_run_of_a_user_benchmark_stops_in_one_line(tmp_path, monkeypatch, capsys, cls, needle):
    from memrun.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["benchmark=synthetic", f"benchmark._target_={NAME}.{cls}", "progress=false"]) == 2
    assert needle in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (tmp_path / "outputs").exists()  # no item done: no folder left


def test_an_empty_longmemeval_file_is_refused_not_a_complete_run_of_nothing(tmp_path, monkeypatch, capsys):
    from memrun.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "lme.json").write_text("[]")
    assert main(["benchmark=longmemeval", f"benchmark.path={tmp_path / 'lme.json'}", "progress=false"]) == 2
    assert "holds no item, so a run of it measures nothing" in capsys.readouterr().err
