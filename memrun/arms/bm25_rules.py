"""What ``arm=bm25`` takes from bm25s, without importing the bm25s package where it can.

``import bm25s`` imports SciPy's sparse matrices (~0.1 s, a tenth of a whole LoCoMo
retrieval run), which only its own index needs. The arm's lazy scorer needs three
things from bm25s, and they come from here:

- **Tokens**: bm25s's default token pattern, lower case, minus a stopword list. The
  English list (the default) is read from bm25s's own ``stopwords`` module, loaded as a
  file without running the package's ``__init__``; any other list goes through
  ``bm25s.tokenization.Tokenizer`` (importing bm25s).
- **idf and term-frequency formulas** of the robertson, lucene and atire variants
  (Kamphuis, de Vries, Boytsov & Lin, ECIR 2020, "Which BM25 do you mean?"), written
  with bm25s's expressions in bm25s's floating-point order: a test checks the arm's
  scores equal bm25s's bit for bit for every method. bm25l and bm25+ use the bm25s
  index itself.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from memrun.errors import ArmError
from memrun.lazy import lazy, loaded

if TYPE_CHECKING:
    import bm25s
else:
    bm25s = lazy("bm25s")  # with SciPy: loaded by import_bm25s, where an index or Tokenizer is needed

BM25S_PATTERN = r"(?u)\b\w\w+\b"
"""bm25s's default token pattern."""

split_tokens: Callable[[str], list[str]] = re.compile(r"\w\w+").findall
"""The tokens of :data:`BM25S_PATTERN`, ~20% faster: scanning left to right, a run of two
or more word characters is always matched from its first character to its last, so the
word boundaries add nothing (a test checks the two agree)."""

_ENGLISH = ("en", "english")


def stopword_list(stopwords: Any) -> tuple[str, ...]:
    """The stopwords bm25s's Tokenizer takes for ``stopwords`` (a list name such as ``"en"``,
    a list of words, or None for none). Raises ArmError for a name bm25s does not know."""
    if stopwords is None or stopwords is False:
        return ()
    if isinstance(stopwords, str) and stopwords in _ENGLISH and "bm25s" not in sys.modules:
        module = _bm25s_stopwords()
        if module is not None:
            return tuple(module.STOPWORDS_EN)
    bm25s = import_bm25s()
    try:
        return tuple(bm25s.tokenization.Tokenizer(lower=True, stopwords=stopwords).stopwords)
    except ValueError:
        raise ArmError(f"arm.stopwords={stopwords!r} is not a stopword list bm25s knows; give a language code "
                       "(en, de, fr, es, it, pt, nl, sv, no, da, ru, zh, ko, tr; en_plus: a longer English "
                       "list) or null to keep every token") from None


def import_bm25s() -> ModuleType:
    """The bm25s package, imported (with SciPy) only where its index or its Tokenizer is
    needed. Its import sets its logger to DEBUG, and it logs every index build (a run
    builds one per history): the logger is set back to WARNING here."""
    module = loaded(bm25s)
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return module


def _bm25s_stopwords() -> ModuleType | None:
    """bm25s's ``stopwords`` module (plain tuples), executed from its file without the
    bm25s package; None when bm25s is laid out otherwise (the caller imports bm25s)."""
    try:
        package = importlib.util.find_spec("bm25s")  # finds the package without running it
        folders = list(package.submodule_search_locations or ()) if package else []
        spec = importlib.util.spec_from_file_location("memrun.arms._bm25s_stopwords", Path(folders[0]) / "stopwords.py")
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except (ImportError, IndexError, OSError, SyntaxError):
        return None
    return module if isinstance(getattr(module, "STOPWORDS_EN", None), tuple) else None


def _idf_robertson(df: int, n: int) -> float:
    inner = (n - df + 0.5) / (df + 0.5)
    if inner < 1:
        inner = 1
    return math.log(inner)


def _idf_lucene(df: int, n: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def _idf_atire(df: int, n: int) -> float:
    return math.log(n / df)


def _tfc_robertson(tf: Any, l_d: Any, l_avg: Any, k1: float, b: float) -> Any:
    return tf / (k1 * ((1 - b) + b * l_d / l_avg) + tf)


def _tfc_atire(tf: Any, l_d: Any, l_avg: Any, k1: float, b: float) -> Any:
    return (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * l_d / l_avg))


IDF: dict[str, Callable[[int, int], float]] = {"robertson": _idf_robertson, "lucene": _idf_lucene, "atire": _idf_atire}
"""method -> idf(document frequency, number of records), a float64 (bm25s stores it as float32)."""

TFC: dict[str, Callable[..., Any]] = {"robertson": _tfc_robertson, "lucene": _tfc_robertson, "atire": _tfc_atire}
"""method -> term-frequency component(tf, record length, mean length, k1, b), elementwise on arrays."""


def idf_values(method: str, df: Sequence[int], n: int) -> list[float]:
    """``method``'s idf of each document frequency in ``df`` over ``n`` records: one ``math.log``
    per distinct frequency (a history's ~50 tokens have a handful: 1, 2, 3...), the same floats."""
    idf = IDF[method]
    of = {d: idf(d, n) for d in set(df)}
    return list(map(of.__getitem__, df))
