"""``memrun view``'s runs index reads each run's instrument from its footer's key-value
bytes, sealed, without decoding the footer (3 ms a run with pyarrow: seconds for 500
runs); a damaged footer is still refused by name, and a changed run is re-read even
when its modification time is not. An item's drill-down reads the benchmark's groups
only up to the item's."""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memrun.core.instrument import METADATA_KEY
from memrun.errors import RunTableError
from memrun.io.footer import footer_bytes, key_value, sealed_values
from memrun.io.metadata import seal_table
from memrun.io.reader import peek_instrument, read_instrument
from memrun.io.writer import ITEMS_FILE, PARTS_DIR, SUMMARY_FILE
from memrun.pipeline.resume import mark
from memrun.records import Group, Item, Record
from memrun.report.html.run_page import run_context
from memrun.view.calls import ItemGroups
from memrun.view.runs import RunIndex, run_row
from run_tables import base_instrument, retrieval_run
from test_metadata_seal import footer_flips


@pytest.fixture
def root(tmp_path):
    retrieval_run(tmp_path / "a", [True, False, True], arm="bm25")
    retrieval_run(tmp_path / "b", [False, True], arm="dense")
    parts = tmp_path / "killed" / PARTS_DIR  # a run killed before it finished: its last part holds the instrument
    parts.mkdir(parents=True)
    shutil.copy(tmp_path / "b" / ITEMS_FILE, parts / "part-00000.parquet")
    return tmp_path


def test_the_instrument_from_the_footer_bytes_is_read_instruments(root):
    for name in ("a", "b", "killed"):
        assert peek_instrument(root / name) == read_instrument(root / name)
    assert peek_instrument(root / "a" / ITEMS_FILE).arm == "bm25"


