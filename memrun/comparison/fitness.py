"""Is the paired data fit for a verdict? Thresholds on errors and on unpaired items.

Errored items are left out of both arms (:mod:`memrun.comparison.pairing`). That is fair only
while the failures are few and alike in both arms: an arm whose hard questions time out
scores better on the rest (the methodology's "excluded errors" bias). Likewise a
comparison over half the items of each run says little about the runs. Beyond any of
these thresholds the verdict is ``unresolved`` with the reason (exit 2):

- ``max_error_share``: an arm's share of errored items (of its in-scope items);
- ``max_error_gap``: the difference between the two arms' error shares;
- ``min_paired_share``: items present in both runs over items present in either.

A run that is not whole holds the verdict too (``unfinished_run``,
:meth:`memrun.io.reader.RunTable.unfinished`): one that did not finish (read from its parts), ended otherwise than ``complete`` or ``degraded``
(interrupted, stopped by its token budget, failed, a merge missing shards) or is one shard
of a run. Its rows are the items that happened to finish first, and two such runs stopped
alike pair fully, so no paired share catches them: a gate on them would pass or fail a
change on whatever part of the benchmark ran. The numbers are still shown. A degraded run
is whole; its errored rows are what ``max_error_share`` weighs.

Defaults below; ``memrun compare --max-error-share/--max-error-gap/--min-paired-share``
and the gate files (``conf/gates/*.yaml``: ``max-error-share`` ...) set them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memrun.comparison.pairing import Paired
from memrun.io.reader import RunTable

TOO_MANY_ERRORS = "too_many_errors"
UNEQUAL_ERRORS = "unequal_errors"
TOO_FEW_PAIRED = "too_few_paired"
UNFINISHED = "unfinished_run"


@dataclass(frozen=True)
class DataThresholds:
    """Shares (fractions in [0, 1]) beyond which the data are unfit for a verdict."""

    max_error_share: float = 0.10
    max_error_gap: float = 0.05
    min_paired_share: float = 0.90

    def __post_init__(self) -> None:
        for name in ("max_error_share", "max_error_gap", "min_paired_share"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise ValueError(f"--{name.replace('_', '-')} {value!r}: must be a share between 0 and 1")


def data_facts(paired: Paired) -> dict[str, Any]:
    """Error shares of A and B and the paired share, as a JSON-ready dict (fractions)."""
    errors = paired.errors or {"a": (0, 0), "b": (0, 0)}
    share = {side: (k / n if n else 0.0) for side, (k, n) in errors.items()}
    return {"error_share_a": share["a"], "error_share_b": share["b"],
            "errors_a": errors["a"][0], "items_a": errors["a"][1], "errors_b": errors["b"][0], "items_b": errors["b"][1],
            "paired_share": paired.n_present_both / paired.n_present_either if paired.n_present_either else 1.0}


def data_hold(facts: dict[str, Any], t: DataThresholds) -> tuple[str, str] | None:
    """(reason, words) when the data are unfit for a verdict (module docstring), else None."""
    for side in ("a", "b"):
        share = facts[f"error_share_{side}"]
        if share > t.max_error_share:
            return TOO_MANY_ERRORS, (f"{facts[f'errors_{side}']} of {facts[f'items_{side}']} items errored in "
                                     f"{side.upper()} ({share:.0%}), more than --max-error-share "
                                     f"{t.max_error_share:g}: leaving them out biases the comparison; fix and rerun")
    gap = abs(facts["error_share_a"] - facts["error_share_b"])
    if gap > t.max_error_gap:
        return UNEQUAL_ERRORS, (f"error shares differ by {100 * gap:.1f} pp (A {facts['error_share_a']:.1%}, "
                                f"B {facts['error_share_b']:.1%}), more than --max-error-gap {t.max_error_gap:g}: "
                                "the arms are compared on different items")
    if facts["paired_share"] < t.min_paired_share:
        return TOO_FEW_PAIRED, (f"only {facts['paired_share']:.0%} of the items present in either run are in both, "
                                f"less than --min-paired-share {t.min_paired_share:g}: the runs share too few items")
    return None


def unfinished_hold(a: RunTable, b: RunTable) -> tuple[str, str] | None:
    """(reason, words) holding the verdict when run A or B is not whole
    (:meth:`memrun.io.reader.RunTable.unfinished`), else None."""
    sides = [side for side, run in (("A", a), ("B", b)) if run.unfinished()]
    if not sides:
        return None
    return UNFINISHED, (f"{'run A' if sides == ['A'] else 'run B' if sides == ['B'] else 'runs A and B'} "
                        f"{'is' if len(sides) == 1 else 'are'} not whole (see the warnings): "
                        "a verdict reads every item of both runs, not the ones that finished first; "
                        "finish, resume or merge the run, then compare again")
