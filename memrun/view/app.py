"""``memrun view``: a local web app over a folder of runs (Starlette, served by uvicorn).

Pages (every one rendered by the templates ``memrun report`` uses, under
``memrun/report/templates``):

- ``/``: the runs table (:mod:`memrun.view.runs`); tick two runs to compare them (or see
  their flips), several of one benchmark to chart them (labelled by arm and the differing
  config keys); a run still writing shows as ``running`` with its progress, and the page
  reloads every :data:`REFRESH_S` seconds while one runs;
- ``/run/<path>``: a run's page (:func:`memrun.report.html.run_page.run_context`), each
  item linking to its drill-down;
- ``/item/<path>?id=<item id>``: an item's question, gold, retrieved records (gold
  marked), failure stage and, per repeat, the reader's and judges' prompts and replies
  (:mod:`memrun.view.calls`); ``j``/``k`` or the arrow keys step through the items;
- ``/compare?a=<path>&b=<path>[&treatment=<field>...][&metric=mrr...]``: the comparison, computed by
  ``memrun compare``'s code (:func:`memrun.report.html.compare_page.compare_context`) with its
  options as parameters (:data:`PAGE_OPTIONS`; every link the page makes keeps them; one it does
  not take is refused, not ignored), refusals with their reasons;
- ``/flips?a=<path>&b=<path>[&treatment=<field>...]`` (the same parameters): the items the two runs disagree on, B-wins first, each
  opening to what A and B retrieved (or answered) side by side, the gold marked
  (:mod:`memrun.report.html.flips_page`); filter by category and cluster;
- ``/chart?run=<path>&run=...``: several runs' headlines and per-category results with
  their 95% intervals (:func:`memrun.report.svg.arms_chart`, as on the sweep page).

Paths are relative to the served folder and must name a run folder the table lists.
The app reads run folders as they are: a reload lists new runs. It binds 127.0.0.1 only.
"""

from __future__ import annotations

import hashlib
import importlib
import socket
import threading
import traceback
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias
from urllib.parse import quote, urlencode

from memrun.core.instrument import NEVER_TREATMENTS
from memrun.core.paths import user_cache
from memrun.errors import MemrunError
from memrun.lazy import lazy
from memrun.view.runs import INSTRUMENT_COLUMNS, RunIndex, stamp

if TYPE_CHECKING:
    import uvicorn
    from starlette import applications as starlette_applications
    from starlette import middleware as starlette_middleware
    from starlette import requests as starlette_requests
    from starlette import responses as starlette_responses
    from starlette import routing as starlette_routing
    from starlette.middleware import trustedhost as middleware_trustedhost

    from memrun.io import reader as io_reader
    from memrun.io import writer as io_writer
    from memrun.report import model as report_model
    from memrun.report.html import common as html_common
    from memrun.report.html import compare_page as html_compare_page
    from memrun.report.html import flips_page as html_flips_page
    from memrun.report.html import run_page as html_run_page
    from memrun.report.html import sweep_page as html_sweep_page
    from memrun.view import calls as view_calls
    from memrun.view import item as view_item
else:
    starlette_responses = lazy("starlette.responses")
    html_common = lazy("memrun.report.html.common")
    html_run_page = lazy("memrun.report.html.run_page")
    html_compare_page = lazy("memrun.report.html.compare_page")
    html_flips_page = lazy("memrun.report.html.flips_page")
    html_sweep_page = lazy("memrun.report.html.sweep_page")
    view_item = lazy("memrun.view.item")
    starlette_applications = lazy("starlette.applications")
    starlette_middleware = lazy("starlette.middleware")
    middleware_trustedhost = lazy("starlette.middleware.trustedhost")
    starlette_requests = lazy("starlette.requests")
    starlette_routing = lazy("starlette.routing")
    uvicorn = lazy("uvicorn")
    io_reader = lazy("memrun.io.reader")
    io_writer = lazy("memrun.io.writer")
    report_model = lazy("memrun.report.model")
    view_calls = lazy("memrun.view.calls")

REFRESH_S = 3
"""Seconds between reloads of a page showing a run that is still running."""

CACHED_RUNS = 8
"""Runs whose rows and rebuilt requests stay in memory (an item's next/previous is then fast)."""

_Opened: TypeAlias = "tuple[list[int], io_reader.RunTable, dict[str, list[int]], view_calls.RunCalls | None]"
"""An opened run: its files' stamp, its table, item id -> row indices, its calls (built on first use)."""


