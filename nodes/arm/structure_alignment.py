"""§3.2.2 structure alignment: relevance R_i, the expanded sets of search objects, one MIP draft
per set, and the ``structure`` and ``draft`` nodes.

- :func:`relevance` — R_i of each search object (the paper's cosine similarity of the question
  and the object; ``relevance="mix"`` a switch), plus the ``database_weight`` extension
  (:func:`database_relevance`);
- :func:`expanded_pools` — "Constructing multiple alignment drafts": the base set expanded
  ``first_expansion`` + d steps (d = 0, 1, 2; by default the base set itself, then 1 and 2
  steps), each step adding every new object's most compatible objects
  (:func:`atomgraph.nodes.arm.compatibility.neighbours`);
- :func:`solve_draft` — the MIP (:mod:`atomgraph.nodes.arm.mip`) over one set: k objects and
  their connections; :func:`solve_drafts` — one draft per expanded set;
- the ``structure`` node runs them; the ``draft`` node (an extension, off by default) lets the
  decoder add or drop up to ``max_draft_changes`` objects of each solver draft.

Positions are indices into ``index.objects``; what goes into the graph state is ids.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Sequence

import numpy as np
from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.arm.common import ArmRuntime
from atomgraph.nodes.arm.compatibility import compatibility_for, neighbours
from atomgraph.nodes.arm.information_alignment import Scores, _minmax, question_scores
from atomgraph.nodes.arm.mip import solve_structure
from atomgraph.nodes.arm.verbalize import verbalize_draft
from atomgraph.prompts.arm import DRAFT, changes_schema
from atomgraph.state.arm import ArmContext
from atomgraph.state.arm_graph import ArmState, Draft
from atomgraph.tools.arm_index import ArmIndex


def database_relevance(objects: Sequence, R: np.ndarray, weight: float) -> np.ndarray:
    """R with each table's *database relevance* added: ``weight`` × the best R of any candidate
    table in the same ``database`` (passages and tables without a database are unchanged).

    A question over a schema is answered inside one database, so a weak but needed table
    (a join table, a lookup table) of the most relevant database should outrank a strong
    table of another database; without this, the MIP fills k with a well-joined cluster of a
    different database. Soft, not a filter: a second database keeps its own best R.
    """
    R = np.asarray(R, dtype=float)
    if weight <= 0 or len(R) == 0:
        return R.copy()
    dbs = [o.database if o.is_table else None for o in objects]
    best: dict[str, float] = {}
    for d, r in zip(dbs, R):
        if d is not None:
            best[d] = max(best.get(d, float("-inf")), float(r))
    return R + weight * np.array([best[d] if d is not None else 0.0 for d in dbs])


def expand(index: ArmIndex, pool: dict[int, str], scores: Scores, ctx: ArmContext, steps: int) -> dict[int, str]:
    """``pool`` expanded ``steps`` times (§3.2.2): each step, every object added by the step
    before (the base objects first) adds its ``expansion_per_seed`` most compatible objects.

    Past ``max_candidates`` (our cap; the paper has none): ``expansion_keep="relevance"`` keeps
    the base objects, most relevant first, then the most relevant expanded ones — a base of
    ``max_candidates`` or more then leaves every draft the same set; ``"newest"`` reserves half
    the cap for expanded objects, the last step's first, so draft d's set holds its own d-th hop."""
    out = dict(pool)
    step_of: dict[int, int] = {}
    frontier = list(out)
    for step in range(1, steps + 1):
        new = []
        for s in frontier:
            for q in neighbours(index, s, scores.dense, ctx.expansion_per_seed, ctx):
                if q not in out:
                    out[q] = f"expansion of {index.objects[s].id}"
                    step_of[q] = step
                    new.append(q)
        frontier = new
        if not frontier:
            break
    if len(out) > ctx.max_candidates:
        ps = list(out)
        r = scores.relevance(ps, ctx.relevance, ctx.bm25_weight)
        base = sorted((i for i, p in enumerate(ps) if p in pool), key=lambda i: -r[i])
        if ctx.expansion_keep == "newest":
            rest = sorted((i for i, p in enumerate(ps) if p not in pool), key=lambda i: (-step_of[ps[i]], -r[i]))
            room = max(ctx.max_candidates - len(rest), ctx.max_candidates // 2)
            order = base[:room] + rest
        else:
            order = base + [i for i in np.argsort(-r, kind="stable") if ps[i] not in pool]
        keep = {ps[i] for i in order[: ctx.max_candidates]}
        out = {p: v for p, v in out.items() if p in keep}
    return out


def expanded_pools(index: ArmIndex, pool: dict[int, str], scores: Scores, ctx: ArmContext, drafts: int) -> list[tuple[int, dict[int, str]]]:
    """``drafts`` expanded sets of search objects, ``(steps, set)``: the d-th expands the base
    set ``first_expansion`` + d steps (d = 0, 1, …; default: the base set, then 1 and 2 steps);
    a set equal to an earlier one is expanded one more step (at most ``first_expansion +
    drafts + 1`` steps), so the sets really differ where the collection allows.
    ``expansion_per_seed = 0`` gives the base set alone."""
    out: list[tuple[int, dict[int, str]]] = []
    seen: set[frozenset[int]] = set()
    steps = ctx.first_expansion if ctx.expansion_per_seed > 0 else 0
    while len(out) < max(1, drafts) and steps <= ctx.first_expansion + max(1, drafts) + 1:
        s = expand(index, pool, scores, ctx, steps)
        key = frozenset(s)
        if key not in seen:
            seen.add(key)
            out.append((steps, s))
        if ctx.expansion_per_seed <= 0:
            break
        steps += 1
    return out


def keyword_coverage(scores: Scores, positions: Sequence[int], weight: float) -> np.ndarray | None:
    """``coverage_weight`` (a measured extension, on by default; 0 = the paper): keywords ×
    ``positions``, each keyword's score (its n-gram list as a query) min-max normalised over
    the set, times ``weight`` —
    the MIP then also counts, per keyword, the best chosen object covering it, so k objects
    that all answer one keyword lose to a set that answers each (JAR's sub-query coverage)."""
    if weight <= 0 or not scores.keyword or not len(positions):
        return None
    ps = list(positions)
    return weight * np.stack([_minmax(s[ps]) for s in scores.keyword])


def solve_draft(index: ArmIndex, positions: Sequence[int], scores: Scores, ctx: ArmContext) -> dict:
    """The MIP over one set of search objects: chosen ids (best first), links, solver report.
    ``structure_alignment=False`` (Figure 4's "information alignment only"): the k most
    relevant objects, no MIP."""
    ps = list(positions)
    R = database_relevance([index.objects[p] for p in ps], scores.relevance(ps, ctx.relevance, ctx.bm25_weight), ctx.database_weight)
    if not ctx.structure_alignment:
        C = np.zeros((len(ps), len(ps)))
    else:
        C = compatibility_for(index, ps, ctx) * ctx.compatibility_scale
    res = solve_structure(R, C, ctx.k, max_links=ctx.max_links, time_limit_s=ctx.mip_time_limit_s,
                          links_rule=ctx.links, coverage=keyword_coverage(scores, ps, ctx.coverage_weight))
    ids = [index.objects[ps[i]].id for i in res.chosen]
    return {
        "ids": ids,
        "relevance": {index.objects[ps[i]].id: round(float(R[i]), 4) for i in range(len(ps))},
        "links": [{"a": index.objects[ps[i]].id, "b": index.objects[ps[j]].id, "c": round(c, 4)} for i, j, c in res.links],
        "mip": {"status": res.status, "time_limited": res.status != "optimal", "solve_ms": round(res.solve_seconds * 1000, 3),
                "objective": round(res.objective, 6), "greedy_objective": round(res.greedy_objective, 6),
                "pair_variables": res.pair_variables, "candidates": len(ps), "time_limit_s": res.time_limit_s},
    }


def solve_drafts(index: ArmIndex, pool: dict[int, str], scores: Scores, ctx: ArmContext) -> list[Draft]:
    """One solved MIP draft per expanded set of the base ``pool`` (§3.2.2; the base set alone
    without structure alignment)."""
    sets = expanded_pools(index, pool, scores, ctx, ctx.drafts) if ctx.structure_alignment else [(0, pool)]
    drafts = []
    for d, (steps, objs) in enumerate(sets):
        solved = solve_draft(index, list(objs), scores, ctx)
        drafts.append(Draft(draft=d, steps=steps, pool=[index.objects[p].id for p in objs],
                            mip_ids=solved["ids"], ids=solved["ids"], links=solved["links"],
                            relevance=solved["relevance"], mip=solved["mip"]))
    return drafts


# --- the nodes ----------------------------------------------------------------------------------

def make_structure_node(art: ArmRuntime) -> Callable:
    async def structure(state: ArmState, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        index, scores = await question_scores(art, ctx, state)
        pool = {index.position(c["id"]): c["via"] for c in state.get("candidates") or []}
        if not pool and len(index.objects):
            # no keyword aligned and no question pool (dense_pool=0, the paper's base set): the
            # retrieve node's problem line says the base is the question's nearest objects; so it is
            nearest = np.argsort(-np.asarray(scores.dense), kind="stable")[: max(ctx.k, ctx.keyword_pool)]
            pool = {int(p): "dense (no keyword aligned)" for p in nearest}
        # embeds units and runs CBC: in a thread, off the event loop
        drafts = await asyncio.to_thread(solve_drafts, index, pool, scores, ctx)
        notes = []
        if ctx.structure_alignment and len(drafts) < ctx.drafts:
            notes.append(f"structure: {ctx.drafts - len(drafts)} expansion(s) added nothing new; {len(drafts)} draft(s)")
        for d in drafts:
            if d["mip"]["status"] != "optimal":
                notes.append(f"structure: draft {d['draft']}'s MIP stopped at the {ctx.mip_time_limit_s:g} s time limit "
                             f"(mip_time_limit_s); its {d['mip']['status']} solution is used, not a proven optimum")
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
