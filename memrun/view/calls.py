"""An item's drill-down in ``memrun view``: what the reader and the judges were sent and
what they replied, per repeat, from the call cache.

The cache stores replies under the sha256 of the request (:func:`memrun.llm.cache.call_key`),
not the prompts. So the view rebuilds each request exactly as the run built it, from
the run's config as its instrument recorded it (reader and judge models, prompts and
parameters, cache_dir), the benchmark's item and records (loaded once per run) and the row's
retrieved hits and answers, and looks the request's key up under the endpoint the
instrument recorded (``llm_endpoints``). A prompt is shown only when its key is found, so
what the page shows is what was sent; otherwise the page says why it is not there (no
cache at the configured folder, the config or dataset could not be rebuilt, or no entry).
No key is read and no call is made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memrun.errors import MemrunError
from memrun.instrument import Instrument


class RunCalls:
    """A run's reader, judges, items, records and call cache, built once, for rebuilding
    its requests. ``problem`` says why prompts cannot be shown (None when they can)."""

    def __init__(self, folder: Path, instrument: Instrument) -> None:
        self.instrument = instrument
        self.problem: str | None = None
        self.reader: Any = None
        self.judges: dict[str, Any] = {}
        self.items: dict[str, Any] = {}
        self.records: dict[str, Mapping[str, Any]] = {}
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
        from omegaconf import OmegaConf

        import memrun.config  # noqa: F401 - registers the resolvers the saved config uses
        from memrun.accuracy.setup import build_reader
        from memrun.judges import build_judge
        from memrun.llm.cache import CACHE_FILE, CallCache
        from memrun.llm.endpoint import Endpoint
        from memrun.paths import configured_or_cache

        if not self.instrument.config:
            raise MemrunError("the run's instrument holds no config")
        cfg = OmegaConf.create(self.instrument.config)
        urls = self.instrument.llm_endpoints or {}
        cache_dir = configured_or_cache(cfg.get("cache_dir"), "llm")
        if not (cache_dir / CACHE_FILE).is_file():
            raise MemrunError(f"no call cache at {cache_dir / CACHE_FILE} (the run's cache_dir)")
        self.cache = CallCache(cache_dir)
        if "reader" in urls:
            self.reader = build_reader(cfg, None, str(cfg.benchmark.name), [],
                                       endpoint=Endpoint(urls["reader"], "", fake=True))
        for role in ("judge", "judge2"):
            if role in urls and cfg.get(role) is not None and cfg[role].get("name") != "none":
                node = OmegaConf.merge(cfg[role], {"base_url": urls[role], "provider": "fake"})  # no key is read
                self.judges[role] = build_judge(node, role, None)
        self._load_dataset(cfg)

    def _load_dataset(self, cfg: Any) -> None:
        """Items and records of the benchmark as the run selected them (the records' dates
        are part of the reader's prompt). On failure the row's own fields are used."""
        from memrun.benchmarks.selection import selection_from_config
        from memrun.config import BENCHMARK_RESERVED_KEYS
        from memrun.plugins import build
        from memrun.run import load_dataset

        try:
            benchmark = build(cfg.benchmark, BENCHMARK_RESERVED_KEYS, "benchmark")
            dataset, _, _ = load_dataset(cfg, benchmark, selection_from_config(cfg.benchmark))
            for group in dataset.groups:
                records = {r.key: r for r in group.records}
                for item in group.items:
                    self.items[item.item_id] = item
                    self.records[item.item_id] = records
        except (MemrunError, OSError, ValueError) as exc:
            self.dataset_problem = f"the benchmark could not be loaded here ({' '.join(str(exc).split())})"

    def _item(self, row: Mapping[str, Any]) -> Any:
        from memrun.records import Item

        item = self.items.get(row["item_id"])
        if item is not None:
            return item
        return Item(item_id=row["item_id"], history_id=str(row.get("cluster") or ""), cluster=str(row.get("cluster") or ""),
                    category=str(row.get("category") or ""), question=row.get("question") or "",
                    answer=row.get("answer"), answer_raw=row.get("answer_raw") or "",
                    gold_keys=tuple(row.get("gold_keys") or ()), question_date=row.get("question_date"),
                    abstention=bool(row.get("abstention")))

    def repeats(self, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Per row (one repeat): ``{"repeat", "reader", "judge", "judge2"}``, each call a dict
        ``{"prompt", "reply", "found", "why"}`` (prompt and reply None when not found, ``why``
        saying why) or None when the run has no such call."""
        if self.problem:
            return [{"repeat": r.get("repeat"), "problem": self.problem} for r in rows]
        from memrun.accuracy.stage import judge_case
        from memrun.llm.cache import call_key
        from memrun.records import Hit

        urls = self.instrument.llm_endpoints
        wanted: list[tuple[int, str, Any, str]] = []  # (row index, role, request, key)
        for i, row in enumerate(rows):
            item, repeat = self._item(row), int(row.get("repeat") or 0)
            if self.reader is not None and row.get("answer_source") != "arm":
                texts = row.get("retrieved_texts") or []
                hits = [Hit(str(k), float(s or 0.0), str(texts[j]) if j < len(texts) and texts[j] is not None else "")
                        for j, (k, s) in enumerate(zip(row.get("retrieved_keys") or [],
                                                        row.get("retrieved_scores") or [0.0] * 10**6))]
                prepared = self.reader.prepare(item, hits, self.records.get(item.item_id, {}))
                if prepared.request is not None:
                    wanted.append((i, "reader", prepared.request, call_key(urls["reader"], prepared.request, repeat)))
            answer = row.get("reader_answer")
            if answer is None:
                continue
            for role, judge in self.judges.items():
                if role == "judge2" and row.get("judge2_label") is None:
                    continue
                case = judge_case(item, str(row.get("category_label") or row.get("category")), answer,
                                  self.instrument.gold_match == "substring",
                                  getattr(judge, "abstention_categories", ()))
                _, request = judge.request(case)
                wanted.append((i, role, request, call_key(urls[role], request, repeat)))
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
