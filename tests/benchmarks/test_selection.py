"""Slices, samples, limits and gold corrections, applied once between load and run."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from memrun.benchmarks.corrections import load_corrections
from memrun.benchmarks.locomo import LoCoMo
from memrun.benchmarks.selection import Selection, apply_selection, select, selection_from_config
from memrun.benchmarks.synthetic import Synthetic
from memrun.errors import ConfigError
from memrun.records import Dataset, Group, Item, Record


def _item(i: int, category: str) -> Item:
    return Item(item_id=f"i{i}", history_id=f"h{i}", cluster="c", category=category, question="q?",
                answer="a", answer_raw='"a"', gold_keys=(f"h{i}:0",))


class CountingGroups:
    """Lazy groups that count how many groups were produced."""

    def __init__(self, n: int) -> None:
        self.n, self.produced = n, 0

    def __iter__(self) -> Iterator[Group]:
        for i in range(self.n):
            self.produced += 1
            yield Group(f"h{i}", [Record(f"h{i}:0", "text")], [_item(i, "even" if i % 2 == 0 else "odd")])


def _lazy(n: int, indexed: bool = True) -> tuple[Dataset, CountingGroups]:
    groups = CountingGroups(n)
    index = [(f"i{i}", "even" if i % 2 == 0 else "odd") for i in range(n)] if indexed else None
    return Dataset("t", None, groups, {}, None, "key", index=index), groups


def _ids(dataset: Dataset) -> list[str]:
    return [item.item_id for item in dataset.items()]


def test_category_and_ids_slices() -> None:
    dataset, _ = _lazy(10)
    assert _ids(select(dataset, Selection(categories=frozenset({"odd"})))) == ["i1", "i3", "i5", "i7", "i9"]
    picked = select(dataset, Selection(categories=frozenset({"odd"}), ids=frozenset({"i3", "i4", "i5"})))
    assert _ids(picked) == ["i3", "i5"] and picked.n_items == 2


def test_unknown_slice_ids_and_categories_are_config_errors() -> None:
    dataset, _ = _lazy(4)
    with pytest.raises(ConfigError, match=r"benchmark.slice.ids: nope not in t"):
        select(dataset, Selection(ids=frozenset({"i1", "nope"})))
    with pytest.raises(ConfigError, match=r"benchmark.slice.category: odds not in t; categories: even, odd"):
        select(dataset, Selection(categories=frozenset({"odds"})))


def test_a_selection_that_keeps_no_item_is_a_config_error(tmp_path: Path) -> None:
    """Each part names items that exist, together they keep none: the run would measure
    nothing and end 'complete' with 0 items (a new user's ids file of comments only)."""
    dataset, _ = _lazy(10)
    with pytest.raises(ConfigError, match=r"keeps none of t's 10 items \(category=odd;ids=i2,i4\)"):
        select(dataset, Selection(categories=frozenset({"odd"}), ids=frozenset({"i2", "i4"})))
    comments = tmp_path / "ids.txt"
    comments.write_text("# nothing yet\n\n")
    with pytest.raises(ConfigError, match=r"ids_file=.*ids.txt: lists no id"):
        selection_from_config(OmegaConf.create({"slice": {"ids_file": str(comments)}}))


def test_limit_stops_reading_lazy_groups() -> None:
    dataset, groups = _lazy(100)
    picked = select(dataset, Selection(limit=3, categories=frozenset({"odd"})))
    assert _ids(picked) == ["i1", "i3", "i5"]
    assert groups.produced == 6  # stopped after the third kept item, not at 100


def test_a_limit_that_keeps_every_item_is_dropped_with_a_warning() -> None:
    dataset, _ = _lazy(10)
    picked, applied = apply_selection(dataset, Selection(categories=frozenset({"odd"}), limit=5))
    assert _ids(picked) == ["i1", "i3", "i5", "i7", "i9"]  # five odd items: the limit keeps them all
    assert applied == Selection(categories=frozenset({"odd"})) and applied.describe() == "category=odd"
    assert picked.warnings == ["benchmark.limit=5 keeps all 5 items left after slicing and sampling: it is no slice, "
                               "so the run's slice does not name it"]
    dataset, _ = _lazy(10)
    picked, applied = apply_selection(dataset, Selection(categories=frozenset({"odd"}), limit=4))
    assert applied.describe() == "category=odd;limit=4" and picked.n_items == 4 and picked.warnings == []
    dataset, _ = _lazy(10)
    picked, applied = apply_selection(dataset, Selection(limit=100000))
    assert applied.describe() is None and applied.empty and picked.n_items == 10


def test_sample_is_seeded_and_independent_of_file_order() -> None:
    dataset, _ = _lazy(50)
    a = _ids(select(dataset, Selection(sample=10, sample_seed=1)))
    assert len(a) == 10 and a == sorted(a, key=lambda i: int(i[1:]))  # file order kept
    assert _ids(select(dataset, Selection(sample=10, sample_seed=1))) == a
    assert _ids(select(dataset, Selection(sample=10, sample_seed=2))) != a
    reordered = Dataset("t", None, list(reversed(list(CountingGroups(50)))), {}, None, "key")
    assert sorted(_ids(select(reordered, Selection(sample=10, sample_seed=1)))) == sorted(a)
    with pytest.raises(ConfigError, match=r"benchmark.sample.n=60 exceeds the 50 items"):
        select(dataset, Selection(sample=60))


def test_lazy_groups_without_index_are_listed_by_one_pass() -> None:
    dataset, groups = _lazy(6, indexed=False)
    assert dataset.n_items is None
    picked = select(dataset, Selection(sample=2, sample_seed=0))
    assert picked.n_items == 2 and len(_ids(picked)) == 2


def test_canonical_slice_string() -> None:
    a = Selection(categories=frozenset({"b", "a"}), ids=frozenset(f"x{i}" for i in range(5)), sample=3, limit=2)
    b = Selection(categories=frozenset({"a", "b"}), ids=frozenset(f"x{i}" for i in reversed(range(5))), sample=3, limit=2)
    digest = hashlib.sha256("\n".join(sorted(f"x{i}" for i in range(5))).encode()).hexdigest()[:12]
    assert a.describe() == b.describe() == f"category=a,b;ids=5:sha256:{digest};sample=3,seed=0;limit=2"
    assert Selection(ids=frozenset({"q2", "q1"})).describe() == "ids=q1,q2"
    assert Selection().describe() is None and Selection().empty


def test_selection_from_config(tmp_path: Path) -> None:
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("# chosen by hand\ni1\n\ni2\n")
    node = OmegaConf.create({"slice": {"question_type": ["odd"], "ids_file": str(ids_file)},
                             "sample": {"n": 1, "seed": 4}, "limit": None, "corrections": None})
    sel = selection_from_config(node)
    assert sel.categories == {"odd"} and sel.ids == {"i1", "i2"} and (sel.sample, sel.sample_seed) == (1, 4)
    with pytest.raises(ConfigError, match=r"benchmark.limit=0: must be a positive integer"):
        selection_from_config({"limit": 0})
    with pytest.raises(ConfigError, match=r"benchmark.slice.categry: unknown key"):
        selection_from_config({"slice": {"categry": ["x"]}})
    with pytest.raises(ConfigError, match=r"ids_file=.*nope.txt: cannot read it"):
        selection_from_config({"slice": {"ids_file": str(tmp_path / "nope.txt")}})


CORRECTIONS = """
# answers, gold and drops, each with a reason
i1: {answer: 42, reason: "the published answer counts one item twice"}
i2: {gold_keys: [h2:0, h2:1], gold_sessions: [s9], superseded_answer: old, reason: "evidence misses a turn"}
i3: {drop: true, reason: "ambiguous question"}
"i99": {drop: true, reason: "not in this split"}
"""


def test_corrections_replace_drop_and_count(tmp_path: Path) -> None:
    path = tmp_path / "fix.yaml"
    path.write_text(CORRECTIONS)
    corrections = load_corrections(path)
    assert corrections.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    dataset, _ = _lazy(5)
    picked = select(dataset, Selection(corrections=corrections))
    items = {item.item_id: item for item in picked.items()}
    assert sorted(items) == ["i0", "i1", "i2", "i4"]
    assert items["i1"].answer == "42" and items["i1"].answer_raw == "42"
    assert items["i1"].extra["answer_published"] == '"a"'
    assert items["i1"].extra["correction"] == "the published answer counts one item twice"
    assert items["i2"].gold_keys == ("h2:0", "h2:1") and items["i2"].gold_sessions == ("s9",)
    assert items["i2"].extra["superseded_answer"] == "old"
    assert items["i0"] == _item(0, "even")  # untouched
    assert dataset.counts == {"corrections_dropped": 1, "corrections_unmatched": 1, "corrections_applied": 2}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("i1: {anwser: x, reason: r}", r"item 'i1': unknown field 'anwser'; did you mean 'answer'\?"),
        ("i1: {answer: x}", r"item 'i1': 'reason' is missing"),
        ("i1: {drop: true, answer: x, reason: r}", r"'drop: true' with answer"),
        ("i1: {reason: r}", r"item 'i1': changes nothing"),
        ("5:30: {drop: true, reason: r}", r"item id 330 is not a string; quote it"),
        ("i1: [oops", r"not valid YAML/JSON at line 1"),
        ("- i1", r"expected a mapping from item id"),
        ("i1: {drop: true, reason: r}\ni1: {answer: x, reason: r}", r"at line 2 \(key 'i1' is given twice in one mapping"),
        ("i1: {answer: x, answer: y, reason: r}", r"at line 1 \(key 'answer' is given twice"),
    ],
)
def test_malformed_corrections_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "fix.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as err:
        load_corrections(path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


def test_an_item_given_twice_in_json_corrections_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "fix.json"
    path.write_text('{"i1": {"drop": true, "reason": "r"},\n "i1": {"answer": "x", "reason": "r"}}')
    with pytest.raises(ConfigError, match=r"fix.json: key 'i1' is given twice in one object"):
        load_corrections(path)


def test_synthetic_list_dataset_stays_a_list() -> None:
    dataset = Synthetic().load(Path("."))
    picked = select(dataset, Selection(categories=frozenset({"temporal"})))
    assert isinstance(picked.groups, list) and picked.n_items == sum(
        1 for item in dataset.items() if item.category == "temporal"
    )


@pytest.mark.realdata
def test_locomo_slice_to_published_column_and_limit(data_dir: Path) -> None:
    cfg = OmegaConf.load(Path(__file__).parent.parent.parent / "conf" / "benchmark" / "locomo.yaml")
    loader = LoCoMo(split=cfg.split, file=cfg.file, url=None, sha256=cfg.sha256, categories=dict(cfg.categories))
    dataset = loader.load(data_dir)
    head = select(dataset, Selection(categories=frozenset({"1", "2", "3", "4"})))
    assert head.n_items == 282 + 321 + 96 + 841  # the published per-category counts
    limited = select(dataset, Selection(categories=frozenset({"5"}), limit=7))
    assert [i.category for i in limited.items()] == ["5"] * 7


@pytest.mark.parametrize(
    "node,needle",
    [
        ({"slice": {"ids": []}}, "benchmark.slice.ids=[] selects nothing"),
        ({"slice": {"category": []}}, "benchmark.slice.category=[] selects nothing"),
        ({"slice": {"category": ["1"], "question_type": ["x"]}}, "category and question_type name the same column"),
    ],
)
def test_empty_or_doubled_slices_are_config_errors(node, needle) -> None:
    with pytest.raises(ConfigError, match=re.escape(needle)):
        selection_from_config(OmegaConf.create(node))


def test_validate_names_a_folder(tmp_path) -> None:
    from memrun.commands.validate import main

    with pytest.raises(ConfigError, match="is a folder; name the benchmark file"):
        main([str(tmp_path)])
