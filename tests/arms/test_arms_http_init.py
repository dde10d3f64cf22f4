"""``memrun arm init http``: a starter config from the server's OpenAPI document, which
passes its own smoke test and runs a benchmark, on two loopback servers of different
shapes (memrun's reference API; a notes API with one note per request and a GET search)."""

from __future__ import annotations

import json

import pytest
import yaml

from memrun.cli import main as cli_main
from servers import notes_server


def init(tmp_path, capsys, *argv: str) -> tuple[int, str, dict]:
    code = cli_main(["arm", "init", "http", "--out", str(tmp_path / "conf" / "arm"), *argv])
    out = capsys.readouterr().out
    (path,) = (tmp_path / "conf" / "arm").glob("*.yaml")
    return code, out, yaml.safe_load(path.read_text())


def run_with(tmp_path, capsys, arm: str) -> dict:
    """``memrun --config-dir <tmp>/conf arm=<arm>`` on the default benchmark; its summary."""
    out = tmp_path / "run"
    code = cli_main(["--config-dir", str(tmp_path / "conf"), f"arm={arm}", "progress=false",
                     f"arm.ledger_dir={tmp_path / 'ledger'}", f"hydra.run.dir={out}"])
    assert code == 0, capsys.readouterr().err
    return json.loads((out / "summary.json").read_text())


def test_reference_api_from_its_openapi_document(tmp_path, capsys, memory) -> None:
    state, url = memory
    code, out, config = init(tmp_path, capsys, "--url", url)  # the document at <url>/openapi.json
    assert code == 0 and "smoke test: passed: searching 'cello' found smoke:3" in out, out
    assert config["create"] == {"method": "POST", "path": "/v1/namespaces", "body": {"namespace": "{{ namespace }}"}}
    assert config["ingest"] == {"method": "POST", "path": "/v1/namespaces/{{ namespace }}/memories",
                                "body": {"memories": "{{ records }}"},
                                "record": {"id": "{{ record.key }}", "content": "{{ record.text }}"}}
    assert config["search"]["path"] == "/v1/namespaces/{{ namespace }}/search"
    assert config["search"]["body"] == {"query": "{{ query }}", "limit": "{{ k }}"}
    assert config["search"]["result"] == "results[].{key: id, score: score, text: content}"
    assert config["erase"] == {"method": "DELETE", "path": "/v1/namespaces/{{ namespace }}"}
    assert state.namespaces == {}  # the probe and the smoke test cleaned up after themselves
    summary = run_with(tmp_path, capsys, "http_refmem")
    assert summary["overall_all"]["recall@1"] > 0.5  # the bag-of-words server finds the evidence
    assert state.namespaces == {}


def test_a_differently_shaped_api_one_note_per_request_and_a_get_search(tmp_path, capsys) -> None:
    server = notes_server.serve()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        code, out, config = init(tmp_path, capsys, "--url", url, "--name", "notes")
        assert code == 0 and "smoke test: passed" in out, out
        assert config["ingest_batch_size"] == 1 and "create" not in config
        assert config["ingest"]["body"] == {"userId": "{{ namespace }}", "noteId": "{{ records[0].key }}",
                                            "text": "{{ records[0].text }}"}
        assert config["search"] == {
            "method": "GET",
            "path": "/notes/search?userId={{ namespace | urlencode }}&q={{ query | urlencode }}&limit={{ k | urlencode }}",
            "result": "matches[].{key: noteId, text: text, score: similarity}"}
        assert config["erase"] == {"method": "DELETE", "path": "/users/{{ namespace }}/notes"}
        summary = run_with(tmp_path, capsys, "notes")
        assert summary["overall_all"]["recall@1"] > 0.5
        assert server.notes == {}  # every history's notes deleted
    finally:
        server.shutdown()


def test_clear_errors_for_a_missing_url_and_a_document_that_is_not_openapi(tmp_path, capsys) -> None:
    assert cli_main(["arm", "init", "http"]) == 2
    assert "give the server's base URL with --url" in capsys.readouterr().err
    bad = tmp_path / "api.json"
    bad.write_text('{"swagger": "2.0"}')
    assert cli_main(["arm", "init", "http", "--url", "http://127.0.0.1:9", "--openapi", str(bad)]) == 2
    assert f"--openapi {bad}: not an OpenAPI document (no 'paths' object)" in capsys.readouterr().err


