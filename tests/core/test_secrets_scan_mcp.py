"""What memrun hands a stdio MCP server stays off disk and off the screen (memrun.core.masking).

Plants a distinct secret in each place a user hands a server one: a literal in
``arm.env``, a literal after a flag in ``arm.args``, a value behind ``${oc.env:NAME}`` in
``arm.env``, and the password and a query value of a URL among the arguments. Runs memrun as a user would
(the command line, caches inside the test's folder) through a run that completes, a
sweep, a server that fails at start echoing what it was given, a run stopped by SIGTERM,
and one killed with -9 (its ledger read while it is alive and after), then reads back
EVERY file under the run folders, the cache and the ledger, and everything printed, for
each value and its base64 and URL-encoded forms.
"""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest
import yaml

from conftest import memrun_exe, run_dirs, run_memrun
from core.test_secrets_scan import readable
from memrun.core.masking import command_label, mask_args
from memrun.core.redaction import LogRedactor, Redactor, check_no_secrets, redact_config, redact_override

TESTS = Path(__file__).resolve().parent.parent
SERVER = TESTS / "servers" / "mcp_server.py"
ENV_SECRET = "envlit-Q7w2e9r4t6y1"
ARG_SECRET = "argtok-Z3x8c5v1b7n2"
OC_SECRET = "ocenv-K4j9h2g6f1d8"
URL_SECRET = "urlpw-M5n1b8v3c6x9"
QUERY_SECRET = "urlq-T2r7e4w9q1a6"
PLANTED = (ENV_SECRET, ARG_SECRET, OC_SECRET, URL_SECRET, QUERY_SECRET)
SLOW_S = 1.0  # seconds each tool call of the stopped runs' server sleeps (stopped_run)
FORMS = {v: (v, base64.b64encode(v.encode()).decode().rstrip("="), quote(v, safe="")) for v in PLANTED}


def leaks(roots: list[Path], printed: list[str]) -> list[str]:
    """Where a planted value (or its base64 or URL-encoded form) appears."""
    found = []
    files = [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file()]
    assert files, roots
    for path in files:
        for blob in readable(path):
            found += [f"{path}: {v} ({form})" for v, forms in FORMS.items() for form in forms if form.encode() in blob]
    for i, text in enumerate(printed):
        found += [f"output {i}: {v}" for v, forms in FORMS.items() for form in forms if form in text]
    return sorted(set(found))


def arm(tmp_path: Path, *more: str) -> list[str]:
    return ["arm=mcp_testmem", f"hydra.searchpath=[file://{TESTS / 'servers' / 'conf'}]", f"arm.command={sys.executable}",
            f"arm.args=[{SERVER},--token,{ARG_SECRET},'http://admin:{URL_SECRET}@127.0.0.1:9/?api_key={QUERY_SECRET}']",
            f"+arm.env.MEMSRV_AUTH={ENV_SECRET}", "+arm.env.MEMSRV_KEY='${oc.env:MEMSRV_OC}'",
            "+arm.env.MCP_TEST_ECHO=1", f"arm.ledger_dir={tmp_path / 'ledger'}", *more]


def environment(tmp_path: Path, **more: str) -> dict[str, str]:
    return {"XDG_CACHE_HOME": str(tmp_path / "xdg-cache"), "MEMRUN_TESTS_DIR": str(TESTS), "MEMSRV_OC": OC_SECRET,
            "MEMRUN_PROGRESS_SECONDS": "0.2", **more}


