"""ATOMR executor benchmark on the paper's released trees.

Every model call takes the same latency L (a scripted model that returns the released tree as
the plan). Each question runs twice, concurrently and strictly one step at a time
(``max_parallel=1``), and its **executed tree** is read off the run's own stream (LangGraph
``debug`` events): which step each tree node ran in which superstep and the model calls that
step made, by stage. From it:

- **calls**: the plan, plus every step's calls (fan-out sub-calls, source selection, query
  programs, direct-RAG fallbacks; a skipped operator makes none). Asserted equal to the calls
  the scripted model received and to the run's ``llm_calls`` record, in both schedules.
- **depth of a step**: the longest chain of model calls inside it. The fan-out runs its
  sub-calls at once (depth 1); a Relate on a knowledge graph that runs model-written query
  programs asks for the program, then the executor (depth 2); a step with no call has depth 0.
- **dependency bound**: ``(1 + longest chain over the tree's dependencies of the summed step
  depths) x L`` -- the plan, then each node's steps in order after all the nodes it depends
  on. No schedule of these calls can be faster, so ``concurrent / bound >= 1`` by construction.
- **superstep bound**: ``(1 + sum over supersteps of the deepest step in it) x L`` -- the same
  calls under LangGraph's bulk-synchronous supersteps (a step waits for its superstep's
  slowest). ``superstep bound / dependency bound`` is what the barrier costs these trees.

Per-step overhead: with a zero-latency model, the wall time of the ATOMR graph per executed step
(state merging, scheduling, prompt rendering, parsing, recording), against a bare LangGraph
graph of the same shape in the same run (plan -> review -> schedule <-> step ... -> finalize,
the same number of ``Send`` tasks in each superstep, steps that do nothing). The ratio is the
figure to compare across machines; the milliseconds depend on the machine's load.

    python -m benchmarks.bench_atomr_executor [--trees 60] [--latency 0.05] [--out FILE]

Each Search answers with two entities (``--search-answers``), so the nodes that reference one
fan out. Sources: two in-memory text sources and an in-memory knowledge graph that answers query
programs, so source selection is a real model call (three sources) and Relate leaves make
program calls.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import operator
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send

from atomgraph.graphs.atomr import build_atomr_graph
from atomgraph.nodes.atomr.execution import STEP_NODES
from atomgraph.prompts.atomr.tree_parser import parse_tree
from atomgraph.settings import Settings
from atomgraph.state.run import Evidence
from atomgraph.state.atomr import TreeParseError
from atomgraph.testing import answer_reply, atomr_scripted_model
from atomgraph.tools.memory_source import InMemorySource

RELEASED = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "atomr" / "released"
FILES = ["hotpotqa_test_500_trees.jsonl", "2Wiki_test_500_trees.jsonl"]
STEPS = set(STEP_NODES.values())
PROGRAM_STAGE = "kg_program"


def load_trees(n: int, seed: int = 0) -> list[tuple[str, dict]]:
    """(question, raw tree) for ``n`` parseable released trees."""
    rows = []
    for name in FILES:
        for line in (RELEASED / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            try:
                parse_tree(row["reasoning_tree"], row["question"])
            except TreeParseError:
                continue
            # asked with its spaces collapsed, as a prompt writes it (the scripted plan is found by it)
            rows.append((" ".join(row["question"].split()), row["reasoning_tree"]))
    random.Random(seed).shuffle(rows)
    return rows[:n]


class ProgramGraph(InMemorySource):
    """An in-memory knowledge graph that answers a query program with one fact."""

    def answer_program(self, program) -> list[Evidence]:
        return [Evidence(title=program.entity, text=f"{program.entity}: ok", source=self.name, id="fact")]


def sources():
    passages = [{"title": f"Doc {i}", "text": f"Passage number {i} about ok things."} for i in range(20)]
    return [
        InMemorySource(passages, name="wikipedia", description="Encyclopedia passages."),
        InMemorySource(passages, name="google", description="Web results.", kind="web"),
        ProgramGraph(passages, name="wikidata", description="A knowledge graph.", kind="kg"),
    ]


CONFIG = {"max_llm_calls": 500, "max_nodes": 200, "max_depth": 20}


def step_depth(name: str, calls: list[dict]) -> int:
    """The longest chain of model calls inside one step (see the module docstring)."""
    if not calls:
        return 0
    if name == "run_operator":
        programs = any(c.get("stage") == PROGRAM_STAGE for c in calls)
        answers = any(c.get("stage") != PROGRAM_STAGE for c in calls)
        return int(programs) + int(answers)
    return 1


async def execute(graph, model, question: str, max_parallel: int | None) -> dict:
    """Run one question; its wall time, final state and executed tree (steps by superstep)."""
    cfg = {"configurable": {**CONFIG, "max_parallel": max_parallel}}
    before = len(model.calls)
    steps: list[dict] = []  # {"superstep", "name", "node", "calls", "depth"}
    plan_calls = 0
    final: dict = {}
    t0 = time.perf_counter()
    async for mode, ev in graph.astream({"question": question}, config=cfg, stream_mode=["debug", "values"]):
        if mode == "values":
            final = ev
            continue
        if ev["type"] != "task_result":
            continue
        name, result = ev["payload"]["name"], ev["payload"]["result"]
        result = dict(result) if isinstance(result, (list, tuple)) else (result or {})
        calls = [c if isinstance(c, dict) else c.model_dump() for c in result.get("llm_calls") or []]
        if name == "plan":
            plan_calls += len(calls)
        elif name in STEPS:
            (node,) = [int(k) for k in result["runs"]]
            steps.append({"superstep": ev["step"], "name": name, "node": node, "calls": len(calls),
                          "depth": step_depth(name, calls)})
        elif calls:
            raise AssertionError(f"model calls from {name!r}, which the bound does not know")
    wall = time.perf_counter() - t0
    made = len(model.calls) - before
    counted = plan_calls + sum(s["calls"] for s in steps)
    assert counted == made == len(final["llm_calls"]), (
        f"executed tree implies {counted} calls, the model received {made}, the run recorded {len(final['llm_calls'])}")
    return {"wall_s": wall, "final": final, "steps": steps, "plan_calls": plan_calls, "calls": made}


def dependency_bound(final: dict, steps: list[dict], plan_calls: int) -> int:
    """Model-call latencies on the longest dependency chain of the executed tree."""
    tree = final.get("tree")
    if tree is None:  # the plan was refused: whatever ran, ran after it, one step after another
        return plan_calls + sum(s["depth"] for s in steps)
    own: dict[int, int] = {}
    for s in steps:
        own[s["node"]] = own.get(s["node"], 0) + s["depth"]
    finish: dict[int, int] = {}
    for i in tree.topological_order():
        deps = tree.nodes[i].dependencies
        finish[i] = max((finish[d] for d in deps), default=0) + own.get(i, 0)
    return plan_calls + max(finish.values(), default=0)


def superstep_bound(steps: list[dict], plan_calls: int) -> int:
    deepest: dict[int, int] = {}
    for s in steps:
        deepest[s["superstep"]] = max(deepest.get(s["superstep"], 0), s["depth"])
    return plan_calls + sum(deepest.values())


def shape(steps: list[dict]) -> list[int]:
    """Send tasks per superstep, in order."""
    per: dict[int, int] = {}
    for s in steps:
        per[s["superstep"]] = per.get(s["superstep"], 0) + 1
    return [per[k] for k in sorted(per)]


class BareState(TypedDict, total=False):
    question: str
    shape: list[int]
    done: int
    records: Annotated[list, operator.add]


def bare_graph():
    """LangGraph with nothing of ATOMR: plan -> review -> schedule <-> step -> finalize, the
    schedule sending as many no-op step tasks per superstep as the question's executed tree."""

    def plan(state: BareState) -> dict:
        return {"done": 0}

    def review(state: BareState) -> dict:
        return {}

    def schedule(state: BareState) -> Command:
        k = state["done"]
        if k >= len(state["shape"]):
            return Command(goto="finalize")
        return Command(goto=[Send("step", {"i": j, "k": k}) for j in range(state["shape"][k])],
                       update={"done": k + 1})

    def step(inp: dict) -> dict:
        return {"records": [inp["i"]]}

    def finalize(state: BareState) -> dict:
        return {}

    b = StateGraph(BareState)
    b.add_node("plan", plan)
    b.add_node("review_plan", review)
    b.add_node("schedule", schedule, destinations=("step", "finalize"))
    b.add_node("step", step)
    b.add_node("finalize", finalize)
    b.add_edge(START, "plan")
    b.add_edge("plan", "review_plan")
    b.add_edge("review_plan", "schedule")
    b.add_edge("step", "schedule")
    b.add_edge("finalize", END)
    return b.compile()


