"""``memrun plan [overrides]``: what a run will call and cost, before it runs.

    memrun plan axis=accuracy benchmark=locomo judge=gpt41 [--format text|json|markdown]

Takes the same overrides as a run (:mod:`memrun.pipeline.plan` does the work; it makes no LLM
call). Prices come from ``conf/prices.yaml`` (``--prices FILE`` for another table).

``--pilot A B`` (two finished runs of a pilot comparison, e.g. the baseline and a first
try of the change; one run is refused, as its arm's scores alone do not show how often two
arms disagree, which sets the power) adds the power such a comparison has: the minimum detectable effect at
80% power, how far its power could be from 80% over the ICC the pilot allows, and how many
clusters an effect of ``--effect PP`` would need, computed exactly as ``memrun compare``
prints it beside an unresolved verdict (:func:`memrun.stats.mde.minimum_detectable`); where
no trustworthy MDE exists (no effect reaches 80%, or fewer than 3 Bell-McCaffrey degrees of
freedom) it says so instead of printing one.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrun.commands.usage import Parser
from memrun.core.paths import conf_dir
from memrun.errors import ConfigError, MemrunError
from memrun.lazy import lazy

if TYPE_CHECKING:
    from memrun.commands import compare as commands_compare
    from memrun.comparison import api as comparison_api
    from memrun.config import build_spec as config_spec
    from memrun.config import compose as config_compose
    from memrun.config import user_dir as config_user_dir
    from memrun.io import reader as io_reader
    from memrun.llm import prices as llm_prices
    from memrun.pipeline import plan as memrun_plan
    from memrun.report import compare_report as report_compare_report
    from memrun.report import md as report_md
else:
    commands_compare = lazy("memrun.commands.compare")
    comparison_api = lazy("memrun.comparison.api")
    report_md = lazy("memrun.report.md")
    config_compose = lazy("memrun.config.compose")
    config_user_dir = lazy("memrun.config.user_dir")  # a --config-dir only
    io_reader = lazy("memrun.io.reader")  # --pilot only
    config_spec = lazy("memrun.config.build_spec")
    llm_prices = lazy("memrun.llm.prices")
    memrun_plan = lazy("memrun.pipeline.plan")
    report_compare_report = lazy("memrun.report.compare_report")

MARKER = "<!-- memrun-plan: {benchmark}/{arm} -->"


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="memrun plan",
                                     description="Count a run's calls and estimate its cost without making any call.")
    parser.add_argument("overrides", nargs="*", help="the run's config overrides, e.g. axis=accuracy benchmark=locomo")
    parser.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    parser.add_argument("--config-dir", type=Path, metavar="DIR",
                        help="your own config folder, as for a run (memrun --config-dir DIR ...)")
    parser.add_argument("--prices", type=Path, help="price table (default: conf/prices.yaml)")
    parser.add_argument("--pilot", nargs="+", metavar="RUN",
                        help="two runs of a pilot comparison, A B: report the minimum detectable effect at 80%% "
                             "power of a comparison designed like it")
    parser.add_argument("--effect", type=float, metavar="PP",
                        help="with --pilot: the effect of interest, pp (default: compare's null band)")
    parser.add_argument("--chars-per-token", type=float, metavar="N",
                        help="characters per token for calls without reported usage (default: reader.chars_per_token)")
    return parser


def _cost(x: float | None) -> str:
    return "unknown" if x is None else f"${x:,.2f}"


def _lines(d: Mapping[str, Any]) -> tuple[list[str], list[list[str]], list[str]]:
    """(header lines, endpoint table rows, footer lines) shared by text and markdown."""
    t = d["totals"]
    head = [
        f"plan: {d['benchmark']} x {d['arm']} ({d['axis']} axis)",
        f"items {d['items']} | repeats {d['repeats']} | items x repeats {d['item_repeats']}"
        + (f" | retrieval errors {d['retrieval_errors']} (no calls)" if d["retrieval_errors"] else ""),
    ]
    if d["axis"] == "accuracy":
        cost = _cost(t["cost_usd"]) + ("" if t["cost_complete"] else " + unknown (a model is not in the price table)")
        head.append(f"calls needed {t['needed']} of {t['calls']} ({t['cached']} cached) | estimated tokens "
                    f"{t['prompt_tokens']:,} prompt + {t['completion_tokens']:,} completion | estimated cost {cost}")
    else:
        head.append("no LLM calls (recall axis)")
    rows = [[e["role"], e["model"], e["url"], str(e["calls"]), str(e["cached"]), str(e["needed"]),
             f"{e['prompt_tokens']:,}", f"{e['completion_tokens']:,}", _cost(e["cost_usd"])] for e in d["endpoints"]]
    foot = [f"{e['role']}: {e['estimate']}" for e in d["endpoints"]]
    p = d["prices"]
    if d["endpoints"]:
        foot.append(f"prices: {p.get('file')} (checked {p.get('checked')}, {p.get('source')}); no LLM call was made")
    if d["fake_providers"]:
        foot.append("fake providers: the run's scores will be meaningless")
    foot.append("comparability: " + ", ".join(f"{k}={v}" for k, v in d["comparability"].items() if v is not None))
    foot += [f"warning: {w}" for w in d["warnings"]]
    if d.get("power"):
        power = report_compare_report.power_line(d["power"], d["power"])
        foot.append(f"pilot {' vs '.join(d['power']['runs'])}: " + power)
    return head, rows, foot


def pilot_power(path_a: str, path_b: str, effect: float | None) -> dict[str, Any]:
    """The power of a comparison designed like the pilot pair A, B: ``memrun compare``'s
    power dict (fractions) plus ``runs`` and ``unit``. The pilot runs may differ in their
    treatment (their numbers are read, not gated). Raises MemrunError when they cannot be
    compared (unreadable, nothing paired, a degenerate interval)."""
    request = comparison_api.CompareRequest(a=path_a, b=path_b, allow_noncomparable=True, allow_fake=True, effect=effect)
    outcome = comparison_api.compare(request, on_warning=commands_compare.print_warning)
    result, refusal = outcome.comparison, outcome.refusal
    if result is None or not result.power:
        why = refusal or (result.verdict.get("detail") if result else None) or "no usable interval"
        raise MemrunError(f"--pilot {path_a} {path_b}: no power from these runs: {why}")
    return {**result.power, "runs": [path_a, path_b], "unit": result.unit}


def _pilot_runs(runs: list[str]) -> tuple[str, str]:
    """The two pilot runs. One run is not enough: the MDE of a paired comparison is set by
    how often and how unevenly across clusters the two arms disagree (the SE of B - A),
    which one arm's scores do not show. Raises ConfigError naming what to give instead."""
    if len(runs) == 2:
        return runs[0], runs[1]
    if len(runs) == 1:
        raise ConfigError(f"--pilot {runs[0]}: one run cannot plan a paired comparison: its power is set by how "
                          "often the two arms disagree, item by item and cluster by cluster, which one arm does "
                          "not show. Give two runs: the baseline and a first try of the change (or two runs of "
                          "the baseline, another seed: their noise gives a lower bound on the MDE)")
    if overrides := [run for run in runs[2:] if "=" in run and not Path(run).exists()]:
        raise ConfigError(f"--pilot takes two runs (A B), got {len(runs)}: {overrides[0]} is an override, which "
                          "--pilot read as a run; put the overrides before it: memrun plan OVERRIDES --pilot A B")
    raise ConfigError(f"--pilot takes two runs (A B), got {len(runs)}")


