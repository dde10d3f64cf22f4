"""arm=http against servers whose requests are not all JSON (tests/servers/bulk_server.py),
the docs' config as written, and config edges (``arm.ready=null``, a null hit key)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from arms.support import REPO, Blocking, compose_run
from conftest import run_memrun
from memrun.arms.http import HttpArm
from memrun.arms.http_templates import ResponsePath, encode_body, hits_from_result
from memrun.config import ARM_RESERVED_KEYS
from memrun.core.plugins import build
from memrun.errors import ArmError
from memrun.io.reader import read_run
from memrun.records import Record
from servers import bulk_server

RECORDS = [Record("D1:1", "Ann: I adopted a grey cat", "1 May 2023", "session_1"),
           Record("D1:2", "Ben: what is the cat called", "1 May 2023", "session_1"),
           Record("D2:1", "Ann: Pixel, and she loves tuna", "8 May 2023", "session_2")]

BULK_CONFIG = """\
defaults:
  - /schema/arm/http@_here_
  - _self_

name: search_engine
ingest_batch_size: 7
create: {method: PUT, path: "/{{ namespace }}"}
ingest:
  path: /_bulk
  encoding: ndjson
  record:
    - {index: {_index: "{{ namespace }}", _id: "{{ record.key }}"}}
    - {text: "{{ record.text }}"}
  body: "{{ records | sum(start=[]) }}"
ready: {path: "/{{ namespace }}/_count", result: count, equals: "{{ n_records }}"}
search:
  path: "/{{ namespace }}/_search"
  body: {query: {match: {text: "{{ query }}"}}, size: "{{ k }}"}
  result: "hits.hits[].{key: _id, score: _score, text: _source.text}"
erase: {method: DELETE, path: "/{{ namespace }}"}
"""


@pytest.fixture
def engine() -> Iterator[tuple[bulk_server.BulkState, str]]:
    state = bulk_server.BulkState()
    server = bulk_server.serve(state)
    yield state, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def arm(url: str, ledger: Path, result: str = "hits.hits[].{key: _id, score: _score}", **ops) -> Blocking:
    """An arm for the bulk server's search, create and erase, with the given ingest."""
    return Blocking(HttpArm(base_url=url, ledger_dir=str(ledger), search={
        "path": "/{{ namespace }}/_search", "body": {"query": {"match": {"text": "{{ query }}"}}, "size": "{{ k }}"},
        "result": result}, erase={"method": "DELETE", "path": "/{{ namespace }}"},
        create={"method": "PUT", "path": "/{{ namespace }}"}, **ops))


