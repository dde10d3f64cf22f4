"""memrun's public surface (memrun/__init__.py): what it exports, that it loads lazily, and
docs/api.md's session, executed as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import memrun

DOCS = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def test_exported_members():
    # Every name in __all__ resolves to an object memrun defines, and nothing else public shows.
    for name in memrun.__all__:
        value = getattr(memrun, name)
        if name != "__version__":
            assert value.__module__.startswith("memrun."), name
    public = {n for n in dir(memrun) if not n.startswith("_")}
    assert public == {n for n in memrun.__all__ if not n.startswith("_")}
    assert set(memrun.__all__) == {"__version__", *memrun._EXPORTS}
    assert {"run", "compare", "CompareRequest", "CompareOutcome", "read_run", "Arm", "Benchmark", "Judge",
            "Hit", "Record", "MemrunError"} <= set(memrun.__all__)


def test_an_unknown_name_is_an_attribute_error_and_submodules_still_import():
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        memrun.nosuch  # noqa: B018
    from memrun import cli  # a submodule, not an export

    assert cli.__name__ == "memrun.cli"


def test_importing_memrun_loads_no_submodule():
    # memrun.lazy only: the one home of deferred loading (its exports() is memrun's __getattr__)
    code = "import sys, memrun; print(sorted(m for m in sys.modules if m.startswith('memrun')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['memrun', 'memrun.lazy']"


def test_the_errors_are_one_tree():
    for name in memrun.__all__:
        value = getattr(memrun, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, memrun.MemrunError), name


def test_the_api_session_in_the_docs_runs_as_written(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)
    exec(compile("\n".join(blocks), str(DOCS), "exec"), {})  # noqa: S102 - the documented session itself
    out = capsys.readouterr().out
    assert "30 items; recall@1" in out and "wins/ties/losses" in out
    assert "refused: the runs are not comparable" in out and "error: runs/missing" in out
    assert (tmp_path / "runs" / "bm25" / "items.parquet").is_file()


@pytest.mark.parametrize("overrides", ["benchmark=synthetic", ["benchmark=synthetic", 3]])
def test_run_refuses_overrides_that_are_not_a_list_of_strings(overrides, tmp_path):
    """A str is a Sequence[str]: memrun.run("benchmark=synthetic") composed the overrides 'b', 'e', ...
    and said it could not parse the override 'b'."""
    import memrun

    with pytest.raises(memrun.ConfigError, match=r"overrides must be a list of 'key=value' strings"):
        memrun.run(overrides, out_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()
