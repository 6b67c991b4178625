"""Atomic operator execution (ATOMR §3.1, Algorithm 1 lines 5–10).

The node's operator call runs once per answer of the node it references (the fan-out of
:mod:`~atomgraph.nodes.atomr.fanout`): each sub-call retrieves from the selected sources
with its own arguments, e.g. ``Relate("Neil Armstrong", "place of birth")``, and asks the
executor stage for that sub-question; the answers are concatenated in order.

- Search appends its descriptor to the executor's question, "Who is X? (descriptor)".
- Filter writes the candidates as one list and pre-selects them per text/web source
  (:mod:`~atomgraph.nodes.atomr.filtering`); the knowledge graph gets the whole call, its
  candidates as a list of whole answers (never a comma-joined text to split again).
- A sub-call whose sources all return nothing, whose model call fails or whose reply cannot
  be read is an operator execution failure: the node goes to direct RAG
  (:mod:`~atomgraph.nodes.atomr.algorithm`), which redoes the failed sub-calls with a fresh
  retrieval. An Unknown answer is not a failure: it stays empty.
"""

from __future__ import annotations

import asyncio
import json
import time

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.atomr.algorithm import advance
from atomgraph.nodes.atomr.common import (
    AtomRRuntime, budget_note, collect, current_run, first_problem, node_outcome, read_into,
)
from atomgraph.nodes.atomr.fanout import plan_operator
from atomgraph.nodes.atomr.filtering import gate, overlap_coefficient
from atomgraph.nodes.call import StageResult
from atomgraph.prompts.atomr.kg_program import PROGRAM_CONSTRAINT, program_problem
from atomgraph.prompts.atomr.knowledge import format_knowledge
from atomgraph.prompts.atomr.stages import KG_PROGRAM_STAGE, operator_stage
from atomgraph.state.atomr import StepInput, SubCall
from atomgraph.state.run import Evidence, RetrieverCall
from atomgraph.state.tree import OperatorCall
from atomgraph.tools.wikidata_source import ProgramError

NO_EVIDENCE = "no evidence from any selected source"


def executor_question(name: str, question: str, args: list[str]) -> str:
    """The question the executor is asked: Search's descriptor and Filter's condition are
    appended when the question does not already say them (the authors' ``main.py``)."""
    extra = args[1].strip() if len(args) > 1 else ""
    if not extra or extra.lower() in question.lower():
        return question
    if name == "Search":
        return f"{question} ({extra})"
    if name == "Filter":
        return f"{question} (Filter condition: {extra})"
    return question


def top1_share(scores: list[float], temperature: float) -> float:
    """The top hit's share of the k hits: softmax(score / temperature)[0], as the authors' ColBERTv2
    server turns scores into probabilities over the hits returned."""
    import math

    if not scores:
        return 0.0
    top = max(scores)
    weights = [math.exp((s - top) / temperature) for s in scores]
    return weights[0] / sum(weights)


def top1_shortcut(evidence: list[Evidence], op_name: str, params, kinds: dict[str, str]) -> tuple[list[Evidence], list[str]]:
    """The authors' top-1 shortcut (``knowledge_sources.py``): for Search and Relate on a text
    source, a top hit whose share exceeds the operator's threshold is taken alone. (evidence, notes)."""
    if not params.top1_shortcut or op_name not in ("Search", "Relate"):
        return evidence, []
    threshold = params.top1_search_threshold if op_name == "Search" else params.top1_relate_threshold
    out, notes = [], []
    for name in dict.fromkeys(e.source for e in evidence):
        hits = [e for e in evidence if e.source == name]
        scores = [e.score for e in hits]
        if kinds.get(name, "text") == "text" and len(hits) > 1 and all(isinstance(x, (int, float)) for x in scores):
            share = top1_share(scores, params.top1_temperature)
            if share > threshold:
                notes.append(f"top-1 shortcut on {name}: the top hit's share {share:.2f} > {threshold} "
                             f"({op_name}), taken alone")
                hits = hits[:1]
        out += hits
    return out, notes


