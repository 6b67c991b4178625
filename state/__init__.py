"""Typed states and data types shared by atomgraph's graphs."""

from atomgraph.state.evidence import Evidence, render_evidence
from atomgraph.state.usage import LLMCall, RetrieverCall, UsageSummary, summarize_usage

__all__ = ["Evidence", "render_evidence", "LLMCall", "RetrieverCall", "UsageSummary", "summarize_usage"]
