"""The Parquet writer survives crashes; the reader reads finished and unfinished runs."""

import threading
import time
import types
from types import MappingProxyType

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memrun.core.instrument import METADATA_KEY, Instrument
from memrun.errors import RunTableError
from memrun.io import writer as writer_module
from memrun.io.reader import read_run
from memrun.io.schema import items_schema
from memrun.io.writer import CONVERT_ROWS, ITEMS_FILE, PARTS_DIR, ItemsWriter, file_sha256, rows_table
from memrun.metrics.retrieval import metric_columns

KS = (1, 5)


def row(i: int) -> dict:
    return {"run_id": "r", "item_id": f"i{i}", "repeat": 0, "retrieved_keys": ["a"], "rr": 1.0, "hit_at_1": True}


def test_parts_are_readable_before_close_and_merged_after(tmp_path):
    inst = Instrument(axis="recall", benchmark="b", run_id="r")
    writer = ItemsWriter(tmp_path, items_schema(KS), inst, flush_rows=2)
    for i in range(5):
        writer.add(row(i))
    writer.wait()  # the parts handed to the writer thread are on disk
    # as after a kill: two full parts on disk, one row still buffered
    partial = read_run(tmp_path)
    assert not partial.complete and partial.table.num_rows == 4
    assert partial.instrument.run_id == "r" and partial.instrument.status == "running"
    inst.status = "complete"
    path = writer.close()
    done = read_run(tmp_path)
    assert done.complete and done.table.num_rows == 5 and done.instrument.status == "complete"
    assert not (tmp_path / "items.parts").exists()
    assert pq.read_schema(path).metadata[METADATA_KEY]
    assert done.table.schema.field("hit_at_5").type == items_schema(KS).field("hit_at_5").type


def test_flush_by_time(tmp_path):
    writer = ItemsWriter(tmp_path, items_schema(KS), Instrument(), flush_rows=1000, flush_seconds=0.0)
    writer.add(row(0))
    writer.wait()
    assert read_run(tmp_path).table.num_rows == 1


def test_parts_come_at_growing_intervals_up_to_the_longest(tmp_path, monkeypatch):
    """A row every 0.5 s for 30 s: parts at 1, 3, 7, 15 and 23 s (each wait twice the one
    before, up to 8 s), not one a second; every row is in the merged file."""
    clock = [0.0]
    monkeypatch.setattr(writer_module, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    writer = ItemsWriter(tmp_path, items_schema(KS), Instrument(), flush_seconds=1.0, max_flush_seconds=8.0)
    at = []
    for i in range(60):
        clock[0] = 0.5 * (i + 1)
        before = writer._n_parts
        writer.add(row(i))
        if writer._n_parts > before:
            at.append(clock[0])
    writer.wait()
    assert at == [1.0, 3.0, 7.0, 15.0, 23.0]
    assert len(list((tmp_path / "items.parts").glob("part-*.parquet"))) == 5
    writer.close()
    assert read_run(tmp_path).table.num_rows == 60


def test_a_failed_part_write_is_raised_not_lost(tmp_path):
    writer = ItemsWriter(tmp_path, items_schema(KS), Instrument(), flush_rows=1)
    writer.add({"item_id": "x", "repeat": "not an int"})  # the writer thread cannot encode it
    with pytest.raises(Exception, match="repeat|int"):
        writer.wait()


def test_reader_errors_name_the_path(tmp_path):
    with pytest.raises(RunTableError, match="no items.parquet"):
        read_run(tmp_path)
    (tmp_path / "killed" / "items.parts").mkdir(parents=True)  # killed before its first part
    with pytest.raises(RunTableError, match="this run wrote no rows"):
        read_run(tmp_path / "killed")
    with pytest.raises(RunTableError, match="no such file"):
        read_run(tmp_path / "missing.parquet")
    bogus = tmp_path / "x.parquet"
    bogus.write_text("not parquet")
    with pytest.raises(RunTableError, match="not a readable Parquet file"):
        read_run(bogus)
    import pyarrow as pa

    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"a": [1]}), plain)
    with pytest.raises(RunTableError, match="no memrun instrument"):
        read_run(plain)


