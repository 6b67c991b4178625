"""ARM (alignment-oriented retrieval) as a LangGraph graph, on the method kit.

decompose → align → retrieve → structure → verify → aggregate → answer

| paper | nodes | module (``nodes/arm/``) | stages (``prompts/arm.py``) |
|---|---|---|---|
| §3.2.1 information alignment (with n-gram matching) | decompose, align | ``information_alignment`` | ``arm_decompose``, ``arm_align``, ``arm_align_list`` |
| §3.2.1 (end) the base search objects | retrieve | ``information_alignment`` | — |
| §3.2.2 structure alignment: R_i, C_ij, expansion, the MIP, drafts | structure | ``structure_alignment`` | — |
| §3.3 self-verification (Appendix C: drafts in words), aggregation | verify, aggregate | ``self_verification`` | ``arm_verify`` |
| the run: data collection, runtime, answer, trace | answer | ``pipeline`` | ``arm_answer`` |

>>> graph = build_arm_graph(model=my_model, objects="objects.jsonl")
>>> out = graph.invoke({"question": "Which singers performed in 2014?"}, context={"k": 5})
>>> out["retrieved_ids"], out["answer"], out["trace"]["drafts"]

The data collection is ``objects`` (a path, a list of DataObject or an ArmIndex), or the
``sources`` argument when it is one of those, or the run's ``objects`` parameter
(``ATOMGRAPH_ARM__OBJECTS``). Run parameters: :class:`~atomgraph.state.arm.ArmContext`.
A question that carries ``"keywords"`` replays them as the information-alignment output
(no model call for decomposition or alignment).

:func:`arm_retriever` runs the graph without its answer stage as a retriever
``Question -> RetrievalResult``, for ``atomgraph retrieve --method arm`` with or without a model
(``llm=False``: the same stages, no model; :func:`arm_retrieve` for one question). There is
one ARM pipeline: a replayed decomposition is an input, not another code path.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from langgraph.graph import END, START

from atomgraph.lc import MethodGraph
from atomgraph.models import ModelsArg
from atomgraph.nodes.arm.information_alignment import make_align_node, make_decompose_node, make_retrieve_node
from atomgraph.nodes.arm.pipeline import ArmRuntime, Collection, after_decompose, make_answer_node
from atomgraph.nodes.arm.self_verification import make_aggregate_node, make_verify_node
from atomgraph.nodes.arm.structure_alignment import make_structure_node
from atomgraph.settings import Settings
from atomgraph.state.arm import ArmContext
from atomgraph.state.arm_graph import ArmInput, ArmState

STEPS = ("decompose", "align", "retrieve", "structure", "verify", "aggregate", "answer")


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
                    checkpointer: Any = None, *, objects: Any = None, embeddings: Any = None) -> MethodGraph:
    """The ``arm`` graph. Building needs no model, objects or network; a run resolves them."""
    art = ArmRuntime.for_method("arm", model, [], settings, collection=Collection(_objects_arg(objects, sources), embeddings))
    g = art.state_graph(ArmState, ArmInput)
    makers = {"decompose": make_decompose_node, "align": make_align_node, "retrieve": make_retrieve_node,
              "structure": make_structure_node, "verify": make_verify_node,
              "aggregate": make_aggregate_node, "answer": make_answer_node}
    for name in STEPS:
        g.add_node(name, makers[name](art))
    g.add_edge(START, "decompose")
    g.add_conditional_edges("decompose", after_decompose, ["align", "answer"])
    for a, b in zip(STEPS[1:-1], STEPS[2:]):
        g.add_edge(a, b)
    g.add_edge("answer", END)
    return MethodGraph(g.compile(checkpointer=checkpointer, name="arm"))


def arm_retriever(index: Any, ctx: Any = None, *, model: ModelsArg = None,
                  settings: Settings | None = None) -> Callable:
    """A retriever ``Question -> RetrievalResult`` running the ``arm`` graph up to the vote (no
    answer). The one ARM pipeline: with ``ctx.llm`` (default) LLM decomposition and constrained
    alignment (or the question's replayed keywords), MIP drafts, verification and the weighted
    vote; with ``llm=False`` the same stages without a model (keywords replayed, else the
    question's corpus n-grams; the drafts' own votes). ``atomgraph retrieve --method arm`` runs it.

    ``ctx`` is an ``ArmContext`` (or a dict of its fields) whose fields become the run's context.
    """
    from dataclasses import asdict, fields

    from atomgraph.nodes.arm.pipeline import RetrievalResult

    graph = _graph_for(index, model, settings)
    names = {f.name for f in fields(ArmContext)}
    given = ctx if isinstance(ctx, dict) else asdict(ctx) if ctx is not None else {}
    context = {**{k: v for k, v in given.items() if k in names}, "answer": False}

    def retrieve(question, keywords: Any = None) -> RetrievalResult:
        inp: dict[str, Any] = {"question": getattr(question, "question", question)}
        kws = keywords if keywords is not None else getattr(question, "keywords", None)
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
        trace = dict(out.get("trace") or {})
        if out.get("error") and not trace.get("problems"):
            trace["problems"] = [str(out["error"])]
        conf = {v["id"]: v["confidence"] for v in trace.get("votes") or []}
        ids = list(out.get("retrieved_ids") or [])
        rel = {i: r for d in trace.get("drafts") or [] for i, r in (d.get("relevance") or {}).items()}
        score = (lambda i: float(conf.get(i, 0.0))) if conf else (lambda i: float(rel.get(i, 0.0)))
        result = RetrievalResult("arm", ids, [score(i) for i in ids], trace)
        calls = out.get("llm_calls") or []
        result.trace["llm_calls"] = len(calls)
        result.trace["stage_seconds"] = seconds
        result.trace["seconds"] = round(time.perf_counter() - t0, 4)
        result.trace["llm_call_stats"] = call_stats(calls)
        return result

    return retrieve


def _graph_for(index: Any, model: ModelsArg, settings: Settings | None) -> MethodGraph:
    """The ``arm`` graph over ``index``; without a model or settings, built once per index."""
    if model is not None or settings is not None or not hasattr(index, "__dict__"):
        return build_arm_graph(model=model, settings=settings, objects=index)
    graph = index.__dict__.get("_arm_graph")
    if graph is None:
        graph = index.__dict__["_arm_graph"] = build_arm_graph(objects=index)
    return graph


def arm_retrieve(question: Any, index: Any, ctx: Any = None, *, keywords: Any = None) -> Any:
    """ARM retrieval of one question without a model (``llm=False``): the ``arm`` graph's stages,
    keywords given, replayed from the question, else the question's own corpus n-grams."""
    from dataclasses import asdict

    given = ctx if isinstance(ctx, dict) else asdict(ctx) if ctx is not None else {}
    return arm_retriever(index, {**given, "llm": False})(question, keywords=keywords)


def retrieve(method: str, question: Any, index: Any, k: int = 5, ctx: Any = None) -> Any:
    """Dispatch to ``dense``, ``bm25`` or ``arm`` retrieval (``arm``: the graph without a model
    without a model here; :func:`arm_retriever` runs it with one)."""
    from dataclasses import asdict

    from atomgraph.nodes.arm.pipeline import METHODS, bm25_retrieve, dense_retrieve

    if method == "dense":
        return dense_retrieve(question, index, k)
    if method == "bm25":
        return bm25_retrieve(question, index, k)
    if method == "arm":
        given = ctx if isinstance(ctx, dict) else asdict(ctx) if ctx is not None else {}
        return arm_retrieve(question, index, {**given, "k": k})
    raise ValueError(f"unknown retrieval method {method!r}; expected one of {', '.join(METHODS)}")


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
graph = build_arm_graph().graph
