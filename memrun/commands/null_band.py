"""``memrun null-band A A2``: the gate band measured from two runs of one configuration.

Exits 0 when it printed a band, 3 (refused) or 4 (usage error) like ``memrun compare``
(:mod:`memrun.commands.compare`): it refuses two runs of different configurations, whose
difference is not noise.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence

from memrun.commands.compare import _fail, _guarded, print_warning, request_from
from memrun.commands.compare_options import Parser, common_options
from memrun.comparison.analysis import Bounds, metric_unit
from memrun.comparison.api import compare
from memrun.comparison.fitness import UNFINISHED
from memrun.stats import ExitCode, band_from_null


def null_band_main(argv: Sequence[str]) -> int:
    """``memrun null-band A A2``: the gate band measured from two same-config runs.

    Refuses (exit 3) runs whose instruments differ or whose configurations differ
    (:meth:`memrun.core.instrument.Instrument.configuration_diff`): the band is the noise
    between two runs of one configuration.
    """
    parser = Parser(prog="memrun null-band",
                     description="Measure the null band from two runs of the same configuration.")
    parser.add_argument("a", help="a run")
    parser.add_argument("b", metavar="a2", help="a second run of the same configuration")
    common_options(parser)

    def body(args: argparse.Namespace) -> int:
        request = dataclasses.replace(request_from(args), same_configuration=True)
        outcome = compare(request, on_warning=print_warning)
        result = outcome.comparison
        if result is None:
            return _fail(outcome.exit_code, outcome.refusal or "", "text")
        # too few items or clusters, errors, unpaired items: no interval to read a band from. A run
        # that is not whole (warned about) still measures noise, over the rows it wrote.
        if result.verdict.get("detail") and result.verdict["reason"] != UNFINISHED:
            return _fail(int(ExitCode.USAGE_ERROR), f"memrun: error: no null band from these runs: "
                         f"{result.verdict['detail']}", "text")
        band = band_from_null(Bounds.of(result.overall))
        o = result.overall
        score = metric_unit(outcome.request.metric or "", result.axis) == "score"
        fmt = (lambda x: f"{x:+.3f}") if score else (lambda x: f"{100 * x:+.1f}")
        unit = "" if score else " pp"
        print(f"A2 - A: {fmt(o['delta'])}{unit} [{fmt(o['low'])}, {fmt(o['high'])}] over {o['n_items']} items "
              f"in {o['n_clusters']} clusters ({o['wins']}/{o['ties']}/{o['losses']})")
        print(f"null band (the interval's wider side): {100 * band:.1f}{unit or ' (hundredths of the score)'}")
        if result.discordance == 0:
            print("note: the two runs agree on every item (a deterministic arm?); the band is 0 and any "
                  "difference will look significant: measure noise where it exists (repeats, another seed)")
        print(f"pass it on: memrun compare A B --gate-band {100 * band:.1f}")
        return 0

    return _guarded(argv, parser, body)
