"""Typed states and data types shared by atomgraph's graphs."""

from atomgraph.state.run import Evidence, LLMCall, RetrieverCall, UsageSummary, render_evidence, summarize_usage

__all__ = ["Evidence", "render_evidence", "LLMCall", "RetrieverCall", "UsageSummary", "summarize_usage"]
