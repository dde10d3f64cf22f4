"""``memrun compare``'s options: the argparse parser whose values become a
:class:`memrun.comparison.api.CompareRequest` (:func:`memrun.commands.compare.request_from`);
``memrun null-band`` shares :func:`common_options`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from memrun.commands import usage
from memrun.comparison.fitness import DataThresholds
from memrun.stats import ExitCode

_LIMITS = DataThresholds()


def Parser(**kwargs: Any) -> usage.Parser:
    """A parser whose usage errors exit 4 (ExitCode.USAGE_ERROR; 2 means unresolved)."""
    return usage.Parser(usage_exit_code=int(ExitCode.USAGE_ERROR), **kwargs)


def common_options(parser: argparse.ArgumentParser) -> None:
    """The options ``memrun compare`` and ``memrun null-band`` share: the metric, clusters, strata,
    categories, fakes, resamples and seed."""
    parser.add_argument("--metric", default=None,  # unset: from --gate, else run A's headline (comparison.api.resolve)
                        help="retrieval axis: recall@K (hit or not), recall_all@K, ndcg@K, precision@K or mrr "
                             "(default: run A's headline metric, recall@5 when its ks hold 5, else recall@10, "
                             "recall@1 or mrr); the accuracy axis always uses the majority label")
    parser.add_argument("--cluster-by", default="cluster",
                        help="column whose values are resampled together (default: cluster, the benchmark's "
                             "cluster key); 'evidence': items sharing a gold session, one cluster (derived from "
                             "gold_sessions); 'none' resamples items (refused where items share a history, e.g. LoCoMo)")
    parser.add_argument("--stratify-by", default="auto", metavar="COLUMN",
                        help="resample clusters within each value of this column, keeping stratum sizes; "
                             "'auto' (default): the benchmark's design strata (LongMemEval: category, "
                             "its question type), 'none': no strata")
    parser.add_argument("--categories", metavar="LIST",
                        help="only these categories, comma-separated, 'comparable' for the benchmark's "
                             "published subset (LoCoMo: 1,2,3,4) or 'all'; default: the run's headline subset "
                             "when it names one (LoCoMo: 1,2,3,4), else every category")
    parser.add_argument("--allow-fake", action="store_true",
                        help="compare runs made with fake or stub providers (their scores measure nothing)")
    parser.add_argument("--resamples", type=int, default=10_000,
                        help="bootstrap resamples (default 10,000; at least 1,000: the bounds are their 2.5%% tails)")
    parser.add_argument("--seed", type=int, default=7)


def build_parser() -> argparse.ArgumentParser:
    """``memrun compare``'s parser (its parsed options: :func:`memrun.commands.compare.request_from`)."""
    parser = Parser(prog="memrun compare", description="Decide whether run B beats run A (paired, clustered bootstrap).",
                     usage="memrun compare [options] A B [C ...]  |  memrun compare [options] --baseline auto B  "
                           "(memrun compare --help lists the options)")
    parser.add_argument("a", nargs="?", help="run A (the baseline): a run folder or items.parquet")
    parser.add_argument("b", nargs="?", help="run B (the change)")
    parser.add_argument("more", nargs="*", metavar="C",
                        help="more arms: every arm B, C, ... is compared with A and the arms are read as one family "
                             "(Holm's step-down, 2.5%% family-wise: a winner needs its own gate and the family's)")
    common_options(parser)
    parser.add_argument("--baseline", metavar="auto",
                        help="'auto': give only B; A is the newest finished run under --runs-dir comparable to B "
                             "except the --treatment fields, with another configuration")
    parser.add_argument("--runs-dir", default="outputs", metavar="DIR", help="where --baseline auto looks (default outputs)")
    parser.add_argument("--gate", metavar="NAME",
                        help="read metric, band, gate-min-delta and categories from conf/gates/NAME.yaml "
                             "(or a YAML file); flags given here override it")
    parser.add_argument("--treatment", action="append", default=[], metavar="FIELD[,FIELD...]",
                        help="instrument field(s) the comparison is meant to vary (repeatable or "
                             "comma-separated), e.g. search_mode or embedder,embedder_dim")
    parser.add_argument("--allow-noncomparable", action="store_true",
                        help="show the numbers anyway, every output line labelled NON-COMPARABLE; "
                             "the exit code stays 3 (refused) so that no gate passes on them")
    parser.add_argument("--gate-min-delta", type=float, default=None, metavar="PP",
                        help="pass when the lower bound is above this, in pp (default 0; negative: "
                             "non-inferiority); for mrr and ndcg@K in hundredths of the score (1 = 0.01)")
    parser.add_argument("--gate-band", type=float, default=None, metavar="PP",
                        help="null band (noise floor) in pp, default 4.0; measure yours with memrun null-band")
    parser.add_argument("--max-error-share", type=float, default=None, metavar="SHARE",
                        help="unresolved when an arm's errored items exceed this share of its items (default "
                             f"{_LIMITS.max_error_share:g})")
    parser.add_argument("--max-error-gap", type=float, default=None, metavar="SHARE",
                        help="unresolved when the arms' error shares differ by more (default "
                             f"{_LIMITS.max_error_gap:g})")
    parser.add_argument("--min-paired-share", type=float, default=None, metavar="SHARE",
                        help="unresolved when fewer of the items present in either run are in both (default "
                             f"{_LIMITS.min_paired_share:g})")
    parser.add_argument("--max-false-pass", type=float, default=3.0, metavar="PCT",
                        help="the design check's level: never PASS a design whose gate's simulated false-pass rate "
                             "exceeds this, in percent (default 3; docs/statistics.md)")
    parser.add_argument("--check-replications", type=int, default=2000, metavar="N",
                        help="simulated null comparisons per scenario of the design check, at least (default 2000)")
    parser.add_argument("--effect", type=float, default=None, metavar="PP",
                        help="an effect of interest for the power line: how many more clusters or items it "
                             "would need to pass in 80%% of runs (default: the null band)")
    parser.add_argument("--judge-calibration", type=Path, metavar="FILE",
                        help="JSON with tpr, fpr, n_pos, n_neg (memrun calibrate-judge): report delta / J")
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    parser.add_argument("--flips", action="store_true",
                        help="also list the items the runs disagree on (B-wins first, then B-losses), each with what "
                             "A and B retrieved or answered and the gold marked; markdown embeds the top five each way")
    return parser
