"""Readable terminal renderings of results and traces. Every text a model or a source wrote is
shown escaped (:func:`atomgraph.text.escape`): a rendering printed anywhere — the CLI, a
notebook, a log — cannot steer a terminal."""

from __future__ import annotations

from atomgraph.text import escape
from atomgraph.state.run import add_usage, summarize_usage


def _short(text: str, n: int = 100) -> str:
    text = escape(" ".join(str(text).split()))
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
        if len(n.get("subcalls") or []) > 1:  # ATOMR's per-answer fan-out
            detail.append(f"{len(n['subcalls'])} sub-calls")
        if detail:
            lines.append(f"{pad}    {' · '.join(detail)}")
        answer = (n.get("answer") or "(no answer)") if n.get("done") else "(not answered)"
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
    return escape("\n".join(lines))


def render_kar3_trace(trace: dict) -> str:
    """KAR³'s rounds: proposals, what was retrieved, the choice, and why the loop ended."""
    lines: list[str] = []
    for r in trace.get("rounds") or []:
        head = f"round {r.get('number')}: " + ("enough" if r.get("enough") else
                                               "; ".join(_short(p, 80) for p in r.get("proposals") or []) or "-")
        lines.append(head)
        for tier in r.get("tiers") or []:
            lines.append(f"    retrieved via {tier.get('via')}: {tier.get('hits', 0)} hits")
        choice = r.get("choice")
        if choice:
            lines.append(f"    chose: {_short(choice.get('atom') or choice.get('text', ''), 90)} "
                         f"({choice.get('title') or choice.get('chunk_id')}, {float(choice.get('score', 0)):.2f})")
        for note in r.get("notes") or []:
            lines.append(f"    note: {_short(note, 120)}")
        if r.get("ended"):
            lines.append(f"    loop ended: {r['ended']}")
    return escape("\n".join(lines))


def render_arm_trace(trace: dict) -> str:
    """ARM's alignment, drafts and vote."""
    lines = [f"keywords ({trace.get('keyword_source') or '-'}): " + ", ".join(trace.get("keywords") or [])]
    aligned = [a.get("ngram") for a in trace.get("aligned") or [] if isinstance(a, dict)]
    if aligned:
        lines.append("aligned n-grams: " + ", ".join(str(a) for a in aligned))
    if trace.get("decoding"):
        lines.append(f"decoding: {trace['decoding'].get('mode')} ({_short(trace['decoding'].get('why', ''), 80)})")
    lines.append(f"drafts: {len(trace.get('drafts') or [])}; candidates: {len(trace.get('candidates') or [])}")
    for v in (trace.get("votes") or [])[:10]:
        lines.append(f"    vote {v.get('id')}: {v.get('votes')} votes, confidence {float(v.get('confidence', 0)):.3f}")
    for p in trace.get("problems") or []:
        lines.append(f"note: {_short(p, 120)}")
    return escape("\n".join(lines))


def render_steps(trace: dict) -> str:
    """The steps of an iterative method (Self-Ask, IRCoT, ReAct, Iter-RetGen, decomposed RAG)."""
    lines = []
    for i, step in enumerate(trace.get("steps") or [], 1):
        detail = {k: v for k, v in step.items() if k not in ("kind", "response", "hits", "stage") and v}
        text = "; ".join(f"{k}: {_short(v if isinstance(v, str) else str(v), 90)}" for k, v in detail.items())
        lines.append(f"{i}. {step.get('kind', 'step')}" + (f" — {text}" if text else ""))
    return escape("\n".join(lines))


def render_trace(trace: dict) -> str:
    """The trace of any method, as its method shows it best ("" when there is nothing to show)."""
    from atomgraph.imports import import_object
    from atomgraph.methods import registered

    declared = next((m for m in registered() if m.name == trace.get("method")), None)
    if declared is not None and declared.render:  # the method's own renderer (its declaration)
        return import_object(declared.render)(trace)
    if trace.get("nodes"):  # by shape, for traces that name no method
        return render_atomr_trace(trace)
    if trace.get("rounds"):
        return render_kar3_trace(trace)
    if trace.get("steps"):
        return render_steps(trace)
    return ""


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
