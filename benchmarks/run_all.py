"""Every benchmark, by group, each in its own process, writing to benchmarks/results/.

    python -m benchmarks.run_all [bench|arm|local] [--only NAME ...] [--bird-jar DIR] [--list]

- ``bench`` (``make bench``): no model but the bundled one's load and decoding rates: the call path, ATOMR's
  executor, Chroma, the Wikidata operations, ARM's MIP, solver (against its baseline) and retrieval, KAR³'s atom index and δ, ATOMR's top-1
  calibration, pack fit and switches on recorded replies, the JSON reader, a poisoned passage against every method,
  evaluation throughput against a fixed-latency model server (one process and two workers);
- ``arm`` (``make bench-arm``): ARM LLM-free on every question of the retrieval sets (Bird too with
  ``--bird-jar``, JAR's ``data/bird``), its index and its dense search at 10^4–10^6 objects, its n-gram grammar;
- ``local`` (``make bench-local``): the bundled Gemma-3-270M through the stages and methods; the papers'
  comparison and ARM with model-chosen keywords on the instruction-tuned Qwen2.5-1.5B (the ``qwen`` extra; hours on
  CPU, resumable).

Each entry names the results files it writes (``writes``); ``tests/test_benchmarks_run.py`` checks that every
script in ``benchmarks/`` is run by an entry and every file in ``benchmarks/results/`` is written by one. A step
that cannot run (Bird without ``--bird-jar``) is skipped, said and counted. Each benchmark reports ratios
measured within its own run (concurrent vs sequential, ingestion vs raw encoder, in-process vs loopback), so
numbers stay comparable across machines; absolute times are for the record only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path("benchmarks") / "results"
DATA = Path(os.environ.get("ATOMGRAPH_SHARED_DATA", str(ROOT.parent / "shared" / "data")))
BIRD = "{bird}"  # stands for the converted Bird folder in an entry's arguments
THROUGHPUT_BASELINE = "6f96e5c"  # the commit the first throughput figures were measured on


@dataclass(frozen=True)
class Step:
    """One process: ``python -m MODULE ARGS``; ``writes``: the results files (names under benchmarks/results/)."""

    name: str
    module: str
    args: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    needs_bird: bool = False


def _out(name: str) -> str:
    return str(RESULTS / name)


BENCH = (
    Step("call_path", "benchmarks.bench_call_path", ("--out", _out("call_path.json")), ("call_path.json",)),
    Step("atomr_executor", "benchmarks.bench_atomr_executor", ("--out", _out("atomr_executor.json")),
         ("atomr_executor.json",)),
    Step("chroma", "benchmarks.bench_chroma", ("--out", _out("chroma.json")), ("chroma.json",)),
    Step("wikidata_ops", "benchmarks.bench_wikidata_ops", ("--out", _out("wikidata_ops.json")), ("wikidata_ops.json",)),
    Step("arm_mip", "benchmarks.bench_arm_mip", ("--out", _out("arm_mip.json")), ("arm_mip.json",)),
    Step("arm_solver", "benchmarks.bench_arm_solver",
         ("--datasets", "spider,hotpotqa,musique", "--limit", "25", "--out", _out("arm_solver.json")), ("arm_solver.json",)),
    Step("arm_retrieval", "benchmarks.bench_arm_retrieval", ("--out", _out("arm_retrieval.json")), ("arm_retrieval.json",)),
    Step("kar3", "benchmarks.bench_kar3", ("--out", _out("kar3.json")), ("kar3.json",)),
    Step("kar3_delta", "benchmarks.bench_kar3_delta", ("--out", _out("kar3_delta.json")), ("kar3_delta.json",)),
    Step("local_model", "benchmarks.bench_local_model", ("--out", _out("local_model.json")), ("local_model.json",)),
    Step("atomr_top1", "benchmarks.bench_atomr_top1", ("--questions", "12", "--out", _out("atomr_top1_minilm.json")),
         ("atomr_top1_minilm.json",)),
    Step("atomr_pack_fit", "benchmarks.bench_atomr_pack_fit", ("--out", _out("atomr_pack_fit.json")),
         ("atomr_pack_fit.json",)),
    Step("atomr_switches_hostile", "benchmarks.bench_atomr_switches", ("hostile",), ("atomr_switches_hostile.json",)),
    Step("atomr_switches_replies", "benchmarks.bench_atomr_switches", ("replies",), ("atomr_switches_replies.json",)),
    Step("json_reader", "benchmarks.bench_json_reader", ("--out", _out("json_reader.json")), ("json_reader.json",)),
    Step("injection", "benchmarks.bench_injection", ("--out", _out("injection.json")), ("injection.json",)),
    # --baseline: the same rows on the code the first throughput figures were taken on (before query
    # embeddings were batched and runs had workers), CPU a question as a ratio measured in this run
    # (no workers rows: at 200 ms a reply they are bound by the latency; throughput_workers measures them)
    Step("throughput", "benchmarks.bench_throughput",
         ("--baseline", THROUGHPUT_BASELINE, "--workers-at", "0", "--out", _out("throughput.json")),
         ("throughput.json",)),
    Step("throughput_workers", "benchmarks.bench_throughput",
         # 50 ms a reply: 64 in flight then bound every method by its CPU, in one process and in two workers
         ("--concurrency", "32", "--latency-ms", "50", "--workers-questions", "2048",
          "--out", _out("throughput_workers.json")),
         ("throughput_workers.json",)),
    Step("cold_start", "benchmarks.bench_cold_start", ("--runtimes", "--out", _out("cold_start.json")),
         ("cold_start.json",)),
    Step("cold_start_arm_units", "benchmarks.bench_cold_start", ("--only", "eval_arm", "--out", _out("cold_start_arm_units.json")),
         ("cold_start_arm_units.json",)),
    Step("onnx_embedding", "benchmarks.bench_onnx_embedding", ("--out", _out("onnx_embedding.json")), ("onnx_embedding.json",)),
)

ARM = (
    Step("arm_ablation", "benchmarks.bench_arm_ablation", ("--spider-every", "5", "--out", _out("arm_ablation_all.json")),
         ("arm_ablation_all.json",)),
    Step("arm_link_count", "benchmarks.bench_arm_ablation",
         ("--spider-every", "5", "--configs", "sa,twice,paper,paper_once", "--out", _out("arm_link_count.json")),
         ("arm_link_count.json",)),
    Step("bird_data", "benchmarks.bird_from_jar", ("{bird_jar}", BIRD + "/bird"), needs_bird=True),
    Step("arm_ablation_bird", "benchmarks.bench_arm_ablation",
         ("--data", BIRD, "--datasets", "bird", "--out", _out("arm_bird_defaults.json")), ("arm_bird_defaults.json",),
         needs_bird=True),
    Step("arm_scale", "benchmarks.bench_arm_scale",
         ("--sizes", "10000,100000,300000,1000000", "--out", _out("arm_scale.json")), ("arm_scale.json",)),
    Step("arm_dense", "benchmarks.bench_arm_dense", ("--out", _out("arm_dense.json")), ("arm_dense.json",)),
    Step("arm_solver_bird", "benchmarks.bench_arm_solver",
         ("--datasets", "", "--bird", BIRD, "--limit", "25", "--out", _out("arm_solver_bird.json")),
         ("arm_solver_bird.json",), needs_bird=True),
    Step("ngram_grammar", "benchmarks.bench_ngram_grammar", ("--out", _out("ngram_grammar.json")), ("ngram_grammar.json",)),
    Step("served_grammar", "benchmarks.bench_served_grammar", ("--out", _out("served_grammar.json")),
         ("served_grammar.json",)),
)

LOCAL = (
    Step("local_prompting_plan", "benchmarks.bench_local_prompting",
         ("--part", "plan", "--n", "20", "--cap", "128", "--only", "chat+schema", "completion+grammar",
          "--out", _out("local_prompting_plan.json")), ("local_prompting_plan.json", "local_prompting_plan.jsonl")),
    Step("local_prompting_every", "benchmarks.bench_local_prompting",
         ("--part", "every", "--n", "6", "--threads", "2", "--cap", "128", "--out", _out("local_prompting_every.json")),
         ("local_prompting_every.json", "local_prompting_every.jsonl")),
    Step("local_grounded", "benchmarks.bench_local_grounded", ("--n", "50", "--out", _out("local_grounded.json")),
         ("local_grounded.json", "local_grounded.jsonl")),
    Step("local_threads", "benchmarks.bench_local_threads", (), ("local_threads.json",)),
    Step("trie_beam", "benchmarks.bench_trie_beam", ("--keywords", "20", "--out", _out("trie_beam.json")),
         ("trie_beam.json",)),
    Step("atomr_kg_program", "benchmarks.bench_atomr_kg_program", ("--out", _out("atomr_kg_program.json")),
         ("atomr_kg_program.json",)),
    Step("atomr_pack_fit_plans", "benchmarks.bench_atomr_pack_fit",
         ("--plans", "3", "--packs", "crag,blendqa", "--out", _out("atomr_pack_fit_plans.json")),
         ("atomr_pack_fit_plans.json",)),
    Step("hotpotqa_index", "atomgraph.cli",
         ("index", "wikipedia", str(DATA / "hipporag" / "hotpotqa_train_corpus.json"), "--persist",
          ".atomgraph/hipporag-hotpotqa", "--collection", "hipporag-hotpotqa", "--no-progress")),
    Step("atomr_switches_local", "benchmarks.bench_atomr_switches", ("local", "--n", "20"), ("atomr_switches_local.json",)),
    Step("kar3_local", "benchmarks.bench_kar3_local", ("--questions", "2", "--out", _out("kar3_local.json")),
         ("kar3_local.json",)),
    Step("local_contract", "benchmarks.check_local_contract",
         ("--questions", "5", "--caps", "small", "--out", _out("local_contract.json")), ("local_contract.json",)),
    Step("json_reader_replies", "benchmarks.bench_json_reader", ("--generate", "6", "--out", _out("json_reader.json")),
         ("json_reader_replies.jsonl", "json_reader.json")),
    Step("instruct_comparison", "benchmarks.bench_instruct_comparison",
         ("--model", "local:qwen2.5-1.5b", "--n", "30", "--out", _out("instruct_comparison.json")),
         ("instruct_comparison.json",)),
    # the bundled 270M base model's row: RAG, ATOMR and KAR³ on the same questions (the same results file)
    Step("instruct_comparison_270m", "benchmarks.bench_instruct_comparison",
         ("--model", "local", "--methods", "rag,atomr,kar3,rag_kar3_corpus", "--n", "30", "--out", _out("instruct_comparison.json")),
         ("instruct_comparison.json",)),
    # the comparison's recorded ATOMR plans against today's plan grammar
    Step("plan_grammar", "benchmarks.bench_plan_grammar", ("--out", _out("plan_grammar.json")), ("plan_grammar.json",)),
    Step("arm_model", "benchmarks.bench_arm_model",
         ("--model", "local:qwen2.5-1.5b", "--n", "30", "--out", _out("arm_model.json")), ("arm_model.json",)),
    Step("arm_model_270m", "benchmarks.bench_arm_model",
         ("--model", "local", "--n", "30", "--out", _out("arm_model.json")), ("arm_model.json",)),
)

GROUPS = {"bench": BENCH, "arm": ARM, "local": LOCAL}


def _argv(step: Step, bird_jar: str | None, bird_dir: str) -> list[str]:
    args = [a.replace("{bird_jar}", bird_jar or "").replace(BIRD, bird_dir) for a in step.args]
    return [sys.executable, "-m", step.module, *args]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("group", nargs="?", default="bench", choices=tuple(GROUPS))
    ap.add_argument("--only", nargs="*", default=None, metavar="NAME", help="run only these steps of the group")
    ap.add_argument("--bird-jar", default=os.environ.get("BIRD_JAR") or None,
                    help="arm: JAR's data/bird folder (dev_tables.json, dev.json, decomp.json) for the Bird rows")
    ap.add_argument("--list", action="store_true", help="print the group's steps and the files they write")
    args = ap.parse_args(argv)
    steps = [s for s in GROUPS[args.group] if args.only is None or s.name in args.only]
    if args.list:
        for s in steps:
            print(f"{s.name:24} python -m {s.module} {' '.join(s.args)}  -> {', '.join(s.writes) or '(no results file)'}")
        return 0
    (ROOT / RESULTS).mkdir(exist_ok=True)
    failed, skipped, spent = [], [], {}
    with tempfile.TemporaryDirectory(prefix="atomgraph-bird-") as bird_dir:
        for step in steps:
            if step.needs_bird and not args.bird_jar:
                print(f"\n=== {step.name}: skipped (no --bird-jar: Bird is not in the shared data)", flush=True)
                skipped.append(step.name)
                continue
            print(f"\n=== {step.name} ===", flush=True)
            t = time.perf_counter()
            rc = subprocess.call(_argv(step, args.bird_jar, bird_dir), cwd=ROOT)
            spent[step.name] = time.perf_counter() - t
            if rc:
                failed.append(f"{step.name} (exit {rc})")
    print("\n" + "\n".join(f"{name:24} {s:8.1f} s" for name, s in spent.items()))
    print(f"{args.group}: {len(spent) - len(failed)} ran, {len(failed)} failed{': ' + ', '.join(failed) if failed else ''}"
          f", {len(skipped)} skipped{': ' + ', '.join(skipped) if skipped else ''}; {sum(spent.values()):.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
