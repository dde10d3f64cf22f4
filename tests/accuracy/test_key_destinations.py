"""A key goes only to the base URL it belongs to: OpenAI's API is the fallback for
$OPENAI_API_KEY alone, never for a gateway's key (judge=claude, an embedder's own key)."""

from __future__ import annotations

import json

import pytest

from accuracy.helpers import KEY, run_memrun
from memrun.arms import embedders
from memrun.errors import ArmError
from memrun.llm import endpoint

GATEWAY_KEY = "sk-gateway-loopback-0123456789abcdef"


def test_a_gateway_judge_without_its_base_url_refuses_before_sending_its_key(openai_server, tmp_path, monkeypatch,
                                                                           capsys):
    # The loopback server stands in for OpenAI's API: on the old fallback the gateway's key reached it.
    monkeypatch.setattr(endpoint, "DEFAULT_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("MEMRUN_GATEWAY_API_KEY", GATEWAY_KEY)
    monkeypatch.delenv("MEMRUN_GATEWAY_BASE_URL", raising=False)
    rc, out = run_memrun(tmp_path, "judge=claude")
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert "$MEMRUN_GATEWAY_BASE_URL is not set" in err[0] and "$MEMRUN_GATEWAY_API_KEY" in err[0]
    assert "export MEMRUN_GATEWAY_BASE_URL=" in err[0] and "judge.base_url" in err[0]
    assert all(GATEWAY_KEY not in json.dumps(e.headers) for e in openai_server.log)
    assert not out.exists()


def test_a_gateway_judge_goes_to_its_gateway(openai_server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("MEMRUN_GATEWAY_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("MEMRUN_GATEWAY_API_KEY", GATEWAY_KEY)
    rc, _ = run_memrun(tmp_path, "judge=claude")
    assert rc == 0 and any(GATEWAY_KEY in json.dumps(e.headers) for e in openai_server.log)


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"base_url_env": "GW_BASE_URL"}, "$GW_BASE_URL is not set"),
    ({"base_url_env": None}, "judge.base_url is not set"),
])
def test_any_key_but_openais_needs_its_base_url(kwargs, named):
    with pytest.raises(Exception, match="never to OpenAI's API") as caught:
        endpoint.resolve_endpoint("judge", model="m", base_url=None, api_key_env="GW_KEY",
                                  environ={"GW_KEY": GATEWAY_KEY}, **kwargs)
    assert named in str(caught.value) and "$GW_KEY" in str(caught.value)
    # given explicitly, OpenAI's API takes any key variable
    given = endpoint.resolve_endpoint("judge", model="m", base_url=endpoint.DEFAULT_BASE_URL, api_key_env="GW_KEY",
                                      environ={"GW_KEY": GATEWAY_KEY}, **kwargs)
    assert given.api_key == GATEWAY_KEY


def test_a_missing_key_names_where_it_would_go():
    with pytest.raises(Exception, match=r"\$GW_KEY \(judge.api_key_env\) is not set") as caught:
        endpoint.resolve_endpoint("judge", model="m", base_url=None, base_url_env="GW_BASE_URL", api_key_env="GW_KEY",
                                  environ={"GW_BASE_URL": "https://gw.example.com/v1"})
    assert "https://gw.example.com/v1 ($GW_BASE_URL)" in str(caught.value)
    with pytest.raises(Exception, match=r"OpenAI's API, as \$OPENAI_BASE_URL is not set"):
        endpoint.resolve_endpoint("reader", model="m", base_url=None, base_url_env="OPENAI_BASE_URL",
                                  api_key_env="OPENAI_API_KEY", environ={})


def test_an_embedder_with_its_own_key_needs_a_base_url(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("GW_KEY", GATEWAY_KEY)
    with pytest.raises(ArmError, match=r"\$OPENAI_BASE_URL is not set, and the key in \$GW_KEY") as caught:
        embedders.OpenAIEmbedder(api_key_env="GW_KEY")
    assert "arm.embedder.base_url" in str(caught.value)