def test_a_folder_of_runs_is_named_so_with_the_fix(tmp_path):
    """An unmerged sharded run's folder (or a sweep's) given as one run was 'no items.parquet
    and no items.parts/ here; is this a memrun run folder?', which names neither the runs in it
    nor memrun merge."""
    for i in range(4):
        writer = ItemsWriter(tmp_path / f"shard-{i}-of-4", items_schema([1]), Instrument(axis="recall"))
        writer.add({"run_id": "r", "item_id": f"q{i}", "repeat": 0})
        writer.close()
    with pytest.raises(RunTableError, match=r"a folder of runs \(shard-0-of-4, shard-1-of-4, shard-2-of-4 and 1 more\), "
                                            r"not one run: give one of them, or when they are the shards of one run, "
                                            r"memrun merge .* first"):
        read_run(tmp_path)


def test_a_table_holding_an_item_repeat_twice_is_refused_by_every_reader(tmp_path):
    """A table joining runs by hand, read by the run page, memrun view, failures or compare,
    had its copies read as more repeats of the item; read_run now refuses it, naming the first."""
    writer = ItemsWriter(tmp_path / "run", items_schema([1]), Instrument(axis="recall"))
    for item in ("q0", "q1", "q0"):
        writer.add({"run_id": "r", "item_id": item, "repeat": 0})
    writer.close()
    with pytest.raises(RunTableError, match=r"items.parquet: 1 \(item_id, repeat\) pair\(s\) occur on more than "
                                            r"one row, first \('q0', 0\): a table joining runs or shards by hand\?"):
        read_run(tmp_path / "run")
    assert read_run(tmp_path / "run", columns=["item_id"]).table.num_rows == 3  # the pair unread: not checked


def test_a_folder_that_holds_a_run_is_not_written_again(tmp_path):
    writer = ItemsWriter(tmp_path, items_schema(KS), Instrument(), flush_rows=1)
    writer.add(row(0))
    writer.wait()
    with pytest.raises(RunTableError, match=r"already holds a run's rows; give this run its own folder \(hydra.run.dir=... on the "
                                        r"command line, out_dir= in memrun.run\)"):
        ItemsWriter(tmp_path, items_schema(KS), Instrument())  # parts of a run in progress
    writer.close()
    with pytest.raises(RunTableError, match="already holds a run's rows"):
        ItemsWriter(tmp_path, items_schema(KS), Instrument())  # a finished run