def stopped_run(tmp_path: Path, work: Path, folder: str, how: signal.Signals) -> tuple[str, str, str]:
    """A slow run started, its ledger read once it holds a namespace, then stopped by ``how``:
    (its ledger's text while alive, stdout, stderr).

    The server's slowness goes through ``arm.env``: a stdio server inherits only the MCP
    SDK's short list of variables (HOME, PATH, ...), not memrun's environment. Set there, it
    never reached the server, the whole run took ~1.5 s, and on a loaded machine the -9 came
    after the run had erased its namespaces and removed its ledger."""
    env = {**os.environ, **environment(tmp_path)}
    proc = subprocess.Popen([*memrun_exe(), *arm(tmp_path, "progress=false", f"hydra.run.dir={work / folder}",
                                                 f"+arm.env.MCP_TEST_SLOW_S={SLOW_S}")],
                            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ledger = ""
    deadline = time.monotonic() + 120
    while not ledger and time.monotonic() < deadline and proc.poll() is None:
        ledger = "".join(p.read_text() for p in (tmp_path / "ledger").glob("*.json"))
        time.sleep(0.1)
    assert ledger, "the run wrote no ledger"
    time.sleep(0.5)  # inside the first ingest: the run far from its end (then 30 searches of 1 s, 16 at a time)
    proc.send_signal(how)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == (130 if how == signal.SIGTERM else -9), err
    return ledger, out, err


@pytest.mark.slow
def test_what_a_stdio_server_is_handed_reaches_no_file_and_no_output(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    printed: list[str] = []

    # A run that completes: the saved config keeps names, spellings and a fingerprint.
    done = run_memrun([*arm(tmp_path), "progress=false"], work, environment(tmp_path))
    printed += [done.stdout, done.stderr]
    assert done.returncode == 0, done.stderr
    (run,) = run_dirs(work / "outputs")
    saved = yaml.safe_load((run / ".hydra" / "config.yaml").read_text())["arm"]
    assert saved["env"]["MEMSRV_AUTH"] == "***" and saved["env"]["MEMSRV_KEY"] == "${oc.env:MEMSRV_OC}"
    assert saved["args"] == [str(SERVER), "--token", "***", "http://***@127.0.0.1:9/?api_key=***"]  # path, positionals readable
    from memrun.io.reader import read_run
    config = read_run(run).instrument.config["arm"]
    assert config["env"]["MEMSRV_KEY"] == "${oc.env:MEMSRV_OC}" and config["masked_fingerprint"].startswith("pbkdf2:")

    # A sweep over two concurrency levels: Hydra's multirun.yaml and the launcher's lines.
    done = run_memrun(["-m", *arm(tmp_path), "arm.concurrency=1,4", "progress=false"], work, environment(tmp_path))
    printed += [done.stdout, done.stderr]
    assert done.returncode == 0, done.stderr

    # A server that fails at start after echoing its arguments and variables: quoted in the error line.
    done = run_memrun([*arm(tmp_path), "+arm.env.MCP_TEST_FAIL_START=refusing to start"], work, environment(tmp_path))
    printed += [done.stdout, done.stderr]
    # (its message is a value of arm.env too, so it is masked as well)
    assert done.returncode == 2 and "MEMSRV_AUTH=*** | mcp test server: MEMSRV_KEY=***" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr

    # Stopped by SIGTERM, and killed with -9 (its ledger stays), then a run that erases what it left.
    for folder, how in (("term", signal.SIGTERM), ("killed", signal.SIGKILL)):
        ledger, out, err = stopped_run(tmp_path, work, folder, how)
        printed += [ledger, out, err]
    assert list((tmp_path / "ledger").glob("*.json")), "a killed run leaves its ledger"
    printed += ["".join(p.read_text() for p in (tmp_path / "ledger").glob("*.json"))]
    # the stopped runs' server (its variables are part of what names it in the ledger)
    done = run_memrun([*arm(tmp_path, f"+arm.env.MCP_TEST_SLOW_S={SLOW_S}"), "progress=false"], work,
                      environment(tmp_path))
    printed += [done.stdout, done.stderr]
    assert done.returncode == 0 and "left on" in done.stderr, done.stderr

    assert leaks([tmp_path], printed) == []


def test_values_after_flags_and_of_env_are_masked_and_spellings_kept():
    shown, masked = mask_args(["srv.py", "--token", "t1", "--db=/x", "pos", "-v", "-1", "--", "x"])
    assert shown == ["srv.py", "--token", "***", "--db=***", "pos", "-v", "***", "--", "***"]  # -1: a value
    assert masked == ["t1", "/x", "-1", "x"]
    assert command_label("srv", ["--token", "t1", "pos"]) == "srv --token *** pos"
    resolved = {"arm": {"args": ["--key", OC_SECRET, "--a", "b"], "env": {"A": ENV_SECRET, "B": OC_SECRET, "E": ""}}}
    spelling = {"arm": {"args": ["--key", "${oc.env:K}", "--a", "b"], "env": {"A": ENV_SECRET, "B": "${oc.env:K}", "E": ""}}}
    saved = redact_config(resolved, spelling, fingerprints=True)["arm"]
    assert saved["args"] == ["--key", "${oc.env:K}", "--a", "***"] and saved["env"] == {"A": "***", "B": "${oc.env:K}", "E": ""}
    other = redact_config({"arm": {**resolved["arm"], "env": {**resolved["arm"]["env"], "A": "other"}}}, spelling,
                          fingerprints=True)["arm"]
    assert other["masked_fingerprint"] != saved["masked_fingerprint"]  # a changed literal is a changed configuration
    assert redact_config(resolved, spelling, fingerprints=True)["arm"] == saved  # and the same one is the same
    # a variable named like a key, handed over with ${oc.env:...}, is accepted (it is never written resolved)
    assert check_no_secrets({"arm": {"env": {"OPENAI_API_KEY": "sk-test-loopback-0123456789abcdef"}}})


def test_overrides_log_lines_and_free_text():
    assert redact_override(f"+arm.env.X={ENV_SECRET}", {}) == "+arm.env.X=***"
    assert redact_override("arm.env.X=${oc.env:Y}", {}) == "arm.env.X=${oc.env:Y}"
    assert redact_override(f"arm.args=[a.py,--t,{ARG_SECRET},p]", {}) == "arm.args=[a.py,--t,***,p]"
    assert redact_override(f"arm.args.2={ARG_SECRET}", {}) == "arm.args.2=***"
    record = __import__("logging").LogRecord("hydra", 20, "", 0, f"#0 : arm=mcp +arm.env.A={ENV_SECRET} x", None, None)
    LogRedactor().filter(record)
    assert record.getMessage() == "#0 : arm=mcp +arm.env.A=*** x"
    redactor = Redactor([URL_SECRET])
    for form in FORMS[URL_SECRET]:
        assert redactor.text(f"sent {form}!") == "sent ***!"
