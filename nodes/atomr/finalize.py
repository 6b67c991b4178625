"""The result: the root's answer and the executed tree as the trace. A run that produced no
answer has an empty answer (never "Unknown") and ``error`` saying why.

A run the LLM-call budget stopped (or that cut a node's sub-calls short) has no prediction:
its ``error`` says so and the partial tree is the trace, with the answered node nearest the
root named under ``trace["partial"]``. An intermediate node's answer ("Wapakoneta", one of
three birthplaces) is never passed off as the answer to the question."""

from __future__ import annotations

from atomgraph.state.atomr import AtomRState, NodeRun
from atomgraph.tools.base import retrieval_failure


def best_answered(state: AtomRState) -> NodeRun | None:
    tree, runs = state["tree"], state["runs"]
    answered = [r for r in runs.values() if r.done and r.answers]
    if not answered:
        return None
    # Nearest the root first; among equals the later node (it usually combines the earlier).
    return min(answered, key=lambda r: (tree.nodes[r.id].depth, -r.id))


def evidence_trace(run: NodeRun, max_chars: int = 400) -> list[dict]:
    return [
        {"source": e.source, "title": e.title, "text": e.text[:max_chars], "url": e.url, "score": e.score}
        for e in run.evidence
    ]


def build_trace(state: AtomRState) -> dict:
    tree, runs = state["tree"], state["runs"]
    nodes = []
    for i in tree.topological_order():
        r = runs[i]
        n = tree.nodes[i]
        nodes.append({
            "id": i, "kind": r.kind, "depth": n.depth, "parent": n.parent, "children": n.children, "refs": n.refs,
            "question": r.question, "resolved_question": r.resolved_question, "operator": r.operator,
            "sources": r.sources, "evidence": evidence_trace(r), "filter_dropped": r.filter_dropped,
            "paraphrase": r.paraphrase, "answers": r.answers, "answer": r.answer, "fallback": r.fallback,
            "subcalls": [c.model_dump() for c in r.subcalls],
            "notes": r.notes, "llm_calls": r.llm_calls, "done": r.done,
        })
    return {
        "method": "atomr",
        "question": state["question"],
        "plan": tree.to_planner_json(),
        "plan_fallback": state.get("plan_fallback"),
        "repairs": tree.repairs,
        "unavailable_sources": state.get("unavailable_sources", {}),
        "nodes": nodes,
    }


def no_tree_trace(state: AtomRState) -> dict:
    return {"method": "atomr", "question": state.get("question", ""), "plan": None,
            "plan_fallback": state.get("plan_fallback"), "raw_plan": state.get("raw_plan", ""), "repairs": [],
            "unavailable_sources": state.get("unavailable_sources", {}), "nodes": []}


def failure_reason(state: AtomRState) -> str:
    """Why the run has no answer: the root's notes, or the stop reason."""
    tree, runs = state["tree"], state["runs"]
    root = runs[tree.root]
    reasons = [n for n in root.notes if "failed" in n or "no answer" in n]
    if state.get("stopped"):
        reasons.insert(0, state["stopped"])
    return "ATOMR produced no answer" + (": " + "; ".join(reasons) if reasons else "")


def budget_cut(state: AtomRState) -> list[int]:
    """The nodes whose sub-calls the LLM-call budget cut short."""
    return [i for i, r in state["runs"].items() if any(n.startswith("LLM-call budget:") for n in r.notes)]


def finalize(state: AtomRState) -> dict:
    if state.get("tree") is None:  # no usable plan (the authors score it empty)
        return {"answer": "", "answers": [], "trace": no_tree_trace(state), "retrieved_ids": [],
                "retrieved_titles": [], "stopped": state.get("stopped"),
                "error": state.get("error") or "ATOMR produced no answer: no plan"}
    tree, runs = state["tree"], state["runs"]
    root = runs[tree.root]
    stopped = state.get("stopped")
    cut = budget_cut(state)
    error = state.get("error")
    partial = None
    if (stopped and not root.done) or cut:
        best = best_answered(state)
        partial = {"node": best.id, "question": best.resolved_question or best.question,
                   "answers": best.answers} if best is not None else None
        stopped = stopped or f"LLM-call budget reached: sub-calls of node(s) {cut} not run"
        error = error or (f"ATOMR stopped before the question was answered ({stopped}); no prediction: "
                          "the partial tree is the trace" + (f" (nearest answered node {best.id})" if best else ""))
        chosen = None
    else:
        chosen = root if root.answers else None
    evidence = [e for i in tree.topological_order() for e in runs[i].evidence]
    titles = list(dict.fromkeys(e.title for e in evidence if e.title))
    ids = list(dict.fromkeys(e.id for e in evidence if e.id))
    if chosen is None and not error:
        error = no_answer_error(state, chosen) or failure_reason({**state, "stopped": stopped})
    if not error:  # every source failed: whatever was answered is closed-book, and says so
        error = retrieval_failure(state.get("retriever_calls") or [])
    trace = build_trace({**state, "stopped": stopped})
    if partial is not None or cut or (stopped and not root.done):
        trace["partial"] = partial
    return {
        "retrieved_ids": ids,
        "answer": chosen.answer if chosen else "",
        "answers": chosen.answers if chosen else [],
        "trace": trace,
        "retrieved_titles": titles,
        "stopped": stopped,
        "error": error,
    }


def no_answer_error(state: AtomRState, chosen: NodeRun | None) -> str | None:
    """Why the run has no answer, when that is because model calls failed (the one failure
    contract of every method: a run that could not answer says so in ``error``). A model that
    read its evidence and answered "Unknown" is an answer, not an error."""
    if chosen is not None and chosen.answers:
        return None
    failed = [c for c in state.get("llm_calls") or [] if c["error"]]
    if not failed:
        return None
    return f"ATOMR produced no answer: {len(failed)} model call(s) failed (last: {failed[-1]['error']})"
