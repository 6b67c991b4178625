"""What the comparison methods' nodes share: evidence bookkeeping, failure records, and the
``finish`` node that turns a loop's state into the output contract."""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable

from atomgraph.nodes.call import StageResult
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.stage import REPLY_CUT_MARK, cap_reply
from atomgraph.state.compare import DecomposedRagState, LoopState
from atomgraph.state.run import Evidence, evidence_record, render_evidence


def source_names(rt: MethodRuntime) -> list[str]:
    """Every available knowledge source (each method queries all of them)."""
    return list(rt.sources().available)


def evidence_key(e: Evidence) -> tuple:
    return (e.source, e.id) if e.id else (e.source, e.title, e.text)


def unique_evidence(items: Iterable[Evidence], limit: int | None = None) -> list[Evidence]:
    """``items`` without repeats (same source and id, or same text), the first ones kept."""
    seen: set[tuple] = set()
    out: list[Evidence] = []
    for e in items:
        k = evidence_key(e)
        if k not in seen:
            seen.add(k)
            out.append(e)
    return out[:limit] if limit is not None else out


def passages(evidence: list[Evidence]) -> str:
    """The evidence as numbered prompt lines ('(nothing was retrieved)' when empty)."""
    return render_evidence(evidence) or "(nothing was retrieved)"


def hits(evidence: list[Evidence]) -> list[dict]:
    """A short view of retrieved items for the trace."""
    return [evidence_record(e, fields=("source", "id", "title")) for e in evidence]


def same_answer(a: str, b: str) -> bool:
    """Two answers that differ only in case, punctuation, articles or spacing."""
    def norm(x: str) -> str:
        x = re.sub(r"[^\w\s]", " ", str(x).casefold())
        return " ".join(w for w in x.split() if w not in {"a", "an", "the"})

    return norm(a) == norm(b)


def shown_reply(result: StageResult) -> str | None:
    """The reply as the trace keeps it: cut at the stage's output cap and marked where a server
    sent more than the cap allows (``rt.ask`` cut it already; stage.cap_reply)."""
    if result.text is None:
        return None
    call = result.call
    get = call.get if isinstance(call, dict) else lambda k: getattr(call, k, None)
    text, cut = cap_reply(result.text, get("max_tokens"))
    return text if cut or not get("capped") else text + REPLY_CUT_MARK


def failed(step: str, result: StageResult, **extra: Any) -> dict[str, Any]:
    """The state update of a step whose model call failed or whose reply was unreadable: the
    run ends with ``error`` naming the step, and the trace keeps the raw reply."""
    problem = result.problem or "no value"
    return {
        "llm_calls": [result.call],
        "steps": [{"kind": step, "stage": result.call.stage, "error": problem, "response": shown_reply(result), **extra}],
        "error": f"{step}: {problem}",
        "done": True,
    }


def retrieved(evidence: list[Evidence]) -> dict[str, list[str]]:
    """``retrieved_ids`` / ``retrieved_titles`` of the contract, in order, without repeats."""
    return {
        "retrieved_ids": list(dict.fromkeys(e.id for e in evidence if e.id)),
        "retrieved_titles": list(dict.fromkeys(e.title for e in evidence if e.title)),
    }


def make_finish_node(rt: MethodRuntime, method: str, *, extra: Callable[[dict], dict] | None = None) -> Callable:
    """The last node of every comparison method: the output contract from the state.

    ``retrieved_ids`` / ``retrieved_titles`` are everything the run retrieved (what its
    retrieval recall is measured on); the trace holds every step, the evidence and the
    sources that could not be used.
    """

    def finish(state: LoopState | DecomposedRagState) -> dict[str, Any]:
        evidence = unique_evidence(state.get("evidence") or [])
        error = state.get("error")
        answer = "" if error else (state.get("answer") or "")
        trace = {
            "method": method,
            "question": state.get("question"),
            "steps": list(state.get("steps") or []),
            "evidence": [evidence_record(e) for e in evidence],
            "unavailable_sources": dict(rt.sources().unavailable),
            **(extra(state) if extra else {}),
        }
        return {"answer": answer, "answers": [answer] if answer else [], "trace": trace,
                "stopped": state.get("stopped"), "error": error, **retrieved(evidence)}

    finish.__name__ = "finish"
    return finish
