"""Request templates (Jinja2) and response paths (JMESPath) of ``arm=http`` and ``arm=mcp``.

``arm=mcp`` (:mod:`memrun.arms.mcp_ops`) uses the same :class:`JsonTemplate` for tool
arguments, :class:`ResponsePath` for results and :func:`hits_from_result` for hits;
:class:`Operation`, :func:`encode_body` and the HTTP encodings are ``arm=http``'s alone.

A request template is the JSON value to send, written in YAML, whose strings are Jinja2
templates. A string that is exactly one expression, ``"{{ k }}"``, becomes that
expression's value with its type (an int, a list, an object, null); any other string is
rendered as text (``"/namespaces/{{ namespace }}/search"``). Unlike Jinja's
NativeEnvironment, a text value is never re-parsed, so a record whose text is ``"42"``
stays the string ``"42"``. Undefined names are errors (StrictUndefined).

An :class:`Operation` is one configured request of ``arm=http``: method, path and body
templates, a response path, and whether it may be retried after a transport error.

A response path is a JMESPath expression (https://jmespath.org) over the parsed JSON
response, e.g. ``results[].{key: id, score: score, text: content}``.

Why these two: Jinja2 and jmespath are small, long-maintained, widely used (Ansible,
the AWS CLI) and documented elsewhere, so a user's server config is written in
languages they can look up rather than a memrun-only mini-language; JMESPath has a
written specification and one clear answer for a missing field (null), which the arm
turns into an error naming the path.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from jmespath.exceptions import JMESPathError

from memrun.arms.jmespath_compiled import compile_path
from memrun.errors import ArmError
from memrun.lazy import lazy
from memrun.records import Hit

if TYPE_CHECKING:
    import jinja2
else:
    jinja2 = lazy("jinja2")  # only a template beyond {{ a.b }} names, or an undefined name's error, needs it


@functools.lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    """The one Jinja environment of every template (strict: an undefined name is an error)."""
    return jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)


_JINJA_WORDS = frozenset({"and", "or", "not", "in", "is", "if", "else", "true", "false", "none", "True", "False",
                          "None"})


def _plain_name(name: str) -> bool:
    """Whether ``name`` (``a.b``, matched by :data:`_NAME`) is a plain name to Jinja, which always
    parses, so its Jinja render can wait (:func:`_later`); a word Jinja reads otherwise (``not``,
    ``true``) is compiled at once, so a template that does not parse still fails at construction."""
    return not any(part in _JINJA_WORDS for part in name.split("."))


def _later(build: Callable[[], Render]) -> Render:
    """The render ``build`` returns, built at its first call: a ``{{ a.b }}`` name (or text of
    only such names) is read without Jinja, which is needed only to word an undefined name's
    error, so a run whose templates are all names sends its first request without Jinja."""
    made: list[Render] = []

    def render(context: dict[str, Any]) -> Any:
        if not made:
            made.append(build())
        return made[0](context)
    return render
_WHOLE_EXPRESSION = re.compile(r"^\s*\{\{((?:(?!\}\}|\{\{).)*)\}\}\s*$", re.DOTALL)
_NAME = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"  # query, record.key: looked up without Jinja (same result)
_SIMPLE = re.compile(rf"^\s*({_NAME})\s*$")
_TEXT_FIELD = re.compile(rf"\{{\{{\s*({_NAME})\s*\}}\}}")


_DICT_ATTRIBUTES = frozenset(dir(dict))


def _lookup(path: tuple[str, ...], context: Mapping[str, Any]) -> Any:
    """``a.b.c`` as Jinja reads it (attribute first, then item); KeyError, AttributeError or
    TypeError when it is undefined (the caller then lets Jinja raise its own error). A plain
    dict has no attribute of a name outside :data:`_DICT_ATTRIBUTES`, so its item is read
    at once (the ingest records: no AttributeError raised and caught per field)."""
    value = context[path[0]]
    for name in path[1:]:
        if type(value) is dict and name not in _DICT_ATTRIBUTES:
            value = value[name]
            continue
        try:
            value = getattr(value, name)
        except AttributeError:
            value = value[name]
    return value


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else type(exc).__name__


Render = Callable[[dict[str, Any]], Any]  # a compiled template: context -> value


def _constant(value: Any) -> Render:
    return lambda context: value


def _render_error(where: str, exc: jinja2.TemplateError, context: Mapping[str, Any]) -> ArmError:
    return ArmError(f"{where}: {_first_line(exc)} (names available: {', '.join(sorted(context))})")


def _expression(compiled: Any, where: str) -> Render:
    """A Jinja expression's value, with its type; an undefined name raises ArmError."""
    def render(context: dict[str, Any]) -> Any:
        try:
            result = compiled(**context)
            if isinstance(result, jinja2.Undefined):
                result._fail_with_undefined_error()
            return result
        except jinja2.TemplateError as exc:
            raise _render_error(where, exc, context) from exc
    return render


