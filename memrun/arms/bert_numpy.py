"""A BERT sentence encoder (all-MiniLM-L6-v2 and its kin) in numpy: no torch.

``arm/embedder=minilm`` runs here. The weights are the model folder's ``model.safetensors``
(read by ``safetensors``' numpy API), the tokenizer its ``tokenizer.json`` (Hugging Face's
``tokenizers``, the Rust tokenizer transformers itself uses); the forward pass is the
BertModel of transformers written out in numpy (embeddings, ``num_hidden_layers`` of
self-attention + feed-forward with post-LayerNorm, exact erf GELU), then the
sentence-transformers modules the folder's ``modules.json`` lists: mean pooling over the
attention mask and L2 normalization. Sequences are cut at ``max_seq_length`` tokens
(``sentence_bert_config.json``, 256 for MiniLM), as sentence-transformers cuts them.

Why not torch: the local extra would pull a multi-GB CUDA build from PyPI on a machine
without a GPU. The vectors equal sentence-transformers' within float32 rounding
(tests/arms/test_bert_numpy.py compares them, max abs difference < 1e-5 per component);
the throughput is measured by ``bench/bench_dense.py`` beside sentence-transformers'.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memrun.errors import ArmError
from memrun.lazy import lazy

if TYPE_CHECKING:
    import tokenizers
    from safetensors import numpy as safetensors_numpy
    from scipy import special as scipy_special
else:
    safetensors_numpy = lazy("safetensors.numpy")
    tokenizers = lazy("tokenizers")
    scipy_special = lazy("scipy.special")

REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")


def _json(path: Path, default: Any = None) -> Any:
    return json.loads(path.read_text()) if path.is_file() else default


class BertEncoder:
    """A sentence-transformers BERT model folder, encoded in numpy.

    folder: holds ``config.json`` (model_type bert), ``model.safetensors``, ``tokenizer.json``
    and optionally ``sentence_bert_config.json`` / ``modules.json`` / ``1_Pooling/config.json``.
    Raises ArmError when a file is missing or the model is not a mean-pooled BERT.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        missing = [f for f in REQUIRED_FILES if not (self.folder / f).is_file()]
        if missing:
            raise ArmError(f"arm.embedder.model={self.folder}: no {', '.join(missing)} there (a sentence-transformers "
                           "BERT folder with safetensors weights is needed)")
        config = _json(self.folder / "config.json")
        if config.get("model_type") != "bert" or config.get("hidden_act", "gelu") != "gelu":
            raise ArmError(f"arm.embedder.model={self.folder}: model_type {config.get('model_type')!r} with "
                           f"{config.get('hidden_act')!r}; this encoder runs BERT models with GELU only")
        pooling = _json(self.folder / "1_Pooling" / "config.json", {"pooling_mode_mean_tokens": True})
        if not pooling.get("pooling_mode_mean_tokens"):
            raise ArmError(f"arm.embedder.model={self.folder}: pooling {pooling}; this encoder mean-pools only")
        modules = _json(self.folder / "modules.json", [])
        self.normalized = any(str(m.get("type", "")).endswith("Normalize") for m in modules)
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        st_config = _json(self.folder / "sentence_bert_config.json", {})
        self.max_len = int(st_config.get("max_seq_length") or config.get("max_position_embeddings", 512))
        self.w = safetensors_numpy.load_file(str(self.folder / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in self.w.items()}
        # dense weights transposed once, contiguous: (rows, in) @ (in, out) is one BLAS gemm
        self.w.update({k: np.ascontiguousarray(v.T) for k, v in self.w.items() if k.endswith("dense.weight")
                       or k.endswith(("query.weight", "key.weight", "value.weight"))})
        self.dim = int(self.w["embeddings.word_embeddings.weight"].shape[1])
        self.tokenizer = tokenizers.Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_len)
        self.tokenizer.no_padding()

    def _layer_norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[f"{name}.weight"] + self.w[f"{name}.bias"]

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        """``x @ W^T + b`` over the last axis, as one 2-D product (a 3-D ``@`` leaves BLAS)."""
        out = x.reshape(-1, x.shape[-1]) @ self.w[f"{name}.weight"] + self.w[f"{name}.bias"]
        return out.reshape(*x.shape[:-1], out.shape[-1])

    def _layer(self, x: np.ndarray, bias: np.ndarray, i: int) -> np.ndarray:
        """One encoder layer over ``x`` (batch, seq, hidden); ``bias`` masks padding (batch, 1, 1, seq)."""
        p = f"encoder.layer.{i}"
        b, n, h = x.shape
        d = h // self.heads

        def split(t: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(t.reshape(b, n, self.heads, d).transpose(0, 2, 1, 3))

        q = split(self._dense(x, f"{p}.attention.self.query"))
        k = split(self._dense(x, f"{p}.attention.self.key"))
        v = split(self._dense(x, f"{p}.attention.self.value"))
        scores = q @ np.ascontiguousarray(k.transpose(0, 1, 3, 2)) / np.float32(np.sqrt(d)) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = (scores / scores.sum(-1, keepdims=True)) @ v
        context = context.transpose(0, 2, 1, 3).reshape(b, n, h)
        x = self._layer_norm(self._dense(context, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
        inner = self._dense(x, f"{p}.intermediate.dense")
        inner = 0.5 * inner * (1.0 + scipy_special.erf(inner / np.float32(np.sqrt(2.0))))
        return self._layer_norm(self._dense(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 (len(texts), dim): mean-pooled token states, L2-normalized when the
        folder's modules say so. Texts of one call are padded to the longest (sort them by
        length across calls to save work; :class:`memrun.arms.embedders.LocalEmbedder` does)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        n = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), n), dtype=np.int64)
        types = np.zeros_like(ids)
        mask = np.zeros((len(texts), n), dtype=np.float32)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            types[row, : len(e.ids)] = e.type_ids
            mask[row, : len(e.ids)] = 1.0
        w = self.w
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n][None]
             + w["embeddings.token_type_embeddings.weight"][types])
        x = self._layer_norm(x, "embeddings.LayerNorm")
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for i in range(self.layers):
            x = self._layer(x, bias, i)
        pooled = (x * mask[..., None]).sum(1) / np.clip(mask.sum(1, keepdims=True), 1e-9, None)
        if self.normalized:
            pooled = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return np.asarray(pooled, dtype=np.float32)
