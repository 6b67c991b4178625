"""Direct RAG reasoning: the fallback of every node kind (ATOMR Algorithm 1, lines 10 and
19–21). Uses the knowledge an operator already retrieved, else searches the selected
sources with the node's question. Always settles the node. A failed call or an unreadable
reply is no answer: the node's answer list stays empty, its answer reads "Unknown", and a
note gives the reason (never a line of the reply, which may be a passage of evidence)."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.atomr.common import AtomRRuntime, current_run, settle
from atomgraph.prompts.atomr.answer_format import ParsedAnswer
from atomgraph.prompts.atomr.knowledge import format_knowledge
from atomgraph.prompts.atomr.stages import DIRECT_RAG_STAGE
from atomgraph.state.atomr import StepInput


def make_direct_rag_node(rt: AtomRRuntime):
    async def direct_rag(inp: StepInput, config: RunnableConfig) -> dict:
        params = rt.params(config)
        run = current_run(inp)
        retriever_calls = []
        if not run.evidence and run.sources:
            run.evidence, retriever_calls, notes = await rt.retrieve(
                run.sources, query=run.resolved_question, k=params.top_k
            )
            run.notes.extend(notes)
        if run.fallback is None and run.kind != "open":
            run.fallback = "direct RAG"
        result = await rt.ask(
            DIRECT_RAG_STAGE, {"question": run.resolved_question, "knowledge": format_knowledge(run.evidence)}, config,
        )
        run.llm_calls += 1
        if result.ok:
            parsed = result.value
        else:
            run.notes.append(f"direct RAG gave no answer: {result.problem}")
            parsed = ParsedAnswer(paraphrase="Unknown", answers=[], unknown=True, raw=result.text or "")
        settle(run, parsed)
        if not run.answers:
            run.answer = "Unknown"
        return {"runs": {run.id: run}, "llm_calls": [result.call], "retriever_calls": retriever_calls}

    return direct_rag