def _text(template: jinja2.Template, where: str) -> Render:
    def render(context: dict[str, Any]) -> Any:
        try:
            return template.render(**context)
        except jinja2.TemplateError as exc:
            raise _render_error(where, exc, context) from exc
    return render


def _name(path: tuple[str, ...], jinja: Render) -> Render:
    """``{{ a.b }}`` looked up directly (10x cheaper than Jinja's call); when it is undefined,
    ``jinja`` renders it, so the error is Jinja's own."""
    def render(context: dict[str, Any]) -> Any:
        try:
            return _lookup(path, context)
        except (KeyError, AttributeError, TypeError):
            return jinja(context)
    return render


def _fields(pieces: list[Any], jinja: Render) -> Render:
    """Text with only ``{{ name }}`` fields (``pieces``: literal, path, literal, ...), joined
    directly; ``jinja`` renders it when a name is undefined."""
    def render(context: dict[str, Any]) -> Any:
        try:
            return "".join(p if isinstance(p, str) else str(_lookup(p, context)) for p in pieces)
        except (KeyError, AttributeError, TypeError):
            return jinja(context)
    return render


def _generate(spec: Any, fallback: Render) -> Render | None:
    """One generated function for a template made only of constants, dicts, lists and
    whole ``{{ a.b }}`` names (the usual ingest record and search body), or None.

    The function reads each name as :func:`_lookup` does for plain dicts, in one
    expression building the whole value (a record costs what a hand-written dict display
    would); when a name is missing or a value on its path is not a plain dict, it returns
    ``fallback(context)`` (the nested functions of :class:`JsonTemplate`), which gives the
    same value or Jinja's own error. Generating source is how dataclasses and Jinja itself
    reach that speed; the source here only ever holds string literals and local names.
    """
    constants: list[Any] = []
    locals_: dict[tuple[str, ...], str] = {}
    dict_checked: set[tuple[str, ...]] = set()
    checks: list[str] = []

    def local(path: tuple[str, ...]) -> str:
        """The local holding ``path``'s value; every proper prefix is checked to be a plain dict."""
        if path in locals_:
            return locals_[path]
        if len(path) == 1:
            source = f"context[{path[0]!r}]"
        else:
            parent = local(path[:-1])
            if path[:-1] not in dict_checked:
                checks.append(f"if type({parent}) is not dict: return fallback(context)")
                dict_checked.add(path[:-1])
            source = f"{parent}[{path[-1]!r}]"
        name = locals_[path] = f"v{len(locals_)}"
        checks.append(f"{name} = {source}")
        return name

    def value(node: Any) -> str | None:
        """The source building ``node``; None when it is not plain (a text field, a filter,
        an expression): then there is no generated fast path."""
        if isinstance(node, str):
            if m := _WHOLE_EXPRESSION.match(node):
                simple = _SIMPLE.match(m.group(1))
                path = tuple(simple.group(1).split(".")) if simple else ()
                if not path or any(name in _DICT_ATTRIBUTES for name in path[1:]):
                    return None
                return local(path)
            if "{" in node:
                return None
        elif isinstance(node, Mapping):
            fields = [value(v) for v in node.values()]
            if None in fields:
                return None
            return "{" + ", ".join(f"{str(k)!r}: {v}" for k, v in zip(node.keys(), fields)) + "}"
        elif isinstance(node, (list, tuple)):
            items = [value(v) for v in node]
            plain = [s for s in items if s is not None]
            return "[" + ", ".join(plain) + "]" if len(plain) == len(items) else None
        constants.append(node)
        return f"constants[{len(constants) - 1}]"

    result = value(spec)
    if result is None:
        return None
    source = "\n".join(["def render(context):", "    try:", *(f"        {line}" for line in checks),
                        f"        return {result}", "    except KeyError:", "        return fallback(context)"])
    namespace: dict[str, Any] = {"constants": constants, "fallback": fallback}
    exec(compile(source, "<memrun request template>", "exec"), namespace)  # noqa: S102
    return namespace["render"]


