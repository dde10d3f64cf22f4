"""The per-item metrics' single-pass forms equal their definitions: the functions as they were
written before (walk every prefix, one set per K) are the reference, on random rankings with
repeated keys, no hits, fewer hits than K, several gold keys per hit and empty evidence."""

from __future__ import annotations

import math
import random

from memrun.metrics.gold_share import gold_share_by_k
from memrun.metrics.retrieval import distinct_ranking, score_item, score_sessions
from memrun.metrics.retrieval_official import evidence_session, evidence_share_by_k


def reference_score_item(matches, n_gold, ks):
    if n_gold <= 0:
        return None
    first = next((i + 1 for i, m in enumerate(matches) if m), None)
    seen, relevant, dcg = set(), 0, 0.0
    cum_relevant, cum_seen, cum_dcg = [], [], []
    for i, m in enumerate(matches, start=1):
        if m:
            relevant += 1
            new = m - seen
            if new:
                dcg += 1.0 / math.log2(i + 1)
                seen |= new
        cum_relevant.append(relevant)
        cum_seen.append(len(seen))
        cum_dcg.append(dcg)
    out = {"first": first, "rr": 1.0 / first if first else 0.0, "hit": {}, "all": {}, "precision": {}, "ndcg": {}}
    for k in ks:
        n = min(k, len(matches))
        out["hit"][k] = first is not None and first <= k
        out["all"][k] = n > 0 and cum_seen[n - 1] >= n_gold
        out["precision"][k] = cum_relevant[n - 1] / k if n else 0.0
        idcg = sum(1.0 / math.log2(i + 1) for i in range(1, min(k, n_gold) + 1))
        out["ndcg"][k] = (cum_dcg[n - 1] / idcg) if n else 0.0
    return out


def reference_gold_share(matches, n_gold, ks):
    if n_gold <= 0:
        return {}
    out = {}
    for k in ks:
        found = set()
        for m in matches[:k]:
            found |= m
        out[k] = len(found) / n_gold
    return out


def reference_evidence_share(evidence, context, ks, session_of=None, per_session=False):
    mapping = session_of or {}
    if per_session:
        evidence = [evidence_session(e) for e in evidence]
    out = {}
    for k in ks:
        top = context[:k]
        found = set([mapping.get(c) or c for c in top] if per_session else top)
        out[k] = 1.0 if not evidence or not found else sum(e in found for e in evidence) / len(evidence)
    return out


def reference_distinct(keys):
    seen, out = set(), []
    for i, key in enumerate(keys):
        if key not in seen:
            seen.add(key)
            out.append(i)
    return out


def _cases(seed=3, n=3000):
    rng = random.Random(seed)
    gold_pool = ["a", "b", "c", "d"]
    for _ in range(n):
        n_gold = rng.randint(0, 4)
        gold = gold_pool[:n_gold]
        matches = [frozenset(rng.sample(gold, rng.randint(0, min(2, n_gold)))) if rng.random() < 0.4 else frozenset()
                   for _ in range(rng.randint(0, 12))]
        ks = tuple(sorted(rng.sample(range(1, 15), rng.randint(0, 4)), reverse=rng.random() < 0.3))
        yield n_gold, matches, ks


def test_score_item_equals_its_definition_bit_for_bit():
    for n_gold, matches, ks in _cases():
        got, want = score_item(matches, n_gold, ks), reference_score_item(matches, n_gold, ks)
        if want is None:
            assert got is None
            continue
        assert (got.first_gold_rank, got.rr) == (want["first"], want["rr"])
        for name, by_k in (("hit", got.hit), ("all", got.all), ("precision", got.precision), ("ndcg", got.ndcg)):
            assert list(by_k.items()) == list(want[name].items()), (name, matches, n_gold, ks)
            assert [type(v) for v in by_k.values()] == [type(v) for v in want[name].values()]


def test_gold_share_equals_its_definition():
    for n_gold, matches, ks in _cases(seed=4):
        assert list(gold_share_by_k(matches, n_gold, ks).items()) == list(reference_gold_share(matches, n_gold, ks).items())


def test_evidence_share_equals_its_definition():
    rng = random.Random(5)
    ids = ["D1:1", "D1:2", "D2:1", "D2:5", "D3:3", "D:1", "x"]
    session_of = {"D1:1": "session_1", "D1:2": "session_1", "D2:1": "session_2", "D2:5": "session_2"}
    for _ in range(3000):
        evidence = rng.choices(ids + ["D9:9"], k=rng.randint(0, 3))
        context = rng.choices(ids, k=rng.randint(0, 10))
        ks = tuple(rng.sample(range(1, 13), rng.randint(0, 4)))
        per_session = rng.random() < 0.5
        got = evidence_share_by_k(evidence, context, ks, session_of, per_session=per_session)
        assert list(got.items()) == list(reference_evidence_share(evidence, context, ks, session_of, per_session).items())


def test_session_scores_and_distinct_ranking_equal_their_definitions():
    rng = random.Random(6)
    session_of = {f"t{i}": f"s{i // 3}" for i in range(12)}
    for _ in range(2000):
        keys = rng.choices(list(session_of) + ["s1", "other"], k=rng.randint(0, 10))
        assert distinct_ranking(keys) == reference_distinct(keys)
        gold = rng.sample(["s0", "s1", "s2", "s3", "other"], rng.randint(0, 2))
        for per in ("turns", "sessions"):
            ranking = ([session_of.get(k) or k for k in keys] if per == "turns"
                       else list(dict.fromkeys(session_of.get(k) or k for k in keys)))
            want = reference_score_item([frozenset(gold) & {s} for s in ranking], len(set(gold)), (1, 3, 5))
            got = score_sessions(keys, session_of, gold, (1, 3, 5), per)
            assert (got is None) == (want is None)
            if got is not None:
                assert (got.first_gold_rank, got.rr, got.hit, got.all, got.precision, got.ndcg) == (
                    want["first"], want["rr"], want["hit"], want["all"], want["precision"], want["ndcg"])
