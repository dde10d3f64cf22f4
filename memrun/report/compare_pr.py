"""The pull-request parts of ``memrun compare --format markdown``.

A comment bot updates one sticky comment per benchmark and arm: every markdown document
starts with :data:`MARKER`. Runs are named by run id and configuration (benchmark, arm,
the overrides they were run with), never by local paths, with each run's calls line
(from ``summary.json``'s ``calls``) and a unified diff of the two composed
configurations, changed keys only (:meth:`memrun.core.instrument.Instrument.configuration_diff`).
Refusals and usage errors render too (:func:`render_outcome_markdown`). Names, overrides and
config values are escaped for their position (:mod:`memrun.report.md`); the marker keeps
only safe characters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from memrun.core.paths import conf_dir
from memrun.lazy import lazy
from memrun.report import md

if TYPE_CHECKING:
    from memrun.io import reader as io_reader
    from memrun.llm import prices as llm_prices
else:
    io_reader = lazy("memrun.io.reader")
    llm_prices = lazy("memrun.llm.prices")

MARKER = "<!-- memrun-compare: {benchmark}/{arm} -->"
# Overrides that say where or how fast a run went, not what it measured: left out of its name.
LOCATION_PREFIXES = ("hydra.", "cache_dir=", "data_dir=", "progress=", "concurrency=", "benchmark.path=")


def _folder(path: str | Path) -> Path:
    path = Path(path)
    return path if path.is_dir() else path.parent


def describe_run(path: str | Path) -> dict[str, Any]:
    """Run id, benchmark, arm, overrides, status and calls of the run at ``path``; what cannot be
    read is None (a usage error still names what it can)."""
    out: dict[str, Any] = {"run_id": None, "benchmark": None, "arm": None, "axis": None, "status": None,
                           "git_commit": None, "fake_providers": False, "overrides": [], "calls": None,
                           "cost_usd": None, "instrument": None}
    try:
        inst = io_reader.read_instrument(path)
    except Exception:  # noqa: BLE001 - unreadable: the reason is reported by compare itself
        return out
    out.update(run_id=inst.run_id, benchmark=inst.benchmark, arm=inst.arm, axis=inst.axis, status=inst.status,
               git_commit=inst.git_commit, fake_providers=bool(inst.fake_providers), instrument=inst)
    folder = _folder(path)
    try:
        overrides = yaml.safe_load((folder / ".hydra" / "overrides.yaml").read_text()) or []
        out["overrides"] = [str(o) for o in overrides if not str(o).startswith(LOCATION_PREFIXES)]
    except (OSError, yaml.YAMLError):
        pass
    out["calls"] = (io_reader.read_summary(folder) or {}).get("calls")
    if out["calls"] and inst.axis == "accuracy":
        out["cost_usd"] = run_cost(path, inst, out["calls"])
    return out


def run_cost(path: str | Path, inst: Any, calls: Mapping[str, Any]) -> float | None:
    """What a run's calls cost at ``conf/prices.yaml``'s prices (None: a model without a price,
    or unreadable rows). The reader's tokens come from the rows of the calls it made; the rest
    of the summary's tokens are the judges', priced at the first judge's model. Fake: 0."""
    if inst.fake_providers:
        return 0.0
    try:
        prices, _ = llm_prices.load_prices(conf_dir() / "prices.yaml")
        columns = ["context_tokens", "completion_tokens", "reader_cache_hit"]
        rows = io_reader.read_run(path, columns=columns).table.to_pylist()
    except Exception:  # noqa: BLE001 - no cost is better than no comment
        return None
    made = [r for r in rows if r.get("reader_cache_hit") is False]
    reader = (sum(r.get("context_tokens") or 0 for r in made), sum(r.get("completion_tokens") or 0 for r in made))
    judge = (max(0, int(calls.get("prompt_tokens", 0)) - reader[0]),
             max(0, int(calls.get("completion_tokens", 0)) - reader[1]))
    cost = 0.0
    for model, (prompt, completion) in ((inst.reader_model, reader), (inst.judge_model, judge)):
        if prompt or completion:
            price = prices.get(model)
            if price is None:
                return None
            cost += (prompt * float(price["input"]) + completion * float(price["output"])) / 1e6
    return cost


def run_context(path_a: str | Path | None, path_b: str | Path) -> dict[str, Any]:
    """Both runs described (:func:`describe_run`), the marker and the configuration diff."""
    a = describe_run(path_a) if path_a else describe_run("")
    b = describe_run(path_b)
    diff = []
    if a["instrument"] is not None and b["instrument"] is not None:
        diff = [{"key": k, "a": va, "b": vb} for k, va, vb in a["instrument"].configuration_diff(b["instrument"])]
    named = b if b["benchmark"] else a
    marker = MARKER.format(benchmark=md.marker_name(named["benchmark"] or "unknown"),
                           arm=md.marker_name(named["arm"] or "unknown"))
    strip = lambda r: {k: v for k, v in r.items() if k != "instrument"}  # noqa: E731
    return {"marker": marker, "a": strip(a), "b": strip(b), "config_diff": diff}