class JsonTemplate:
    """A JSON value whose strings are Jinja2 templates (see the module docstring).

    spec: the value (dicts, lists, scalars) from the config. where: the config key, for
    errors. Raises ArmError at construction for a template that does not parse and from
    :meth:`render` for one that fails (an undefined name, a bad filter). The value is
    compiled once: into one generated function when it holds only constants and whole
    ``{{ a.b }}`` names (:func:`_generate`), else into nested functions of the context.
    """

    def __init__(self, spec: Any, where: str) -> None:
        self.where = where
        nested = self._compile(spec, where)
        self._render = _generate(spec, nested) or nested

    def _compile(self, spec: Any, where: str) -> Render:
        try:
            if isinstance(spec, str):
                if m := _WHOLE_EXPRESSION.match(spec):
                    source = m.group(1)
                    simple = _SIMPLE.match(source)
                    if simple and _plain_name(simple.group(1)):  # the common case
                        return _name(tuple(simple.group(1).split(".")), _later(
                            lambda: _expression(_env().compile_expression(source, undefined_to_none=False), where)))
                    expression = _expression(_env().compile_expression(source, undefined_to_none=False), where)
                    return _name(tuple(simple.group(1).split(".")), expression) if simple else expression
                if "{" not in spec:
                    return _constant(spec)
                pieces = _TEXT_FIELD.split(spec)  # literal, name, literal, name, ..., literal
                if not any(mark in p for p in pieces[::2] for mark in ("{{", "{%", "{#")) and all(
                        _plain_name(name) for name in pieces[1::2]):
                    return _fields([p if i % 2 == 0 else tuple(p.split(".")) for i, p in enumerate(pieces)],
                                   _later(lambda: _text(_env().from_string(spec), where)))
                return _text(_env().from_string(spec), where)
        except jinja2.TemplateSyntaxError as exc:
            raise ArmError(f"{where}: template {spec!r} does not parse: {exc.message}") from exc
        if isinstance(spec, Mapping):
            items = [(str(k), self._compile(v, f"{where}.{k}")) for k, v in spec.items()]
            return lambda context: {k: render(context) for k, render in items}
        if isinstance(spec, (list, tuple)):
            renders = [self._compile(v, f"{where}[{i}]") for i, v in enumerate(spec)]
            return lambda context: [render(context) for render in renders]
        return _constant(spec)

    def render(self, **context: Any) -> Any:
        """The value with every template evaluated against ``context``."""
        return self._render(context)

    def render_each(self, name: str, values: Iterable[Any], **context: Any) -> list[Any]:
        """``[self.render(**context, name=v) for v in values]``, with one context for all
        (an ingest batch's records)."""
        context = dict(context)
        rendered = []
        for value in values:
            context[name] = value
            rendered.append(self._render(context))
        return rendered