class Runs:
    """The served folder's index, and the last :data:`CACHED_RUNS` runs opened (rows, requests)."""

    def __init__(self, root: Path, cache_file: Path | None = None) -> None:
        self.index = RunIndex(root, cache_file)
        self._open: OrderedDict[Path, _Opened] = OrderedDict()
        self._lock = threading.Lock()

    def opened(self, rel: str) -> tuple[Path, io_reader.RunTable, dict[str, list[int]]]:
        """(folder, RunTable, item id -> row indices in order) of run ``rel``, cached by mtime."""
        folder = self.index.folder(rel)
        with self._lock:
            current = list(stamp(folder))
            hit = self._open.get(folder)
            if hit is None or hit[0] != current:
                run = io_reader.read_run(folder)
                order: dict[str, list[int]] = {}
                for i, item_id in enumerate(run.table.column("item_id").to_pylist()):
                    order.setdefault(item_id, []).append(i)
                hit = (current, run, order, None)
                self._open[folder] = hit
                while len(self._open) > CACHED_RUNS:
                    self._open.popitem(last=False)
            self._open.move_to_end(folder)
            return folder, hit[1], hit[2]

    def calls(self, rel: str) -> view_calls.RunCalls:
        """The run's :class:`memrun.view.calls.RunCalls` (built on first use)."""
        folder, run, order = self.opened(rel)
        with self._lock:
            stamp, _, _, calls = self._open[folder]
            if calls is None:
                calls = view_calls.RunCalls(folder, run.instrument)
                self._open[folder] = (stamp, run, order, calls)
            return calls


def _html(body: str, status: int = 200) -> Any:
    return starlette_responses.HTMLResponse(body, status_code=status)


def _page(template: str, **context: Any) -> Any:
    return _html(html_common.render(template, app=True, **context))


def _error(message: str, status: int = 400) -> Any:
    return _html(_render_error(message), status)


def _render_error(message: str) -> str:
    return html_common.render("view_error.html.j2", title="memrun view: error", message=message, app=True)


def runs_page(runs: Runs) -> Any:
    """The runs table (rows embedded in the page: one request)."""
    rows = [dict(r) for r in runs.index.rows()]
    for r in rows:
        r["sel"] = r["path"]
        r["open"] = "/run/" + quote(r["path"]) if r.get("status") != "unreadable" else None
    optional = [c for c in INSTRUMENT_COLUMNS if any(r.get(c) is not None for r in rows)]
    running = sum(r.get("status") == "running" for r in rows)
    table = {
        "columns": [["sel", "", "check"], ["open", "run", "link", "open"], ["benchmark", "benchmark"], ["arm", "arm"],
                    ["axis", "axis"], ["status", "status", "label"]]
                   + ([["progress", "progress"]] if running else [])
                   + [["metric", "headline"],
                    ["value", "value", "interval"], ["items", "items", "num"], ["errors", "errors", "num"],
                    ["date", "date", "date"], ["commit", "commit"], ["path", "folder"]]
                   + [[c, c] for c in optional],
        "hidden": optional + ["path"],
        "filters": [["benchmark", "benchmark"], ["arm", "arm"], ["axis", "axis"], ["status", "status"]],
        "detail": [["path", "folder"], ["resumed_by", "rows taken over by"], ["error", "error"], ["run_id", "run id"]],
        "search": ["benchmark", "arm", "axis", "status", "metric", "path", "commit", *optional],
        "page": 100,
    }
    notes = [f"{running} run(s) still running: this page refreshes every {REFRESH_S} s while none is ticked"] \
        if running else []
    return _page("view_runs.html.j2", title=f"memrun view: {runs.index.root}", notes=notes, n_rows=len(rows),
                 refresh=REFRESH_S if running else None,
                 rows=html_common.embed_json(rows), table=html_common.embed_json(table), items_title="Runs")


def run_page(runs: Runs, rel: str) -> Any:
    """A run's page, as ``memrun report`` writes it, items linking to their drill-down."""
    folder, _, _ = runs.opened(rel)
    context = html_run_page.run_context(folder, item_link="/item/" + quote(rel) + "?id=")
    return _page("run.html.j2", **context, refresh=REFRESH_S if context.get("running") else None)


# memrun compare's options the /compare and /flips pages take as query parameters (``metric=mrr``,
# ``allow-noncomparable=1``): none names a file to read (--gate by name only, not a path).
PAGE_OPTIONS = ("metric", "cluster-by", "stratify-by", "categories", "allow-fake", "resamples", "seed", "gate",
                "treatment", "allow-noncomparable", "gate-min-delta", "gate-band", "max-error-share",
                "max-error-gap", "min-paired-share", "max-false-pass", "check-replications", "effect")
PAGE_FLAGS = frozenset({"allow-fake", "allow-noncomparable"})  # present when given 1, true or nothing
FLAG_ON = ("", "1", "true", "yes")
FLAG_OFF = ("0", "false", "no")