def _name(label: str, run: Mapping[str, Any]) -> str:
    if not run.get("run_id") and not run.get("benchmark"):
        return f"{label} = (unreadable run)"
    config = " ".join(run["overrides"]) or "defaults"
    commit = f", commit {md.inline(run['git_commit'][:12])}" if run.get("git_commit") else ""
    return (f"{label} = {md.code_span(run.get('run_id') or 'no run id')} ({md.inline(run['benchmark'])} x "
            f"{md.inline(run['arm'])}: {md.code_span(config)}{commit}; {md.inline(run['status'])})")


def calls_line(label: str, run: Mapping[str, Any]) -> str:
    """One run's calls and tokens (from summary.json), or why there are none."""
    calls = run.get("calls")
    if not calls:
        return f"{label} calls: none (no LLM calls)" if run.get("axis") == "recall" else f"{label} calls: not recorded"
    cost = run.get("cost_usd")
    priced = "cost unknown (a model is not in conf/prices.yaml)" if cost is None else f"cost ${cost:,.2f}"
    return (f"{label} calls: made {calls.get('made', 0)}, cached {calls.get('cached', 0)}, failed {calls.get('failed', 0)}"
            f" | tokens {calls.get('prompt_tokens', 0):,} prompt + {calls.get('completion_tokens', 0):,} completion"
            f" | {priced}")


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def diff_lines(runs: Mapping[str, Any]) -> list[str]:
    """A unified diff (changed keys only) of the two composed configurations, in a code block."""
    if not runs["config_diff"]:
        return ["configuration: no key differs"]
    lines = [f"--- A {runs['a'].get('run_id')}", f"+++ B {runs['b'].get('run_id')}"]
    for change in runs["config_diff"]:
        lines += [f"-{change['key']}: {_value(change['a'])}", f"+{change['key']}: {_value(change['b'])}"]
    return ["configuration (changed keys):", "", *md.fenced(lines, "diff")]


def fake_banner(runs: Mapping[str, Any]) -> list[str]:
    """A quoted, bold warning when A or B ran with fake or stub providers (compare lets them
    through only with ``--allow-fake``): their scores measure nothing. Empty otherwise."""
    fake = [label for label in ("A", "B") if runs[label.lower()].get("fake_providers")]
    if not fake:
        return []
    who = " and ".join(fake)
    return [f"> **FAKE PROVIDERS: {who} ran with fake or stub providers (`--allow-fake`); "
            f"{'their' if len(fake) > 1 else 'its'} scores measure nothing.**", ""]


def runs_markdown(runs: Mapping[str, Any]) -> list[str]:
    """The runs block: names, calls lines and the configuration diff."""
    chosen = (" (chosen by `--baseline auto`: the newest finished run comparable to B, of another configuration)"
              if runs.get("baseline") == "auto" else "")
    lines = [f"- {_name('A', runs['a'])}{chosen}", f"- {_name('B', runs['b'])}",
             f"- {md.inline(calls_line('A', runs['a']))}", f"- {md.inline(calls_line('B', runs['b']))}", ""]
    return lines + diff_lines(runs)


def render_outcome_markdown(outcome: str, code: int, reason: str, runs: Mapping[str, Any]) -> str:
    """Markdown for a comparison that has no numbers: a refusal (exit 3) or a usage error (exit 4)."""
    title = outcome.replace("_", " ").upper()
    out = [runs["marker"], f"### memrun compare: **{title}** (exit code {code})", "", *fake_banner(runs),
           *md.fenced(reason.strip(), "text"), ""]
    return "\n".join(out + runs_markdown(runs)) + "\n"


def render_no_comparison(fmt: str, code: int, reason: str, paths: tuple[str | None, str | None]) -> str:
    """The ``--format json`` / ``markdown`` document of an outcome without a comparison (a
    refusal, exit 3, or a usage error, exit 4); "" for text (the reason is on stderr)."""
    outcome = "refused" if code == 3 else "usage_error"
    if fmt == "json":
        return json.dumps({"outcome": outcome, "exit_code": code, "reason": reason,
                           "error": reason if outcome == "usage_error" else None}, indent=2) + "\n"
    if fmt == "markdown":
        a, b = paths
        return render_outcome_markdown(outcome, code, reason, run_context(a, b or ""))
    return ""
