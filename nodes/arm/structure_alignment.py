"""§3.2.2 structure alignment: the ``structure`` node (one MIP draft per expanded set of search
objects, :func:`atomgraph.nodes.arm.pool.solve_drafts`) and the ``draft`` node (an extension,
off by default: the decoder's changes to each solver draft — objects added from the draft's
search objects, objects dropped — at most ``max_draft_changes`` per draft)."""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.arm.common import ArmRuntime, question_scores
from atomgraph.nodes.arm.pool import solve_drafts
from atomgraph.nodes.arm.verbalize import verbalize_draft
from atomgraph.prompts.arm.verification import DRAFT, changes_schema
from atomgraph.state.arm_graph import ArmState, Draft


def make_structure_node(art: ArmRuntime) -> Callable:
    async def structure(state: ArmState, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        index, scores = await question_scores(art, ctx, state)
        pool = {index.position(c["id"]): c["via"] for c in state.get("candidates") or []}
        # embeds units and runs CBC: in a thread, off the event loop
        drafts = await asyncio.to_thread(solve_drafts, index, pool, scores, ctx)
        notes = []
        if ctx.structure_alignment and len(drafts) < ctx.drafts:
            notes.append(f"structure: {ctx.drafts - len(drafts)} expansion(s) added nothing new; {len(drafts)} draft(s)")
        return {"drafts": drafts, "problems": notes}

    return structure


def make_draft_node(art: ArmRuntime) -> Callable:
    async def draft(state: ArmState, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        drafts: list[Draft] = [Draft(**d) for d in state.get("drafts") or []]
        if ctx.max_draft_changes == 0 or not drafts:
            return {}
        index = await art.aindex(ctx)
        dec = await art.decoding(ctx, state, DRAFT.role)
        question = state["question"]

        async def one(d: Draft):
            others = sorted((i for i in d["pool"] if i not in d["ids"]), key=lambda i: -d["relevance"].get(i, 0))[:20]
            if not others and not d["ids"]:
                return None
            inputs = {"question": question, "keywords": state.get("keywords"), "max_changes": ctx.max_draft_changes,
                      "draft": verbalize_draft(index, d["ids"], d["links"], question, ctx.verbalize_top_rows),
                      "others": "\n".join(f"{i} — {index.objects[index.position(i)].title}" for i in others) or "(none)"}
            return await art.ask(DRAFT, inputs, config, constraint=changes_schema(d["pool"]),
                                    backend_kind=dec["backend"])

        results = await asyncio.gather(*(one(d) for d in drafts))
        calls, problems = [], []
        for d, result in zip(drafts, results):
            if result is None:
                continue
            calls.append(result.call)
            if not result.ok:
                problems.append(f"draft {d['draft']}: {result.problem}; the solver's draft kept")
                continue
            inside = set(d["ids"])
            adds = [i for i in result.value["add"] if i in d["pool"] and i not in inside][: ctx.max_draft_changes]
            drops = [i for i in result.value["drop"] if i in inside][: max(0, ctx.max_draft_changes - len(adds))]
            ids = [i for i in d["ids"] if i not in drops] + adds
            if not ids:
                problems.append(f"draft {d['draft']}: the changes left no object; the solver's draft kept")
                continue
            ignored = [i for i in result.value["add"] + result.value["drop"] if i not in adds + drops]
            d.update(ids=ids, added=adds, dropped=drops, ignored=ignored)
        return {"drafts": drafts, "llm_calls": calls, "problems": problems}

    return draft