class ResponsePath:
    """A compiled JMESPath expression; raises ArmError naming ``where`` when it does not parse."""

    def __init__(self, expression: str, where: str) -> None:
        self.expression, self.where = expression, where
        try:
            self._compiled = compile_path(expression)  # jmespath's answer, without its tree walk per call
        except JMESPathError as exc:
            raise ArmError(f"{where}: {expression!r} is not a JMESPath expression ({_first_line(exc)})") from exc

    def search(self, document: Any) -> Any:
        """The value at the path (None when the document has nothing there)."""
        return self._compiled(document)

    def find(self, document: Any, source: str, missing_ok: bool = False) -> Any:
        """The value at the path; raises ArmError naming the path, ``source`` (where the
        document came from, e.g. ``the response of GET <url>``) and the document's shape
        when the path finds nothing there (unless ``missing_ok``)."""
        value = self._compiled(document)
        if value is None and not missing_ok:
            raise ArmError(f"{self.where} {self.expression!r} found nothing in {source}, which is "
                           f"{describe_shape(document)}")
        return value


def describe_shape(document: Any) -> str:
    """A short description of a JSON value for errors, e.g. ``an object with keys a, b``."""
    if isinstance(document, dict):
        return f"an object with keys {', '.join(list(document)[:8]) or '(none)'}"
    if isinstance(document, list):
        return f"a list of {len(document)}"
    return f"{type(document).__name__} {str(document)[:60]!r}"


def hits_from_result(found: Any, path: ResponsePath) -> list[Hit]:
    """The hits a search ``result`` path gave (``found``): a list of objects with ``key``
    (required: a string or an integer), ``score`` (a number, or a string holding one;
    missing: rank order, best first) and ``text`` (a string or a number; missing: none).
    Shared by ``arm=http`` and ``arm=mcp``; raises ArmError naming ``path.where``, the field
    and its value's shape for anything else (an object, a list, a boolean), which str()
    would have turned into a Python repr."""
    where = path.where
    if not isinstance(found, list):
        raise ArmError(f"{where} must give a list of hits; got {describe_shape(found)}")
    hits = []
    for rank, hit in enumerate(found):
        if isinstance(hit, Mapping) and "key" in hit and hit["key"] is None:
            raise ArmError(f"{where}: hit {rank}'s key came back null ({describe_shape(hit)}): the path "
                           f"{path.expression!r} maps 'key' to a field that is missing or "
                           "null in the server's hit; map 'key' to the field holding the record key you sent")
        if not isinstance(hit, Mapping) or hit.get("key") is None:
            raise ArmError(f"{where}: hit {rank} is {describe_shape(hit)}; each hit needs a 'key' "
                           "(map the server's id, e.g. {key: id, score: score, text: content})")
        key, score, text = hit["key"], hit.get("score"), hit.get("text")
        if isinstance(key, bool) or not isinstance(key, (str, int)):
            raise _bad_field(path, rank, hit, "key", "the record key you sent (a string)")
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float, str))):
            raise _bad_field(path, rank, hit, "score", "a number (or leave 'score' out: rank order)")
        if isinstance(text, bool) or not isinstance(text, (str, int, float, type(None))):
            # str() of an object wrote its Python repr as the hit's text: under substring gold
            # every such hit missed, and the run printed 0.0 everywhere and exited 0
            raise _bad_field(path, rank, hit, "text", "the record's text (a string; a list of strings: "
                             "join('\\n', field); leave 'text' out for none)")
        try:
            value = float(len(found) - rank if score is None else score)
        except ValueError:
            raise _bad_field(path, rank, hit, "score", "a number (or leave 'score' out: rank order)") from None
        hits.append(Hit(key=str(key), score=value, text="" if text is None else str(text)))
    return hits


