"""ATOMR's stages as LangGraph nodes: plan, schedule, select sources, run operator,
reason over children / siblings, direct RAG, finalize."""
