"""Leaf-node reasoning (ATOMR §3.3.1): multi-source retrieval for one atomic operator, then
the operator's adaptive LLM executor.

- Search / Relate query each chosen source with the operator's arguments (a source may
  answer the operator natively, as the Wikidata source does).
- Filter retrieves per entity with "{entity} {condition}" and first drops the entities
  whose overlap coefficient with their passages is below t (``filter_threshold``).
- Any operator failure (model call failed, unreadable output, Unknown, nothing left to
  filter) hands the node to direct RAG over the knowledge already retrieved (Algorithm 1).
"""

from __future__ import annotations

import asyncio

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.atomr.common import AtomRRuntime, conclude, current_run, resolve
from atomgraph.nodes.atomr.filtering import overlap_coefficient, split_entities
from atomgraph.prompts.atomr.knowledge import format_knowledge
from atomgraph.prompts.atomr.stages import operator_stage
from atomgraph.state.atomr import NodeRun, StepInput
from atomgraph.state.tree import REF_RE, OperatorCall


def resolve_args(op: OperatorCall, runs: dict[int, NodeRun]) -> list[str]:
    """The operator's arguments with every ``[i]`` replaced by node i's answer."""
    return [resolve(arg, runs) for arg in op.args]


def filter_candidates(op: OperatorCall, runs: dict[int, NodeRun]) -> list[str]:
    first = op.args[0] if op.args else ""
    m = REF_RE.fullmatch(first.strip())
    if m and int(m.group(1)) in runs:
        return [a for a in runs[int(m.group(1))].answers if a.strip()]
    return split_entities(resolve(first, runs))


def make_run_operator_node(rt: AtomRRuntime):
    async def run_operator(inp: StepInput, config: RunnableConfig) -> dict:
        params = rt.params(config)
        run = current_run(inp)
        op = inp["tree"].nodes[run.id].operator
        assert op is not None, f"node {run.id} has no operator"
        retriever_calls = []
        variables = {"question": run.resolved_question}

        if op.name == "Filter":
            condition = resolve(op.args[1], inp["runs"]) if len(op.args) > 1 else run.resolved_question
            candidates = filter_candidates(op, inp["runs"])
            run.operator = OperatorCall(name="Filter", args=[", ".join(candidates), condition]).render()
            per_entity = await asyncio.gather(
                *(
                    rt.retrieve(run.sources, query=f"{e} {condition}", k=params.top_k, operator="Filter",
                                args=[e, condition], question=run.resolved_question)
                    for e in candidates
                )
            )
            kept: list[str] = []
            for entity, (evidence, calls, notes) in zip(candidates, per_entity):
                retriever_calls.extend(calls)
                run.notes.extend(notes)
                passage = " ".join(ev.render() for ev in evidence)
                score = overlap_coefficient(f"{entity} {condition}", passage)
                if score >= params.filter_threshold:
                    kept.append(entity)
                    run.evidence.extend(evidence)
                else:
                    run.filter_dropped.append(entity)
            variables["condition"] = condition
            if kept:
                variables["question"] = f"{run.resolved_question} (candidates: {', '.join(kept)})"
            else:
                # Keep everything retrieved for the direct-RAG fallback.
                for evidence, _, _ in per_entity:
                    run.evidence.extend(evidence)
                run.fallback = (
                    f"Filter: no candidate reached overlap t={params.filter_threshold}"
                    if candidates else "Filter: no candidate entities to filter"
                )
                run.step = "rag"
                return {"runs": {run.id: run}, "retriever_calls": retriever_calls}
        else:
            args = resolve_args(op, inp["runs"])
            run.operator = OperatorCall(name=op.name, args=args).render()
            evidence, calls, notes = await rt.retrieve(
                run.sources, query=" ".join(args), k=params.top_k, operator=op.name, args=args,
                question=run.resolved_question,
            )
            run.evidence, retriever_calls, run.notes = evidence, calls, run.notes + notes

        variables["knowledge"] = format_knowledge(run.evidence)
        result = await rt.ask(operator_stage(op.name), variables, config)
        conclude(run, result, failure=f"{op.name} failed", then="rag")
        return {"runs": {run.id: run}, "llm_calls": [result.call], "retriever_calls": retriever_calls}

    return run_operator