async def main_async(args) -> dict:
    trees = load_trees(args.trees)
    plans = {q: t for q, t in trees}
    settings = Settings(cache=False)
    reply = "Wikipedia, Google, Wikidata"  # source selection keeps every source (Relate gets the KG)
    L = args.latency
    # a Search answers with ``--search-answers`` entities, so the nodes that reference it fan out
    several = answer_reply(*["ok", "fine", "good", "well"][: args.search_answers])

    def answer(stage: str, text: str) -> str:
        return several if stage == "search" else answer_reply("ok")

    # (a) the same calls at a fixed latency, concurrent and one step at a time
    model = atomr_scripted_model(plans, answer=answer, latency_s=L, sources_reply=reply)
    graph = build_atomr_graph(model=model, sources=sources(), settings=settings)
    await execute(graph, model, trees[0][0], None)  # warm-up: models and sources resolve on first use
    rows = []
    for q, _ in trees:
        conc = await execute(graph, model, q, None)
        seq = await execute(graph, model, q, 1)
        assert conc["calls"] == seq["calls"], "both schedules must make the same calls"
        dep = dependency_bound(conc["final"], conc["steps"], conc["plan_calls"])
        sup = superstep_bound(conc["steps"], conc["plan_calls"])
        serial = conc["plan_calls"] + sum(s["depth"] for s in conc["steps"])  # one step at a time
        assert dep <= sup <= serial
        rows.append({
            "calls": conc["calls"], "steps": len(conc["steps"]), "planned": conc["final"].get("tree") is not None,
            "fanout_steps": sum(1 for s in conc["steps"] if s["calls"] > s["depth"]),
            "program_steps": sum(1 for s in conc["steps"] if s["depth"] == 2),
            "empty_steps": sum(1 for s in conc["steps"] if s["calls"] == 0),
            "dependency_bound_calls": dep, "superstep_bound_calls": sup, "serial_bound_calls": serial,
            "concurrent_s": conc["wall_s"], "sequential_s": seq["wall_s"],
        })

    # (b) per-step overhead: the ATOMR graph with a zero-latency model vs a bare LangGraph graph
    # of the same shape, interleaved question by question in the same run
    fast_model = atomr_scripted_model(plans, answer=answer, sources_reply=reply)
    fast = build_atomr_graph(model=fast_model, sources=sources(), settings=settings)
    bare = bare_graph()
    warm = await execute(fast, fast_model, trees[0][0], None)
    await bare.ainvoke({"question": trees[0][0], "shape": shape(warm["steps"])})
    atomr_s = bare_s = 0.0
    n_steps = 0
    for _ in range(args.repeats):
        for q, _ in trees:
            run = await execute(fast, fast_model, q, None)
            atomr_s += run["wall_s"]
            n_steps += 1 + len(run["steps"])  # the plan is a step too
            t0 = time.perf_counter()
            out = await bare.ainvoke({"question": q, "shape": shape(run["steps"])})
            bare_s += time.perf_counter() - t0
            assert len(out["records"]) == len(run["steps"])

    vs_dep = [r["concurrent_s"] / (r["dependency_bound_calls"] * L) for r in rows]
    vs_sup = [r["concurrent_s"] / (r["superstep_bound_calls"] * L) for r in rows]
    branching = [r for r in rows if r["dependency_bound_calls"] < r["serial_bound_calls"]]
    summary = {
        "trees": len(rows),
        "latency_s": L,
        "search_answers": args.search_answers,
        "plans_refused": sum(1 for r in rows if not r["planned"]),
        "mean_llm_calls": statistics.mean(r["calls"] for r in rows),
        "mean_steps": statistics.mean(r["steps"] for r in rows),
        "steps_with_fanout": sum(r["fanout_steps"] for r in rows),
        "steps_with_program_call": sum(r["program_steps"] for r in rows),
        "steps_without_call": sum(r["empty_steps"] for r in rows),
        "mean_dependency_bound_calls": statistics.mean(r["dependency_bound_calls"] for r in rows),
        "mean_superstep_bound_calls": statistics.mean(r["superstep_bound_calls"] for r in rows),
        "mean_serial_bound_calls": statistics.mean(r["serial_bound_calls"] for r in rows),
        "concurrent_over_dependency_bound_min": min(vs_dep),
        "concurrent_over_dependency_bound_median": statistics.median(vs_dep),
        "concurrent_over_superstep_bound_median": statistics.median(vs_sup),
        "concurrent_over_superstep_bound_max": max(vs_sup),
        "superstep_over_dependency_bound_total": sum(r["superstep_bound_calls"] for r in rows)
        / sum(r["dependency_bound_calls"] for r in rows),
        "speedup_total": sum(r["sequential_s"] for r in rows) / sum(r["concurrent_s"] for r in rows),
        "speedup_median": statistics.median(r["sequential_s"] / r["concurrent_s"] for r in rows),
        "trees_with_parallel_branches": len(branching),
        "speedup_median_parallel_trees": statistics.median(r["sequential_s"] / r["concurrent_s"] for r in branching)
        if branching else None,
        "ideal_speedup_median_parallel_trees": statistics.median(
            r["serial_bound_calls"] / r["superstep_bound_calls"] for r in branching) if branching else None,
        "overhead_atomr_ms_per_step": atomr_s / n_steps * 1000,
        "overhead_bare_langgraph_ms_per_step": bare_s / n_steps * 1000,
        "overhead_ratio_atomr_over_bare": atomr_s / bare_s,
        "steps_measured": n_steps,
    }
    return {"summary": summary, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trees", type=int, default=60)
    p.add_argument("--latency", type=float, default=0.05, help="simulated seconds per model call")
    p.add_argument("--repeats", type=int, default=3, help="passes over the trees for the overhead figure")
    p.add_argument("--search-answers", type=int, default=2, choices=range(1, 5),
                   help="answers of each Search (its dependents fan out over them)")
    p.add_argument("--out", help="write the JSON result here")
    args = p.parse_args(argv)
    if not RELEASED.is_dir():
        print(f"skipped: {RELEASED} is absent", file=sys.stderr)
        return 0
    result = asyncio.run(main_async(args))
    s = result["summary"]
    print(f"ATOMR executor on {s['trees']} released trees, L = {s['latency_s'] * 1000:.0f} ms per call")
    if s["plans_refused"]:
        print(f"  released trees refused by the planner stage  {s['plans_refused']} (no tree: no executor steps)")
    print(f"  mean LLM calls / question            {s['mean_llm_calls']:.1f}  (= the scripted model's, asserted)")
    print(f"  mean executed steps / question       {s['mean_steps']:.1f}  ({s['steps_with_fanout']} with fan-out, "
          f"{s['steps_with_program_call']} with a query program, {s['steps_without_call']} without a call)")
    print(f"  mean bound (calls): dependency {s['mean_dependency_bound_calls']:.1f}, "
          f"superstep {s['mean_superstep_bound_calls']:.1f}, one step at a time {s['mean_serial_bound_calls']:.1f}")
    print(f"  concurrent / dependency bound        median {s['concurrent_over_dependency_bound_median']:.3f}, "
          f"min {s['concurrent_over_dependency_bound_min']:.3f}  (>= 1 by construction)")
    print(f"  concurrent / superstep bound         median {s['concurrent_over_superstep_bound_median']:.3f}, "
          f"max {s['concurrent_over_superstep_bound_max']:.3f}")
    print(f"  superstep / dependency bound (total) {s['superstep_over_dependency_bound_total']:.3f}  (the barrier's cost)")
    print(f"  sequential / concurrent (total)      {s['speedup_total']:.2f}x   (median per question {s['speedup_median']:.2f}x)")
    if s["trees_with_parallel_branches"]:
        print(f"  trees with parallel branches         {s['trees_with_parallel_branches']}: median speedup "
              f"{s['speedup_median_parallel_trees']:.2f}x (ideal under supersteps "
              f"{s['ideal_speedup_median_parallel_trees']:.2f}x)")
    print(f"  per-step overhead, zero-latency      ATOMR {s['overhead_atomr_ms_per_step']:.2f} ms, bare LangGraph "
          f"{s['overhead_bare_langgraph_ms_per_step']:.2f} ms: ratio {s['overhead_ratio_atomr_over_bare']:.1f}x "
          f"({s['steps_measured']} steps)")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
