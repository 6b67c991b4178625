"""Issue 18's check: 10 MuSiQue questions per method with the bundled local model (Gemma-3-270M,
in process), counting answers that are not answers.

What runs, as a user would run it (``atomgraph eval run``, one process per method):

- questions: the first N of ``hipporag-musique`` (``../shared/data/hipporag/musique_train.json``);
- ``wikipedia``: a Chroma collection of the whole 1,890-paragraph MuSiQue corpus
  (``atomgraph index wikipedia``), for every method but KAR³ and ARM;
- KAR³: an atom index of the paragraphs of those N questions (196 for N = 10), atomized by the
  scripted sentence atomizer (``sentence_atomizer`` below: atomizing with the 270M model would
  take longer than the runs); ARM: the same paragraphs as its objects;
- every stage under the small output caps of :mod:`benchmarks.check_local_contract`
  (``ATOMGRAPH_STAGE_MAX_TOKENS``), the response cache off, one example at a time.

Then :mod:`benchmarks.contract_table` counts, per method: completed, answered, failed by kind,
answers refused by reason, contract violations among the answers given (must be 0), copied
demonstration answers, F1.

    python -m benchmarks.musique_contract [--work runs/musique-contract] [--limit 10] [--methods rag,atomr]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
METHODS = ["standard", "cot", "rag", "iter_retgen", "ircot", "self_ask", "decomposed_rag", "react", "atomr", "kar3", "arm"]


def sentence_atomizer(settings):
    """``--model-factory`` for ``atomgraph index atoms``: each sentence of a chunk is an atomic question."""
    from atomgraph.testing import kar3_scripted_model

    return kar3_scripted_model()


def _cli(args: list[str], env: dict, log) -> int:
    cmd = [sys.executable, "-m", "atomgraph.cli", *args]
    print("$", " ".join(cmd), file=log, flush=True)
    return subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO).returncode


def main(argv: list[str] | None = None) -> int:
    from benchmarks.check_local_contract import SMALL_CAPS
    from benchmarks.contract_table import markdown, table_row

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", default="runs/musique-contract")
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--data", default=os.environ.get("ATOMGRAPH_SHARED_DATA", str(REPO.parent / "shared" / "data")))
    args = p.parse_args(argv)
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    data = Path(args.data)
    items = json.loads((data / "hipporag" / "musique_train.json").read_text(encoding="utf-8"))[: args.limit]
    paragraphs, seen = [], set()
    for item in items:
        for para in item["paragraphs"]:
            key = (para["title"], para["paragraph_text"])
            if key not in seen:
                seen.add(key)
                paragraphs.append({"title": para["title"], "text": para["paragraph_text"]})
    corpus, objects = work / "paragraphs.jsonl", work / "objects.jsonl"
    corpus.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in paragraphs), encoding="utf-8")
    objects.write_text("".join(json.dumps({"id": f"m{i}", "kind": "passage", **x}, ensure_ascii=False) + "\n"
                               for i, x in enumerate(paragraphs)), encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False",
           "ATOMGRAPH_SHARED_DATA": str(data), "ATOMGRAPH_CHROMA_PATH": str(work / "chroma"),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    log = open(work / "log.txt", "a", encoding="utf-8")
    steps = {"wikipedia": ["index", "wikipedia", str(data / "hipporag" / "musique_train_corpus.json"),
                           "--collection", "musique", "--no-progress"],
             "atoms": ["index", "atoms", str(corpus), "--collection", "musique_questions", "--model-factory",
                       "benchmarks.musique_contract:sentence_atomizer", "--no-progress"]}
    for name, step in steps.items():  # each store once (a marker file says it is built)
        marker = work / f".indexed-{name}"
        if not marker.exists():
            if _cli(step, env, log) != 0:
                print(f"indexing failed; see {work / 'log.txt'}", file=sys.stderr)
                return 2
            marker.write_text(time.strftime("%Y-%m-%d %H:%M:%S"))
    run_env = {**env, "ATOMGRAPH_MODEL": "local", "ATOMGRAPH_CACHE": "false",
               "ATOMGRAPH_STAGE_MAX_TOKENS": json.dumps(SMALL_CAPS), "ATOMGRAPH_ARM__OBJECTS": str(objects)}
    rows, seconds = [], {}
    for method in [m.strip() for m in args.methods.split(",") if m.strip()]:
        collection, sources = ("musique_questions", "atoms") if method == "kar3" else ("musique", "wikipedia")
        t0 = time.perf_counter()
        _cli(["eval", "run", "--method", method, "--dataset", "hipporag-musique", "--limit", str(args.limit),
              "--out", str(work / method), "--concurrency", "1", "--timeout", "1200", "--no-progress",
              "--sources", sources], {**run_env, "ATOMGRAPH_CHROMA_COLLECTION": collection}, log)
        seconds[method] = round(time.perf_counter() - t0, 1)
        rows.append({**table_row(work / method), "seconds": seconds[method]})
    (work / "table.json").write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(markdown(rows))
    print("seconds per method: " + ", ".join(f"{m} {s}" for m, s in seconds.items()))
    return 1 if any(r["violations"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
