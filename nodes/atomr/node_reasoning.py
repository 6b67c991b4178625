"""Node reasoning (ATOMR §3.3.1 Leaf Node Reasoning and §3.3.2 Parent Node Reasoning): the steps
Algorithm 1's table (:mod:`~atomgraph.nodes.atomr.execution`) sends a tree node to, one LangGraph
node each. What a node does after each step is that table.

**§3.3.1 Leaf Node Reasoning**: the three steps of an atomic operator node — (1) dynamic
knowledge-source selection, (2) multi-source retrieval, (3) atomic operator reasoning — with
Filter's pre-selection of its candidates (§3.1).

- *Source selection* (Figure 9). As the authors run it, the model chooses only among three or
  more sources; with one or two, every available source is used and no model call is made. If
  the call fails or names no usable source, every available source is used and a note says so.
  The stage's parser turns the reply into the chosen names (``prompts/atomr/source_selection.py``).
- *Atomic operator execution* (Algorithm 1 lines 5–10) and *Filter's pre-selection*: see their
  sections below.

**§3.3.2 Parent Node Reasoning**: child-answer reasoning for decomposed nodes, sibling-answer
reasoning for [DR] nodes, and direct RAG reasoning, the fallback (Algorithm 1, lines 10 and
19–21), with the closed-book answer when the root ends empty. What happens next (direct RAG
after an Unknown child-reasoning answer; nothing after a [DR] one) is Algorithm 1's table.
The reasoning prompt carries, as the authors build it, each related question with its answer
list; a question that references others also carries its paraphrase and the referenced
questions' answers, so "Where was [1] born? A: [\"Uppsala\"]" is never ambiguous.
"""

from __future__ import annotations

import asyncio
import json
import time

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.atomr.execution import (AtomRRuntime, advance, budget_note, collect, current_run, first_answers,
                                             first_problem, node_outcome, plan_operator, plan_question, read_into,
                                             refs_in, selection_calls)
from atomgraph.nodes.call import StageResult
from atomgraph.nodes.sync import at_once
from atomgraph.prompts.atomr.kg_program import PROGRAM_CONSTRAINT, program_problem
from atomgraph.prompts.atomr.source_selection import choose_sources, describe_sources
from atomgraph.prompts.atomr.stages import (CHILD_REASONING_STAGE, CLOSED_BOOK_STAGE, DIRECT_RAG_STAGE,
                                            KG_PROGRAM_STAGE, SIBLING_REASONING_STAGE, SOURCE_SELECTION_STAGE,
                                            format_knowledge, format_qa_pairs, operator_stage)
from atomgraph.prompts.stage import Stage
from atomgraph.state.atomr import NodeRun, OperatorCall, ReasoningTree, StepInput, SubCall, substitute_refs
from atomgraph.state.run import Evidence, RetrieverCall
from atomgraph.tools.wikidata_source import ProgramError
from atomgraph.tools.base import screen_evidence


# ================================================================================================
# §3.3.1 Leaf Node Reasoning
# ================================================================================================

# --- (1) source selection -----------------------------------------------------------------------


def make_select_sources_node(rt: AtomRRuntime):
    async def select_sources(inp: StepInput, config: RunnableConfig) -> dict:
        params = rt.params(config)
        run = current_run(inp)
        available = list(rt.sources().available)
        calls = []
        if not selection_calls(len(available)) or inp.get("budget", 1) < 1:
            run.sources = available
        else:
            sources = list(rt.sources().available.values())
            result = await rt.ask(
                SOURCE_SELECTION_STAGE,
                {"question": substitute_refs(run.question, first_answers(inp["runs"])), "n_sources": len(sources),
                 "source_list": describe_sources(sources)},
                config,
            )
            calls.extend(result.calls)
            run.llm_calls += len(result.calls)
            if not result.ok:
                run.sources = available
                run.notes.append(f"source selection failed ({result.problem}); using all sources")
            else:
                run.sources = choose_sources(result.value, available)
                if not run.sources:
                    run.sources = available
                    run.notes.append("source selection named no available source; using all sources")
        outcome = "leaf" if run.kind == "operator" and run.fallback is None else "fallback"
        advance(run, "select", outcome, params, is_root=run.id == inp["tree"].root)
        return {"runs": {run.id: run}, "llm_calls": calls}

    return select_sources


