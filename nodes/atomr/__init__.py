"""ATOMR's stages as LangGraph nodes, one module per stage of the paper: ``plan`` (§3.2 Atomic
Reasoning Planning), ``execution`` (§3.3 Atomic Reasoning Execution: Algorithm 1's table, the
scheduler, the fan-out, the result) and ``node_reasoning`` (§3.3.1 Leaf Node Reasoning: source
selection, the atomic operator; §3.3.2 Parent Node Reasoning: child / sibling answer reasoning,
direct RAG)."""