def test_listing_runs_decodes_no_footer(root, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the runs index decoded a Parquet footer with pyarrow")

    for name in ("read_schema", "read_metadata", "ParquetFile", "read_table"):
        monkeypatch.setattr(pq, name, refuse)
    rows = {r["path"]: r for r in RunIndex(root).rows()}
    assert {p: (r["arm"], r["status"]) for p, r in rows.items()} == {
        "a": ("bm25", "complete"), "b": ("dense", "complete"), "killed": ("dense", "interrupted")}


def test_a_run_whose_rows_were_taken_over_is_resumed_and_names_the_run_that_did(root):
    """An unfinished run is ``interrupted`` until a later run takes its rows over
    (resume.mark); then ``resumed``, pointing at that run, and its page says so first."""
    index = RunIndex(root)
    assert {r["path"]: r["status"] for r in index.rows()}["killed"] == "interrupted"
    mark(root / "killed", root / "a")
    killed = {r["path"]: r for r in index.rows()}["killed"]  # the marker is in the index's cache key
    assert (killed["status"], killed["resumed_by"]) == ("resumed", "a")
    mark(root / "killed", root.parent / "elsewhere")
    assert run_row(root / "killed", root)["resumed_by"] == str(root.parent / "elsewhere")
    notes = run_context(root / "killed")["notes"]
    assert notes[0].startswith(f"RESUMED: this run did not finish, and the run in {root.parent / 'elsewhere'} took")


def test_every_footer_flip_reads_the_same_instrument_or_is_refused(root):
    """A flip in the key-value bytes fails their checksum and the file goes through the
    reader (which reads the copy in the Arrow schema); elsewhere the bytes read are intact."""
    path = root / "b" / ITEMS_FILE
    original, values = read_instrument(path), sealed_values(path)
    fell_back = 0
    for _ in footer_flips(path, 300, seed=3):
        found = sealed_values(path)
        assert found in (None, values)
        fell_back += found is None
        try:
            assert peek_instrument(path) == original
        except RunTableError as exc:
            assert str(path) in str(exc) and "\n" not in str(exc)
    assert fell_back > 10


def test_an_edited_instrument_is_refused_by_name_and_listed_unreadable(root):
    path = root / "a" / ITEMS_FILE
    table = pq.read_table(path)
    meta = dict(table.schema.metadata)
    meta[METADATA_KEY] = meta[METADATA_KEY].replace(b'"arm": "bm25"', b'"arm": "bm26"')
    pq.write_table(table.replace_schema_metadata(meta), path)
    with pytest.raises(RunTableError, match=rf"{path}: its metadata is damaged: .* does not match the checksum"):
        peek_instrument(path)
    row = run_row(root / "a", root)
    assert row["status"] == "unreadable" and "its metadata is damaged" in row["error"]


def test_a_column_value_that_looks_like_the_metadata_is_not_taken_for_it(tmp_path):
    fake = b"\x18\x11memrun.instrument\x18\x02{}\x00"
    table = seal_table(pa.table({"question": [fake.decode("latin-1")]}), base_instrument(arm="real"))
    pq.write_table(table, tmp_path / ITEMS_FILE)
    footer = footer_bytes(tmp_path / ITEMS_FILE)
    assert footer.count(b"memrun.instrument") >= 2  # the statistics hold the look-alike too
    assert key_value(footer, METADATA_KEY) == table.schema.metadata[METADATA_KEY]
    assert sealed_values(tmp_path / ITEMS_FILE)[METADATA_KEY] == table.schema.metadata[METADATA_KEY]
    assert peek_instrument(tmp_path).arm == "real"


def test_a_file_without_the_seal_goes_through_the_reader(tmp_path, capsys):
    table = pa.table({"item_id": ["x"]}).replace_schema_metadata({METADATA_KEY: base_instrument(arm="old").to_json()})
    pq.write_table(table, tmp_path / ITEMS_FILE)
    assert sealed_values(tmp_path / ITEMS_FILE) is None
    assert peek_instrument(tmp_path).arm == "old"
    assert "written before memrun sealed its metadata" in capsys.readouterr().err
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 not parquet at all PAR1")
    assert footer_bytes(tmp_path / "junk.parquet") is None


def test_a_changed_run_is_re_read_even_with_its_old_modification_time(root):
    index = RunIndex(root)
    assert next(r for r in index.rows() if r["path"] == "a")["items"] is None
    summary = root / "a" / SUMMARY_FILE
    summary.write_text('{"n_items": 3}')
    first = os.stat(summary).st_mtime_ns
    index.rows()
    summary.write_text('{"n_items": 33}')  # rewritten within the same clock tick, or restored by a copy tool
    os.utime(summary, ns=(first, first))
    assert next(r for r in index.rows() if r["path"] == "a")["items"] == 33


class CountedGroups:
    """Lazy groups (as BEAM's and LongMemEval's loaders give): each ``iter()`` starts over."""

    def __init__(self, n: int) -> None:
        self.groups = [Group(f"h{g}", [Record(key=f"h{g}:0", text="t")],
                             [Item(item_id=f"h{g}-q{i}", history_id=f"h{g}", cluster=f"h{g}", category="c",
                                   question="?", answer="a", answer_raw="\"a\"", gold_keys=()) for i in range(2)]) for g in range(n)]
        self.produced = 0

    def __iter__(self):
        for group in self.groups:
            self.produced += 1
            yield group


def test_an_item_reads_the_groups_up_to_its_own_and_keeps_the_last_few():
    lazy = CountedGroups(10)
    groups = ItemGroups(lazy, keep=2)
    item, records = groups.find("h3-q1")
    assert item.item_id == "h3-q1" and list(records) == ["h3:0"] and lazy.produced == 4
    for item_id in ("h3-q0", "h4-q0", "h4-q1", "h3-q1"):  # next items, and back one group
        assert groups.find(item_id)[0].item_id == item_id
    assert lazy.produced == 5
    assert groups.find("h0-q0")[0].item_id == "h0-q0" and lazy.produced == 6  # passed and dropped: start over
    assert groups.find("h2-q0")[0].item_id == "h2-q0" and lazy.produced == 8  # ahead: read on
    assert groups.find("nowhere") is None and lazy.produced == 8 + 7 + 10  # to the end, then one full pass
    assert groups.find("h9-q1") is not None


def test_a_run_whose_table_links_out_of_the_runs_folder_is_refused(tmp_path):
    """An items.parquet (or a part) that is a symlink to a file outside the runs folder is
    neither listed as a run nor served, as a path that climbs out of it is refused."""
    from memrun.errors import MemrunError

    outside = tmp_path / "elsewhere"
    retrieval_run(outside, [True, False], arm="bm25")
    root = tmp_path / "runs"
    retrieval_run(root / "ok", [True], arm="bm25")
    (root / "linked").mkdir(parents=True)
    (root / "linked" / ITEMS_FILE).symlink_to(outside / ITEMS_FILE)
    (root / "parts" / PARTS_DIR).mkdir(parents=True)
    (root / "parts" / PARTS_DIR / "part-00000.parquet").symlink_to(outside / ITEMS_FILE)
    index = RunIndex(root)
    rows = {r["path"]: r for r in index.rows()}
    assert rows["ok"]["status"] == "complete"
    for name, what in (("linked", ITEMS_FILE), ("parts", f"{PARTS_DIR}/part-00000.parquet")):
        assert rows[name]["status"] == "unreadable" and rows[name]["arm"] is None, rows[name]
        assert rows[name]["error"] == f"{what} links outside the runs folder; not read"
        with pytest.raises(MemrunError, match="a link to a file outside"):
            index.folder(name)
    assert index.folder("ok") == (root / "ok").resolve()


def test_a_summary_memrun_did_not_write_is_one_row_and_one_page_not_a_broken_app(root, tmp_path, capsys):
    """A summary.json that is JSON but not an object took the whole runs page down (500,
    AttributeError); one whose values are not memrun's did too, and its run page."""
    from starlette.testclient import TestClient

    from memrun.view.app import build_app

    (root / "a" / SUMMARY_FILE).write_text("[1, 2]")
    (root / "b" / SUMMARY_FILE).write_text('{"overall_all": 5, "headline": 3, "intervals": [1]}')
    rows = {r["path"]: r for r in RunIndex(root).rows()}
    assert rows["a"]["status"] == "complete" and rows["a"]["arm"] == "bm25"  # read as a run without its summary
    assert rows["b"]["status"] == "unreadable" and "summary.json or instrument holds values" in rows["b"]["error"]
    client = TestClient(build_app(root, tmp_path / "index.json"), base_url="http://127.0.0.1", raise_server_exceptions=False)
    assert client.get("/").status_code == 200
    page = client.get("/run/b")
    assert page.status_code == 500 and "/run/b: this page could not be built (AttributeError" in page.text
    assert "Traceback" in capsys.readouterr().err  # kept for a bug report, on the view's terminal
