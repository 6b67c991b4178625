"""ATOMR's knowledge-graph query program, filled by the bundled local model vs read off the
operator's arguments, on the demo knowledge graph (pyoxigraph in process).

For each Relate sub-question of the demo's planned trees (references resolved to their gold
answers), the ``kg_program`` stage is asked under its JSON schema (Gemma-3-270M's grammar);
the program is checked as the operator node checks it (``program_problem``, then compiled by
``WikidataSource.answer_program``) and its answers are compared with those of the rule-built
program (``WikidataSource.operate``), which also stands in where the model's is unusable.

    python -m benchmarks.bench_atomr_kg_program [--out benchmarks/results/atomr_kg_program.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from atomgraph.demo_pack import kg_path
from atomgraph.local.chat import ChatLocalLlama
from atomgraph.prompts.atomr.kg_program import PROGRAM_SCHEMA, program_problem, read_program
from atomgraph.prompts.atomr.stages import KG_PROGRAM_STAGE
from atomgraph.state.atomr import OperatorCall
from atomgraph.tools.sparql_backends import OxigraphFileStore
from atomgraph.tools.wikidata_source import ProgramError, WikidataSource

# The Relate leaves of the demo's plans (tests/atomr_demo_script.py), references resolved.
CASES = [
    ("Where was Albert Einstein born?", ["Albert Einstein", "place of birth"]),
    ("Who was the doctoral advisor of Werner Heisenberg?", ["Werner Heisenberg", "doctoral advisor"]),
    ("In which city did Arnold Sommerfeld die?", ["Arnold Sommerfeld", "place of death"]),
    ("Which school awarded Albert Einstein his teaching diploma?", ["Albert Einstein", "teaching diploma"]),
    ("When was ETH Zurich founded?", ["ETH Zurich", "inception"]),
    ("At which university did Niels Bohr earn his doctorate?", ["Niels Bohr", "educated at"]),
    ("When was University of Copenhagen founded?", ["University of Copenhagen", "inception"]),
    ("Which physicist stated the uncertainty principle?", ["uncertainty principle", "discoverer or inventor"]),
    ("After which physicist is the wave equation of quantum mechanics named?",
     ["wave equation of quantum mechanics", "named after"]),
    ("When was Werner Heisenberg born?", ["Werner Heisenberg", "date of birth"]),
    ("When was Erwin Schrödinger born?", ["Erwin Schrödinger", "date of birth"]),
    ("At which university did Max Planck earn his doctorate?", ["Max Planck", "doctorate"]),
    ("Who was Marie Curie's husband?", ["Marie Curie", "spouse"]),
    ("In which city was Pierre Curie born?", ["Pierre Curie", "place of birth"]),
    ("Who are the children of Marie Curie?", ["Marie Curie", "child"]),
]


def labels(evidence) -> list[str]:
    return sorted({e.metadata.get("tail_label") or e.text for e in evidence})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/atomr_kg_program.json")
    args = ap.parse_args(argv)
    kg = WikidataSource(OxigraphFileStore(kg_path()))
    model = ChatLocalLlama().bind(max_tokens=64, json_schema=PROGRAM_SCHEMA, stop=list(KG_PROGRAM_STAGE.stop))
    rows = []
    for question, op_args in CASES:
        rules = labels(kg.operate("Relate", op_args, question))
        messages = KG_PROGRAM_STAGE.messages(
            {"question": question, "operator": OperatorCall(name="Relate", args=op_args).render()})
        t0 = time.perf_counter()
        reply = model.invoke(messages).content
        seconds = time.perf_counter() - t0
        why, answers = None, None
        try:
            program = read_program(reply)
            why = program_problem(program, question, op_args)
            if why is None:
                answers = labels(kg.answer_program(program))
        except ProgramError as exc:
            why = f"it cannot be compiled: {exc}"
        except ValueError as exc:
            why = f"no usable reply: {exc}"
        used = answers if why is None else rules
        rows.append({"question": question, "args": op_args, "reply": reply, "unusable": why,
                     "model_answers": answers, "rule_answers": rules, "used": used, "seconds": round(seconds, 1)})
        print(json.dumps(rows[-1], ensure_ascii=False), flush=True)
    usable = [r for r in rows if r["unusable"] is None]
    summary = {
        "sub_questions": len(rows),
        "usable_model_programs": len(usable),
        "model_answers_equal_rules": sum(r["model_answers"] == r["rule_answers"] for r in usable),
        "model_answers_non_empty": sum(bool(r["model_answers"]) for r in usable),
        "fell_back_to_rules": len(rows) - len(usable),
        "rule_answers_non_empty": sum(bool(r["rule_answers"]) for r in rows),
        "used_answers_non_empty": sum(bool(r["used"]) for r in rows),
        "used_equal_rules": sum(r["used"] == r["rule_answers"] for r in rows),
        "mean_seconds_per_program": round(sum(r["seconds"] for r in rows) / len(rows), 1),
    }
    print(json.dumps(summary))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"model": "gemma-3-270m (bundled)", "summary": summary, "rows": rows},
                              ensure_ascii=False, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
