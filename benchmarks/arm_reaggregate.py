"""Re-aggregate recorded ARM runs (``atomgraph retrieve --method arm --out DIR``) under both §3.3
readings, on the very drafts and verdicts each record holds (issue 30, session 6): a like-for-like
comparison that no second model run can give (an unreadable reply is not cached, and a fresh greedy
reply depends on the engine's KV-cache history).

    python -m benchmarks.arm_reaggregate NAME=DIR [NAME=DIR ...] [--k 5] [--out F.json]

Per run: recall / perfect recall at k and objects per question for ``aggregation=drafts`` (the
paper's reading, the default), ``aggregation=verified`` (the switch: the selections alone) and
``verified`` with ``fill_to_k``; and how many records the recorded vote reproduces.

``--vote-weights 0,0.2,0.5,1`` also re-scores ``aggregation=drafts`` at each ``vote_weight`` (the
share of the verifiers' selection weight against the drafts' softmaxed counts; the paper gives no
value, 0.5 the default): ``vote_weight=0`` ignores the verdicts, which is the LLM-free vote over the
same drafts (``verification=false``, Figure 4's "+ SA" bar), so the sweep shows what verification
adds or costs on the very same drafts (issue 30 item 5, session 11).

``--connected-selection`` re-scores ``aggregation=drafts`` with each verdict cut to the largest part
of its selection that the draft's links join, as the ``connected_selection`` switch cuts it at run
time (issue 30 item 5, session 13).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _fill(chosen: list[str], drafts: list[dict], k: int) -> list[str]:
    out = list(chosen)
    for d in drafts:
        for i in d["ids"]:
            if len(out) < k and i not in out:
                out.append(i)
    return out


def connected(records: list[dict]) -> list[dict]:
    """The records with each verdict cut as ``connected_selection=true`` cuts it (a switch the
    recorded run may not have had): the largest part of the selection the draft's links join."""
    from atomgraph.nodes.arm.self_verification import cut_to_connected

    out = []
    for r in records:
        links = {d["draft"]: d["links"] for d in r["trace"].get("drafts") or []}
        verdicts = [cut_to_connected(v, links.get(v["draft"], [])) for v in r["trace"].get("verdicts") or []]
        out.append({**r, "trace": {**r["trace"], "verdicts": verdicts}})
    return out


def rows(records: list[dict], k: int, vote_weight: float = 0.5) -> dict:
    from atomgraph.nodes.arm.self_verification import aggregate_verified, aggregate_votes, vote_drafts

    got: dict[str, list[list[str]]] = {"drafts": [], "verified": [], "verified_fill": []}
    golds, same = [], 0
    for r in records:
        tr = r["trace"]
        drafts = tr.get("drafts") or []
        usable = [v for v in tr.get("verdicts") or [] if v.get("selected") is not None]
        kept = any(v.get("selected") for v in usable)
        paper = [v["id"] for v in aggregate_votes(drafts, usable, vote_weight=vote_weight)[0]][:k]
        verified = [v["id"] for v in aggregate_verified(usable, vote_weight=vote_weight)[0]][:k]
        if not usable and drafts:
            verified = list(drafts[0]["ids"])[:k]
        elif not kept and drafts:
            verified = vote_drafts(drafts, k)
        got["drafts"].append(paper)
        got["verified"].append(verified)
        got["verified_fill"].append(_fill(verified, drafts, k))
        golds.append(set(r["gold_ids"]))
        recorded = list(r.get("retrieved") or [])
        mode = (r.get("trace", {}).get("decoding") or {}).get("aggregation", "verified")
        same += recorded == (paper if mode == "drafts" else verified)
    out: dict = {"questions": len(records), "recorded_vote_reproduced": same}
    for name, lists in got.items():
        rec = [len(g & set(x)) / len(g) for g, x in zip(golds, lists) if g]
        pr = [float(g <= set(x)) for g, x in zip(golds, lists) if g]
        out[name] = {"recall": round(100 * sum(rec) / len(rec), 2), "perfect_recall": round(100 * sum(pr) / len(pr), 2),
                     "objects": round(sum(map(len, lists)) / len(lists), 3)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", metavar="NAME=DIR")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--vote-weights", default="", help="comma-separated vote_weight values to re-score 'drafts' at")
    ap.add_argument("--connected-selection", action="store_true",
                    help="also re-score with each verdict cut to its connected part (connected_selection=true)")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    weights = [float(x) for x in args.vote_weights.split(",") if x.strip()]
    report: dict = {"benchmark": "arm_reaggregate", "k": args.k, "runs": {}}
    for item in args.runs:
        name, _, folder = item.partition("=")
        records = [json.loads(x) for x in (Path(folder) / "results.jsonl").read_text().splitlines() if x.strip()]
        report["runs"][name] = r = rows(records, args.k)
        print(f"{name:18s} n={r['questions']:3d} reproduced {r['recorded_vote_reproduced']}  " + "  ".join(
            f"{m} {r[m]['recall']:.1f}/{r[m]['perfect_recall']:.1f} ({r[m]['objects']})" for m in ("drafts", "verified", "verified_fill")))
        if weights:
            r["drafts_by_vote_weight"] = {str(w): rows(records, args.k, w)["drafts"] for w in weights}
            print(" " * 18 + " vote_weight " + "  ".join(
                f"{w}: {x['recall']:.1f}/{x['perfect_recall']:.1f}" for w, x in r["drafts_by_vote_weight"].items()))
        if args.connected_selection:
            cut = connected(records)
            r["connected_selection"] = c = rows(cut, args.k)["drafts"]
            c["verdicts_cut"] = sum(1 for x in cut for v in x["trace"]["verdicts"] if v.get("unconnected"))
            print(" " * 18 + f" connected_selection {c['recall']:.1f}/{c['perfect_recall']:.1f} "
                  f"({c['verdicts_cut']} verdicts cut)")
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