def test_an_unreadable_document_is_one_line_naming_where_and_why(tmp_path, capsys, memory) -> None:
    """A YAML syntax error or an HTTP error status is one line (line/column, status), no dump."""
    _, url = memory
    broken = tmp_path / "broken.yaml"
    broken.write_text("paths: [\n", encoding="utf-8")
    for source, reason in ((str(broken), "not valid JSON or YAML: line 2, column 1"),
                           (f"{url}/nope.json", "HTTP 404 Not Found")):
        assert cli_main(["arm", "init", "http", "--url", url, "--openapi", source]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--openapi {source}: cannot read it ({reason}" in err, err
        assert "give a file path or an http(s) URL" in err, err
    assert not (tmp_path / "conf").exists()


@pytest.mark.parametrize(("paths", "reason"), [
    ({"/x": 5}, "the entry is int, not an object"),
    ({"/x": {"post": 7}}, "post is int, not an object"),
    ({"/x": {"post": {"requestBody": 3}}}, "post.requestBody is int, not an object"),
    ({"/x": {"parameters": 4, "post": {}}}, "parameters is int, not a list"),
    ({"/x": {"post": {"requestBody": {"content": {"application/json": {"schema": {
        "properties": {"texts": {"type": "array", "items": 5}}}}}}}}},
     "post.requestBody schema.properties.texts.items is int, not an object"),
])
def test_a_malformed_paths_entry_is_one_line_naming_it(tmp_path, capsys, paths, reason) -> None:
    """An OpenAPI document whose parts are not the objects/lists the spec requires is one
    line naming the path and the part, never a traceback, and writes no config."""
    doc = tmp_path / "doc.yaml"
    doc.write_text(yaml.safe_dump({"paths": paths}), encoding="utf-8")
    assert cli_main(["arm", "init", "http", "--url", "http://127.0.0.1:9", "--openapi", str(doc),
                     "--out", str(tmp_path / "conf")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"paths['/x'] is malformed ({reason})" in err, err
    assert not (tmp_path / "conf").exists()


def test_a_server_without_a_search_operation_is_named(tmp_path, capsys) -> None:
    doc = tmp_path / "api.yaml"
    doc.write_text(yaml.safe_dump({"openapi": "3.1.0", "paths": {"/notes": {"post": {"requestBody": {"content": {
        "application/json": {"schema": {"type": "object", "properties": {"text": {"type": "string"}}}}}}}}}}))
    code = cli_main(["arm", "init", "http", "--url", "http://127.0.0.1:9", "--openapi", str(doc)])
    err = capsys.readouterr().err
    assert code != 0 and "no operation looks like searching; operations: POST /notes" in err, err


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def test_a_probe_answered_with_500_prints_the_notes_and_leaves_no_temporary_folder(tmp_path, capsys,
                                                                                monkeypatch) -> None:
    """The probe's ingest gets HTTP 500: init stops in one line naming the status, the guesses it
    had made are printed (what to fix by hand), no config is written and no temporary folder is left."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(notes_server.NotesHandler, "do_POST", lambda self: self._send(500, {"detail": "boom"}))
    server = notes_server.serve()
    try:
        code = cli_main(["arm", "init", "http", "--out", str(tmp_path / "conf" / "arm"), "--url",
                         f"http://127.0.0.1:{server.server_address[1]}"])
    finally:
        server.shutdown()
    captured = capsys.readouterr()
    assert code == 2 and "500" in captured.err and "\n" not in captured.err.strip(), captured.err
    assert captured.out.startswith("note: ") and "ingest" in captured.out, captured.out
    assert not (tmp_path / "conf").exists() and list((tmp_path / "tmp").iterdir()) == []


def test_the_urls_query_goes_with_the_document_fetch_and_every_probe_request(tmp_path, capsys, memory) -> None:
    state, url = memory
    code, out, config = init(tmp_path, capsys, "--url", f"{url}/?api_key=k-Init-1")
    assert code == 0 and "smoke test: passed" in out, out
    assert config["base_url"] == f"{url}/?api_key=k-Init-1"  # written as given: the run sends it too
    assert state.paths and all("api_key=k-Init-1" in path for path in state.paths), state.paths