def compare_query(params: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The query parameters of a /compare or /flips request other than ``a`` and ``b``, in
    their order: memrun compare's options (:data:`PAGE_OPTIONS`), which the page applies and
    every link it makes keeps. An empty ``treatment`` is dropped. Raises MemrunError naming
    a parameter the pages do not take (it was ignored without a word), a flag's value that is
    neither on nor off (``allow-noncomparable=on`` was read as off), or a gate given as a path."""
    kept = []
    for name, value in params:
        if name in ("a", "b") or (name == "treatment" and not value):
            continue
        if name not in PAGE_OPTIONS:
            raise MemrunError(f"unknown parameter {name!r}: this page takes a, b and memrun compare's options "
                              f"{', '.join(PAGE_OPTIONS)} (e.g. metric=mrr)")
        if name in PAGE_FLAGS and value.lower() not in FLAG_ON + FLAG_OFF:  # allow-noncomparable=on was dropped
            raise MemrunError(f"{name}={value}: give {name}=1 (or true, yes, nothing) to pass --{name}, "
                              f"{name}=0 (or false, no) not to")
        if name == "gate" and ("/" in value or "\\" in value or value.endswith((".yaml", ".yml"))):
            raise MemrunError(f"gate={value}: the page takes a gate by name (conf/gates/NAME.yaml), not a file path")
        kept.append((name, value))
    return kept


def _options(query: Sequence[tuple[str, str]]) -> list[str]:
    """``query`` (:func:`compare_query`) as memrun compare's command-line options."""
    out: list[str] = []
    for name, value in query:
        if name in PAGE_FLAGS:
            out += [f"--{name}"] if value.lower() in FLAG_ON else []
        else:
            out += [f"--{name}", value]
    return out


def _link(path: str, a: str, b: str, query: Sequence[tuple[str, str]]) -> str:
    return f"{path}?" + urlencode([("a", a), ("b", b), *query])


def _both_runs(a: str, b: str) -> None:
    """MemrunError naming the run parameter left out of /compare or /flips (a hand-typed URL):
    it was read as the folder '', ': not a run folder'."""
    missing = [name for name, value in (("a", a), ("b", b)) if not value]
    if missing:
        raise MemrunError(f"give {' and '.join(missing)}: /compare and /flips take a=<run A> and b=<run B>, "
                          "each a run's path under the folder memrun view shows (e.g. /compare?a=bm25&b=dense)")


def compare_page(runs: Runs, a: str, b: str, query: Sequence[tuple[str, str]] = ()) -> Any:
    """``memrun compare A B [options]``'s figures and verdict, ``query``: the options as
    query parameters (:func:`compare_query`), kept by every link the page makes (refusals
    with their reasons; a refusal over fields a comparison may vary links to the same pair
    with them named as treatments)."""
    _both_runs(a, b)
    folder_a, folder_b = runs.index.folder(a), runs.index.folder(b)
    context = html_compare_page.compare_context(str(folder_a), str(folder_b), _options(query))
    differing = [r["field"] for r in context["comparability"] if r["state"] == "differs"]
    treat_link = None
    if differing and not set(differing) & set(NEVER_TREATMENTS):
        treat_link = {"href": _link("/compare", a, b, [*query, *[("treatment", f) for f in differing]]),
                      "fields": differing}
    return _page("compare.html.j2", **context, treat_link=treat_link, flips_link=_link("/flips", a, b, query))


def flips_page(runs: Runs, a: str, b: str, query: Sequence[tuple[str, str]] = ()) -> Any:
    """The items the two runs disagree on, B-wins first, each opening to a side-by-side
    (:mod:`memrun.report.html.flips_page`); ``query``: as for :func:`compare_page`."""
    _both_runs(a, b)
    folder_a, folder_b = runs.index.folder(a), runs.index.folder(b)
    context = html_flips_page.flips_context(str(folder_a), str(folder_b), _options(query),
                                            compare_link=_link("/compare", a, b, query))
    context["title"] = f"memrun flips: {a} vs {b}"
    return _page("flips.html.j2", **context)


def chart_page(runs: Runs, rels: list[str]) -> Any:
    """Several runs of one benchmark and axis: headlines and per-category intervals, and a table."""
    if len(rels) < 2:
        raise MemrunError("tick at least two runs to chart them")
    folders = [runs.index.folder(r) for r in rels]
    names = report_model.run_labels([io_reader.read_instrument(f) for f in folders])  # arm and config, not paths
    context = html_sweep_page.arms_context(folders, names, ["/run/" + quote(r) for r in rels])
    return _page("view_chart.html.j2", **context)


def item_page(runs: Runs, rel: str, item_id: str) -> Any:
    """One item of a run: see :mod:`memrun.view.item`."""
    folder, run, order = runs.opened(rel)
    if item_id not in order:
        raise MemrunError(f"{rel}: no item {item_id!r} in this run")
    ids = list(order)
    at = ids.index(item_id)
    prev_id, next_id = (ids[at - 1] if at else None), (ids[at + 1] if at + 1 < len(ids) else None)
    context = view_item.item_context(run, order[item_id], runs.calls(rel))
    return _page("view_item.html.j2", **context, rel=rel, position=f"{at + 1} of {len(ids)}",
                 prev=None if prev_id is None else "?" + urlencode({"id": prev_id}),
                 next=None if next_id is None else "?" + urlencode({"id": next_id}),
                 run_link="/run/" + quote(rel))


def index_cache(root: Path) -> Path:
    """Where the runs table of ``root`` is kept between sessions (memrun's user cache)."""
    digest = hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:16]
    return user_cache("view") / f"runs-{digest}.json"