def test_the_commit_is_read_from_one_git_status(tmp_path):
    import subprocess

    from memrun.core.provenance import git_commit as _git_commit

    assert _git_commit(tmp_path) is None  # not a checkout
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    assert _git_commit(tmp_path) is None  # no commit yet
    (tmp_path / "a.txt").write_text("one\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    (tmp_path / "untracked.txt").write_text("not part of the checkout\n")
    assert _git_commit(tmp_path) == sha
    (tmp_path / "sub").mkdir()
    assert _git_commit(tmp_path / "sub") == sha  # a folder inside the checkout (conf/)
    (tmp_path / "a.txt").write_text("two\n")
    assert _git_commit(tmp_path) == sha + "+dirty"


def test_a_schema_built_on_the_writers_thread(tmp_path):
    """A run hands the writer a function for its schema, so pyarrow loads off the caller's
    thread; the rows come out the same, and a failure to build it is raised, not lost."""
    writer = ItemsWriter(tmp_path / "a", lambda: items_schema(KS), Instrument(), flush_rows=2)
    for i in range(3):
        writer.add(row(i))
    writer.close()
    assert read_run(tmp_path / "a").table.equals(_written(tmp_path / "b", items_schema(KS)))

    def broken():
        raise RuntimeError("no schema")

    failing = ItemsWriter(tmp_path / "c", broken, Instrument(), flush_rows=1)
    with pytest.raises(RuntimeError, match="no schema"):
        failing.add(row(0))
        failing.wait()


def test_the_schema_is_built_at_the_first_row_not_at_construction(tmp_path):
    """Built earlier, pyarrow's import would contend for the GIL with the run's start-up,
    between the writer's construction and the run's first request; a run without rows
    still gets its (empty) table."""
    built = threading.Event()

    def schema():
        built.set()
        return items_schema(KS)

    writer = ItemsWriter(tmp_path / "a", schema, Instrument(), flush_rows=2)
    time.sleep(0.2)
    assert not built.is_set()
    writer.add(row(0))
    assert built.wait(30)
    writer.close()
    assert read_run(tmp_path / "a").table.num_rows == 1

    empty = ItemsWriter(tmp_path / "b", schema, Instrument())
    empty.close()
    assert read_run(tmp_path / "b").table.num_rows == 0


def _written(folder, schema):
    writer = ItemsWriter(folder, schema, Instrument(), flush_rows=2)
    for i in range(3):
        writer.add(row(i))
    writer.close()
    return read_run(folder).table


def test_rows_become_the_table_from_pylist_makes(tmp_path):
    """The writer converts dict rows as one struct array: the same table as
    ``Table.from_pylist`` (a missing key null, a key outside the schema left out), and a
    non-dict mapping still converts."""
    schema = items_schema(KS)
    rows = [row(0), {**row(1), "not_a_column": 3, "label": "correct"}, {"run_id": "r", "item_id": "x", "repeat": 2}]
    rows[0]["retrieved_scores"] = [0.5, float("inf")]
    assert rows_table(rows, schema).equals(pa.Table.from_pylist(rows, schema=schema))
    assert rows_table([], schema).equals(schema.empty_table())
    many = [{**row(i), "repeat": i % 3, "label": "wrong" if i % 7 else None} for i in range(2 * CONVERT_ROWS + 5)]
    assert rows_table(many, schema).equals(pa.Table.from_pylist(many, schema=schema))  # converted in pieces
    frozen = [dict(r) for r in rows]
    assert rows_table([MappingProxyType(r) for r in frozen], schema).equals(pa.Table.from_pylist(frozen, schema=schema))
    assert metric_columns(KS)[0] in rows_table(rows, schema).column_names


def test_start_close_lets_the_caller_go_on_and_close_waits(tmp_path):
    """The merged file is written on the writer's thread after start_close; close waits for it,
    removes the parts and sets the file's sha256 (start_close twice is harmless)."""
    writer = ItemsWriter(tmp_path, items_schema(KS), Instrument(), flush_rows=2)
    for i in range(5):
        writer.add(row(i))
    writer.start_close()
    writer.start_close()
    path = writer.close()
    assert path == tmp_path / ITEMS_FILE and writer.sha256 == file_sha256(path)
    assert not (tmp_path / PARTS_DIR).exists()
    assert read_run(tmp_path).table.column("item_id").to_pylist() == [f"i{i}" for i in range(5)]


def test_the_probe_imports_neither_pandas_nor_dateutil_and_both_stay_importable():
    """pyarrow's first inference imports pandas and dateutil.relativedelta only to recognise their
    types (~0.5 s and ~3 ms): the writer's probe refuses both to itself, so a run loads neither;
    an inference after it, and code that uses them, still import them."""
    code = """
import sys
from memrun.io import writer
writer.skip_pandas_probe()
print(sorted(m for m in ('pandas', 'dateutil', 'dateutil.relativedelta', 'six') if m in sys.modules))
writer.pa.array([1.5])              # an inference after the probe finds relativedelta again
import dateutil.relativedelta
print(writer.pa.array([dateutil.relativedelta.relativedelta(months=1)]).type)
"""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["[]", "month_day_nano_interval"]


def test_the_pandas_probe_never_makes_another_threads_import_skip_a_finder():
    """A run's writer thread probes pyarrow while the main thread imports (memrun.accuracy.stage,
    lazily): the probe once took its finder out of sys.meta_path in the middle of that import's
    walk of the list, the walk skipped the next finder, and the import failed with "No module
    named 'memrun.judges.lexical'". Here the other thread's walk takes one step during the probe."""
    code = """
import sys
from memrun.io import writer
before = list(sys.meta_path)
walk = iter(sys.meta_path)          # another thread's import, one finder asked so far
asked = [next(walk)]
real = writer.pa.array
def probe(*args, **kwargs):         # that thread asks its next finder while the probe runs
    asked.append(next(walk))
    return real(*args, **kwargs)
writer.pa.array = probe
writer.skip_pandas_probe()
writer.pa.array = real
asked.extend(walk)
missed = [repr(f) for f in before if not any(f is a for a in asked)]
print(missed, 'pandas' in sys.modules)
import pandas                       # still importable for what really uses it
print(pandas.DataFrame({'a': [1]}).shape)
"""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["[] False", "(1, 1)"]
