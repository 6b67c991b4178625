"""ATOMR executor benchmark on the paper's released trees.

Every model call takes the same latency L (a scripted model that returns the released tree as
the plan). Each question runs concurrently and in the authors' schedule -- one tree node at a
time (``max_parallel=1``) and one model call at a time (the node's fan-out sub-calls and a
Relate's program call one after another, :class:`OneCallAtATime`) -- and its **executed tree**
is read off the concurrent run's own stream (LangGraph ``tasks`` events): which step each tree
node ran in which superstep and the model calls that step made, by stage. From it:

- **calls**: the plan, plus every step's calls (fan-out sub-calls, source selection, query
  programs, direct-RAG fallbacks; a skipped operator makes none). Asserted equal to the calls
  the scripted model received and to the run's ``llm_calls`` record, in both schedules.
- **depth of a step**: the longest chain of model calls inside it. The fan-out runs its
  sub-calls at once (depth 1); a Relate on a knowledge graph that runs model-written query
  programs asks for the program, then the executor (depth 2); a step with no call has depth 0.
- **dependency bound** (the critical path): ``(1 + longest chain over the tree's dependencies of
  the summed step depths) x L`` -- the plan, then each node's steps in order after all the nodes
  it depends on. No schedule of these calls can be faster, so ``concurrent / bound >= 1`` by
  construction.
- **superstep bound**: ``(1 + sum over supersteps of the deepest step in it) x L`` -- the same
  calls under LangGraph's bulk-synchronous supersteps (a step waits for its superstep's
  slowest). ``superstep bound / dependency bound`` is what the barrier costs these trees.

Per-step overhead: with a zero-latency model, the wall and CPU time of the ATOMR graph per
executed step (state merging, scheduling, prompt rendering, parsing, recording, retrieval),
against a bare LangGraph graph of the same shape in the same run (plan -> review -> schedule <->
step ... -> finalize, the same number of ``Send`` tasks in each superstep, steps that do nothing,
every node ``async`` and run on the event loop as ATOMR's are), both run with ``ainvoke``; and
against the same bare graph whose plan and steps make ATOMR's model calls -- the prompts ATOMR
sent, as one message each, with their stage tags, stop sequences and output caps, to the same
scripted model, so each call is answered as ATOMR's was (``ainvoke``, nothing else): what ATOMR
adds to LangGraph and LangChain's call path (prompt rendering, reply reading and its checks, call
and retrieval records, retrieval, scheduling). The ratios are the figures to compare across
machines; the milliseconds depend on the machine's load.

Garbage collection: a full collection stops the event loop for as long as it scans the heap (100-250 ms
here, over the imports, graphs and every call the scripted models record), on whichever question is running.
By default the heap built before the measured runs is frozen (``gc.freeze``; ``--no-freeze-gc``: not), and
each phase records its full collections and how long they took.

Load: each phase runs on the machine as it is (``quiet``: nothing started by the benchmark), and,
with ``--busy 1`` (the default), again while one CPU-bound busy-loop process runs beside it
(``busy``), stopped afterwards. The 1-minute load average is recorded at the start and end of
each phase.

    python -m benchmarks.bench_atomr_executor [--trees 40] [--latency 0.1] [--busy 1] [--out FILE]

Each Search answers with two entities (``--search-answers``), so the nodes that reference one
fan out. Sources: two in-memory text sources and an in-memory knowledge graph that answers query
programs, so source selection is a real model call (three sources) and Relate leaves make
program calls.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import operator
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, Send
from pydantic import PrivateAttr

from atomgraph.graphs.atomr import build_atomr_graph
from atomgraph.nodes.atomr.execution import STEP_NODES
from atomgraph.prompts.atomr.tree_parser import parse_tree
from atomgraph.settings import Settings
from atomgraph.state.run import Evidence
from atomgraph.state.atomr import TreeParseError
from atomgraph.testing import ScriptedChatModel, answer_reply, atomr_scripted_model
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

    async def aanswer_program(self, program) -> list[Evidence]:  # in memory: answered in place, as searched
        return self.answer_program(program)


def sources():
    passages = [{"title": f"Doc {i}", "text": f"Passage number {i} about ok things."} for i in range(20)]
    return [
        InMemorySource(passages, name="wikipedia", description="Encyclopedia passages."),
        InMemorySource(passages, name="google", description="Web results.", kind="web"),
        ProgramGraph(passages, name="wikidata", description="A knowledge graph.", kind="kg"),
    ]


class OneCallAtATime(ScriptedChatModel):
    """The scripted model answering one call at a time, as the authors' code makes them: a call
    waits for the one before it to end (a node's fan-out sub-calls, a Relate's program call and
    its answer run one after another)."""

    _one: asyncio.Lock | None = PrivateAttr(default=None)

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):
        if self._one is None:
            self._one = asyncio.Lock()
        async with self._one:
            return await super()._agenerate(messages, stop=stop, run_manager=run_manager, **kwargs)


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


def run_config(max_parallel: int | None) -> dict:
    return {"configurable": {**CONFIG, "max_parallel": max_parallel}}


async def execute(graph, model, question: str, max_parallel: int | None) -> dict:
    """Run one question; its wall time, final state and executed tree (steps by superstep).
    Supersteps are counted off the ``tasks`` stream: a superstep's tasks all start before any
    of them ends."""
    before = len(model.calls)
    steps: list[dict] = []  # {"superstep", "name", "node", "calls", "depth"}
    plan_calls = 0
    final: dict = {}
    superstep, ended = -1, True
    t0 = time.perf_counter()
    async for mode, ev in graph.astream({"question": question}, config=run_config(max_parallel),
                                        stream_mode=["tasks", "values"]):
        if mode == "values":
            final = ev
            continue
        if "result" not in ev:  # a task starts
            if ended:
                superstep, ended = superstep + 1, False
            continue
        ended = True
        name, result = ev["name"], ev["result"]
        result = dict(result) if isinstance(result, (list, tuple)) else (result or {})
        calls = [c if isinstance(c, dict) else c.model_dump() for c in result.get("llm_calls") or []]
        if name == "plan":
            plan_calls += len(calls)
        elif name in STEPS:
            (node,) = [int(k) for k in result["runs"]]
            steps.append({"superstep": superstep, "name": name, "node": node, "calls": len(calls),
                          "depth": step_depth(name, calls)})
        elif calls:
            raise AssertionError(f"model calls from {name!r}, which the bound does not know")
    wall = time.perf_counter() - t0
    made = len(model.calls) - before
    counted = plan_calls + sum(s["calls"] for s in steps)
    assert counted == made == len(final["llm_calls"]), (
        f"executed tree implies {counted} calls, the model received {made}, the run recorded {len(final['llm_calls'])}")
    return {"wall_s": wall, "final": final, "steps": steps, "plan_calls": plan_calls, "calls": made,
            "sent": model.calls[before:]}


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


def shape(steps: list[dict]) -> list[list[int]]:
    """Per superstep, in order, the model calls of each of its ``Send`` tasks."""
    per: dict[int, list[int]] = {}
    for s in steps:
        per.setdefault(s["superstep"], []).append(s["calls"])
    return [per[k] for k in sorted(per)]


def call_shape(run: dict, calls: list[dict]) -> dict:
    """The bare graph's input for one executed question: per superstep, each ``Send`` task's model
    calls as ATOMR made them (``calls``: the scripted model's records of the run, in arrival order),
    and the plan's. A superstep's calls all arrive after the one before it ends, so they are taken in
    order, superstep by superstep; inside one, its tasks run at once and get its calls by their
    counts."""
    sent = [{"stage": c["stage"], "prompt": c["prompt"], "stop": tuple(c.get("stop") or ()),
             "max_tokens": c["max_tokens"]} for c in calls]
    plan, rest = sent[:run["plan_calls"]], sent[run["plan_calls"]:]
    supersteps = []
    for counts in shape(run["steps"]):
        tasks = []
        for n in counts:
            tasks.append(rest[:n])
            rest = rest[n:]
        supersteps.append(tasks)
    assert not rest, "every call belongs to a step"
    return {"shape": supersteps, "plan": plan}


class BareState(TypedDict, total=False):
    question: str
    shape: list[list[list[dict]]]
    plan: list[dict]
    done: int
    records: Annotated[list, operator.add]


def bare_graph(model=None):
    """LangGraph with nothing of ATOMR: plan -> review -> schedule <-> step -> finalize, the
    schedule sending as many step tasks per superstep as the question's executed tree
    (:func:`call_shape`). Every node is ``async`` and runs on the event loop, as every node of the
    ATOMR graph does. Without ``model`` the steps do nothing. With ``model`` (the same scripted model
    as ATOMR's) the plan and each step make the model calls ATOMR's did, at once: the same prompt
    text (one message), stage tag, stop sequences and output cap, so the model answers each as it
    answered ATOMR -- and nothing else (no prompt rendering, parsing, records or retrieval)."""
    bound: dict[tuple, object] = {}

    def runnable(stop: tuple, cap: int | None):
        key = (stop, cap)
        if key not in bound:
            kwargs = {"max_tokens": cap} if cap is not None else {}
            bound[key] = model.bind(stop=list(stop), **kwargs) if stop else model.bind(**kwargs)
        return bound[key]

    async def calls(sent: list[dict]) -> None:
        if model is not None and sent:
            await asyncio.gather(*(runnable(c["stop"], c["max_tokens"]).ainvoke(
                c["prompt"], config={"tags": [f"stage:{c['stage']}"]}) for c in sent))

    async def plan(state: BareState) -> dict:
        await calls(state.get("plan") or [])
        return {"done": 0}

    async def review(state: BareState) -> dict:
        return {}

    async def schedule(state: BareState) -> Command:
        k = state["done"]
        if k >= len(state["shape"]):
            return Command(goto="finalize")
        return Command(goto=[Send("step", {"i": j, "calls": c}) for j, c in enumerate(state["shape"][k])],
                       update={"done": k + 1})

    async def step(inp: dict) -> dict:
        await calls(inp["calls"])
        return {"records": [inp["i"]]}

    async def finalize(state: BareState) -> dict:
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


@contextlib.contextmanager
def busy_beside(n: int):
    """``n`` CPU-bound busy-loop processes running beside the benchmark, stopped on leaving."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(1.0 if procs else 0.0)  # let the scheduler see them
        yield
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


class FullCollections:
    """The interpreter's full (generation 2) garbage collections while it watches: how many, and
    how long the event loop stood still in them."""

    def __init__(self) -> None:
        self.count, self.total_s, self.longest_s, self._t0 = 0, 0.0, 0.0, None

    def __call__(self, phase: str, info: dict) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._t0 = time.perf_counter()
        elif self._t0 is not None:
            took, self._t0 = time.perf_counter() - self._t0, None
            self.count, self.total_s, self.longest_s = self.count + 1, self.total_s + took, max(self.longest_s, took)


@contextlib.contextmanager
def collections_watched(freeze: bool):
    """Full collections counted while inside; with ``freeze``, the heap built so far (imports, graphs,
    warm-up runs) frozen first (``gc.freeze``), so a collection scans only what the measured runs
    allocate, as in a process that freezes its heap once it has started; thawed on leaving."""
    if freeze:
        gc.collect()
        gc.freeze()
    watch = FullCollections()
    gc.callbacks.append(watch)
    try:
        yield watch
    finally:
        gc.callbacks.remove(watch)
        if freeze:
            gc.unfreeze()


def load_1min() -> float:
    return round(os.getloadavg()[0], 2)


def answers_for(search_answers: int):
    several = answer_reply(*["ok", "fine", "good", "well"][:search_answers])

    def answer(stage: str, text: str) -> str:
        return several if stage == "search" else answer_reply("ok")

    return answer


async def phase(trees, plans, args, busy: int) -> dict:
    """The executor at latency L (concurrent and the authors' schedule) and the per-step overhead,
    on the machine as it is plus ``busy`` busy-loop processes."""
    settings = Settings(cache=False)
    reply = "Wikipedia, Google, Wikidata"  # source selection keeps every source (Relate gets the KG)
    L = args.latency
    answer = answers_for(args.search_answers)
    model = atomr_scripted_model(plans, answer=answer, latency_s=L, sources_reply=reply)
    serial = OneCallAtATime(stages=model.stages, latency_s=L)
    graph = build_atomr_graph(model=model, sources=sources(), settings=settings)
    authors = build_atomr_graph(model=serial, sources=sources(), settings=settings)
    fast_model = atomr_scripted_model(plans, answer=answer, sources_reply=reply)
    fast = build_atomr_graph(model=fast_model, sources=sources(), settings=settings)
    bare = bare_graph()
    bare_model = atomr_scripted_model(plans, answer=answer, sources_reply=reply)
    bare_calls = bare_graph(bare_model)
    # warm-up: models and sources resolve on first use
    await execute(graph, model, trees[0][0], None)
    await execute(authors, serial, trees[0][0], 1)
    shapes = {}
    for q, _ in trees:
        run = await execute(fast, fast_model, q, None)
        shapes[q] = {"question": q, **call_shape(run, run["sent"])}
    await bare.ainvoke(shapes[trees[0][0]])
    await bare_calls.ainvoke(shapes[trees[0][0]])

    freeze = getattr(args, "freeze_gc", True)
    with busy_beside(busy), collections_watched(freeze) as collections:
        load_start = load_1min()
        rows = []
        for q, _ in trees:
            conc = await execute(graph, model, q, None)
            seq = await execute(authors, serial, q, 1)
            assert conc["calls"] == seq["calls"], "both schedules must make the same calls"
            dep = dependency_bound(conc["final"], conc["steps"], conc["plan_calls"])
            sup = superstep_bound(conc["steps"], conc["plan_calls"])
            serial_steps = conc["plan_calls"] + sum(s["depth"] for s in conc["steps"])  # one step at a time
            assert dep <= sup <= serial_steps <= conc["calls"]
            rows.append({
                "calls": conc["calls"], "steps": len(conc["steps"]), "planned": conc["final"].get("tree") is not None,
                "fanout_steps": sum(1 for s in conc["steps"] if s["calls"] > s["depth"]),
                "program_steps": sum(1 for s in conc["steps"] if s["depth"] == 2),
                "empty_steps": sum(1 for s in conc["steps"] if s["calls"] == 0),
                "dependency_bound_calls": dep, "superstep_bound_calls": sup, "serial_bound_calls": serial_steps,
                "concurrent_s": conc["wall_s"], "sequential_s": seq["wall_s"],
            })

        # per-step overhead: the ATOMR graph with a zero-latency model vs a bare LangGraph graph of
        # the same shape, both with ainvoke, interleaved question by question
        wall = {"atomr": 0.0, "bare": 0.0, "bare_calls": 0.0}
        atomr_made = bare_made = 0
        cpu = dict.fromkeys(wall, 0.0)
        n_steps = 0

        async def timed(name: str, run):
            c0, t0 = time.process_time(), time.perf_counter()
            out = await run
            wall[name] += time.perf_counter() - t0
            cpu[name] += time.process_time() - c0
            return out

        for _ in range(args.repeats):
            for q, _ in trees:
                n_steps += 1 + sum(len(tasks) for tasks in shapes[q]["shape"])  # the plan is a step too
                atomr_made -= len(fast_model.calls)
                await timed("atomr", fast.ainvoke({"question": q}, config=run_config(None)))
                atomr_made += len(fast_model.calls)
                done = await timed("bare", bare.ainvoke(shapes[q]))
                bare_made -= len(bare_model.calls)
                await timed("bare_calls", bare_calls.ainvoke(shapes[q]))
                bare_made += len(bare_model.calls)
                assert len(done["records"]) == sum(len(tasks) for tasks in shapes[q]["shape"])
        assert atomr_made == bare_made, "the bare graph makes ATOMR's calls"
        load_end = load_1min()

    vs_dep = [r["concurrent_s"] / (r["dependency_bound_calls"] * L) for r in rows]
    vs_sup = [r["concurrent_s"] / (r["superstep_bound_calls"] * L) for r in rows]
    seq_vs_calls = [r["sequential_s"] / (r["calls"] * L) for r in rows]
    speedup = [r["sequential_s"] / r["concurrent_s"] for r in rows]
    branching = [r for r in rows if r["dependency_bound_calls"] < r["calls"]]
    return {
        "busy_processes": busy,
        "load_1min_start": load_start,
        "load_1min_end": load_end,
        "gc_heap_frozen": freeze,
        "gc_full_collections": collections.count,
        "gc_full_collection_ms_total": collections.total_s * 1000,
        "gc_full_collection_ms_longest": collections.longest_s * 1000,
        "concurrent_over_dependency_bound_median": statistics.median(vs_dep),
        "concurrent_over_dependency_bound_max": max(vs_dep),
        "concurrent_over_dependency_bound_min": min(vs_dep),
        "concurrent_over_superstep_bound_median": statistics.median(vs_sup),
        "concurrent_over_superstep_bound_max": max(vs_sup),
        "sequential_over_calls_median": statistics.median(seq_vs_calls),
        "speedup_total": sum(r["sequential_s"] for r in rows) / sum(r["concurrent_s"] for r in rows),
        "speedup_median": statistics.median(speedup),
        "ideal_speedup_total": sum(r["calls"] for r in rows) / sum(r["dependency_bound_calls"] for r in rows),
        "trees_with_parallel_calls": len(branching),
        "speedup_median_parallel_trees": statistics.median(r["sequential_s"] / r["concurrent_s"] for r in branching)
        if branching else None,
        "ideal_speedup_median_parallel_trees": statistics.median(
            r["calls"] / r["dependency_bound_calls"] for r in branching) if branching else None,
        "overhead_atomr_ms_per_step": wall["atomr"] / n_steps * 1000,
        "overhead_bare_langgraph_ms_per_step": wall["bare"] / n_steps * 1000,
        "overhead_ratio_atomr_over_bare": wall["atomr"] / wall["bare"],
        "overhead_atomr_cpu_ms_per_step": cpu["atomr"] / n_steps * 1000,
        "overhead_bare_langgraph_cpu_ms_per_step": cpu["bare"] / n_steps * 1000,
        "overhead_cpu_ratio_atomr_over_bare": cpu["atomr"] / cpu["bare"],
        "overhead_bare_with_calls_ms_per_step": wall["bare_calls"] / n_steps * 1000,
        "overhead_ratio_atomr_over_bare_with_calls": wall["atomr"] / wall["bare_calls"],
        "overhead_bare_with_calls_cpu_ms_per_step": cpu["bare_calls"] / n_steps * 1000,
        "overhead_cpu_ratio_atomr_over_bare_with_calls": cpu["atomr"] / cpu["bare_calls"],
        "overhead_cpu_ratio_bare_with_calls_over_bare": cpu["bare_calls"] / cpu["bare"],
        "steps_measured": n_steps,
        "rows": rows,
    }


async def main_async(args) -> dict:
    trees = load_trees(args.trees)
    plans = {q: t for q, t in trees}
    busy = getattr(args, "busy", 0)
    phases = {"quiet": await phase(trees, plans, args, 0)}
    if busy:
        phases["busy"] = await phase(trees, plans, args, busy)
    rows = phases["quiet"]["rows"]
    summary = {
        "trees": len(rows),
        "latency_s": args.latency,
        "search_answers": args.search_answers,
        "cpus": os.cpu_count(),
        "plans_refused": sum(1 for r in rows if not r["planned"]),
        "mean_llm_calls": statistics.mean(r["calls"] for r in rows),
        "mean_steps": statistics.mean(r["steps"] for r in rows),
        "steps_with_fanout": sum(r["fanout_steps"] for r in rows),
        "steps_with_program_call": sum(r["program_steps"] for r in rows),
        "steps_without_call": sum(r["empty_steps"] for r in rows),
        "mean_dependency_bound_calls": statistics.mean(r["dependency_bound_calls"] for r in rows),
        "mean_superstep_bound_calls": statistics.mean(r["superstep_bound_calls"] for r in rows),
        "mean_serial_bound_calls": statistics.mean(r["serial_bound_calls"] for r in rows),
        "superstep_over_dependency_bound_total": sum(r["superstep_bound_calls"] for r in rows)
        / sum(r["dependency_bound_calls"] for r in rows),
        "phases": {name: {k: v for k, v in p.items() if k != "rows"} for name, p in phases.items()},
    }
    return {"summary": summary, "rows": {name: p["rows"] for name, p in phases.items()}}


def report(s: dict) -> None:
    print(f"ATOMR executor on {s['trees']} released trees, L = {s['latency_s'] * 1000:.0f} ms per call, "
          f"{s['cpus']} CPUs")
    if s["plans_refused"]:
        print(f"  released trees refused by the planner stage  {s['plans_refused']} (no tree: no executor steps)")
    print(f"  mean LLM calls / question            {s['mean_llm_calls']:.1f}  (= the scripted model's, asserted)")
    print(f"  mean executed steps / question       {s['mean_steps']:.1f}  ({s['steps_with_fanout']} with fan-out, "
          f"{s['steps_with_program_call']} with a query program, {s['steps_without_call']} without a call)")
    print(f"  mean bound (calls): dependency {s['mean_dependency_bound_calls']:.1f}, "
          f"superstep {s['mean_superstep_bound_calls']:.1f}, one step at a time {s['mean_serial_bound_calls']:.1f}")
    print(f"  superstep / dependency bound (total) {s['superstep_over_dependency_bound_total']:.3f}  (the barrier's cost)")
    for name, p in s["phases"].items():
        print(f"  [{name}: {p['busy_processes']} busy-loop process(es) beside; load {p['load_1min_start']:.1f} -> "
              f"{p['load_1min_end']:.1f}; heap {'frozen' if p['gc_heap_frozen'] else 'not frozen'} after warm-up: "
              f"{p['gc_full_collections']} full collections, {p['gc_full_collection_ms_total']:.0f} ms "
              f"(longest {p['gc_full_collection_ms_longest']:.0f} ms)]")
        print(f"    concurrent / critical path         median {p['concurrent_over_dependency_bound_median']:.3f}, "
              f"max {p['concurrent_over_dependency_bound_max']:.3f}, min {p['concurrent_over_dependency_bound_min']:.3f}"
              "  (>= 1 by construction)")
        print(f"    concurrent / superstep bound       median {p['concurrent_over_superstep_bound_median']:.3f}, "
              f"max {p['concurrent_over_superstep_bound_max']:.3f}")
        print(f"    authors' schedule / (calls x L)    median {p['sequential_over_calls_median']:.3f}  (one call at a time)")
        print(f"    authors' schedule / concurrent     {p['speedup_total']:.2f}x total (ideal {p['ideal_speedup_total']:.2f}x), "
              f"median {p['speedup_median']:.2f}x; {p['trees_with_parallel_calls']} trees with parallel calls: median "
              f"{p['speedup_median_parallel_trees'] or 0:.2f}x (ideal {p['ideal_speedup_median_parallel_trees'] or 0:.2f}x)")
        print(f"    per-step overhead, zero latency    ATOMR {p['overhead_atomr_ms_per_step']:.2f} ms, bare LangGraph "
              f"{p['overhead_bare_langgraph_ms_per_step']:.2f} ms: ratio {p['overhead_ratio_atomr_over_bare']:.2f}x "
              f"(CPU {p['overhead_atomr_cpu_ms_per_step']:.2f} / {p['overhead_bare_langgraph_cpu_ms_per_step']:.2f} ms: "
              f"{p['overhead_cpu_ratio_atomr_over_bare']:.2f}x; {p['steps_measured']} steps)")
        print(f"    bare LangGraph making ATOMR's model calls (same prompts, same model) "
              f"{p['overhead_bare_with_calls_ms_per_step']:.2f} ms, CPU {p['overhead_bare_with_calls_cpu_ms_per_step']:.2f} "
              f"ms: ATOMR / it {p['overhead_ratio_atomr_over_bare_with_calls']:.2f}x "
              f"(CPU {p['overhead_cpu_ratio_atomr_over_bare_with_calls']:.2f}x); it / bare "
              f"(CPU) {p['overhead_cpu_ratio_bare_with_calls_over_bare']:.2f}x")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trees", type=int, default=40)
    p.add_argument("--latency", type=float, default=0.1, help="simulated seconds per model call")
    p.add_argument("--repeats", type=int, default=3, help="passes over the trees for the overhead figure")
    p.add_argument("--search-answers", type=int, default=2, choices=range(1, 5),
                   help="answers of each Search (its dependents fan out over them)")
    p.add_argument("--busy", type=int, default=1,
                   help="busy-loop processes beside the second phase (0: the quiet phase only)")
    p.add_argument("--freeze-gc", action=argparse.BooleanOptionalAction, default=True,
                   help="freeze the heap built before the measured runs (gc.freeze), so a full collection "
                        "scans only what they allocate")
    p.add_argument("--out", help="write the JSON result here")
    args = p.parse_args(argv)
    if not RELEASED.is_dir():
        print(f"skipped: {RELEASED} is absent", file=sys.stderr)
        return 0
    result = asyncio.run(main_async(args))
    report(result["summary"])
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
