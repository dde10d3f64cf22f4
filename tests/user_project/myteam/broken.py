"""Arms that break the protocol in one way each, to test memrun's errors (not an example)."""

from memrun.records import Hit


class BrokenArm:
    def __init__(self, breaks: str = "nothing"):
        self.breaks = breaks

    def describe(self):
        if self.breaks == "describe_raises":
            raise RuntimeError("no health endpoint")
        if self.breaks == "describe_list":
            return ["lexical"]
        if self.breaks == "describe_benchmark":
            return {"benchmark": "mine"}
        return {"search_mode": "lexical", "note": "kept as arm_info"}

    def ingest(self, history_id, records):
        if self.breaks == "ingest_raises":
            raise ValueError("cannot ingest")
        self.records = list(records)

    def search(self, query, k):
        self.searched = getattr(self, "searched", 0) + 1
        if self.breaks == "search_fails_mostly" and self.searched % 3:
            raise RuntimeError("search timed out")
        if self.breaks == "strings":
            return [r.key for r in self.records[:k]]
        if self.breaks == "none":
            return None
        return [Hit(r.key, 1.0, r.text) for r in self.records[:k]]

    def close(self):
        if self.breaks == "close_raises":
            raise RuntimeError("boom close")