LOCAL_HOSTS = ["127.0.0.1", "localhost"]
"""The Host headers memrun view answers (any other: 400), whatever the port."""


def build_app(root: Path, cache_file: Path | None = None) -> Any:
    """The Starlette application serving ``root``; ``cache_file``: see :class:`RunIndex`."""
    runs = Runs(root, cache_file)

    def guarded(handler: Any) -> Any:
        def endpoint(request: starlette_requests.Request) -> Any:
            try:
                return handler(request)
            except MemrunError as exc:
                return _error(str(exc), 404 if "not a run folder" in str(exc) or "no item" in str(exc) else 400)
            except Exception as exc:  # noqa: BLE001 - one page fails with its reason; the app serves on
                traceback.print_exc()  # on the terminal that started the view: the trace a bug report needs
                return _error(f"{request.url.path}: this page could not be built ({type(exc).__name__}: {exc}); a "
                              "file in the run folder may hold what memrun did not write (summary.json edited "
                              "or damaged?), or it is a bug in memrun view: the trace is on the terminal", 500)
        return endpoint

    route = starlette_routing.Route
    routes = [
        route("/", guarded(lambda r: runs_page(runs))),
        route("/run/{path:path}", guarded(lambda r: run_page(runs, r.path_params["path"]))),
        route("/item/{path:path}", guarded(lambda r: item_page(runs, r.path_params["path"], r.query_params.get("id", "")))),
        route("/compare", guarded(lambda r: compare_page(runs, r.query_params.get("a", ""), r.query_params.get("b", ""),
                                                         compare_query(r.query_params.multi_items())))),
        route("/flips", guarded(lambda r: flips_page(runs, r.query_params.get("a", ""), r.query_params.get("b", ""),
                                                     compare_query(r.query_params.multi_items())))),
        route("/chart", guarded(lambda r: chart_page(runs, r.query_params.getlist("run")))),
    ]
    # Only this machine's names for itself: a page elsewhere that rebinds its own host name
    # to 127.0.0.1 (DNS rebinding) must not read the runs through the user's browser.
    hosts = starlette_middleware.Middleware(middleware_trustedhost.TrustedHostMiddleware, allowed_hosts=LOCAL_HOSTS)
    app = starlette_applications.Starlette(routes=routes, middleware=[hosts])
    app.state.runs = runs
    return app


def bind(port: int = 0) -> socket.socket:
    """A listening socket on 127.0.0.1 (``port`` 0: a free one). Raises MemrunError when taken."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise MemrunError(f"memrun view: cannot listen on 127.0.0.1:{port} ({exc.strerror}); "
                          "choose another --port, or 0 for a free one") from None
    sock.listen(128)
    return sock


def server(root: Path, sock: socket.socket, cache_file: Path | None = None) -> Any:
    """A uvicorn server for :func:`build_app` on ``sock`` (call ``.run(sockets=[sock])``)."""
    config = uvicorn.Config(build_app(root, cache_file), log_level="warning", access_log=False, lifespan="off")
    return uvicorn.Server(config)


PAGES = ("view_runs.html.j2", "view_item.html.j2", "run.html.j2", "compare.html.j2", "view_chart.html.j2",
         "view_error.html.j2", "flips.html.j2")
"""The templates the app renders (compiled by :func:`warm_up`)."""


def warm_up() -> None:
    """Compile the page templates and import what an item's drill-down needs (seconds of
    imports), so the first page of each kind is quick. pyarrow is told pandas is absent for
    its type probes (:func:`memrun.io.writer.skip_pandas_probe`): the pages convert plain
    values, and the probe's import of pandas would cost the first comparison seconds."""
    io_writer.skip_pandas_probe()
    for name in PAGES:
        html_common.environment().get_template(name)
    for module in ("memrun.accuracy.setup", "memrun.accuracy.stage", "memrun.report.html.compare_page",
                   "memrun.report.html.flips_page", "memrun.comparison.flips", "memrun.commands.compare", "memrun.pipeline.run"):
        importlib.import_module(module)