DESIGN_FIELDS = ("axis", "benchmark", "split")
"""The instrument fields a pilot pair shares with the planned run for its power to be this
plan's: the power is that of the pilot's design (its clusters, metric and spread)."""


def _pilot_design_warnings(planned: Mapping[str, Any], runs: tuple[str, str]) -> list[str]:
    """One warning per pilot run whose :data:`DESIGN_FIELDS` differ from the plan's
    (``planned``: its comparability fields): ``memrun plan axis=accuracy --pilot <two LoCoMo
    recall runs>`` printed the LoCoMo recall@5 MDE beside the synthetic accuracy plan, unmarked."""
    warnings = []
    for run in runs:
        instrument = io_reader.read_instrument(run)
        differ = [f"{name} {getattr(instrument, name)!s} (the plan's: {planned.get(name)!s})" for name in DESIGN_FIELDS
                  if str(getattr(instrument, name)) != str(planned.get(name))]
        if differ:
            warnings.append(f"--pilot {run}: {'; '.join(differ)}: the power printed is that run's design, not "
                            "this plan's; give pilot runs of the planned benchmark, split and axis")
    return warnings


HEADERS = ["role", "model", "endpoint", "calls", "cached", "needed", "prompt tok", "completion tok", "cost"]


def render_text(d: Mapping[str, Any]) -> str:
    """Plain text: header, one line per endpoint, estimates and comparability fields."""
    head, rows, foot = _lines(d)
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADERS)] if rows else []
    table = ["  ".join(h.ljust(w) for h, w in zip(HEADERS, widths))] if rows else []
    table += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(head + table + foot) + "\n"


def render_markdown(d: Mapping[str, Any]) -> str:
    """Markdown for a pull-request comment, with a hidden marker naming benchmark and arm;
    config and dataset text escaped for its position (:mod:`memrun.report.md`)."""
    head, rows, foot = _lines(d)
    out = [MARKER.format(benchmark=report_md.marker_name(d["benchmark"]), arm=report_md.marker_name(d["arm"])),
           f"### memrun plan: {report_md.inline(d['benchmark'])} x {report_md.inline(d['arm'])}", ""]
    out += [f"- {report_md.inline(h)}" for h in head[1:]]  # plain text quoting config and dataset text: escaped whole
    if rows:
        out += ["", *report_md.table(HEADERS, rows)]
    out += [""] + [f"- {report_md.inline(f)}" for f in foot]
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    """Entry point; returns 0. Raises MemrunError subclasses (one line) for user errors."""
    args = _parser().parse_args(argv)
    if args.chars_per_token is not None and args.chars_per_token <= 0:
        raise ConfigError(f"--chars-per-token {args.chars_per_token}: must be positive")
    pilot = _pilot_runs(args.pilot) if args.pilot else None

    prices, info = llm_prices.load_prices(args.prices or conf_dir() / "prices.yaml")
    if args.prices is None:
        info["file"] = "conf/prices.yaml"  # memrun's own table: named, not located
    extra = []
    if args.config_dir is not None:
        if problem := config_user_dir.config_dir_problem(args.config_dir):
            raise ConfigError(problem)
        extra = [f"hydra.searchpath=[file://{args.config_dir.resolve()}]"]
    cfg = config_compose.compose(["progress=false", *extra, *args.overrides])
    plan = memrun_plan.make_plan(*config_spec.build_spec(cfg), prices, info, args.chars_per_token).to_dict()
    if pilot is not None:
        plan["power"] = pilot_power(*pilot, args.effect)
        plan["warnings"] += _pilot_design_warnings(plan["comparability"], pilot)
    render = {"text": render_text, "markdown": render_markdown,
              "json": lambda d: json.dumps(d, indent=2, default=str) + "\n"}[args.format]
    sys.stdout.write(render(plan))
    return 0
