"""An item's drill-down in ``memrun view``: what the reader and the judges were sent and
what they replied, per repeat, from the call cache.

The cache stores replies under the sha256 of the request (:func:`memrun.llm.cache.call_key`),
not the prompts. So the view rebuilds each request exactly as the run built it, from
the run's config as its instrument recorded it (reader and judge models, prompts and
parameters, cache_dir), the benchmark's item and records (:class:`ItemGroups`: only the
groups up to the item's are read, the last few kept) and the row's retrieved hits and answers, and looks the request's key up under the endpoint the
instrument recorded (``llm_endpoints``). A prompt is shown only when its key is found, so
what the page shows is what was sent; otherwise the page says why it is not there (no
cache at the configured folder, the config or dataset could not be rebuilt, or no entry).
No key is read and no call is made.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrun.core.instrument import Instrument
from memrun.core.paths import configured_or_cache
from memrun.errors import MemrunError
from memrun.lazy import lazy
from memrun.llm.endpoint import Endpoint
from memrun.records import Hit, Item

if TYPE_CHECKING:
    from memrun import benchmarks as memrun_benchmarks
    from memrun import config as memrun_config
    from memrun import judges as memrun_judges
    from memrun.accuracy import setup as accuracy_setup
    from memrun.accuracy import stage as accuracy_stage
    from memrun.benchmarks import selection as benchmarks_selection
    from memrun.config import build_spec as config_spec
    from memrun.config import compose as config_compose
    from memrun.core import plugins as memrun_plugins
    from memrun.llm import cache as llm_cache
    from memrun.pipeline import outer_stages as memrun_stages
else:
    config_compose = lazy("memrun.config.compose")
    accuracy_setup = lazy("memrun.accuracy.setup")
    config_spec = lazy("memrun.config.build_spec")
    memrun_judges = lazy("memrun.judges")
    memrun_benchmarks = lazy("memrun.benchmarks")
    llm_cache = lazy("memrun.llm.cache")
    benchmarks_selection = lazy("memrun.benchmarks.selection")
    memrun_config = lazy("memrun.config")
    memrun_plugins = lazy("memrun.core.plugins")
    memrun_stages = lazy("memrun.pipeline.outer_stages")
    accuracy_stage = lazy("memrun.accuracy.stage")


KEPT_GROUPS = 4
"""Groups (histories) of a run's benchmark an item's drill-down keeps in memory."""


class ItemGroups:
    """A benchmark's items and records as a run selected them, read only as far as an item
    asked for: the groups are produced in file order up to the one holding the item (a
    lazy loader, BEAM or LongMemEval, parses no further), and the last :data:`KEPT_GROUPS`
    are kept, so stepping through a run's items (file order) reads each group once. An
    item in a group already passed starts the groups over (once per lookup)."""

    def __init__(self, groups: Iterable[Any], keep: int = KEPT_GROUPS) -> None:
        self._groups = groups
        self._keep = max(1, keep)
        self._iter: Iterator[Any] | None = None
        self._kept: OrderedDict[str, list[str]] = OrderedDict()  # history id -> its item ids
        self._items: dict[str, tuple[Any, dict[str, Any]]] = {}  # item id -> (item, records by key)
        self._passed: set[str] = set()  # item ids produced in this pass of the groups
        self._lock = threading.Lock()
        self.produced = 0
        """Groups produced so far (each parsed once per pass of a lazy loader)."""

    def find(self, item_id: str) -> tuple[Any, Mapping[str, Any]] | None:
        """(item, its group's records by key) of ``item_id``; None when the selection has no such item."""
        with self._lock:
            if item_id in self._items:
                return self._items[item_id]
            restarted = False
            if self._iter is None or item_id in self._passed:  # behind us: start over
                self._iter, self._passed, restarted = iter(self._groups), set(), True
            while True:
                group = next(self._iter, None)
                if group is None:
                    if restarted:
                        return None
                    self._iter, self._passed, restarted = iter(self._groups), set(), True
                    continue
                self.produced += 1
                self._passed.update(item.item_id for item in group.items)
                self._keep_group(group)
                if item_id in self._items:
                    return self._items[item_id]

    def _keep_group(self, group: Any) -> None:
        records = {r.key: r for r in group.records}
        self._kept.pop(group.history_id, None)
        self._kept[group.history_id] = [item.item_id for item in group.items]
        for item in group.items:
            self._items[item.item_id] = (item, records)
        while len(self._kept) > self._keep:
            for gone in self._kept.popitem(last=False)[1]:
                self._items.pop(gone, None)


class RunCalls:
    """A run's reader, judges, items, records and call cache, built once, for rebuilding
    its requests. ``problem`` says why prompts cannot be shown (None when they can)."""

    def __init__(self, folder: Path, instrument: Instrument) -> None:
        self.instrument = instrument
        self.problem: str | None = None
        self.reader: Any = None
        self.judges: dict[str, Any] = {}
        self.groups: ItemGroups | None = None
        self.cache: Any = None
        self.dataset_problem: str | None = None
        if instrument.axis != "accuracy":
            self.problem = "a retrieval run makes no LLM call"
            return
        try:
            self._build(folder)
        except (MemrunError, OSError, ValueError, KeyError, TypeError) as exc:
            self.problem = f"the run's requests cannot be rebuilt here ({' '.join(str(exc).split())})"

    def _build(self, folder: Path) -> None:
        if not self.instrument.config:
            raise MemrunError("the run's instrument holds no config")
        cfg = config_compose.from_container(self.instrument.config)
        urls = self.instrument.llm_endpoints or {}
        cache_dir = configured_or_cache(cfg.get("cache_dir"), "llm")
        if not (cache_dir / llm_cache.CACHE_FILE).is_file():
            raise MemrunError(f"no call cache at {cache_dir / llm_cache.CACHE_FILE} (the run's cache_dir)")
        self.cache = llm_cache.CallCache(cache_dir)
        if "reader" in urls:
            spec = config_spec.reader_spec(cfg.reader, str(cfg.benchmark.name))
            self.reader = accuracy_setup.build_reader(spec, None, endpoint=Endpoint(urls["reader"], "", fake=True))
        for role in ("judge", "judge2"):
            if role in urls and cfg.get(role) is not None and cfg[role].get("name") != "none":
                node = config_compose.from_container(cfg[role], base_url=urls[role], provider="fake")  # no key is read
                self.judges[role] = memrun_judges.build_judge(node, role, None)
        self._load_dataset(cfg)

    def _load_dataset(self, cfg: Any) -> None:
        """The benchmark as the run selected it (the records' dates are part of the reader's
        prompt), its groups read as items ask for them (:class:`ItemGroups`). On failure
        the row's own fields are used."""
        try:
            benchmark = memrun_benchmarks.check_benchmark(
                memrun_plugins.build(cfg.benchmark, memrun_config.BENCHMARK_RESERVED_KEYS, "benchmark"),
                str(cfg.benchmark.get("_target_")))
            selection = benchmarks_selection.selection_from_config(cfg.benchmark)
            dataset, _, _ = memrun_stages.load_dataset(benchmark, selection, cfg.data_dir)
            self.groups = ItemGroups(dataset.groups)
        except (MemrunError, OSError, ValueError) as exc:
            self.dataset_problem = f"the benchmark could not be loaded here ({' '.join(str(exc).split())})"

    def _item(self, row: Mapping[str, Any]) -> tuple[Any, Mapping[str, Any]]:
        """The row's item and its group's records; rebuilt from the row alone (no records)
        when the benchmark could not be loaded or does not hold the item."""
        found = None
        if self.groups is not None:
            try:
                found = self.groups.find(row["item_id"])
            except (MemrunError, OSError, ValueError) as exc:  # a lazy loader meets damage mid-file
                self.dataset_problem = f"the benchmark could not be read here ({' '.join(str(exc).split())})"
                self.groups = None
        if found is not None:
            return found
        return Item(item_id=row["item_id"], history_id=str(row.get("cluster") or ""), cluster=str(row.get("cluster") or ""),
                    category=str(row.get("category") or ""), question=row.get("question") or "",
                    answer=row.get("answer"), answer_raw=row.get("answer_raw") or "",
                    gold_keys=tuple(row.get("gold_keys") or ()), question_date=row.get("question_date"),
                    abstention=bool(row.get("abstention"))), {}

    def repeats(self, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Per row (one repeat): ``{"repeat", "reader", "judge", "judge2"}``, each call a dict
        ``{"prompt", "reply", "found", "why"}`` (prompt and reply None when not found, ``why``
        saying why) or None when the run has no such call."""
        if self.problem:
            return [{"repeat": r.get("repeat"), "problem": self.problem} for r in rows]

        urls = self.instrument.llm_endpoints
        wanted: list[tuple[int, str, Any, str]] = []  # (row index, role, request, key)
        for i, row in enumerate(rows):
            (item, records), repeat = self._item(row), int(row.get("repeat") or 0)
            if self.reader is not None and row.get("answer_source") != "arm":
                texts = row.get("retrieved_texts") or []
                hits = [Hit(str(k), float(s or 0.0), str(texts[j]) if j < len(texts) and texts[j] is not None else "")
                        for j, (k, s) in enumerate(zip(row.get("retrieved_keys") or [],
                                                        row.get("retrieved_scores") or [0.0] * 10**6))]
                prepared = self.reader.prepare(item, hits, records)
                if prepared.request is not None:
                    key = llm_cache.call_key(urls["reader"], prepared.request, repeat)
                    wanted.append((i, "reader", prepared.request, key))
            answer = row.get("reader_answer")
            if answer is None:
                continue
            for role, judge in self.judges.items():
                if role == "judge2" and row.get("judge2_label") is None:
                    continue
                case = accuracy_stage.judge_case(item, str(row.get("category_label") or row.get("category")), answer,
                                                 self.instrument.gold_match == "substring",
                                                 memrun_judges.judge_hooks(judge).abstention_categories)
                _, request = memrun_judges.judge_hooks(judge).request(case)
                wanted.append((i, role, request, llm_cache.call_key(urls[role], request, repeat)))
        found = self.cache.get_many([w[3] for w in wanted]) if wanted else {}
        out = [{"repeat": r.get("repeat"), "reader": None, "judge": None, "judge2": None} for r in rows]
        for i, role, request, key in wanted:
            reply = found.get(key)
            prompt = "\n\n".join(str(m.get("content", "")) for m in request.messages)
            if reply is None:
                why = "not in the call cache under this request"
                if self.dataset_problem:
                    why += f"; {self.dataset_problem}, so the prompt was rebuilt from the row alone"
                out[i][role] = {"prompt": None, "reply": None, "found": False, "why": why}
            else:
                out[i][role] = {"prompt": prompt, "reply": reply.text, "found": True, "why": None}
        return out

    def close(self) -> None:
        """Close the cache file."""
        if self.cache is not None:
            self.cache.close()
