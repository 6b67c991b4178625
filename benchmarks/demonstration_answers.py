"""What the answer contract's ``demonstration`` clause can cost: how many gold answers of the
shared question files are a demonstration's own answer (the prompts' few-shot answers:
standard/CoT/RAG, IRCoT, Self-Ask). Such a gold answer is refused when the model gives it with no
support of its own (no evidence, question or reasoning naming it; :func:`check_not_copied`).

    python -m benchmarks.demonstration_answers [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def demonstrations() -> list[tuple[str, ...]]:
    """The demonstrations of every stage that declares them: (question, [worked text,] answer)."""
    from atomgraph.prompts.baselines import STAGES
    from atomgraph.prompts.compare import ircot, self_ask

    stages = [*STAGES.values(), ircot.STEP, self_ask.STEP, self_ask.FINAL]
    return [d for s in stages for d in s.demonstrations]


def gold_answers(path: Path) -> list[tuple[str, list[str]]]:
    """(question, its gold answers and aliases) of a question file."""
    text = path.read_text(encoding="utf-8")
    items = json.loads(text) if path.suffix == ".json" else [json.loads(ln) for ln in text.splitlines() if ln.strip()]
    out = []
    for x in items:
        gold = x.get("answers", x.get("answer"))
        gold = gold if isinstance(gold, list) else [gold]
        aliases = x.get("answer_aliases")
        if isinstance(aliases, str):
            import ast

            aliases = ast.literal_eval(aliases)
        out.append((str(x.get("question") or ""), [str(g) for g in [*gold, *(aliases or [])] if g]))
    return out


def main(argv: list[str] | None = None) -> int:
    from atomgraph.prompts.stage import _norm

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=os.environ.get("ATOMGRAPH_SHARED_DATA", str(REPO.parent / "shared" / "data")))
    args = p.parse_args(argv)
    data = Path(args.data)
    demos = {_norm(d[-1]): d[-1] for d in demonstrations()}
    own = {_norm(d[0]) for d in demonstrations()}  # a demonstration's own question: allowed (check_not_copied)
    files = sorted(data.glob("atomr/questions/**/*.jsonl")) + sorted(data.glob("hipporag/*_train.json"))
    rows, total_q, total_hit = [], 0, 0
    for path in files:
        golds = gold_answers(path)
        hits = [q for q, g in golds if any(_norm(a) in demos for a in g)]
        others = [q for q in hits if _norm(q) not in own]
        total_q, total_hit = total_q + len(golds), total_hit + len(others)
        rows.append({"file": str(path.relative_to(data)), "questions": len(golds), "gold_is_a_demo_answer": len(others),
                     "the_demonstration_itself": len(hits) - len(others), "examples": others[:3]})
    print(json.dumps({"demonstration_answers": sorted(demos.values()), "files": rows, "questions": total_q,
                      "gold_is_a_demo_answer": total_hit}, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
