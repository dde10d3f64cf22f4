"""``memrun arm init mcp [--name N] [--out DIR] [--env K=V] (--url URL | -- COMMAND ARGS...)``
and ``memrun arm init http --url BASE [--openapi FILE|URL] [--auth-token-env VAR] [--name N] [--out DIR]``.

mcp: connects to an MCP memory server, lists its tools and proposes ``ingest``/``search``/
``erase`` mappings (:mod:`memrun.arms.mcp_guess`). http: reads the server's OpenAPI
document (default ``BASE/openapi.json``) and proposes ``create``/``ingest``/``search``/
``erase``/``health`` requests (:mod:`memrun.arms.openapi_guess`). Both then store three
records and search for one record's word to read the real answer's shape (the
``search.result`` path comes from it), write ``<out>/<name>.yaml`` (default ``conf/arm``)
with a comment on every guess, and run the three-record smoke test through the arm built
from that file: ingest, search for one record's word, expect that record back. Exit 0
when the smoke test passes, 1 when it does not (the file is written either way, to be
fixed by hand).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import yaml

from memrun.arms import mcp_probe, openapi_guess
from memrun.arms.contract import arm_hooks
from memrun.arms.http_templates import JsonTemplate, Operation, encode_body
from memrun.arms.mcp_client import McpSession, ServerSpec, ToolError
from memrun.arms.mcp_guess import create_result, propose, result_path
from memrun.arms.mcp_ops import ToolOperation, result_document
from memrun.commands.usage import Parser
from memrun.core.paths import conf_dir
from memrun.core.url_join import join_url, root_url_error
from memrun.errors import ArmError, ConfigError, MemrunError
from memrun.lazy import lazy
from memrun.records import Record

if TYPE_CHECKING:
    from memrun.arms import http as arms_http
    from memrun.arms import mcp as arms_mcp
else:
    arms_http = lazy("memrun.arms.http")
    arms_mcp = lazy("memrun.arms.mcp")

SMOKE = [Record("smoke:1", "Ann adopted a grey cat named Pixel", None, "s1"),
         Record("smoke:2", "Ben bought a red bicycle in Lisbon", None, "s1"),
         Record("smoke:3", "Carla plays the cello on Sundays", None, "s1")]
SMOKE_QUERY, SMOKE_KEY = "cello", "smoke:3"


def _parser() -> Parser:
    parser = Parser(
        prog="memrun arm init", description="Write a starter arm config from a server.",
        usage="memrun arm init mcp [options] (--url URL | -- COMMAND ARGS...)\n"
              "       memrun arm init http --url BASE [--openapi FILE|URL] [options]")
    parser.add_argument("kind", choices=["mcp", "http"], help="the arm kind: mcp, or http (from an OpenAPI document)")
    parser.add_argument("--url", help="mcp: a streamable HTTP endpoint (instead of a command after --); "
                                      "http: the server's base URL")
    parser.add_argument("--openapi", help="http: the OpenAPI document, a file or URL (default: <url>/openapi.json)")
    parser.add_argument("--auth-token-env", help="http: variable holding the server's token (sent as Bearer)")
    parser.add_argument("--name", help="the arm's name and file name (default: from the server's name)")
    parser.add_argument("--out", default="conf/arm", help="folder of the written config (default conf/arm)")
    parser.add_argument("--env", action="append", default=[], metavar="K=V",
                        help="environment for the server, e.g. 'MEMORY_FILE_PATH={{ namespace_dir }}/m.jsonl'")
    parser.add_argument("--force", action="store_true", help="overwrite an existing file")
    return parser


def main(argv: Sequence[str]) -> int:
    """``memrun arm init ...``; see the module docstring."""
    argv = list(argv)
    parser = _parser()
    if argv[:1] != ["init"]:
        raise parser.usage_error(f"expected init, got {argv[0]!r}" if argv else "expected init (memrun arm init mcp|http)")
    command: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1 :]
    args = parser.parse_args(argv[1:])
    if args.kind == "http":
        if command or not args.url:
            raise parser.usage_error("http: give the server's base URL with --url (and --openapi FILE|URL when the "
                                     "document is not at <url>/openapi.json)")
        return _init_http(args, command)
    if bool(command) == bool(args.url):
        raise parser.usage_error("mcp: give the server's command after -- or --url URL")
    env = dict(item.split("=", 1) for item in args.env if "=" in item)
    config = {"command": command[0] if command else None, "args": command[1:], "env": env, "url": args.url}
    notes: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="memrun-arm-init-"))
    try:
        try:
            handed: dict[str, Path] = {}
            try:
                proposal, name = asyncio.run(_propose(config, args.name, folder, notes, handed))
            except (ToolError, ValueError) as exc:
                raise ArmError(f"memrun arm init: {exc}; write the config by hand (docs/arms.md)") from exc
            config.update(isolate(config, proposal, folder, notes, handed))
            proposal.update(pin_build(config["command"], proposal.pop("_handshake"), notes))
        except MemrunError:
            print_notes(notes)  # what was learnt before it stopped: the config to write by hand needs it
            raise
        # the smoke test's server runs in a sandbox of its own too: its records never reach the user's store
        smoke_box = None if args.url else mcp_probe.sandbox(folder / "smoke", {})
        return _write_and_smoke(args, "mcp", name, {**{k: v for k, v in config.items() if v}, **proposal}, notes,
                                smoke_box)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def print_notes(notes: list[str]) -> None:
    """The guesses so far, one line each (printed when init stops before writing a file)."""
    for note in notes:
        print(f"note: {note}")


def isolate(config: dict[str, Any], proposal: dict[str, Any], folder: Path, notes: list[str],
            handed: dict[str, Path] | None = None) -> dict[str, Any]:
    """The keys that give each history its own store in the run: nothing when the server
    erases a namespace or the command already names ``{{ namespace_dir }}``; else a path it was
    handed that the probe server wrote (:func:`memrun.arms.mcp_probe.handed_paths_written`), or
    the storage path it wrote in ``folder`` (:func:`memrun.arms.mcp_probe.isolation_from`), under
    ``{{ namespace_dir }}``. Raises ArmError (one line: what to add) when there is none."""
    if "erase" in proposal or "namespace_dir" in str({k: config[k] for k in ("args", "env")}):
        return {}
    written = mcp_probe.handed_paths_written(handed or {})
    if written:
        notes.append("isolation: a fresh server per history, its store " + ", ".join(
            f"{old} -> {new}" for old, new in written.items()) + " (the path it was given and wrote to)")
        return {"args": [written.get(a, a) for a in config["args"]],
                "env": {k: written.get(v, v) for k, v in config["env"].items()}}
    found = mcp_probe.isolation_from(folder, config["env"])
    if found is None:
        raise ArmError(
            "memrun arm init: isolation: the server has no tool that erases a namespace and kept the smoke "
            "records in no path memrun gave it (a storage variable, its working folder, HOME), so the run "
            "could not give each history its own store; add its storage path under {{ namespace_dir }}: "
            "--env VAR='{{ namespace_dir }}/store' or '{{ namespace_dir }}' in its arguments, and run init again"
        )
    env, cwd = found
    where = ", ".join(f"{k}={v}" for k, v in env.items()) or f"cwd={cwd}"
    notes.append(f"isolation: a fresh server per history, its store at {where} (the path the probe server "
                 "wrote to)")
    return {"env": {**config["env"], **env}, **({"cwd": cwd} if cwd else {})}


def pin_build(command: str | None, handshake: dict[str, str], notes: list[str]) -> dict[str, Any]:
    """``server_build`` for the config when the installed package names the server better than
    its handshake (a framework's version there); a note either way."""
    said = f"{handshake.get('name', '?')} {handshake.get('version', '?')}"
    package = mcp_probe.server_package(command)
    framework = mcp_probe.framework_version(command)
    if package is None:
        if framework and handshake.get("version") == framework:
            notes.append(f"server_build: the handshake says {said!r}, whose version is the MCP framework's "
                         f"({framework}), not the server's; set server_build to the server's own name and version")
        else:
            notes.append(f"server_build: {said!r} from the handshake (no installed package found for the command)")
        return {}
    build = f"{package[0]} {package[1]}"
    if handshake.get("version") == package[1]:
        notes.append(f"server_build: {said!r} from the handshake, the installed package {build}")
        return {}
    why = f"the MCP framework's ({framework})" if framework and handshake.get("version") == framework else "not its own"
    notes.append(f"server_build: {build} (the installed package); the handshake's {said!r} has a version that is {why}")
    return {"server_build": build}


def _write_and_smoke(args: argparse.Namespace, kind: str, name: str, config: dict[str, Any], notes: list[str],
                     smoke_box: tuple[dict[str, str], str] | None = None) -> int:
    path = Path(args.out) / f"{name}.yaml"
    if path.exists() and not args.force:
        raise ConfigError(f"{path} exists; pass --force to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_yaml(kind, name, config, notes, run_command(path, name)))
    print(f"wrote {path}" + (f" ({len(notes)} guesses, marked GUESSED)" if notes else ""))
    print_notes(notes)
    ok, message = smoke_test(path, kind, smoke_box)
    print(f"smoke test: {message}")
    if ok:
        print(run_command(path, name))  # the last line: what to run
    else:
        print(f"fix {path} (the notes above say what was guessed), then: {run_command(path, name)}")
    return 0 if ok else 1


def run_command(path: Path, name: str) -> str:
    """The command that runs the written config on LoCoMo."""
    return f"memrun --config-dir {path.parent.parent.as_posix() or '.'} arm={name} benchmark=locomo"


def _init_http(args: argparse.Namespace, command: list[str]) -> int:
    """``memrun arm init http``: propose from the OpenAPI document, probe, write, smoke-test
    (``args.url`` given, no command after ``--``: :func:`main` checked)."""
    base = args.url  # its query (?api_key=) goes with every request: join_url
    if problem := root_url_error(base, "--url"):
        raise ArmError(problem)
    document = openapi_guess.load_document(args.openapi or join_url(base, "openapi.json"))
    notes: list[str] = []
    try:
        proposal, notes = openapi_guess.propose(document)
        result = _probe_http(base, proposal, args.auth_token_env)
    except (ValueError, httpx.HTTPError, ArmError) as exc:
        print_notes(notes)  # the guesses made before the probe failed: what to fix by hand
        raise ArmError(f"memrun arm init http: {_probe_failure(exc)}; write the config by hand (docs/arms.md)") from exc
    if result is None:
        notes.append("search.result: no record key found in the answer; set it")
    proposal["search"]["result"] = result or "TODO"
    if "erase" not in proposal:
        proposal["keep_namespaces"] = True
    title = str((document.get("info") or {}).get("title") or "server")
    name = args.name or re.sub(r"[^A-Za-z0-9_]+", "_", f"http_{title}").strip("_").lower()
    config = {"base_url": args.url, **({"auth_token_env": args.auth_token_env} if args.auth_token_env else {}),
              **proposal}
    return _write_and_smoke(args, "http", name, config, notes)


def _probe_failure(exc: Exception) -> str:
    """One line for a failed probe: an HTTP error status as the request, the status and the
    start of the server's answer (httpx's own message runs over two lines)."""
    if isinstance(exc, httpx.HTTPStatusError):
        request, response = exc.request, exc.response
        body = " ".join(response.text.split())[:200]
        return (f"the probe's {request.method} {request.url.path} got HTTP {response.status_code} "
                f"{response.reason_phrase}" + (f": {body}" if body else ""))
    return " ".join(str(exc).split())


def _probe_http(base: str, proposal: dict[str, Any], token_env: str | None) -> str | None:
    """Create a probe namespace, store the smoke records, search, erase; the JMESPath that
    maps the real answer to hits (None when no record key is in it)."""
    headers = {"Authorization": f"Bearer {os.environ.get(token_env, '')}"} if token_env else {}
    context: dict[str, Any] = {"namespace": "memrun-init-probe", "history_id": "probe", "flags": {}}
    ops = {n: Operation(n, {**proposal[n], "result": None}) for n in ("create", "ingest", "search", "erase")
           if n in proposal}
    with httpx.Client(headers=headers, timeout=30) as client:
        def send(op: Operation, **extra: Any) -> httpx.Response:
            ctx = {**context, **extra}
            body = encode_body(op.body.render(**ctx) if op.body else None, op.encoding, f"arm.{op.name}")
            response = client.request(op.method, join_url(base, str(op.path.render(**ctx))), **body)
            response.raise_for_status()
            return response

        if "create" in ops:
            send(ops["create"])
        rows = [{"key": r.key, "text": r.text, "timestamp": r.timestamp, "session": r.session, "index": i}
                for i, r in enumerate(SMOKE)]
        ingest = ops["ingest"]
        rendered = [ingest.record.render(**context, record=r) for r in rows] if ingest.record else rows
        size = int(proposal.get("ingest_batch_size") or len(rendered))
        for start in range(0, len(rendered), size):
            send(ingest, records=rendered[start:start + size])
        answer = send(ops["search"], query=SMOKE_QUERY, k=3).json()
        if "erase" in ops:
            send(ops["erase"])
    return result_path(answer, {r.key for r in SMOKE}, {r.text for r in SMOKE})


def _rendered_spec(config: dict[str, Any], folder: Path) -> ServerSpec:
    server = JsonTemplate({"args": config["args"], "env": config["env"]}, "arm").render(namespace_dir=str(folder))
    return ServerSpec(command=config["command"], args=server["args"], env=server["env"], url=config["url"])


def _wrote_elsewhere(folder: Path, before: tuple[dict[str, float], set[int]], roots: list[tuple[Path, int]]) -> list[str]:
    """What the probe server wrote outside its sandbox ``folder``: files it holds open for
    writing, entries created under ``roots`` since ``before`` (:mod:`memrun.arms.mcp_probe`)."""
    return sorted(set(mcp_probe.files_open_for_writing(folder, before[1]))
                  | set(mcp_probe.changes(before[0], mcp_probe.snapshot(roots, folder))))


async def _propose(config: dict[str, Any], name: str | None, folder: Path, notes: list[str],
                   handed: dict[str, Path]) -> tuple[dict[str, Any], str]:
    """Connect (a stdio server inside the sandbox in ``folder``, every path it is handed swapped
    for one there: ``handed``), guess the operations, store the smoke records and read a real
    search answer; the proposal holds ``_handshake`` (the server's name and version as it said
    them). Refuses (ArmError) before storing anything when the smoke records could only go
    into a store memrun cannot isolate or erase: a server at a URL without an erase tool, or
    one that wrote outside its sandbox as it started."""
    args, env = config["args"], config["env"]
    if config["command"]:
        args, env, found = mcp_probe.sandbox_paths(folder, config["args"], config["env"])
        handed.update(found)
    spec = _rendered_spec({**config, "args": args, "env": env}, folder / "store")
    roots = mcp_probe.watched_roots(handed)
    before = (mcp_probe.snapshot(roots, folder), mcp_probe.child_processes()) if spec.command else ({}, set())
    if spec.command:
        env, cwd = mcp_probe.sandbox(folder, dict(spec.env))
        spec = ServerSpec(command=spec.command, args=spec.args, env=env, url=None, cwd=config.get("cwd") or cwd)
    session = await McpSession.open(spec, 30, 120)
    try:
        ops, guessed = propose(session.tools)
        notes += guessed
        if config["url"] and "erase" not in ops:
            raise ArmError(f"memrun arm init: the server at {config['url']} has no tool that erases a namespace "
                           "(a project, user or collection argument), so the smoke records would stay in its store; "
                           "start it over stdio (memrun arm init mcp -- COMMAND) to get a fresh server per "
                           "history, or write the config by hand (docs/arms.md)")
        elsewhere = _wrote_elsewhere(folder, before, roots) if spec.command else []
        if elsewhere and "erase" not in ops:
            raise ArmError(f"memrun arm init: as it started, the server wrote {', '.join(elsewhere[:3])}, outside "
                           "the folders memrun gave it, and has no tool that erases a namespace, so the smoke "
                           "records would stay in a store memrun did not create; none was stored. Point its store "
                           "at '{{ namespace_dir }}' (--env VAR='{{ namespace_dir }}/store' or in its arguments) "
                           "and run init again")
        namespace = "memrun-init-probe"
        ingest = ToolOperation("ingest", ops["ingest"])
        rows = [{"key": r.key, "text": r.text, "timestamp": r.timestamp, "session": r.session, "index": i}
                for i, r in enumerate(SMOKE)]
        context: dict[str, Any] = {"namespace": namespace, "namespace_id": namespace, "history_id": "probe",
                                   "flags": {}}
        if "create" in ops:  # a namespace the server makes (and may name): in the sandbox's folder
            (folder / "created").mkdir(exist_ok=True)
            created = await session.call(ops["create"]["tool"], ToolOperation("create", ops["create"]).render(
                {**context, "namespace_dir": str(folder / "created" / namespace)}), "arm.create")
            if "namespace_id" in str([ops["ingest"], ops["search"]]):  # the later calls name it by the server's id
                context["namespace_id"] = create_result(ops["create"], result_document(created), namespace, notes)
        rendered = [ingest.record.render(**context, record=r) for r in rows] if ingest.record else rows
        calls = [{**context, "record": r, "records": [r]} for r in rendered] if ingest.per_record else \
                [{**context, "records": rendered}]
        try:
            for call in calls:
                await session.call(ingest.tool, ingest.render(call), "arm.ingest")
            search = ToolOperation("search", {**ops["search"], "result": "@"})
            answer = await session.call(search.tool, search.render({**context, "query": SMOKE_QUERY, "k": 3,
                                                                    "flags": {}}), "arm.search")
        finally:
            if "erase" in ops:  # the probe namespace goes whatever happened
                await session.call(ops["erase"]["tool"], ToolOperation("erase", ops["erase"]).render(context),
                                   "arm.erase")
        elsewhere = _wrote_elsewhere(folder, before, roots) if spec.command and "erase" not in ops else []
        if elsewhere:
            raise ArmError(f"memrun arm init: the server stored the smoke records outside the folders memrun gave "
                           f"it ({', '.join(elsewhere[:3])}); remove them from there, point its store at "
                           "'{{ namespace_dir }}' (--env VAR='{{ namespace_dir }}/store' or in its arguments) and run "
                           "init again")
        document = result_document(answer)
        path = result_path(document, {r.key for r in SMOKE}, {r.text for r in SMOKE})
        if path is None:
            notes.append(f"search.result: no record key found in the answer ({str(document)[:120]}); set it")
            path = "TODO"
        ops["search"]["result"] = path
        handshake = dict(session.server_info)
        server = handshake.get("name") or "mcp_server"
    finally:
        await session.aclose()
    ops["_handshake"] = handshake
    return ops, name or default_name(server)


def default_name(server: str) -> str:
    """``mcp_<server name>``, with ``_init`` added when memrun ships a config of that name
    (``mcp_logbook``): the built-in one would be composed instead of the file written."""
    name = re.sub(r"[^A-Za-z0-9_]+", "_", f"mcp_{server}").strip("_").lower()
    return f"{name}_init" if (conf_dir() / "arm" / f"{name}.yaml").exists() else name


def render_yaml(kind: str, name: str, config: dict[str, Any], notes: list[str], command: str | None = None) -> str:
    """The config file: the arm's schema as its default, the values, a GUESSED comment per note."""
    source = "tool list" if kind == "mcp" else "OpenAPI document"
    head = [f"# Written by `memrun arm init {kind}` from the server's own {source}; check the guesses.",
            f"#   {command or f'memrun --config-dir conf arm={name} benchmark=locomo'}",
            *(f"# GUESSED: {n}" for n in notes), "defaults:"]
    if kind == "mcp":  # conf/arm/mcp.yaml holds nothing but the schema's defaults and top_k
        head += ["  - mcp", "  - _self_", ""]
    else:  # not conf/arm/http.yaml, whose operations are the reference API's
        head += ["  - /schema/arm/http@_here_", "  - _self_", "", "top_k: ${memrun_top_k:}"]
    body = yaml.safe_dump({"name": name, **config}, sort_keys=False, allow_unicode=True, width=110)
    return "\n".join(head) + "\n" + body


def smoke_test(path: Path, kind: str = "mcp", box: tuple[dict[str, str], str] | None = None) -> tuple[bool, str]:
    """Build ``arm=<kind>`` (mcp or http) from the written file, ingest the three records,
    search for one's word; (passed, what happened). ``box``: (environment, working folder) of
    a sandbox (:func:`memrun.arms.mcp_probe.sandbox`) the stdio server starts in, under the
    config's own ``env``."""
    config = yaml.safe_load(path.read_text())
    kwargs = {k: v for k, v in config.items() if k not in ("defaults", "name", "top_k")}
    if box is not None and kwargs.get("command"):
        kwargs["env"] = {**box[0], **(kwargs.get("env") or {})}
        kwargs.setdefault("cwd", box[1])
    if "erase" not in kwargs and "namespace_dir" not in str(kwargs):
        kwargs["keep_namespaces"] = True  # nothing to erase with: the smoke test still runs
    ledger = Path(tempfile.mkdtemp(prefix="memrun-arm-init-ledger-"))
    try:
        arm = (arms_mcp.McpArm if kind == "mcp" else arms_http.HttpArm)(**kwargs, ledger_dir=str(ledger))
    except ArmError as exc:
        return False, f"the arm does not start: {exc}"
    try:
        hits = asyncio.run(_ingest_and_search(arm))
    except Exception as exc:  # noqa: BLE001 - said in one line, the config is there to fix
        return False, f"FAILED: {type(exc).__name__}: {exc}"
    finally:
        arm.close()
        shutil.rmtree(ledger, ignore_errors=True)
    keys = [h.key for h in hits]
    if SMOKE_KEY in keys:
        return True, f"passed: searching {SMOKE_QUERY!r} found {SMOKE_KEY} (hits: {', '.join(keys)})"
    return False, f"FAILED: searching {SMOKE_QUERY!r} did not return {SMOKE_KEY} (hits: {keys or 'none'})"


async def _ingest_and_search(arm: Any) -> list[Any]:
    """The smoke records into history ``smoke``, then the smoke search, through the arm's own
    protocol: coroutines awaited (``arm=http``, ``arm=mcp``), synchronous calls made (a sequential arm)."""
    async def call(method: Any, *args: Any, **kwargs: Any) -> Any:
        result = method(*args, **kwargs)
        return await result if inspect.isawaitable(result) else result

    hooks = arm_hooks(arm)  # concurrent: several histories open at once, so search names its history
    try:
        await call(arm.ingest, "smoke", SMOKE)
        hits = await call(arm.search, SMOKE_QUERY, 3, **({"history_id": "smoke"} if hooks.concurrent else {}))
        if hooks.release is not None:
            await call(hooks.release, "smoke")
        return list(hits)
    finally:
        if hooks.disconnect is not None:
            await call(hooks.disconnect)
