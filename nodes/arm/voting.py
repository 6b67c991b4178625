"""Aggregation of the verified drafts (§3.3 of the ARM paper): a confidence-weighted vote.

Each draft's verification votes for the objects it kept. An object's confidence is

    vote_weight × (mean weight of its votes) + (1 − vote_weight) × softmax(vote counts)

where a vote's weight is the probability of the tokens that name the object in the
verifier's reply (exp of their mean log-probability) when the server returned
log-probabilities; without any, the confidence is the softmaxed vote count alone
(frequency). A vote whose name tokens were not found in the returned log-probabilities
weighs 1.
"""

from __future__ import annotations

import math
from typing import Sequence

from atomgraph.state.arm_graph import Verdict, Vote


def aggregate(verdicts: Sequence[Verdict], *, vote_weight: float) -> tuple[list[Vote], str]:
    """Votes per object, best first, and the mode (``logprobs`` or ``frequency``).

    ``verdicts``: the verified drafts' verdicts (``selected`` ids, ``weights``: id → mean
    logprob; drafts whose verification failed are left out by the caller). Ties keep
    first-vote order.
    """
    counts: dict[str, int] = {}
    weights: dict[str, list[float]] = {}
    any_logprobs = any(v.get("weights") for v in verdicts)
    for v in verdicts:
        lp = v.get("weights") or {}
        for oid in dict.fromkeys(v.get("selected") or []):
            counts[oid] = counts.get(oid, 0) + 1
            weights.setdefault(oid, []).append(math.exp(min(0.0, float(lp[oid]))) if oid in lp else 1.0)
    if not counts:
        return [], "logprobs" if any_logprobs else "frequency"
    top = max(counts.values())
    z = sum(math.exp(c - top) for c in counts.values())
    out = []
    for oid, c in counts.items():
        share = math.exp(c - top) / z
        mean_w = sum(weights[oid]) / len(weights[oid])
        conf = vote_weight * mean_w + (1 - vote_weight) * share if any_logprobs else share
        out.append(Vote(id=oid, votes=c, weight=round(mean_w, 6), share=round(share, 6), confidence=round(conf, 6)))
    order = {oid: i for i, oid in enumerate(counts)}
    out.sort(key=lambda r: (-r["confidence"], order[r["id"]]))
    return out, "logprobs" if any_logprobs else "frequency"
