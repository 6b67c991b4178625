"""Do the ATOMR prompt packs fit the bundled model's context?

For each pack, every stage's prompt (the pack's demonstrations and rules, the longest question of
the pack's dataset) is counted in the bundled Gemma-3-270M's own tokens against its context
(``DEFAULT_N_CTX``); what is left is the room for the reply (the engine cuts ``max_tokens`` to
it). With ``--plans N`` the plan stage also runs on the first N questions of each dataset that
are not demonstrations of its pack (completion prompt, the plan grammar: the in-process default),
counting usable plans (root = the question, every leaf an operator call or ``[DR]``).

    nice python -m benchmarks.bench_atomr_pack_fit                # token counts only (seconds)
    nice python -m benchmarks.bench_atomr_pack_fit --plans 4      # and 4 plans per pack (minutes)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACK_DATASETS = {"hotpotqa": "hotpotqa-test-500", "2wiki": "2wiki-test-500", "musique": "musique-test-500",
                 "crag": "crag-test-500", "blendqa": "blendqa"}
STAGES = ("plan", "search", "relate", "filter", "child_reasoning", "sibling_reasoning", "direct_rag", "closed_book")


def _questions(pack: str) -> list:
    from atomgraph.evaluation.datasets import load_dataset
    from atomgraph.evaluation.runner import _leave_out_demonstrations

    kept, _ = _leave_out_demonstrations(load_dataset(PACK_DATASETS[pack]), [pack])
    return kept


def token_fit(engine, packs: list[str]) -> dict:
    from atomgraph.prompts.atomr.stages import STAGES as ALL

    def count(text: str) -> int:
        return len(engine.llm.tokenize(text.encode("utf-8"), add_bos=True))

    out: dict = {}
    for pack in packs:
        longest = max(_questions(pack), key=lambda e: len(e.question)).question
        row = {}
        for name in STAGES:
            stage = ALL[name]
            values = {v: "x" for v in stage.prompt.input_variables}
            values.update({"pack": pack, "question": longest})
            n = sum(count(str(m.content)) for m in stage.messages(values))
            row[name] = {"prompt_tokens": n, "room": engine.n_ctx - n}
        out[pack] = row
        print(pack, {k: v["room"] for k, v in row.items()}, file=sys.stderr, flush=True)
    return out


def plans(n: int, packs: list[str]) -> dict:
    from atomgraph.local.chat import ChatLocalLlama
    from atomgraph.prompts.atomr.plan import PLAN_CLOSE_RESERVE, plan_grammar
    from atomgraph.prompts.atomr.stages import PLAN_STAGE, PLAN_STOP, read_plans
    from benchmarks.bench_local_prompting import usable

    model = ChatLocalLlama(prompt_format="completion", max_tokens=1024)
    out: dict = {}
    for pack in packs:
        qs = _questions(pack)
        if pack == "blendqa":  # the three types in turn
            by_type = [[e for e in qs if e.id.startswith(t)] for t in ("kg-web", "text-kg", "web-text")]
            qs = [group[i] for i in range(n) for group in by_type if i < len(group)]
        rows = []
        for e in qs[:n]:
            q = " ".join(e.question.split())
            t0 = time.perf_counter()
            msg = model.bind(grammar=plan_grammar(q), close_reserve=PLAN_CLOSE_RESERVE, stop=list(PLAN_STOP)).invoke(
                PLAN_STAGE.messages({"question": q, "pack": pack}))
            secs = time.perf_counter() - t0
            try:
                found = read_plans(str(msg.content))
            except Exception:  # noqa: BLE001 - an unreadable reply is what we count
                found = None
            ok, why = usable(found, q) if found else (False, "unreadable")
            usage = msg.usage_metadata or {}
            rows.append({"id": e.id, "usable": ok, "why": why, "input_tokens": usage.get("input_tokens"),
                         "output_tokens": usage.get("output_tokens"), "seconds": round(secs, 1)})
            print(pack, rows[-1], file=sys.stderr, flush=True)
        out[pack] = {"n": len(rows), "usable": sum(r["usable"] for r in rows), "questions": rows}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plans", type=int, default=0, help="plans to run per pack (0: token counts only)")
    ap.add_argument("--packs", default="hotpotqa,2wiki,musique,crag,blendqa")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "atomr_pack_fit.json"))
    args = ap.parse_args(argv)
    from atomgraph.local.engine import load_engine

    packs = [p.strip() for p in args.packs.split(",") if p.strip()]
    engine = load_engine()
    result = {"n_ctx": engine.n_ctx, "tokens": token_fit(engine, packs)}
    if args.plans:
        result["plans"] = plans(args.plans, packs)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"-> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
