"""memrun view's /compare and /flips pages take memrun compare's options as query parameters
and keep them in every link they make (Starlette's test client: no browser)."""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qsl, urlsplit

import pytest
from starlette.testclient import TestClient

from memrun.cli import main
from memrun.view.app import build_app


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> TestClient:
    root = tmp_path_factory.mktemp("runs")
    for arm in ("bm25", "bm25_nostop"):  # lexical_scoring differs: the page offers to name it the treatment
        assert main(["progress=false", "benchmark=synthetic", f"arm={arm}", f"hydra.run.dir={root / arm}"]) == 0
    return TestClient(build_app(root, root.parent / "index.json"), base_url="http://127.0.0.1",
                      raise_server_exceptions=False)


def _links(page: str) -> dict[str, list[tuple[str, str]]]:
    """The query of each link with an id on the page: {id: [(name, value), ...]}."""
    found = re.findall(r'<a (?:id="([^"]+)" href="([^"]+)"|href="([^"]+)" id="([^"]+)")', page)
    return {i or j: parse_qsl(urlsplit(html.unescape(h or g)).query, keep_blank_values=True)
            for i, h, g, j in found}


def test_the_compare_page_applies_and_keeps_its_other_parameters_in_its_links(client):
    """/compare?a=..&b=..&metric=mrr compared on recall@5 and linked to the flips and to the
    same pair with the treatment named without metric=mrr: the reader moved on to another comparison."""
    page = client.get("/compare", params=[("a", "bm25"), ("b", "bm25_nostop"), ("metric", "mrr"), ("seed", "3")])
    assert page.status_code == 200, page.text
    assert re.search(r"\bmrr\b", page.text) and "recall@5" not in page.text  # the comparison the parameters ask for
    links = _links(page.text)
    assert links["treat-link"] == [("a", "bm25"), ("b", "bm25_nostop"), ("metric", "mrr"), ("seed", "3"),
                                   ("treatment", "lexical_scoring")]
    assert links["flips-link"] == [("a", "bm25"), ("b", "bm25_nostop"), ("metric", "mrr"), ("seed", "3")]
    flips = client.get("/flips", params=links["flips-link"])
    assert flips.status_code == 200 and _links(flips.text)["compare-link"] == links["flips-link"]


@pytest.mark.parametrize("param, says", [(("metirc", "mrr"), "unknown parameter 'metirc': this page takes a, b and"),
                                         (("gate", "/etc/passwd"), "gate=/etc/passwd: the page takes a gate by name"),
                                         (("allow-noncomparable", "on"), "allow-noncomparable=on: give allow-noncomparable=1"),
                                         (("allow-fake", "maybe"), "allow-fake=maybe: give allow-fake=1")])
def test_a_parameter_the_page_does_not_take_is_refused_not_ignored(client, param, says):
    page = client.get("/compare", params=[("a", "bm25"), ("b", "bm25_nostop"), param])
    assert page.status_code == 400 and says in html.unescape(page.text)


@pytest.mark.parametrize("value, applied", [("1", True), ("TRUE", True), ("", True), ("0", False), ("no", False)])
def test_a_flag_is_on_or_off_by_its_value(client, value, applied):
    """allow-noncomparable=1 shows the numbers labelled NON-COMPARABLE; =0 keeps the refusal."""
    page = client.get("/compare", params=[("a", "bm25"), ("b", "bm25_nostop"), ("allow-noncomparable", value)])
    assert page.status_code == 200, page.text
    assert ("pass --allow-noncomparable" not in html.unescape(page.text)) is applied  # the refusal's advice
    assert ("recall@5" in page.text) is applied  # the figures, labelled NON-COMPARABLE


@pytest.mark.parametrize("path", ["/compare", "/flips"])
@pytest.mark.parametrize("params, missing", [([("a", "bm25")], "give b:"), ([("b", "bm25")], "give a:"),
                                             ([], "give a and b:")])
def test_a_run_left_out_is_named(client, path, params, missing):
    """/compare?a=bm25 (no b) was a 404 ': not a run folder', the missing run read as the folder ''."""
    page = client.get(path, params=params)
    assert page.status_code == 400 and missing in html.unescape(page.text), page.text[-500:]
