"""Benchmark classes whose load() returns data of the wrong shape, one way each (tests only),
named by ``benchmark._target_=benchmarks.bad_benchmarks.<Class>``."""

from __future__ import annotations

from typing import Any

from memrun.records import Dataset, Group, Item, Record

REC = [Record("h0:0", "the answer is a"), Record("h0:1", "noise")]


def item(i: int, h: str = "h0", **fields: Any) -> Item:
    base: dict[str, Any] = dict(item_id=f"q{i}", history_id=h, cluster=h, category="c", question="what is it?",
                                answer="a", answer_raw='"a"', gold_keys=("h0:0",))
    return Item(**{**base, **fields})


def dataset(groups: Any, gold_match: str = "key") -> Dataset:
    return Dataset("s", None, groups, {}, None, gold_match)  # type: ignore[arg-type]


class Base:
    groups: Any = None
    gold_match = "key"

    def __init__(self, **params: Any) -> None:
        pass

    def load(self, data_dir: Any) -> Any:
        return dataset(self.groups(), self.gold_match)


class Good(Base):
    def groups(self):
        return [Group("h0", REC, [item(0), item(1, gold_keys=("h0:1",))])]


class ReturnsDict(Base):
    def load(self, data_dir):
        return {"groups": []}


class Raises(Base):
    def load(self, data_dir):
        raise RuntimeError("cannot load")


class NoItems(Base):
    def groups(self):
        return [Group("h0", REC, [])]


class NoItemsLazily(Base):
    """A generator of groups holding no item: no count before the run sees that."""

    def groups(self):
        return (g for g in [Group("h0", REC, [])])


class BadGoldMatch(Good):
    gold_match = "fuzzy"


class GroupsNotGroups(Base):
    def groups(self):
        return [("h0", REC, [item(0)])]


class DupHistories(Base):
    def groups(self):
        return [Group("h0", REC, [item(0)]), Group("h0", REC, [item(1)])]


class DupRecords(Base):
    def groups(self):
        return [Group("h0", [*REC, Record("h0:0", "again")], [item(0)])]


class DupItems(Base):
    def groups(self):
        return [Group("h0", REC, [item(0), item(0)])]


class WrongHistoryId(Base):
    def groups(self):
        return [Group("h0", REC, [item(0, h="other")])]


class IntCategory(Base):
    def groups(self):
        return [Group("h0", REC, [item(0, category=3)])]


class NoneQuestion(Base):
    def groups(self):
        return [Group("h0", REC, [item(0, question=None)])]


class GoldStr(Base):
    def groups(self):
        return [Group("h0", REC, [item(0, gold_keys="h0:0")])]


class Lazy(Base):
    """Lazy groups (a fresh generator on each iter()), the second one broken."""

    def groups(self):
        class Groups:
            def __iter__(self):
                yield Group("h0", REC, [item(0)])
                yield Group("h1", REC, [item(0, h="h1")])

        return Groups()
