"""``memrun compare A B C ...``: k arms against one baseline read as one family (Holm),
while ``memrun compare A B`` stays a single pairwise comparison."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from memrun.cli import main
from memrun.stats import ExitCode
from tests.run_tables import compare_cli, retrieval_run

CLUSTERS, SIZE = 30, 20


ORDER = np.random.default_rng(1).permutation(CLUSTERS * SIZE)
LOSSES = 10
CLUSTER_KEYS = [f"c{i // SIZE}" for i in range(CLUSTERS * SIZE)]


def _baseline(folder: Path) -> Path:
    """A hits exactly the items the arms lose on (the first ``LOSSES`` of ``ORDER``)."""
    hits = [False] * len(ORDER)
    for i in ORDER[:LOSSES]:
        hits[i] = True
    return retrieval_run(folder, hits, CLUSTER_KEYS)


def _arm(folder: Path, wins: int, **inst) -> Path:
    """An arm whose paired deltas against :func:`_baseline` are +1 on ``wins`` items, -1 on
    ``LOSSES``, 0 elsewhere: 600 items in 30 clusters of 20."""
    hits = [False] * len(ORDER)
    for i in ORDER[LOSSES:LOSSES + wins]:
        hits[i] = True
    return retrieval_run(folder, hits, CLUSTER_KEYS, **inst)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("family")
    return {"a": _baseline(root / "a"),
            "strong": _arm(root / "strong", 48),  # passes alone and in a family of three
            "marginal": _arm(root / "marginal", 30),  # passes alone, not against 0.025 / 2 in a family
            "dense": _arm(root / "dense", 48, search_mode="dense")}  # not comparable with A


def test_holm_keeps_a_marginal_arm_from_winning_in_a_family(runs, capsys):
    a, strong, marginal = str(runs["a"]), str(runs["strong"]), str(runs["marginal"])
    code, out, _ = compare_cli(capsys, a, marginal, strong, marginal, "--format", "json")
    family = json.loads(out)
    assert family["method"] == "holm" and family["alpha"] == 0.025 and family["k"] == 3
    assert family["baseline"] == a and [arm["job"] for arm in family["arms"]] == [marginal, strong, marginal]
    p = [arm["p_pass"] for arm in family["arms"]]
    reject, adjusted = multipletests(p, alpha=0.025, method="holm")[:2]
    assert [arm["holm_p"] for arm in family["arms"]] == pytest.approx(list(adjusted))
    assert [arm["outcome"] for arm in family["arms"]] == ["pass"] * 3  # every arm's own gate passes
    assert [arm["winner"] for arm in family["arms"]] == [False, True, False] == list(reject)
    assert 0.025 / 2 < p[0] < 0.025 and p[1] < 0.025 / 3
    assert code == ExitCode.PASS
    # each arm's own gate is the pairwise compare's, which stays as it was: the marginal arm passes alone
    code, single, _ = compare_cli(capsys, a, marginal, "--format", "json")
    alone = json.loads(single)
    assert code == ExitCode.PASS and "arms" not in alone
    assert alone["verdict"]["outcome"] == "pass" and alone["overall"]["p_pass"] == pytest.approx(p[0])
    code, _, _ = compare_cli(capsys, a, marginal, marginal)
    assert code == ExitCode.UNRESOLVED  # two marginal arms: neither is a winner
    _, text, _ = compare_cli(capsys, a, marginal, strong)
    assert "Holm's step-down" in text and "2.5% family-wise" in text and f"against baseline {a}" in text


def test_an_arm_that_is_not_comparable_is_listed_not_compared(runs, capsys):
    a, dense, marginal = str(runs["a"]), str(runs["dense"]), str(runs["marginal"])
    code, out, _ = compare_cli(capsys, a, dense, marginal, marginal, "--format", "json")
    family = json.loads(out)
    first = family["arms"][0]
    assert "search_mode" in first["error"] and "winner" not in first and family["k"] == 2
    assert code == ExitCode.REFUSAL  # no winner, and an arm was not compared
    _, text, _ = compare_cli(capsys, a, dense, marginal, marginal)
    table = text.split("arm(s) against baseline")[0].splitlines()
    assert max(map(len, table)) < 200  # the refusal's lines were one cell, the column as wide as all of them
    assert f"{dense}: not compared: refused: the runs are not comparable" in text and "  search_mode: " in text
    code, out, _ = compare_cli(capsys, a, dense, marginal, "--allow-noncomparable", "--format", "json")
    shown = json.loads(out)["arms"][0]
    assert shown["outcome"] == "pass" and shown["differs"] == ["search_mode"] and not shown["winner"]


def test_a_family_refuses_flips_and_baseline_auto(runs, capsys):
    for extra in (["--flips"], ["--baseline", "auto"]):
        with pytest.raises(SystemExit) as exc:
            main(["compare", str(runs["a"]), str(runs["strong"]), str(runs["marginal"]), *extra])
        assert exc.value.code == ExitCode.USAGE_ERROR
        assert "a family of arms" in capsys.readouterr().err
