"""Dataset resolution: data dir precedence, download from a loopback server, checksums."""

import hashlib
import re
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from memrun.benchmarks import download
from memrun.errors import DataError, DownloadError


@pytest.fixture
def served(tmp_path):
    """A loopback HTTP server serving tmp_path/www; yields (base_url, folder)."""
    www = tmp_path / "www"
    www.mkdir()
    handler = partial(SimpleHTTPRequestHandler, directory=str(www))
    handler.log_message = lambda *a, **k: None  # type: ignore[attr-defined]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", www
    server.shutdown()


def test_data_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv(download.ENV_DATA_DIR, str(tmp_path / "env"))
    assert download.data_dir(str(tmp_path / "cfg")) == tmp_path / "cfg"
    assert download.data_dir(None) == tmp_path / "env"
    monkeypatch.delenv(download.ENV_DATA_DIR)
    assert download.data_dir(None).name == "datasets"


def test_downloads_missing_file_and_checks_sha(served, tmp_path):
    base, www = served
    payload = b'[{"x": 1}]' * 1000
    (www / "data.json").write_bytes(payload)
    sha = hashlib.sha256(payload).hexdigest()
    folder = tmp_path / "cache"
    path, digest = download.resolve("data.json", url=f"{base}/data.json", sha256=sha, folder=folder)
    assert path == folder / "data.json" and path.read_bytes() == payload and digest == sha
    # second call reads the local copy (the server no longer has it)
    (www / "data.json").unlink()
    assert download.resolve("data.json", url=f"{base}/data.json", sha256=sha, folder=folder)[0] == path


def test_download_with_wrong_sha_keeps_nothing(served, tmp_path):
    base, www = served
    (www / "data.json").write_bytes(b"tampered")
    folder = tmp_path / "cache"
    with pytest.raises(DownloadError, match="expected 0000"):
        download.resolve("data.json", url=f"{base}/data.json", sha256="0" * 64, folder=folder)
    assert not folder.exists() or list(folder.iterdir()) == []


def test_offline_error_names_file_address_sha_and_folder(tmp_path):
    url = "http://127.0.0.1:9/locomo10.json"
    with pytest.raises(DownloadError) as err:
        download.resolve("locomo10.json", url=url, sha256="ab" * 32, folder=tmp_path)
    msg = str(err.value)
    assert "\n" not in msg
    for needle in ("locomo10.json", url, "ab" * 32, str(tmp_path), "MEMRUN_DATA_DIR"):
        assert needle in msg
    assert not (tmp_path / "locomo10.json.part").exists()


def test_a_relative_data_folder_is_shown_resolved(tmp_path, monkeypatch):
    """MEMRUN_DATA_DIR=../shared/datasets copied from a README means nothing from another folder:
    the error says where it pointed."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DownloadError, match=re.escape(f"not in ../nowhere (that is {tmp_path.parent / 'nowhere'})")):
        download.resolve("locomo10.json", url="http://127.0.0.1:9/locomo10.json", sha256=None, folder=Path("../nowhere"))
    with pytest.raises(DataError, match=re.escape(f"not in data (that is {tmp_path / 'data'}) and the config names no url")):
        download.resolve("locomo10.json", url=None, sha256=None, folder=Path("data"))


def test_failed_download_creates_no_folder(tmp_path):
    folder = tmp_path / "not" / "yet"
    with pytest.raises(DownloadError):
        download.resolve("x.json", url="http://127.0.0.1:9/x.json", sha256=None, folder=folder)
    assert not (tmp_path / "not").exists()


def test_http_404_is_a_download_error(served, tmp_path):
    base, _ = served
    with pytest.raises(DownloadError, match="404") as err:
        download.resolve("nope.json", url=f"{base}/nope.json", sha256=None, folder=tmp_path)
    assert "\n" not in str(err.value)


def test_explicit_path_must_exist(tmp_path):
    with pytest.raises(DataError, match="is a folder"):
        download.resolve("x.json", url=None, sha256=None, folder=tmp_path, path=str(tmp_path))
    with pytest.raises(DataError, match="benchmark.path=.*no such file"):
        download.resolve("x.json", url=None, sha256=None, folder=tmp_path, path=str(tmp_path / "missing.json"))
    f = tmp_path / "mine.json"
    f.write_text("[]")
    assert download.resolve("x.json", url=None, sha256=None, folder=Path("/nonexistent"), path=str(f))[0] == f


def test_two_processes_downloading_one_file_leave_one_valid_file(served, tmp_path):
    """Two processes resolve the same missing file from a loopback server at once: one valid
    file, no temporary or lock file left."""
    import subprocess
    import sys

    base, www = served
    payload = bytes(range(256)) * 40_000  # 10 MB: the two downloads overlap
    (www / "big.json").write_bytes(payload)
    sha = hashlib.sha256(payload).hexdigest()
    folder = tmp_path / "cache"
    code = ("import sys; from pathlib import Path; from memrun.benchmarks import download; "
            "print(download.resolve('big.json', url=sys.argv[1], sha256=sys.argv[2], folder=Path(sys.argv[3]))[1])")
    procs = [subprocess.Popen([sys.executable, "-c", code, f"{base}/big.json", sha, str(folder)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert [o[0].strip() for o in outs] == [sha, sha]
    assert (folder / "big.json").read_bytes() == payload
    assert sorted(p.name for p in folder.iterdir()) == ["big.json"]
