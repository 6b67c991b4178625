"""ARM (alignment-oriented retrieval) as a LangGraph graph, on the method kit.

decompose → align → retrieve → structure → draft → verify → aggregate → answer

| paper | nodes | module (``nodes/arm/``) | stages (``prompts/arm/``) |
|---|---|---|---|
| §3.2.1 information alignment | decompose, align | ``information_alignment`` | ``alignment`` |
| §3.2.1 (end) search objects | retrieve | ``retrieve`` | — |
| §3.2.2 structure alignment | structure, draft | ``structure_alignment`` | ``verification`` (draft) |
| §3.2.3 self-verification, aggregation | verify, aggregate | ``verification`` | ``verification`` (verify) |
| answer | answer (and the trace) | ``answer`` | ``answer`` |

>>> graph = build_arm_graph(model=my_model, objects="objects.jsonl")
>>> out = graph.invoke({"question": "Which singers performed in 2014?"}, context={"k": 5})
>>> out["retrieved_ids"], out["answer"], out["trace"]["drafts"]

The data collection is ``objects`` (a path, a list of DataObject or an ArmIndex), or the
``sources`` argument when it is one of those, or the run's ``objects`` parameter
(``ATOMGRAPH_ARM__OBJECTS``). Run parameters: :class:`~atomgraph.state.arm_graph.ArmGraphContext`.
A question that carries ``"keywords"`` replays them as the information-alignment output
(no model call for decomposition or alignment).

:func:`arm_llm_retriever` runs the graph without its answer stage as a retriever
``Question -> RetrievalResult``, for ``atomgraph retrieve --method arm`` with a model.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from langgraph.graph import END, START
from langgraph.graph.state import CompiledStateGraph

from atomgraph.models import ModelsArg
from atomgraph.nodes.arm.answer import make_answer_node
from atomgraph.nodes.arm.collection import Collection
from atomgraph.nodes.arm.common import ArmRuntime
from atomgraph.nodes.arm.information_alignment import make_align_node, make_decompose_node
from atomgraph.nodes.arm.retrieve import make_retrieve_node
from atomgraph.nodes.arm.structure_alignment import make_draft_node, make_structure_node
from atomgraph.nodes.arm.verification import make_aggregate_node, make_verify_node
from atomgraph.nodes.runtime import dual
from atomgraph.settings import Settings
from atomgraph.state.arm_graph import ArmGraphContext, ArmInput, ArmState

STEPS = ("decompose", "align", "retrieve", "structure", "draft", "verify", "aggregate", "answer")


def _objects_arg(objects: Any, sources: Any) -> Any:
    if objects is not None:
        return objects
    from atomgraph.tools.arm_index import ArmIndex
    from atomgraph.tools.objects import DataObject

    if isinstance(sources, (str, Path, ArmIndex)):
        return sources
    if isinstance(sources, (list, tuple)) and sources and all(isinstance(o, DataObject) for o in sources):
        return list(sources)
    return None


def build_arm_graph(model: ModelsArg = None, sources: Any = None, settings: Settings | None = None,
                    checkpointer: Any = None, *, objects: Any = None, embeddings: Any = None) -> CompiledStateGraph:
    """The ``arm`` graph. Building needs no model, objects or network; a run resolves them."""
    art = ArmRuntime.for_method("arm", model, [], settings, collection=Collection(_objects_arg(objects, sources), embeddings))
    g = art.state_graph(ArmState, ArmInput)
    makers = {"decompose": make_decompose_node, "align": make_align_node, "retrieve": make_retrieve_node,
              "structure": make_structure_node, "draft": make_draft_node, "verify": make_verify_node,
              "aggregate": make_aggregate_node, "answer": make_answer_node}
    for name in STEPS:
        g.add_node(name, dual(makers[name](art)))
    g.add_edge(START, "decompose")
    g.add_conditional_edges("decompose", lambda s: "answer" if s.get("error") else "align", ["align", "answer"])
    for a, b in zip(STEPS[1:-1], STEPS[2:]):
        g.add_edge(a, b)
    g.add_edge("answer", END)
    return g.compile(checkpointer=checkpointer, name="arm")


def arm_llm_retriever(index: Any, ctx: Any = None, *, model: ModelsArg = None,
                      settings: Settings | None = None) -> Callable:
    """A retriever ``Question -> RetrievalResult`` running the ``arm`` graph up to the vote
    (no answer): LLM decomposition and constrained alignment, or the question's replayed
    keywords; MIP drafts; the decoder's changes and verification; the weighted vote.

    ``ctx`` is an ``ArmContext`` (or ``ArmGraphContext``) whose fields become the run's
    context. For ``atomgraph retrieve --method arm`` when a model is configured.
    """
    from dataclasses import asdict, fields

    from atomgraph.nodes.arm.retrieval import RetrievalResult

    graph = build_arm_graph(model=model, settings=settings, objects=index)
    names = {f.name for f in fields(ArmGraphContext)}
    base = {k: v for k, v in (asdict(ctx) if ctx is not None else {}).items() if k in names}
    context = {**base, "answer": False}

    def retrieve(question) -> RetrievalResult:
        inp: dict[str, Any] = {"question": getattr(question, "question", question)}
        kws = getattr(question, "keywords", None)
        if kws:
            inp["keywords"] = list(kws)
        out: dict[str, Any] = {}
        seconds: dict[str, float] = {}
        t0 = t = time.perf_counter()
        # the nodes run one after another: the time between two updates is the node's own
        for mode, chunk in graph.stream(inp, context=context, stream_mode=["updates", "values"]):
            if mode == "values":
                out = chunk
                continue
            now = time.perf_counter()
            for node in chunk or {}:
                seconds[node] = round(seconds.get(node, 0.0) + now - t, 4)
            t = now
        trace = out.get("trace") or {}
        conf = {v["id"]: v["confidence"] for v in trace.get("votes") or []}
        ids = list(out.get("retrieved_ids") or [])
        result = RetrievalResult("arm", ids, [float(conf.get(i, 0.0)) for i in ids], trace)
        calls = out.get("llm_calls") or []
        result.trace["llm_calls"] = len(calls)
        result.trace["stage_seconds"] = seconds
        result.trace["seconds"] = round(time.perf_counter() - t0, 4)
        result.trace["llm_call_stats"] = call_stats(calls)
        return result

    return retrieve


def call_stats(calls: list) -> dict[str, dict]:
    """Per stage: model calls, prompt and completion tokens, seconds, and how many calls the
    response cache answered (from the call records)."""
    out: dict[str, dict] = {}
    for c in calls:
        c = c if isinstance(c, dict) else dict(c)
        s = out.setdefault(c.get("stage") or c.get("role") or "?",
                           {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0, "cached": 0})
        s["calls"] += 1
        s["cached"] += int(bool(c.get("cached")))
        s["prompt_tokens"] += int(c.get("prompt_tokens") or 0)
        s["completion_tokens"] += int(c.get("completion_tokens") or 0)
        s["seconds"] = round(s["seconds"] + float(c.get("latency_s") or 0.0), 4)
    return out


# Building needs no model, objects or network (they are resolved when a run starts).
graph = build_arm_graph()
