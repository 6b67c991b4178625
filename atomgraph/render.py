"""Readable terminal renderings of results and traces."""

from __future__ import annotations

from atomgraph.state.usage import add_usage, summarize_usage


def _short(text: str, n: int = 100) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def render_atomr_trace(trace: dict) -> str:
    """The executed Atomic Reasoning Tree, one node a line, children indented."""
    nodes = {n["id"]: n for n in trace.get("nodes", [])}
    lines: list[str] = []
    if trace.get("plan_fallback"):
        lines.append(f"plan fallback: {trace['plan_fallback']}")
    for r in trace.get("repairs", []):
        lines.append(f"plan repaired: {r}")
    for name, why in (trace.get("unavailable_sources") or {}).items():
        lines.append(f"source {name} unavailable: {why}")

    def walk(i: int, indent: int) -> None:
        n = nodes[i]
        pad = "  " * indent
        mark = {"operator": "•", "parent": "◆", "direct": "[DR]", "open": "○"}.get(n["kind"], "?")
        lines.append(f"{pad}{mark} [{i}] {_short(n.get('resolved_question') or n['question'])}")
        detail = []
        if n.get("operator"):
            detail.append(_short(n["operator"], 80))
        if n.get("sources"):
            detail.append("sources: " + ", ".join(n["sources"]))
        if n.get("evidence"):
            detail.append(f"{len(n['evidence'])} evidence")
        if n.get("filter_dropped"):
            detail.append("dropped: " + ", ".join(n["filter_dropped"]))
        if detail:
            lines.append(f"{pad}    {' · '.join(detail)}")
        answer = n.get("answer") if n.get("done") else "(not answered)"
        lines.append(f"{pad}    → {_short(answer, 120)}")
        if n.get("fallback"):
            lines.append(f"{pad}    fallback: {_short(n['fallback'], 120)}")
        for note in n.get("notes", []):
            lines.append(f"{pad}    note: {_short(note, 120)}")
        for c in n.get("children", []):
            if c in nodes:
                walk(c, indent + 1)

    roots = [i for i, n in nodes.items() if n.get("parent") is None]
    for r in roots:
        walk(r, 0)
    return "\n".join(lines)


def render_usage(result: dict) -> str:
    """One line of usage: from a graph's output (its call records) or an evaluation record (its ``usage``)."""
    if isinstance(result.get("usage"), dict):
        u = add_usage([result["usage"]])
    else:
        u = summarize_usage(result.get("llm_calls", []), result.get("retriever_calls", []))
    by_source = ", ".join(f"{k} {v}" for k, v in sorted(u.retriever_calls_by_source.items())) or "none"
    return (
        f"LLM calls: {u.llm_calls} ({u.prompt_tokens} prompt + {u.completion_tokens} completion tokens); "
        f"retriever calls: {u.retriever_calls} ({by_source})"
    )