def _bad_field(path: ResponsePath, rank: int, hit: Mapping[str, Any], name: str, wanted: str) -> ArmError:
    """The ArmError for hit ``rank`` whose ``name`` field has a value no hit can hold."""
    return ArmError(f"{path.where}: hit {rank}'s {name} came back as {describe_shape(hit[name])}: the path "
                    f"{path.expression!r} maps '{name}' to a field that does not hold {wanted}; "
                    f"map '{name}' to the one that does")


# The names each operation's templates see (``record`` too in ingest's ``record``).
CONTEXT = {
    "health": ("flags",),
    "create": ("namespace", "history_id", "flags"),
    "ingest": ("namespace", "history_id", "flags", "records"),
    "ready": ("namespace", "history_id", "flags", "n_records"),
    "search": ("namespace", "query", "k", "flags"),
    "erase": ("namespace", "flags"),
}
KEYS = ("method", "path", "body", "result", "record", "idempotent", "encoding")
READY_KEYS = ("equals", "timeout_s", "interval_s")
# Whether a transport error may be retried (the request may have reached the server):
# reads and erases are safe to repeat; creating and writing are not, nor is a crediting
# search (it reinforces what it finds). A connect error is retried whatever this says.
IDEMPOTENT = {"health": True, "ready": True, "search": True, "erase": True, "create": False, "ingest": False}
# How a rendered body is sent: its Content-Type and what the rendered value must be.
ENCODINGS = {
    "json": ("application/json", "any JSON value"),
    "ndjson": ("application/x-ndjson", "a list: one JSON value a line (bulk endpoints)"),
    "form": ("application/x-www-form-urlencoded", "an object of field: value"),
    "text": ("text/plain; charset=utf-8", "a string"),
}


def encode_body(body: Any, encoding: str, where: str) -> dict[str, Any]:
    """The httpx keyword arguments that send ``body`` (a rendered template) in ``encoding``
    (one of :data:`ENCODINGS`); raises ArmError naming ``where`` when the rendered value
    does not fit the encoding (e.g. ndjson of an object)."""
    if body is None:
        return {}
    if encoding == "json":
        return {"json": body}
    content_type, wanted = ENCODINGS[encoding]
    if encoding == "ndjson" and isinstance(body, list):
        content = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in body)
    elif encoding == "form" and isinstance(body, Mapping):
        return {"data": {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in body.items()}}
    elif encoding == "text" and isinstance(body, str):
        content = body
    else:
        raise ArmError(f"{where}.body: encoding {encoding} sends {wanted}; the template gave {describe_shape(body)}")
    return {"content": content.encode("utf-8"), "headers": {"Content-Type": content_type}}


