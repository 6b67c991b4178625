"""Dynamic knowledge-source selection (ATOMR §3.3.1, Figure 9).

As the authors run it, the model chooses only among three or more sources; with one or two,
every available source is used and no model call is made. If the call fails or names no
usable source, every available source is used and a note says so. The stage's parser turns
the reply into the chosen names (``prompts/atomr/source_selection.py``).
"""

from __future__ import annotations

from langchain_core.runnables import RunnableConfig

from atomgraph.nodes.atomr.algorithm import advance
from atomgraph.nodes.atomr.common import AtomRRuntime, current_run
from atomgraph.prompts.atomr.source_selection import choose_sources, describe_sources
from atomgraph.prompts.atomr.stages import SOURCE_SELECTION_STAGE
from atomgraph.state.atomr import StepInput

MIN_SOURCES_TO_CHOOSE = 3


def selection_calls(n_available: int) -> int:
    """Model calls source selection makes with ``n_available`` sources."""
    return 1 if n_available >= MIN_SOURCES_TO_CHOOSE else 0


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
                {"question": run.resolved_question, "n_sources": len(sources), "source_list": describe_sources(sources)},
                config,
            )
            calls.append(result.call)
            run.llm_calls += 1
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
