"""The result: the root's answer (or, when a limit stopped the run, the answered node
nearest the root), and the executed tree as the trace."""

from __future__ import annotations

from atomgraph.state.atomr import AtomRState, NodeRun


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


def finalize(state: AtomRState) -> dict:
    tree, runs = state["tree"], state["runs"]
    root = runs[tree.root]
    stopped = state.get("stopped")
    chosen = root if root.done else best_answered(state)
    if not root.done and chosen is not None and stopped:
        stopped = f"{stopped} (from node {chosen.id}: {chosen.resolved_question or chosen.question})"
    evidence = [e for i in tree.topological_order() for e in runs[i].evidence]
    titles = list(dict.fromkeys(e.title for e in evidence if e.title))
    ids = list(dict.fromkeys(e.id for e in evidence if e.id))
    return {
        "retrieved_ids": ids,
        "answer": chosen.answer if chosen else "Unknown",
        "error": state.get("error") or no_answer_error(state, chosen),
        "answers": chosen.answers if chosen else [],
        "trace": build_trace({**state, "stopped": stopped}),
        "retrieved_titles": titles,
        "stopped": stopped,
    }


def no_answer_error(state: AtomRState, chosen: NodeRun | None) -> str | None:
    """Why the run has no answer, when that is because model calls failed (the one failure
    contract of every method: a run that could not answer says so in ``error``). A model that
    read its evidence and answered "Unknown" is an answer, not an error."""
    if chosen is not None and chosen.answer not in ("", "Unknown"):
        return None
    failed = [c for c in state.get("llm_calls") or [] if c["error"]]
    if not failed:
        return None if chosen is not None else "no node of the tree was answered"
    return f"no answer: {len(failed)} model call(s) failed (last: {failed[-1]['error']})"