# --- (2, 3) atomic operator execution (ATOMR §3.1, Algorithm 1 lines 5–10) ---------------------
#
# The node's operator call runs once per answer of the node it references (the fan-out of
# :mod:`~atomgraph.nodes.atomr.execution`): each sub-call retrieves from the selected sources
# with its own arguments, e.g. ``Relate("Neil Armstrong", "place of birth")``, and asks the
# executor stage for that sub-question; the answers are concatenated in order.
#
# - Search appends its descriptor to the executor's question, "Who is X? (descriptor)".
# - Filter writes the candidates as one list and pre-selects them per text/web source
#   (the last section of this module); the knowledge graph gets the whole call, its
#   candidates as a list of whole answers (never a comma-joined text to split again).
# - A sub-call whose sources all return nothing, whose model call fails or whose reply cannot
#   be read is an operator execution failure: the node goes to direct RAG
#   (:mod:`~atomgraph.nodes.atomr.execution`), which redoes the failed sub-calls with a fresh
#   retrieval. An Unknown answer is not a failure: it stays empty.

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


async def answer_program(source, program) -> list[Evidence]:
    """``source``'s answers to a query program: its own ``aanswer_program`` where it has one (a graph
    in memory answers in place), else its ``answer_program`` in a worker thread (it may do I/O)."""
    own = getattr(source, "aanswer_program", None)
    if own is not None:
        return await own(program)
    return await asyncio.to_thread(source.answer_program, program)


