"""ATOMR's stages as LangGraph nodes, one module per stage of the paper: ``plan`` (§3.2 Atomic
Reasoning Planning), ``execution`` (§3.3 Atomic Reasoning Execution: Algorithm 1's table, the
scheduler, the fan-out, the result), ``leaf_reasoning`` (§3.3.1: source selection, the atomic
operator) and ``parent_reasoning`` (§3.3.2: child / sibling answer reasoning, direct RAG)."""
