"""Direct RAG reasoning: the fallback of every node kind (ATOMR Algorithm 1, lines 10 and
19–21). Uses the knowledge an operator already retrieved, else searches the selected
sources with the node's question. Always settles the node: an unreadable answer is kept as
the model wrote it, a failed call as "Unknown", each with a note."""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from atomgraph.errors import ParseError
from atomgraph.nodes.atomr.common import current_run, settle
from atomgraph.nodes.atomr.runtime import AtomRRuntime
from atomgraph.prompts.atomr.answer_format import ParsedAnswer, parse_answer
from atomgraph.prompts.atomr.knowledge import format_knowledge
from atomgraph.prompts.atomr.reasoning import DIRECT_RAG_PROMPT
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
        text, record = await rt.ask(
            "answerer", "direct_rag", DIRECT_RAG_PROMPT,
            {"question": run.resolved_question, "knowledge": format_knowledge(run.evidence)}, config,
        )
        run.llm_calls += 1
        if text is None:
            run.notes.append(f"direct RAG call failed ({record.error})")
            parsed = ParsedAnswer(paraphrase="Unknown", answers=[], unknown=True, raw="")
        else:
            try:
                parsed = parse_answer(text)
            except ParseError as exc:
                last = next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")
                run.notes.append(f"direct RAG output unreadable ({exc}); kept its last line")
                parsed = ParsedAnswer(paraphrase=last, answers=[last] if last else [], unknown=not last, raw=text)
        settle(run, parsed)
        if not run.answers:
            run.answer = "Unknown"
        return {"runs": {run.id: run}, "llm_calls": [record], "retriever_calls": retriever_calls}

    return direct_rag
