"""A history's record tokens for ``arm=bm25`` as run-wide ids, in a few passes over all its texts.

The tokens are bm25s's (:mod:`memrun.arms.bm25_rules`): each text lower-cased by
``str.lower``, then every run of two or more ``\\w`` characters (what
``re.findall(r"\\w\\w+")`` returns), minus the stopwords. Tokenizing text by text in
Python made that about half of a LongMemEval-S run (a ``findall`` and a dict lookup per
token, 250,000 texts). :meth:`HistoryTokens.ids` does it for many texts at once:

1. each text is lower-cased by ``str.lower`` (so Python's own case rules, final sigma
   included) and the texts are joined by a space, which no token crosses;
2. the characters that are ``\\w`` are marked (ASCII text by ``bytes.translate`` through a
   table; any other code point is asked of ``re`` itself once per run) and numpy finds, among
   them, those beside another one: the characters of the tokens, and where each token starts
   and ends;
3. the tokens' UTF-8 bytes become one Arrow string array, and Arrow's
   ``dictionary_encode`` gives the distinct tokens (first seen first) and each token's
   index among them, in C++;
4. only the distinct tokens meet the run's Python vocabulary (token -> id, new tokens
   numbered in the order they are first seen, stopwords -1), so the ids equal the ones a
   token-by-token pass gives. A test holds them equal on LoCoMo, BEAM and LongMemEval
   files, and on random Unicode text.

A history of fewer than :data:`SMALL_CHARS` characters is tokenized text by text instead
(``findall`` and a vocabulary lookup per token, the rule itself): below that size the passes'
fixed cost (some twenty numpy and Arrow calls) exceeds the Python loop's, and a run whose
histories are all that small never loads ``pyarrow.compute``.

pyarrow (already memrun's table library) is loaded at the first history, not at start-up.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from memrun.arms.bm25_rules import split_tokens
from memrun.lazy import lazy

if TYPE_CHECKING:
    import pyarrow as pa
    from pyarrow import compute as pc
else:
    pa = lazy("pyarrow")  # with its compute module: loaded at the first history tokenized
    pc = lazy("pyarrow.compute")

_is_word = re.compile(r"\w").match  # the token pattern's own character class, asked of re itself
_ASCII_WORD = np.array([c < 128 and _is_word(chr(c)) is not None for c in range(256)])
"""byte -> whether it is a ``\\w`` character, for ASCII text (bytes >= 128 never occur there)."""
_ASCII_WORD_BYTES = _ASCII_WORD.astype(np.uint8).tobytes()
""":data:`_ASCII_WORD` as a ``bytes.translate`` table: ASCII text becomes its ``\\w`` mask in one
C pass over its bytes (~5x numpy's table lookup), read as a bool array."""

BATCH_CHARS = 1 << 22
"""Texts are tokenized in batches of about this many characters, so a very long history
(BEAM 10M) never holds more than a few such arrays at once."""

SMALL_CHARS = 4096
"""Histories shorter than this (characters) are tokenized text by text: at ~8,000 characters
the two ways cost the same on LoCoMo's turns (20 turns: 0.4 ms in Python, 0.55 ms in passes)."""


class Vocabulary(dict[str, int]):
    """token -> run-wide id; a new token gets the next id on lookup (``__missing__``), so
    mapping tokens is one C-level ``map``. Stopwords are entered as -1."""

    @classmethod
    def of(cls, stopwords: frozenset[str]) -> Vocabulary:
        return cls(dict.fromkeys(stopwords, -1))

    def __missing__(self, token: str) -> int:
        value = self[token] = len(self)
        return value


class HistoryTokens:
    """Run-wide token ids of many texts at once (see the module docstring).

    stopwords: tokens left out (their id is -1 in :attr:`vocab`).
    """

    def __init__(self, stopwords: frozenset[str]) -> None:
        self.vocab = Vocabulary.of(stopwords)
        self._word: dict[int, bool] = {}  # a non-ASCII code point -> whether re's \w matches it

    def ids(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(the kept tokens' ids of every text, text after text, int32; each text's number
        of kept tokens, int64, one per text)."""
        if sum(map(len, texts)) < SMALL_CHARS:
            return self._text_by_text(texts)
        flats, counts = [], []
        start = 0
        while start < len(texts):
            end, size = start, 0
            while end < len(texts) and (size < BATCH_CHARS or end == start):
                size += len(texts[end]) + 1
                end += 1
            flat, count = self._batch(texts[start:end])
            flats.append(flat)
            counts.append(count)
            start = end
        if not flats:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64)
        if len(flats) == 1:
            return flats[0], counts[0]
        return np.concatenate(flats), np.concatenate(counts)

    def _text_by_text(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`ids` by the rule itself: each lower-cased text's ``findall``, token by token."""
        lookup = self.vocab.__getitem__
        ids: list[int] = []
        counts = []
        for text in texts:
            kept = [i for i in map(lookup, split_tokens(text.lower())) if i >= 0]
            ids += kept
            counts.append(len(kept))
        # fromiter: a list of ints to int32 in ~20% fewer instructions than np.array's
        return np.fromiter(ids, dtype=np.int32, count=len(ids)), np.array(counts, dtype=np.int64)

    def _batch(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        lowered = [text.lower() for text in texts]
        joined = " ".join(lowered)
        text_starts = np.cumsum([0] + [len(t) + 1 for t in lowered[:-1]])  # each text's first character
        if joined.isascii():
            raw = joined.encode("ascii")
            data = np.frombuffer(raw, dtype=np.uint8)
            token, first, last = _token_chars(np.frombuffer(raw.translate(_ASCII_WORD_BYTES), dtype=bool))
            starts, ends = np.flatnonzero(first), np.flatnonzero(last)
            token_bytes, sizes = token, ends - starts + 1  # one byte a character
        else:
            points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
            token, first, last = _token_chars(self._word_mask(points))
            starts, ends = np.flatnonzero(first), np.flatnonzero(last)
            data = np.frombuffer(joined.encode("utf-8", "surrogatepass"), dtype=np.uint8)
            width = 1 + (points >= 0x80).astype(np.uint8) + (points >= 0x800) + (points >= 0x10000)  # UTF-8 bytes
            byte_at = np.zeros(len(points) + 1, dtype=np.int64)  # each character's first byte, then the end
            np.cumsum(width, out=byte_at[1:])
            token_bytes, sizes = np.repeat(token, width), byte_at[ends + 1] - byte_at[starts]
        chars = data[token_bytes]
        # token i is chars[offsets[i]:offsets[i + 1]]: 32-bit offsets, whose strings Arrow encodes ~30%
        # faster than 64-bit ones, unless one enormous text took the batch past 2 GiB of token bytes
        small = len(chars) < 2**31
        offsets = np.zeros(len(sizes) + 1, dtype=np.int32 if small else np.int64)
        np.cumsum(sizes, out=offsets[1:])
        array = pa.StringArray if small else pa.LargeStringArray
        tokens = array.from_buffers(len(sizes), pa.py_buffer(offsets), pa.py_buffer(chars))
        encoded = pc.dictionary_encode(tokens)
        distinct = encoded.dictionary.to_pylist()
        lookup = np.fromiter(map(self.vocab.__getitem__, distinct), dtype=np.int32, count=len(distinct))
        ids = lookup[encoded.indices.to_numpy(zero_copy_only=False)]
        kept = ids >= 0
        # kept tokens per text: tokens never cross the space between texts, so a text's tokens are
        # those starting from its first character on, up to the next text's
        kept_before = np.zeros(len(kept) + 1, dtype=np.int64)  # kept tokens among the first i
        np.cumsum(kept, out=kept_before[1:])
        at = np.append(np.searchsorted(starts, text_starts), len(starts))  # each text's first token, then the end
        return ids[kept], kept_before[at[1:]] - kept_before[at[:-1]]

    def _word_mask(self, points: np.ndarray) -> np.ndarray:
        """Whether each code point is a ``\\w`` character, as ``re`` decides it."""
        word = _ASCII_WORD[np.minimum(points, 255)]
        high = points >= 128
        if high.any():
            known = self._word
            distinct = np.unique(points[high])
            flags = [known.get(p) for p in distinct.tolist()]
            for i, flag in enumerate(flags):
                if flag is None:
                    point = int(distinct[i])
                    flags[i] = known[point] = _is_word(chr(point)) is not None
            word[high] = np.isin(points[high], distinct[np.array(flags, dtype=bool)])
        return word


def _token_chars(word: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the characters inside a token: ``\\w`` with a ``\\w`` neighbour, i.e. in a run of two
    or more; the first character of each token; the last), from the ``\\w`` mask of one string."""
    before = np.zeros(len(word), dtype=bool)
    before[1:] = word[:-1]
    after = np.zeros(len(word), dtype=bool)
    after[:-1] = word[1:]
    token = word & (before | after)
    return token, token & ~before, token & ~after
