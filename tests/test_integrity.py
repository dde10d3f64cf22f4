"""A damaged items.parquet never reads back with changed values: page checksums catch
flipped data bits, and the sha256 a run records in summary.json catches the rest."""

from __future__ import annotations

import json
import random

import pytest

from memrun.errors import RunTableError
from memrun.io.reader import read_run
from memrun.io.writer import ITEMS_FILE, SHA256_KEY, SUMMARY_FILE, file_sha256
from run_tables import retrieval_run


@pytest.fixture
def run_folder(tmp_path):
    rng = random.Random(0)
    return retrieval_run(tmp_path / "run", [rng.random() < 0.6 for _ in range(400)])


def _flips(path, trials: int, seed: int):
    raw = path.read_bytes()
    rng = random.Random(seed)
    for _ in range(trials):
        damaged = bytearray(raw)
        pos = rng.randrange(len(damaged))
        damaged[pos] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(damaged))
        yield pos
    path.write_bytes(raw)


def test_single_bit_flips_never_change_the_values_read(run_folder):
    """200 single-bit flips without a recorded sha256: a flip in the data pages fails the
    read in one line (RunTableError: page checksums); none reads back the same columns
    with other values (a flip in the unchecksummed footer can rename a column or change
    the instrument's text, which the recorded sha256 catches: next test)."""
    path = run_folder / ITEMS_FILE
    original = read_run(path).table.replace_schema_metadata(None)
    silent = failed = 0
    for _ in _flips(path, 200, seed=1):
        try:
            table = read_run(path).table.replace_schema_metadata(None)
        except RunTableError:
            failed += 1
            continue
        silent += table.schema.names == original.schema.names and not table.equals(original)
    assert silent == 0 and failed > 100


def test_recorded_sha256_catches_every_flip(run_folder):
    path = run_folder / ITEMS_FILE
    (run_folder / SUMMARY_FILE).write_text(json.dumps({SHA256_KEY: file_sha256(path)}))
    assert read_run(run_folder).complete
    for _ in _flips(path, 50, seed=2):
        with pytest.raises(RunTableError, match="sha256 differs|not a readable Parquet file"):
            read_run(run_folder)
    assert read_run(run_folder).table.num_rows == 400  # restored: reads again


def test_a_run_records_its_tables_sha256_and_compare_refuses_a_changed_file(tmp_path, capsys, monkeypatch):
    from memrun.cli import main
    from memrun.commands.compare import main as compare_main

    monkeypatch.chdir(tmp_path)
    for seed in (1, 2):
        assert main(["progress=false", f"seed={seed}", f"hydra.run.dir={tmp_path / str(seed)}"]) == 0
    summary = json.loads((tmp_path / "1" / SUMMARY_FILE).read_text())
    assert summary[SHA256_KEY] == file_sha256(tmp_path / "1" / ITEMS_FILE)
    capsys.readouterr()
    raw = (tmp_path / "2" / ITEMS_FILE).read_bytes()
    (tmp_path / "2" / ITEMS_FILE).write_bytes(raw[:-9] + bytes([raw[-9] ^ 1]) + raw[-8:])  # a footer byte
    assert compare_main([str(tmp_path / "1"), str(tmp_path / "2")]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(tmp_path / "2" / ITEMS_FILE) in err


def test_a_damaged_summary_does_not_switch_the_check_off(run_folder):
    (run_folder / SUMMARY_FILE).write_text("{not json")
    with pytest.raises(RunTableError, match="is damaged .* cannot be checked"):
        read_run(run_folder)
