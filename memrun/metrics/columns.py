"""A run's rows (dicts, columns of :mod:`memrun.io.schema`) read as columns, in C.

A run's summary reads a few dozen columns of its rows (item x repeat: 6,000 rows for
2,000 items and 3 repeats), many of them in several places. Each is read here once
(:class:`RowColumns`), by one ``operator.itemgetter`` mapped over the rows (~17 ns a value
against ~25 ns for ``row.get`` in a comprehension), or many at once by one itemgetter of
every name, transposed by ``zip``; the callers then loop over plain lists. A row
lacking a column (rows made by hand, a run's rows before a column existed, a column only
some benchmarks fill) takes ``dict.get`` (mapped in C too), so a missing value reads as the
default everywhere.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping, Sequence
from typing import Any


def column(rows: Sequence[Mapping[str, Any]], name: str, default: Any = None) -> list[Any]:
    """The rows' values of ``name``, in row order (``default`` where a row lacks it)."""
    try:
        return list(map(operator.itemgetter(name), rows))
    except KeyError:  # some row lacks it (a column no row has: a pass of dict.get, also in C)
        try:
            return list(map(dict.get, rows, itertools.repeat(name), itertools.repeat(default)))  # type: ignore[arg-type]
        except TypeError:  # a Mapping that is not a dict
            return [r.get(name, default) for r in rows]


def columns(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, list[Any]]:
    """Name -> :func:`column` of each of ``names`` (None where a row lacks it), read in one
    pass: one ``itemgetter`` of every name per row, transposed by ``zip`` (~2x faster than
    a list per column when there are many)."""
    if len(names) < 2 or not rows:
        return {name: column(rows, name) for name in names}
    try:
        return dict(zip(names, map(list, zip(*map(operator.itemgetter(*names), rows)))))
    except KeyError:
        return {name: column(rows, name) for name in names}


class RowColumns:
    """The columns of one list of rows, each read once (:func:`column`) however often it is
    asked for: a summary asks for ``label`` and ``error`` again and again."""

    def __init__(self, rows: Sequence[Mapping[str, Any]]) -> None:
        self.rows, self.n = rows, len(rows)
        self._read: dict[str, list[Any]] = {}

    def __getitem__(self, name: str) -> list[Any]:
        """The rows' values of ``name`` (None where a row lacks it), in row order."""
        values = self._read.get(name)
        if values is None:
            values = self._read[name] = column(self.rows, name)
        return values