def test_an_ndjson_bulk_ingest_runs_a_whole_benchmark(engine, tmp_path) -> None:
    state, url = engine
    conf = tmp_path / "conf" / "arm"
    conf.mkdir(parents=True)
    (conf / "search_engine.yaml").write_text(BULK_CONFIG)
    done = run_memrun(["--config-dir", str(tmp_path / "conf"), "arm=search_engine", f"arm.base_url={url}",
                       f"arm.ledger_dir={tmp_path / 'ledger'}", f"hydra.run.dir={tmp_path / 'run'}", "progress=false"],
                      cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    bulk = [r for r in state.requests if r[1] == "/_bulk"]
    assert bulk and {kind for _, _, kind in bulk} == {"application/x-ndjson"}
    table = read_run(tmp_path / "run").table.to_pylist()
    assert table and all(r["error"] is None for r in table)
    assert sum(bool(r["retrieved_keys"]) for r in table) > len(table) / 2  # the server found the records
    assert state.indexes == {}  # every namespace erased


def test_form_and_text_bodies_with_records_in_the_path(engine, tmp_path) -> None:
    state, url = engine
    form = arm(url, tmp_path, ingest_batch_size=1, ingest={
        "path": "/{{ namespace }}/_notes", "encoding": "form",
        "body": {"id": "{{ records[0].key }}", "text": "{{ records[0].text }}"}})
    form.ingest("conv-1", RECORDS)
    assert [h.key for h in form.search("grey cat", 1)] == ["D1:1"]
    form.close()
    text = arm(url, tmp_path, ingest_batch_size=1, ingest={
        "method": "PUT", "path": "/{{ namespace }}/_raw/{{ records[0].key }}", "encoding": "text",
        "body": "{{ records[0].text }}"})
    text.ingest("conv-1", RECORDS)
    assert [h.key for h in text.search("loves tuna", 1)] == ["D2:1"]
    text.close()
    kinds = {path.split("/")[2]: kind for method, path, kind in state.requests if path.count("/") >= 2}
    assert kinds["_notes"] == "application/x-www-form-urlencoded"
    assert kinds["_raw"].startswith("text/plain")
    assert any(path.endswith("/_raw/D2:1") for _, path, _ in state.requests)
    assert state.indexes == {}


@pytest.mark.parametrize(("encoding", "body", "says"), [
    ("ndjson", {"a": "{{ namespace }}"}, "encoding ndjson sends a list"),
    ("form", ["{{ namespace }}"], "encoding form sends an object"),
    ("text", {"a": 1}, "encoding text sends a string"),
])
def test_a_body_that_does_not_fit_its_encoding_fails_before_any_request(engine, tmp_path, encoding, body, says) -> None:
    state, url = engine
    with pytest.raises(ArmError, match=f"arm.ingest.body: {says}"):
        arm(url, tmp_path, ingest={"path": "/_bulk", "encoding": encoding, "body": body})
    assert state.requests == []


def test_an_unknown_encoding_names_the_choices(engine, tmp_path) -> None:
    _, url = engine
    with pytest.raises(ArmError, match=r"arm.ingest.encoding='xml': use one of json, ndjson, form, text"):
        arm(url, tmp_path, ingest={"path": "/_bulk", "encoding": "xml", "body": "x"})


def test_encode_body_keeps_json_as_json_and_writes_ndjson_lines() -> None:
    assert encode_body({"a": [1]}, "json", "arm.x") == {"json": {"a": [1]}}
    ndjson = encode_body([{"i": 1}, {"t": "é"}], "ndjson", "arm.x")
    assert ndjson["content"].decode() == '{"i": 1}\n{"t": "é"}\n'
    assert encode_body(None, "ndjson", "arm.x") == {}
    assert encode_body({"n": 3, "s": "x"}, "form", "arm.x") == {"data": {"n": "3", "s": "x"}}


def test_ready_null_on_the_command_line_turns_the_poll_off(memory, tmp_path) -> None:
    _, url = memory
    cfg = compose_run(["arm=http", f"arm.base_url={url}", f"arm.ledger_dir={tmp_path}",
                       "arm.ready.path='/v1/namespaces/{{ namespace }}'", "arm.ready.result=count", "arm.ready=null"])
    built = build(cfg.arm, ARM_RESERVED_KEYS, "arm")
    assert "ready" not in built.ops
    built.close()


def test_a_hit_whose_key_came_back_null_says_so(engine, tmp_path) -> None:
    _, url = engine
    bad = arm(url, tmp_path, result="hits.hits[].{key: id, score: _score}", ingest_batch_size=1,
              ingest={"path": "/{{ namespace }}/_notes", "encoding": "form",
                      "body": {"id": "{{ records[0].key }}", "text": "{{ records[0].text }}"}})
    bad.ingest("conv-1", RECORDS)
    with pytest.raises(ArmError, match=r"hit 0's key came back null .*maps 'key' to a field that is missing or null"):
        bad.search("grey cat", 1)
    bad.close()


@pytest.mark.parametrize(("hit", "says"), [
    ({"key": "D1:1", "text": {"body": "grey cat"}}, r"hit 0's text came back as an object with keys body: .*join"),
    ({"key": "D1:1", "text": ["grey", "cat"]}, r"hit 0's text came back as a list of 2: .*join\('\\n', field\)"),
    ({"key": {"id": "D1:1"}, "text": "x"}, r"hit 0's key came back as an object with keys id"),
    ({"key": "D1:1", "score": "high"}, r"hit 0's score came back as str 'high': .*a number"),
    ({"key": "D1:1", "score": [1.0]}, r"hit 0's score came back as a list of 1"),
])
def test_a_hit_field_no_hit_can_hold_names_the_field(hit, says) -> None:
    """str() made a text object '{'body': 'grey cat'}' (its Python repr): under substring gold
    every hit missed, and the run printed recall 0.0 everywhere and exited 0; a score of the
    wrong type failed every item with a ValueError or TypeError."""
    path = ResponsePath("results[].{key: id, score: score, text: content}", "arm.search.result")
    with pytest.raises(ArmError, match=r"arm.search.result: " + says):
        hits_from_result([hit], path)


def test_hit_fields_of_the_types_servers_send_read_as_before() -> None:
    path = ResponsePath("results[]", "arm.search.result")
    hits = hits_from_result([{"key": 7, "score": "0.5", "text": "grey cat"}, {"key": "D1:2", "text": None},
                             {"key": "D1:3", "score": 2, "text": 42}], path)
    assert [(h.key, h.score, h.text) for h in hits] == [("7", 0.5, "grey cat"), ("D1:2", 2.0, ""), ("D1:3", 2.0, "42")]


def test_the_docs_config_runs_as_written(memory, tmp_path) -> None:
    state, url = memory
    docs = (REPO / "docs" / "arms.md").read_text()
    block = re.search(r"<!-- http-config -->\n```yaml\n(.*?)```", docs, re.DOTALL)
    assert block, "docs/arms.md lost its <!-- http-config --> block"
    conf = tmp_path / "myconf" / "arm"
    conf.mkdir(parents=True)
    (conf / "my_server.yaml").write_text(block.group(1))
    done = run_memrun(["--config-dir", str(tmp_path / "myconf"), "arm=my_server", f"arm.base_url={url}",
                       f"arm.ledger_dir={tmp_path / 'ledger'}", f"hydra.run.dir={tmp_path / 'run'}", "progress=false"],
                      cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert state.searches and state.namespaces == {}
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["arm"] == "my_server"
