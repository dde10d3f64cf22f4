"""Issue 31, point 7: a server with one store for every history is refused unless the run
says so (``arm.isolation=shared``, a comparability field); ``keep_namespaces`` keeps
namespaces after a run and never makes one store safe to share."""

from __future__ import annotations

from pathlib import Path

import pytest

from arms.support import compose_run, run_in_process
from memrun.arms.mcp import McpArm
from memrun.config import ARM_RESERVED_KEYS
from memrun.core.plugins import build
from memrun.errors import ArmError
from memrun.io.reader import read_run

# the reference server's API with one fixed namespace: every history goes into "global"
GLOBAL = ["arm.create=null", "arm.erase=null", "arm.ingest.path=/v1/namespaces/global/memories",
          "arm.search.path=/v1/namespaces/global/search"]


def _arm(url: str, ledger: Path, *overrides: str) -> object:
    cfg = compose_run(["arm=http", f"arm.base_url={url}", f"arm.ledger_dir={ledger}", *overrides])
    return build(cfg.arm, ARM_RESERVED_KEYS, "arm")


def test_one_global_store_is_refused_and_keep_namespaces_does_not_let_it_through(memory, tmp_path) -> None:
    state, url = memory
    state.namespaces["global"], state.ready_at["global"] = [], []
    for extra in ([], ["arm.keep_namespaces=true"]):
        with pytest.raises(ArmError) as caught:
            _arm(url, tmp_path, *GLOBAL, *extra)
        message = str(caught.value)
        assert "do not both use {{ namespace }}" in message and "arm.isolation=shared" in message
        assert "keep_namespaces" not in message  # keeping namespaces is not sharing a store
    assert state.searches == [] and state.namespaces["global"] == []


def test_isolation_shared_runs_and_is_a_comparability_field(memory, tmp_path) -> None:
    state, url = memory
    state.namespaces["global"], state.ready_at["global"] = [], []
    shared, isolated = tmp_path / "shared", tmp_path / "isolated"
    run_in_process(["arm=http", f"arm.base_url={url}", f"arm.ledger_dir={tmp_path}", *GLOBAL,
                    "arm.isolation=shared"], shared)
    assert {s["namespace"] for s in state.searches} == {"global"} and state.namespaces["global"]
    run_in_process(["arm=http", f"arm.base_url={url}", f"arm.ledger_dir={tmp_path}"], isolated)
    a, b = read_run(shared).instrument, read_run(isolated).instrument
    assert a.isolation == "shared" and b.isolation == "per_history"
    assert [d.field for d in a.diff(b)] == ["isolation"]


def test_isolation_shared_on_a_server_that_isolates_is_refused(memory, tmp_path) -> None:
    _, url = memory
    with pytest.raises(ArmError, match="every history gets a store of its own"):
        _arm(url, tmp_path, "arm.isolation=shared")
    with pytest.raises(ArmError, match="arm.isolation='both': choose per_history"):
        _arm(url, tmp_path, "arm.isolation=both")


def test_an_mcp_server_without_namespace_or_namespace_dir_is_refused(tmp_path) -> None:
    with pytest.raises(ArmError) as caught:
        McpArm(command="true", ingest={"tool": "add", "arguments": {"records": "{{ records }}"}},
               search={"tool": "find", "arguments": {"query": "{{ query }}"}, "result": "hits"},
               keep_namespaces=True, ledger_dir=str(tmp_path))
    assert "{{ namespace_dir }} in arm.args/env/cwd" in str(caught.value)
    assert "keep_namespaces" not in str(caught.value)
