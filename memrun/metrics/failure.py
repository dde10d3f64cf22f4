"""The failure stage of a missed item: where in the pipeline the answer was lost.

Computed per missed item (label ``wrong`` or ``abstain``), in pipeline order, as the
benchmark methodology defines it (failure taxonomy):

1. ``retrieval_ranking``: not recalled: the item has retrieval gold and no retrieved
   hit satisfies it;
2. ``reader``: the gold answer occurs verbatim in a retrieved excerpt, yet the answer
   was wrong; also an abstention item (nothing to retrieve) that was answered anyway;
3. ``compression_loss``: the gold answer occurs only in the raw record behind a
   retrieved memory (an arm that returns summaries or extracted facts lost it);
4. ``not_verbatim``: the gold answer occurs verbatim in neither (it needs inference,
   or the gold is phrased differently from the history).

"Verbatim" compares SQuAD-normalized text (lower case, no punctuation or articles).

A stage that cannot be seen is never blamed:

- an arm that retrieves nothing (``search_mode=none``, e.g. answers from a file) has
  no retrieval score (``recalled`` None) and no excerpts, so only an answered
  abstention item gets a stage (``reader``); any other miss is None;
- hits that name no record of the history (``raw`` empty while ``excerpts`` is not: a
  server answering with ids of its own, or with sessions) cannot satisfy key gold, so
  ``recalled=False`` says nothing about retrieval, and there is no raw record to look
  in: such a miss is ``reader`` when the gold is verbatim in an excerpt, else None.
"""

from __future__ import annotations

from collections.abc import Sequence

from memrun.judges.lexical import squad_normalize

STAGES = ("retrieval_ranking", "reader", "compression_loss", "not_verbatim")


def failure_stage(
    *,
    recalled: bool | None,
    abstention: bool,
    gold: str | None,
    excerpts: Sequence[str],
    raw: Sequence[str],
) -> str | None:
    """The stage (one of :data:`STAGES`) for a missed item, None when it cannot be told.

    recalled: whether a retrieved hit satisfied the item's retrieval gold (None when the
        item has no retrieval gold). abstention: the item is an abstention item.
    gold: the gold answer text. excerpts: the retrieved hits' texts. raw: the texts of
        the records behind the hits (the same as ``excerpts`` for an arm that returns
        records verbatim).
    """
    if abstention:
        return "reader"
    if recalled is None and not excerpts and not raw:
        return None  # nothing was retrieved and nothing is scored: no stage to blame
    keyed = bool(raw) or not excerpts  # the hits name records of the history (or there are none)
    if recalled is False and keyed:
        return "retrieval_ranking"
    needle = squad_normalize(gold or "")
    if not needle:
        return None
    if any(needle in squad_normalize(t) for t in excerpts):
        return "reader"
    if any(needle in squad_normalize(t) for t in raw):
        return "compression_loss"
    return "not_verbatim" if keyed else None
