"""Dynamic knowledge-source selection (ATOMR §3.3.1, Figure 9).

With one usable source there is nothing to choose and no model call is made. If the model
call fails or names no usable source, every available source is used and a note says so.
"""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.atomr.common import AtomRRuntime, current_run
from atomgraph.prompts.atomr.source_selection import describe_sources, match_sources
from atomgraph.prompts.atomr.stages import SOURCE_SELECTION_STAGE
from atomgraph.state.atomr import StepInput


def make_select_sources_node(rt: AtomRRuntime):
    async def select_sources(inp: StepInput, config: RunnableConfig) -> dict:
        run = current_run(inp)
        available = list(rt.sources().available)
        calls = []
        if len(available) <= 1:
            run.sources = available
        else:
            sources = list(rt.sources().available.values())
            result = await rt.ask(
                SOURCE_SELECTION_STAGE,
                {"question": run.resolved_question, "n_sources": len(sources), "source_list": describe_sources(sources)},
                config,
            )
            calls.append(result.call)
            run.llm_calls += 1
            if not result.ok:
                run.sources = available
                run.notes.append(f"source selection failed ({result.problem}); using all sources")
            else:
                run.sources = match_sources(result.value, available)
                if not run.sources:
                    run.sources = available
                    run.notes.append("source selection named no available source; using all sources")
        run.step = "operate" if run.kind == "operator" and not run.fallback else "rag"
        return {"runs": {run.id: run}, "llm_calls": calls}

    return select_sources