def check_keys(name: str, spec: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    """``arm.<name>``, after checking that ``spec`` (one operation of ``arm=http`` or
    ``arm=mcp``) has only ``keys`` (and :data:`READY_KEYS` for ``ready``). Raises ArmError
    naming the unknown keys and the allowed ones."""
    where = f"arm.{name}"
    allowed = keys + (READY_KEYS if name == "ready" else ())
    unknown = sorted(set(spec) - set(allowed))
    if unknown:
        raise ArmError(f"{where}: unknown key {', '.join(unknown)}; use {', '.join(allowed)}")
    return where


class Operation:
    """One configured request: method, path template, body template, result path.

    ``idempotent`` (None: the operation's default, :data:`IDEMPOTENT`) decides whether
    a transport error is retried. ``encoding`` (default ``json``; :data:`ENCODINGS`) says
    how the rendered body is sent: JSON, NDJSON (a list, one value a line), a form or text.
    ``ready`` also takes ``equals``, ``timeout_s``, ``interval_s``.
    """

    def __init__(self, name: str, spec: Mapping[str, Any], crediting: bool = False) -> None:
        where = check_keys(name, spec, KEYS)
        if not spec.get("path"):
            raise ArmError(f"{where}.path is not set; give the request path, e.g. /namespaces/{{{{ namespace }}}}")
        self.name, self.method = name, str(spec.get("method") or "POST").upper()
        self.encoding = str(spec.get("encoding") or "json")
        if self.encoding not in ENCODINGS:
            raise ArmError(f"{where}.encoding={self.encoding!r}: use one of {', '.join(ENCODINGS)}")
        self.path = JsonTemplate(str(spec["path"]), f"{where}.path")
        self.body = JsonTemplate(spec["body"], f"{where}.body") if spec.get("body") is not None else None
        self.result = ResponsePath(spec["result"], f"{where}.result") if spec.get("result") else None
        self.record = JsonTemplate(spec["record"], f"{where}.record") if spec.get("record") is not None else None
        default = IDEMPOTENT[name] and not (name == "search" and crediting)
        self.idempotent = default if spec.get("idempotent") is None else bool(spec["idempotent"])
        self.equals = JsonTemplate(spec["equals"], f"{where}.equals") if spec.get("equals") is not None else None
        self.timeout_s = float(60.0 if spec.get("timeout_s") is None else spec["timeout_s"])
        self.interval_s = float(0.5 if spec.get("interval_s") is None else spec["interval_s"])
        if name == "ready":
            if self.result is None:
                raise ArmError(f"{where}.result is not set; give the JMESPath of the readiness value, e.g. count "
                               "(with equals: '{{ n_records }}') or \"status == 'done'\"")
            if not (self.timeout_s > 0 and self.interval_s > 0):
                raise ArmError(f"{where}: timeout_s and interval_s must be positive numbers of seconds")


# -- the lifecycle both arms share: set-up checks of templates, readiness -------------

SAMPLE_RECORD = {"key": "D1:1", "text": "text", "timestamp": None, "session": "session_1", "index": 0}


def sample_context(name: str, names: tuple[str, ...], record: JsonTemplate | None, prefix: str,
                   flags: Mapping[str, Any]) -> dict[str, Any]:
    """Sample values for the ``names`` operation ``name``'s templates see (its ``CONTEXT``
    entry), so that each arm renders every template once at set-up and a typo fails before
    any work; ingest's ``records`` holds one :data:`SAMPLE_RECORD` rendered by ``record``
    (the operation's per-record template, if any)."""
    sample = {"namespace": f"{prefix}h", "namespace_id": f"{prefix}h", "namespace_dir": f"/tmp/{prefix}h",
              "history_id": "h", "flags": flags, "query": "q", "k": 1, "n_records": 1}
    context = {k: sample[k] for k in names if k in sample}
    if name == "ingest":
        context["records"] = [record.render(**context, record=SAMPLE_RECORD) if record else SAMPLE_RECORD]
    return context


async def await_ready(op: Any, context: dict[str, Any], read: Callable[[], Awaitable[Any]], ever_ready: bool) -> None:
    """Poll ``read()`` (the value ``op.result`` finds in the ``ready`` operation's answer)
    every ``op.interval_s`` until it equals ``op.equals`` rendered over ``context`` (no
    ``equals``: until it is true), for at most ``op.timeout_s`` seconds. Raises TimeoutError
    (recorded on the history's items), or ArmError when ``ever_ready`` is false (no history
    of this run has been ready: a config problem)."""
    expected = op.equals.render(**context) if op.equals is not None else None
    deadline = time.monotonic() + op.timeout_s
    while True:
        value = await read()
        if (value == expected or str(value) == str(expected)) if op.equals is not None else bool(value):
            return
        if time.monotonic() + op.interval_s > deadline:
            break
        await asyncio.sleep(op.interval_s)
    wanted = f"{expected!r}" if op.equals is not None else "a true value"
    message = (f"arm.ready: namespace {context['namespace']} not ready after {op.timeout_s:g} s: "
               f"{op.result.expression!r} gave {value!r}, waiting for {wanted}")
    if not ever_ready:
        raise ArmError(f"{message}; no history has been ready in this run: check arm.ready (or raise timeout_s)")
    raise TimeoutError(message)
