"""The secret parts of a URL (user info, query values) are masked in configs, overrides and
free text, and still tell configurations apart (memrun.core.url_secrets)."""

from __future__ import annotations

import logging

from memrun.core.redaction import LogRedactor, Redactor, config_secrets, redact_config, redact_override
from memrun.core.url_secrets import redact_url, redact_urls

SECRET = "qv-Secret-5e8a1c3b"


def test_every_query_value_and_user_info_is_masked_names_and_templates_kept():
    shown, found = redact_url(f"https://bob:{SECRET}@mem.example:8443/v1/mcp?api_key={SECRET}&top=5&debug#part")
    assert shown == "https://***@mem.example:8443/v1/mcp?api_key=***&top=***&debug#part"
    assert found == [f"bob:{SECRET}", SECRET, "5"]
    path = "/v1/namespaces/{{ namespace }}/search?ns={{ namespace }}&q={{ query | urlencode }}&sig=" + SECRET
    assert redact_url(path)[0] == "/v1/namespaces/{{ namespace }}/search?ns={{ namespace }}&q={{ query | urlencode }}&sig=***"
    assert redact_url("http://h/?token=${oc.env:TOKEN}") == ("http://h/?token=${oc.env:TOKEN}", [])
    # a fragment of pairs is a query by another name (OAuth's implicit grant); a plain fragment stays
    assert redact_url(f"https://app.example/cb#access_token={SECRET}&token_type=bearer") == \
        ("https://app.example/cb#access_token=***&token_type=***", [SECRET, "bearer"])
    assert redact_url(f"http://h/p?k={SECRET}#state=s1") == ("http://h/p?k=***#state=***", [SECRET, "s1"])
    for text in ("/no_think Who said it? a=b", "What did Caroline say?", "https://h/v1", "a=b&c=d",
                 "https://h/docs#intro", "Use C# here=there"):
        assert redact_url(text) == (text, [])  # a prompt is not a URL, and a URL without secrets is kept


def test_free_text_forms():
    for line, clean in (
        (f"GET http://127.0.0.1:9/search?api_key={SECRET}&v=1: 500", "GET http://127.0.0.1:9/search?api_key=***&v=*** 500"),
        (f"URL('http://h?token={SECRET}')", "URL('http://h?token=***')"),
        (f"POST /v1/search?token={SECRET} failed", "POST /v1/search?token=*** failed"),
        (f"path=/s?ns={{{{ namespace }}}}&key={SECRET} x", "path=/s?ns={{ namespace }}&key=*** x"),  # cut by a space
        (f"http://u:{SECRET}@h/", "http://***@h/"),
        ("Who said it? a=b, and/or so", "Who said it? a=b, and/or so"),
        (f"redirect to https://app/cb#access_token={SECRET}&x=1 failed", "redirect to https://app/cb#access_token=***&x=*** failed"),
        (f"GET http://h/s?k={SECRET}#t={SECRET}", "GET http://h/s?k=***#t=***"),
        ("see https://h/docs#intro and C# a=b", "see https://h/docs#intro and C# a=b"),
    ):
        assert redact_urls(line) == clean
        assert redact_urls(clean) == clean  # idempotent: a saved file redacted again is unchanged


def test_configs_overrides_and_logs():
    resolved = {"arm": {"url": f"http://h/mcp?api_key={SECRET}", "args": ["srv", f"http://h/?t={SECRET}"]}}
    saved = redact_config(resolved, fingerprints=True)["arm"]
    assert saved["url"] == "http://h/mcp?api_key=***" and saved["args"] == ["srv", "http://h/?t=***"]
    other = redact_config({"arm": {**resolved["arm"], "url": "http://h/mcp?api_key=another"}}, fingerprints=True)
    assert other["arm"]["masked_fingerprint"] != saved["masked_fingerprint"]  # a changed value is a changed config
    # spelled with ${oc.env:...}: saved as spelled, its resolved value not part of the fingerprint
    spelled = redact_config(resolved, {"arm": {**resolved["arm"], "url": "http://h/mcp?api_key=${oc.env:K}"}},
                            fingerprints=True)["arm"]
    assert spelled["url"] == "http://h/mcp?api_key=${oc.env:K}"
    assert SECRET in list(config_secrets(resolved))  # the free-text redactor knows the value too
    assert Redactor.for_config(resolved).text(f"echo {SECRET}") == "echo ***"
    assert redact_override(f"arm.url='http://h/?ns={{{{ namespace }}}}&k={SECRET}'", {}) == \
        "arm.url='http://h/?ns={{ namespace }}&k=***'"
    assert redact_override(f"arm.args=[srv,'http://h/?k={SECRET}']", {}) == "arm.args=[srv,http://h/?k=***]"
    assert redact_override(f"arm.args=[srv,http://h/?k={SECRET}]", {}) == "arm.args=***"  # unparseable: all of it
    record = logging.LogRecord("hydra", 20, "", 0, f"#0 : arm=mcp arm.url=http://h/?k={SECRET}", None, None)
    LogRedactor().filter(record)
    assert record.getMessage() == "#0 : arm=mcp arm.url=http://h/?k=***"


def test_a_replys_urls_are_kept_but_for_the_configs_secrets():
    """A reader may answer with a URL: masking its query by shape would change the answer a
    judge grades. Replies lose the config's own secrets (and user info), not every query."""
    redactor = Redactor.for_config({"arm": {"url": f"http://h/mcp?api_key={SECRET}"}})
    answer = f"see https://docs.example/page?id=42&lang=en (key {SECRET}, http://u:pw@h/)"
    assert redactor.reply(answer) == "see https://docs.example/page?id=42&lang=en (key ***, http://***@h/)"
    assert redactor.text(answer) == "see https://docs.example/page?id=***&lang=*** (key ***, http://***@h/)"
    row = {"reader_answer": answer, "error": f"GET http://h/x?token={SECRET[:6]} failed"}
    redactor.row(row, ("reader_answer",), replies=True)
    redactor.row(row, ("error",))
    assert row == {"reader_answer": redactor.reply(answer), "error": "GET http://h/x?token=*** failed"}