def make_run_operator_node(rt: AtomRRuntime):
    def program_sources(names: list[str], op_name: str, params) -> list[str]:
        """The sources that answer a model-written query program for this call: a knowledge
        graph that runs typed programs, for Relate (``kg_program_by_model``, on by default)."""
        if not params.kg_program_by_model or op_name != "Relate":
            return []
        available = rt.sources()
        return [n for n in names if hasattr(available.get(n), "answer_program")]

    async def filter_evidence(sources: list[str], args: list[str], candidates: list[str], question: str, k: int,
                              t: float):
        """Evidence for one Filter call, gated per text/web source; (evidence, calls, notes, dropped).
        ``candidates`` are whole answers (:func:`~atomgraph.nodes.atomr.execution.filter_candidates`)."""
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
            per_entity = await at_once(*(
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
                    hits = await answer_program(rt.sources().get(name), program)
                    hits, suspect, dropped = screen_evidence(hits, drop=rt.drop_suspect())
                    return hits, [RetrieverCall(source=name, query=label, hits=len(hits),
                                                latency_s=time.perf_counter() - t0, suspect=suspect,
                                                dropped=dropped)], [], f"{name}: model"
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
        for ev, c, n, m in await at_once(*(on(name) for name in names)):
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
            available = rt.sources()
            kinds = {n: "atoms" if hasattr(available.get(n), "atom_index") or
                     type(available.get(n)).__name__ == "AtomSource"
                     else getattr(available.get(n), "kind", "text") for n in plain}
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
        stage = operator_stage(op_name)
        result: StageResult = await rt.ask(stage, variables, config)
        return read_into(sub, result, params.keep_raw_reply, stage, variables), evidence, rcalls, llm_calls + result.calls

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
        results = await at_once(*(one(run, op.name, q, a, params, config, planned.candidates) for q, a in calls))
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


# --- Filter's pre-selection as the authors run it (ATOMR §3.1; ``knowledge_sources.py``) -------
#
# For each text or web source separately: retrieve the top passage for "{entity} {condition}"
# per candidate entity; keep the entities whose overlap coefficient with that passage (title
# included) reaches t (``filter_threshold``, 0.5); when the best entity scores at least 0.85,
# keep only the entities scoring at least 0.85. The knowledge graph is never gated: it gets
# the whole Filter call. The overlap coefficient is |q ∩ p| / min(|q|, |p|) over the
# lower-cased whitespace-separated words of each side (stop-words included, as the authors
# count them).

HIGH_CONFIDENCE = 0.85


def word_set(text: str) -> set[str]:
    return set((text or "").lower().split())


def overlap_coefficient(query: str, passage: str) -> float:
    q, p = word_set(query), word_set(passage)
    if not q or not p:
        return 0.0
    return len(q & p) / min(len(q), len(p))


def gate(scores: dict[str, float], threshold: float) -> list[str]:
    """The entities kept from ``{entity: overlap}``: those ≥ ``threshold``; only those
    ≥ 0.85 when the best reaches 0.85. Best first."""
    kept = sorted(((e, s) for e, s in scores.items() if s >= threshold), key=lambda es: -es[1])
    if kept and kept[0][1] >= HIGH_CONFIDENCE:
        kept = [(e, s) for e, s in kept if s >= HIGH_CONFIDENCE]
    return [e for e, _ in kept]


# ================================================================================================
# §3.3.2 Parent Node Reasoning
# ================================================================================================

# --- child and sibling answer reasoning ---------------------------------------------------------


def sibling_refs(inp: StepInput) -> list[int]:
    """The siblings a [DR] node reasons over: those it references, else its earlier siblings."""
    tree, i = inp["tree"], inp["node_id"]
    node = tree.nodes[i]
    if node.refs:
        return node.refs
    if node.parent is None:
        return []
    return [s for s in tree.nodes[node.parent].children if s < i]


def qa_pairs(related: list[int], tree: ReasoningTree, runs: dict[int, NodeRun]) -> list[tuple]:
    """(id, question, answers, paraphrase) for the related nodes and the nodes they reference."""
    pairs: dict[int, tuple] = {}
    for j in related:
        q = tree.nodes[j].question
        refs = refs_in(q, runs)
        pairs[j] = (j, q, runs[j].answers, runs[j].paraphrase if refs else "")
        for r in refs:
            if r in runs and r not in pairs and r not in related:
                pairs[r] = (r, tree.nodes[r].question, runs[r].answers, "")
    return list(pairs.values())


def _make(rt: AtomRRuntime, stage: Stage, step: str, related):
    async def reason(inp: StepInput, config: RunnableConfig) -> dict:
        params = rt.params(config)
        run = current_run(inp)
        runs, tree = inp["runs"], inp["tree"]
        pairs = format_qa_pairs(qa_pairs(related(inp), tree, runs))
        # a node is asked its own question, its [i] references as written (the pairs above give their
        # answers), as the authors pass it to child and sibling reasoning alike (THU-KEG/AtomR
        # src/main.py:654); the trace keeps the resolved form
        question = run.question
        variables = {"question": question, "qa_pairs": pairs, "pack": params.prompt_pack}
        result = await rt.ask(stage, variables, config)
        run.llm_calls += len(result.calls)
        sub = read_into(SubCall(question=question), result, params.keep_raw_reply, stage, variables)
        run.subcalls = [sub]
        collect(run)
        advance(run, step, sub.outcome, params, is_root=run.id == tree.root, problem=sub.problem)
        if run.step == "select":  # its answer is direct RAG's now
            run.subcalls, run.answers, run.answer, run.paraphrase = [], [], "", ""
        return {"runs": {run.id: run}, "llm_calls": result.calls}

    reason.__name__ = stage.name
    return reason


def make_reason_children_node(rt: AtomRRuntime):
    return _make(rt, CHILD_REASONING_STAGE, "children", lambda inp: inp["tree"].nodes[inp["node_id"]].children)


def make_reason_siblings_node(rt: AtomRRuntime):
    return _make(rt, SIBLING_REASONING_STAGE, "siblings", sibling_refs)


# --- direct RAG reasoning -----------------------------------------------------------------------
# Direct RAG reasoning, ATOMR's fallback (Algorithm 1, lines 10 and 19–21), and the
# closed-book answer when the root ends empty (the authors' ``direct_Answer``).
#
# Direct RAG always retrieves afresh, once per rewritten question: for an operator leaf,
# each failed sub-call's question (its arguments already resolved to one referenced
# answer); for any other node, the node's question fanned out over its references
# (:func:`~atomgraph.nodes.atomr.execution.plan_question`). A failed call or an unreadable reply
# is no answer: the node's answer stays empty and a note gives the reason.

def make_direct_rag_node(rt: AtomRRuntime):
    async def one(run, question: str, params, config):
        sub = SubCall(question=question, query=question)
        evidence, rcalls, notes = await rt.retrieve(run.sources, query=question, k=params.top_k) \
            if run.sources else ([], [], [])
        run.notes += notes
        sub.evidence = len(evidence)
        variables = {"question": question, "knowledge": format_knowledge(evidence), "pack": params.prompt_pack}
        result = await rt.ask(DIRECT_RAG_STAGE, variables, config)
        return read_into(sub, result, params.keep_raw_reply, DIRECT_RAG_STAGE, variables), evidence, rcalls, result.calls

    async def direct_rag(inp: StepInput, config: RunnableConfig) -> dict:
        params = rt.params(config)
        run = current_run(inp)
        tree = inp["tree"]
        skipped = None
        if run.kind == "operator" and run.subcalls:  # redo the operator's failed sub-calls
            keep = [s for s in run.subcalls if s.outcome == "answered"]
            questions = [s.question for s in run.subcalls if s.outcome != "answered"]
        else:
            planned = plan_question(run.question, inp["runs"], params.fanout_cap)
            keep, questions, skipped = [], [q for q, _ in planned.calls], planned.skipped
            if planned.capped:
                run.notes.append(f"fanout_cap={params.fanout_cap}: {planned.capped} sub-calls not run")
        if run.fallback is None and run.kind != "open":
            run.fallback = "direct RAG"
        questions = questions[: budget_note(run, len(questions), inp.get("budget", len(questions)))]
        results = await at_once(*(one(run, q, params, config) for q in questions))
        llm_calls, retriever_calls, redone = [], [], []
        for sub, evidence, rcalls, made in results:
            redone.append(sub)
            run.evidence += evidence
            retriever_calls += rcalls
            llm_calls += made
        run.llm_calls += len(llm_calls)
        run.subcalls = keep + redone
        if skipped:
            run.notes.append(skipped)
        for sub in redone:
            if sub.outcome == "failed":
                run.notes.append(f"direct RAG gave no answer: {sub.problem}")
        collect(run)
        outcome = node_outcome(run.subcalls, skipped if not run.subcalls else None)
        advance(run, "rag", outcome, params, is_root=run.id == tree.root, problem=first_problem(redone))
        return {"runs": {run.id: run}, "llm_calls": llm_calls, "retriever_calls": retriever_calls}

    return direct_rag


def make_closed_book_node(rt: AtomRRuntime):
    async def closed_book(inp: StepInput, config: RunnableConfig) -> dict:
        params = rt.params(config)
        run = current_run(inp)
        variables = {"question": inp["question"], "pack": params.prompt_pack}
        result = await rt.ask(CLOSED_BOOK_STAGE, variables, config)
        sub = read_into(SubCall(question=inp["question"]), result, params.keep_raw_reply, CLOSED_BOOK_STAGE, variables)
        run.llm_calls += len(result.calls)
        if sub.outcome == "failed":
            run.notes.append(f"closed-book answer failed: {sub.problem}")
        run.notes.append("answered closed-book (the tree found no answer)")
        run.subcalls.append(sub)
        collect(run)
        run.fallback = (run.fallback + "; " if run.fallback else "") + "closed-book answer"
        advance(run, "closed_book", sub.outcome, params, is_root=True)
        return {"runs": {run.id: run}, "llm_calls": result.calls}

    return closed_book
