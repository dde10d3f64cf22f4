"""``memrun datasets synth``: write a LongMemEval-schema file of a chosen size.

    memrun datasets synth /tmp/lme_s.json --size s            # ~277 MB, like longmemeval_s
    memrun datasets synth /tmp/lme_m.json --size m            # ~2.8 GB, like longmemeval_m
    memrun datasets synth small.json --questions 40 --sessions 8 --turns 4 --turn-chars 200

Then: ``memrun benchmark=longmemeval benchmark.path=/tmp/lme_s.json arm.top_k=50``.
See :mod:`memrun.benchmarks.lme_synth` for what the files hold.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from memrun.benchmarks.lme_synth import SynthSpec, write
from memrun.commands.usage import Parser
from memrun.errors import ConfigError, DataError

PRESETS = {
    "s": SynthSpec(),
    "m": SynthSpec(sessions=500),
    "tiny": SynthSpec(questions=30, sessions=8, turns=4, turn_chars=200, reuse=0.2, pool_uses=4),  # the tests' file
}


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="memrun datasets", description="Dataset tools.")
    sub = parser.add_subparsers(dest="action", required=True)
    synth = sub.add_parser(
        "synth",
        help="write a LongMemEval-schema file with answers planted in known turns",
        description="Write a LongMemEval-schema JSON file; sizes from --size, each knob overridable.",
    )
    synth.add_argument("out", help="the file to write (e.g. /tmp/lme_s.json)")
    synth.add_argument("--size", choices=sorted(PRESETS), default="s", help="preset shape (default: s)")
    for f in dataclasses.fields(SynthSpec):
        flag = "--" + f.name.replace("_", "-")
        synth.add_argument(flag, type=type(f.default), default=None, help=f"override the preset's {f.name}")
    synth.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def main(argv: Sequence[str]) -> int:
    """Entry point of ``memrun datasets``. Returns the exit code; raises ConfigError / DataError."""
    args = _parser().parse_args(list(argv))
    overrides = {f.name: getattr(args, f.name) for f in dataclasses.fields(SynthSpec) if getattr(args, f.name) is not None}
    spec = dataclasses.replace(PRESETS[args.size], **overrides)
    try:
        spec.check()
    except ValueError as exc:
        raise ConfigError(f"datasets synth: {exc}") from exc
    console = Console(stderr=True)
    with Progress(
        TextColumn(f"writing {args.out}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True, disable=args.quiet,
    ) as bar:
        task = bar.add_task("synth", total=spec.questions)
        try:
            size = write(args.out, spec, progress=lambda: bar.advance(task))
        except OSError as exc:
            raise DataError(f"datasets synth: cannot write {args.out} ({exc.strerror or exc})") from exc
    sys.stdout.write(
        f"wrote {args.out}: {spec.questions} questions x {spec.sessions} sessions x {spec.turns} turns, "
        f"{size / 1e6:.1f} MB (seed {spec.seed})\n"
    )
    return 0