def make_run_operator_node(rt: AtomRRuntime):
    def program_sources(names: list[str], op_name: str, params) -> list[str]:
        """The sources that answer a model-written query program for this call: a knowledge
        graph that runs typed programs, for Relate (``kg_program_by_model``, on by default)."""
        if not params.kg_program_by_model or op_name != "Relate":
            return []
        return [n for n in names if hasattr(rt.sources().get(n), "answer_program")]

    async def filter_evidence(sources: list[str], args: list[str], candidates: list[str], question: str, k: int,
                              t: float):
        """Evidence for one Filter call, gated per text/web source; (evidence, calls, notes, dropped).
        ``candidates`` are whole answers (:func:`~atomgraph.nodes.atomr.fanout.filter_candidates`)."""
        condition = args[1] if len(args) > 1 else question
        evidence: list[Evidence] = []
        calls, notes, dropped = [], [], []
        for name in sources:
            source = rt.sources().get(name)
            if source is None or getattr(source, "kind", "text") == "kg":  # the KG is not gated
                # the KG gets the candidates as a list, each taken whole (never the comma-joined text)
                listed = [json.dumps(candidates, ensure_ascii=False), *args[1:]] if candidates else list(args)
                ev, c, n = await rt.retrieve([name], query=f"{listed[0]} {condition}", k=k, operator="Filter",
                                             args=listed, question=question)
                evidence += ev; calls += c; notes += n  # noqa: E702
                continue
            per_entity = await asyncio.gather(*(
                rt.retrieve([name], query=f"{e} {condition}", k=1, operator="Filter", args=[e, condition],
                            question=question)
                for e in candidates
            ))
            scores, top = {}, {}
            for entity, (ev, c, n) in zip(candidates, per_entity):
                calls += c; notes += n  # noqa: E702
                if ev:
                    top[entity] = ev[0]
                    scores[entity] = overlap_coefficient(f"{entity} {condition}", f"{ev[0].title} {ev[0].text}")
            kept = gate(scores, t)
            evidence += [top[e] for e in kept]
            dropped += [f"{name}: {e}" for e in candidates if e not in kept]
        return evidence, calls, notes, dropped

    async def program_evidence(names: list[str], op_name: str, question: str, args: list[str], params, config):
        """The knowledge graph's short answer list for one sub-call: the executor fills a typed
        query program (JSON-schema constrained), each KG source compiles and runs it. Where the
        model's program is unusable (the call failed, the reply is unreadable, it follows no
        relation, its entity is not the sub-question's, or the graph has no item or property it
        names) the source runs the program read off the operator's arguments instead, and the
        reason is recorded. (evidence, retriever calls, notes, the program call, how each
        source's program was made)."""
        result = await rt.ask(KG_PROGRAM_STAGE, {"question": question,
                                                 "operator": OperatorCall(name=op_name, args=args).render()},
                              config, constraint=PROGRAM_CONSTRAINT)
        program = result.value if result.ok else None
        problem = (f"no usable reply: {result.problem}" if program is None
                   else program_problem(program, question, args))

        async def on(name: str) -> tuple[list[Evidence], list[RetrieverCall], list[str], str]:
            why = problem
            if why is None:
                t0 = time.perf_counter()
                label = f"program {program.model_dump_json()}"
                try:
                    hits = await asyncio.to_thread(rt.sources().get(name).answer_program, program)
                    return hits, [RetrieverCall(source=name, query=label, hits=len(hits),
                                                latency_s=time.perf_counter() - t0)], [], f"{name}: model"
                except ProgramError as exc:
                    why = f"it cannot be compiled: {exc}"
                except Exception as exc:  # a source error is a record, as in rt.retrieve
                    error = f"{type(exc).__name__}: {exc}"[:500]
                    return [], [RetrieverCall(source=name, query=label, latency_s=time.perf_counter() - t0,
                                              error=error)], [f"retrieval failed — {name}: {error}"], f"{name}: model"
            # the rule-built program: the source reads it off the operator's arguments
            ev, c, n = await rt.retrieve([name], query=" ".join(a for a in args if a), k=params.top_k,
                                         operator=op_name, args=args, question=question)
            n.append(f"{name}: the model's query program is unusable ({why}); ran the program read off "
                     "the operator's arguments")
            return ev, c, n, f"{name}: rules ({why})"

        evidence, calls, notes, made = [], [], [], []
        for ev, c, n, m in await asyncio.gather(*(on(name) for name in names)):
            evidence, calls, notes, made = evidence + ev, calls + c, notes + n, made + [m]
        return evidence, calls, notes, result.call, made

    async def one(run, op_name: str, question: str, args: list[str], params, config, candidates=()):
        """One sub-call: retrieve, then ask the executor. (sub-call, evidence, retriever calls, LLM calls)."""
        sub = SubCall(question=question, args=args, query=" ".join(a for a in args if a))
        llm_calls = []
        if op_name == "Filter":
            sub.candidates = list(candidates)
            evidence, rcalls, notes, dropped = await filter_evidence(
                run.sources, args, list(candidates), question, params.top_k, params.filter_threshold)
            run.filter_dropped += dropped
        else:
            programmed = program_sources(run.sources, op_name, params)
            plain = [n for n in run.sources if n not in programmed]

            async def nothing():
                return [], [], []

            retrieval = rt.retrieve(plain, query=sub.query, k=params.top_k, operator=op_name, args=args,
                                    question=question) if plain else nothing()
            if programmed:  # the text/web retrieval and the KG's program call run at once
                (evidence, rcalls, notes), (more, calls, more_notes, call, made) = await asyncio.gather(
                    retrieval, program_evidence(programmed, op_name, question, args, params, config))
                evidence, rcalls, notes = evidence + more, rcalls + calls, notes + more_notes
                llm_calls.append(call)
                sub.kg_program = "; ".join(made)
            else:
                evidence, rcalls, notes = await retrieval
            # the shortcut is for passage retrieval (the authors' Text source); an atom source
            # (KAR³'s atomic questions, tools/atom_source.py) scores questions, not passages
            kinds = {n: "atoms" if hasattr(rt.sources().get(n), "atom_index") or
                     type(rt.sources().get(n)).__name__ == "AtomSource"
                     else getattr(rt.sources().get(n), "kind", "text") for n in plain}
            evidence, shortcut = top1_shortcut(evidence, op_name, params, kinds)
            notes = notes + shortcut
        run.notes += notes
        sub.evidence = len(evidence)
        if not evidence:
            sub.outcome, sub.problem = "failed", NO_EVIDENCE
            return sub, evidence, rcalls, llm_calls
        variables = {"question": executor_question(op_name, question, args),
                     "knowledge": format_knowledge(evidence), "pack": params.prompt_pack}
        if op_name == "Filter":
            variables["condition"] = args[1] if len(args) > 1 else question
        result: StageResult = await rt.ask(operator_stage(op_name), variables, config)
        return read_into(sub, result, params.keep_raw_reply), evidence, rcalls, llm_calls + [result.call]

    async def run_operator(inp: StepInput, config: RunnableConfig) -> dict:
        params = rt.params(config)
        run = current_run(inp)
        tree = inp["tree"]
        op: OperatorCall = tree.nodes[run.id].operator
        assert op is not None, f"node {run.id} has no operator"
        planned = plan_operator(run.question, op, inp["runs"], params.fanout_cap)
        if planned.capped:
            run.notes.append(f"fanout_cap={params.fanout_cap}: {planned.capped} sub-calls not run")
        per_call = 1 + bool(program_sources(run.sources, op.name, params))
        budget = inp.get("budget", len(planned.calls) * per_call) // per_call
        calls = planned.calls[: budget_note(run, len(planned.calls), budget)]
        run.operator = "; ".join(OperatorCall(name=op.name, args=a).render() for _, a in calls) or op.render()
        results = await asyncio.gather(*(one(run, op.name, q, a, params, config, planned.candidates)
                                         for q, a in calls))
        llm_calls, retriever_calls = [], []
        run.subcalls = []
        for sub, evidence, rcalls, calls_made in results:
            run.subcalls.append(sub)
            run.evidence += evidence
            retriever_calls += rcalls
            llm_calls += calls_made
        run.llm_calls += len(llm_calls)
        if planned.skipped:
            run.notes.append(planned.skipped)
        collect(run)
        outcome = node_outcome(run.subcalls, planned.skipped)
        advance(run, "operate", outcome, params, is_root=run.id == tree.root, problem=first_problem(run.subcalls))
        return {"runs": {run.id: run}, "llm_calls": llm_calls, "retriever_calls": retriever_calls}

    return run_operator
