"""A bare items.parquet (no summary.json beside it) carries a checksum of its instrument
and columns in its footer: a flipped bit there that would rename a column or change an
instrument value is refused in one line naming the file, by the reader (report, failures,
merge) and by compare, instead of being read as something else."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from memrun.commands.compare import main as compare_main
from memrun.core.instrument import METADATA_KEY
from memrun.errors import RunTableError
from memrun.io.metadata import CHECKSUM_KEY, COLUMNS_KEY, LEGACY_WARNING, seal_table
from memrun.io.reader import read_run
from memrun.io.writer import ITEMS_FILE, SUMMARY_FILE
from run_tables import retrieval_run

FLIPS = 300


@pytest.fixture
def runs(tmp_path):
    rng = random.Random(0)
    a = retrieval_run(tmp_path / "a", [rng.random() < 0.5 for _ in range(120)])
    b = retrieval_run(tmp_path / "b", [rng.random() < 0.7 for _ in range(120)])
    assert not (b / SUMMARY_FILE).exists()  # bare: no recorded sha256 to fall back on
    return a, b


def footer_flips(path: Path, n: int, seed: int):
    """Yield after each of ``n`` single-bit flips inside the Parquet footer (the metadata
    region: schema, column names, key-value metadata), restoring the file at the end."""
    raw = path.read_bytes()
    length = struct.unpack("<I", raw[-8:-4])[0]
    start, end = len(raw) - 8 - length, len(raw) - 8
    rng = random.Random(seed)
    try:
        for _ in range(n):
            damaged = bytearray(raw)
            damaged[rng.randrange(start, end)] ^= 1 << rng.randrange(8)
            path.write_bytes(bytes(damaged))
            yield
    finally:
        path.write_bytes(raw)


def test_every_metadata_flip_that_changes_names_or_instrument_is_refused(runs):
    path = runs[1] / ITEMS_FILE
    original = read_run(path)
    refused = 0
    for _ in footer_flips(path, FLIPS, seed=1):
        try:
            run = read_run(path)
        except RunTableError as exc:
            assert str(path) in str(exc) and "\n" not in str(exc)
            refused += 1
            continue
        assert run.table.schema.names == original.table.schema.names
        assert run.instrument == original.instrument
        assert run.table.replace_schema_metadata(None).equals(original.table.replace_schema_metadata(None))
    assert refused > FLIPS // 2


def test_compare_refuses_a_damaged_file_for_that_reason_only(runs, capsys):
    a, b = runs
    baseline = compare_main([str(a), str(b), "--format", "json"]), capsys.readouterr().out
    for _ in footer_flips(b / ITEMS_FILE, FLIPS // 2, seed=2):
        code = compare_main([str(a), str(b), "--format", "json"])
        out, err = capsys.readouterr()
        if (code, out) == baseline:
            continue  # the flip changed nothing compare reads (a statistic, padding)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and str(b / ITEMS_FILE) in lines[0], err
        assert "damaged" in lines[0] or "not a readable Parquet file" in lines[0], err


def _rewrite(path: Path, table: pa.Table) -> None:
    pq.write_table(table, path)


def test_a_renamed_column_or_edited_instrument_is_refused_by_name(runs):
    path = runs[1] / ITEMS_FILE
    table = pq.read_table(path)
    renamed = table.rename_columns(["item_jd" if n == "item_id" else n for n in table.column_names])
    _rewrite(path, renamed.replace_schema_metadata(table.schema.metadata))
    with pytest.raises(RunTableError, match=r"column 'item_id' that memrun wrote is not in the file"):
        read_run(path)
    meta = dict(table.schema.metadata)
    meta[METADATA_KEY] = meta[METADATA_KEY].replace(b'"axis": "recall"', b'"axis": "recalk"')
    _rewrite(path, table.replace_schema_metadata(meta))
    with pytest.raises(RunTableError, match=rf"{path}: its metadata is damaged: .* does not match the checksum"):
        read_run(path)
    _rewrite(path, table.set_column(table.schema.get_field_index("rr"), "rr", table.column("rr").cast(pa.float32())))
    with pytest.raises(RunTableError, match=r"column 'rr' was written as double but reads as float"):
        read_run(path)


def test_a_column_added_by_another_tool_or_a_pandas_round_trip_reads(runs):
    pd = pytest.importorskip("pandas")
    path = runs[1] / ITEMS_FILE
    table = pq.read_table(path)
    _rewrite(path, table.append_column("note", pa.array(["x"] * table.num_rows)))
    assert read_run(path).table.num_rows == 120
    df = pd.read_parquet(path)  # first_gold_rank (int32 with nulls) comes back as float64
    back = pa.Table.from_pandas(df, preserve_index=False)
    _rewrite(path, back.replace_schema_metadata({**back.schema.metadata, **{
        k: v for k, v in table.schema.metadata.items() if k.startswith(b"memrun.")}}))
    assert read_run(path).table.schema.field("first_gold_rank").type == pa.float64()


def test_what_the_readme_says_of_columns_added_holds_in_and_out_of_the_run_folder(tmp_path, monkeypatch):
    """In the run folder, summary.json's sha256 refuses an edited table (the error names the way
    out: a copy elsewhere); a copy elsewhere with a column added reads; pandas' to_parquet drops
    the footer's metadata, and the error says how to put it back."""
    from memrun.cli import main

    pd = pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    assert main(["progress=false", f"hydra.run.dir={tmp_path / 'run'}"]) == 0  # a run as memrun writes it
    path = tmp_path / "run" / ITEMS_FILE
    assert (path.parent / SUMMARY_FILE).exists()
    table = pq.read_table(path)
    added = table.append_column("note", pa.array(["x"] * table.num_rows))
    copy = tmp_path / "mine" / ITEMS_FILE
    copy.parent.mkdir()
    pq.write_table(added, copy)
    assert read_run(copy).table.column("note").to_pylist()[0] == "x"
    pq.write_table(added, path)
    with pytest.raises(RunTableError, match=r"sha256 differs .* \(a copy with columns of your own is read outside "
                                            r"the run folder\)"):
        read_run(path)
    pd.read_parquet(copy).to_parquet(copy)
    with pytest.raises(RunTableError, match=r"rewritten by a tool that drops it \(pandas' to_parquet: put the "
                                            r"original's schema.metadata back with pyarrow's replace_schema_metadata"):
        read_run(copy)


def test_sharded_runs_merged_carry_the_seal(tmp_path):
    """merge.py rewrites the instrument: the merged file is sealed too (checked here on a
    table sealed the way merge seals it, and by tests/jobs/test_shards.py on real merges)."""
    run = retrieval_run(tmp_path / "r", [True, False, True])
    table = pq.read_table(run / ITEMS_FILE)
    instrument = read_run(run).instrument
    sealed = seal_table(table.replace_schema_metadata(None), instrument)
    assert {METADATA_KEY, COLUMNS_KEY, CHECKSUM_KEY} <= set(sealed.schema.metadata)
    assert sealed.schema.metadata == table.schema.metadata


def test_a_file_from_before_the_seal_reads_with_one_warning(runs, capsys):
    path = runs[1] / ITEMS_FILE
    table = pq.read_table(path)
    _rewrite(path, table.replace_schema_metadata({METADATA_KEY: table.schema.metadata[METADATA_KEY]}))
    for _ in range(2):
        assert read_run(path).table.num_rows == 120
    assert capsys.readouterr().err == f"memrun: warning: {path}: {LEGACY_WARNING}\n"
