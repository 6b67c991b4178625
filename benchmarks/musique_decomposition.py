"""MuSiQue's questions with keywords replayed from the dataset's own decomposition (issue 30, item 3).

    python -m benchmarks.musique_decomposition OUT_DIR [--form hop|flat]

Spider's LLM-free runs replay an LLM decomposition released with JAR (``keywords``); MuSiQue's
retrieval set has none, so the LLM-free pipeline takes the question's own words. MuSiQue ships
a decomposition of every question (``question_decomposition`` in
``../shared/data/hipporag/musique_train.json``, read by the ``hipporag-musique`` dataset): one sub-question per hop, the later ones naming
the earlier answers as ``#1``, ``#2``. This writes ``OUT_DIR/musique/`` (the objects as they are,
the questions with ``keywords``) from the sub-questions' **text only** — the ``#n`` placeholders
dropped, ``>>`` read as a separator; each hop's ``answer`` and ``paragraph_support_idx`` are
never read, so no bridge entity and no gold passage leaks into the keywords. The keywords of a
sub-question are what the LLM-free pipeline takes from a question (``question_keywords``):

- ``hop`` (default): one keyword per sub-question, its spans joined by ``:`` (the form of
  Spider's ``table:column`` items), so each hop is one n-gram-list query (§3.2.1);
- ``flat``: every span of every sub-question a keyword of its own.

Then ``python -m benchmarks.bench_arm_ablation --data OUT_DIR --datasets musique …``. It is a
human-written decomposition, not a model's: an input of the kind the paper's LLM produces, and
the reading of its figures says so.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path


def sub_questions(decomposition: list[dict]) -> list[str]:
    """The decomposition's sub-question texts, ``#n`` dropped and ``>>`` a comma (answers unread)."""
    return [re.sub(r"#\d+", " ", s["question"]).replace(">>", " , ") for s in decomposition]


def main(argv: list[str] | None = None) -> int:
    from atomgraph.evaluation.datasets import data_dir, load_dataset
    from atomgraph.nodes.arm.information_alignment import question_keywords
    from atomgraph.state.arm import ArmContext
    from atomgraph.tools.arm_index import ArmIndex
    from atomgraph.tools.objects import load_objects

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--form", choices=("hop", "flat"), default="hop")
    ap.add_argument("--data", type=Path, help="the shared data folder (default: as the datasets find it)")
    args = ap.parse_args(argv)
    src = data_dir(args.data) / "retrieval" / "musique"
    decompositions = {e.id: e.metadata["decomposition"] for e in load_dataset("hipporag-musique", data_dir_=args.data)}
    index = ArmIndex.build(load_objects(src / "objects.jsonl"))
    ctx = ArmContext()
    out = args.out_dir / "musique"
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src / "objects.jsonl", out / "objects.jsonl")
    lines, missing = [], 0
    for line in (src / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q["id"] not in decompositions:
            missing += 1
            lines.append(line)
            continue
        keywords: list[str] = []
        for text in sub_questions(decompositions[q["id"]]):
            spans = question_keywords(text, index, ctx)
            if args.form == "hop" and spans:
                keywords.append(":".join(spans))
            elif args.form == "flat":
                keywords += [s for s in spans if s not in keywords]
        q["keywords"] = keywords
        lines.append(json.dumps(q))
    (out / "questions.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(json.dumps({"questions": len(lines), "without_decomposition": missing, "form": args.form, "out": str(out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
