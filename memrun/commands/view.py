"""``memrun view [DIR] [--port N]``: browse the runs under DIR (default ``outputs/``) in a
local web app (:mod:`memrun.view.app`), bound to 127.0.0.1 only; ``--port 0`` (the
default) takes a free port. The address is printed; Ctrl-C stops the server (exit 0).
Needs the ``view`` extra (``pip install 'memrun[view]'``: starlette, uvicorn)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memrun.commands.usage import Parser
from memrun.errors import MemrunError
from memrun.lazy import lazy, loaded

if TYPE_CHECKING:
    from memrun.view import app as view_app
else:
    view_app = lazy("memrun.view.app")  # needs starlette and uvicorn (memrun[view])


def build_parser() -> Parser:
    """``memrun view`` arguments."""
    parser = Parser(prog="memrun view", description="Browse runs, compare two, chart several, open any item.")
    parser.add_argument("dir", nargs="?", default="outputs", type=Path, help="the folder of runs (default: outputs)")
    parser.add_argument("--port", type=int, default=0, help="the port on 127.0.0.1 (default 0: a free one)")
    return parser


def main(argv: Sequence[str]) -> int:
    """Serve until interrupted; 0 on Ctrl-C, 2 (``memrun: error:``) for a bad folder or port."""
    parser = build_parser()
    args = parser.parse_args(list(argv))
    root: Path = args.dir
    if root.exists() and not root.is_dir():  # was "no such folder" for a file that is there
        run = root.parent
        if (run / "items.parquet").is_file() or (run / "summary.json").is_file():  # a file of a run folder
            raise MemrunError(f"memrun view: {root} is a file of the run {run}; memrun view browses a folder of "
                              f"runs: memrun view {run.parent} (one run's page: memrun report {run})")
        raise MemrunError(f"memrun view: {root} is a file; memrun view browses a folder of runs: memrun view {run}")
    if not root.is_dir():
        raise MemrunError(f"memrun view: {root}: no such folder (give the folder your runs are in, e.g. outputs)")
    if not 0 <= args.port <= 65535:
        raise parser.usage_error(f"--port {args.port}: choose 0..65535 (0: a free port)")
    try:
        app = loaded(view_app)
    except ImportError as exc:
        raise MemrunError(f"memrun view needs starlette and uvicorn ({exc}); pip install 'memrun[view]'") from None
    sock = app.bind(args.port)
    port = sock.getsockname()[1]
    sys.stdout.write(f"memrun view: {root.resolve()} at http://127.0.0.1:{port}/ (Ctrl-C to stop)\n")
    sys.stdout.flush()
    threading.Thread(target=app.warm_up, daemon=True).start()
    try:
        app.server(root, sock, app.index_cache(root)).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return 0
