"""ATOMR prompt templates and output parsers."""

from atomgraph.prompts.atomr.tree_parser import TreeParseError, parse_tree

__all__ = ["parse_tree", "TreeParseError"]

# Prompt templates and answer readers (ATOMR §3, Appendix H), in our own words.
from atomgraph.prompts.atomr.operators import FILTER_PROMPT, RELATE_PROMPT, SEARCH_PROMPT
from atomgraph.prompts.atomr.plan import PLAN_EXAMPLES, PLAN_PROMPT
from atomgraph.prompts.atomr.reasoning import CHILD_REASONING_PROMPT, DIRECT_RAG_PROMPT, SIBLING_REASONING_PROMPT
from atomgraph.prompts.atomr.source_selection import (
    SOURCE_SELECTION_PROMPT,
    describe_sources,
    match_sources,
    source_label,
)
from atomgraph.prompts.atomr.stages import (
    STAGES,
    ParsedAnswer,
    answer_text,
    format_knowledge,
    format_qa_pairs,
    knowledge_heading,
    operator_stage,
    parse_answer,
)

__all__ += [
    "ParsedAnswer",
    "parse_answer",
    "answer_text",
    "format_knowledge",
    "knowledge_heading",
    "source_label",
    "PLAN_PROMPT",
    "PLAN_EXAMPLES",
    "SEARCH_PROMPT",
    "RELATE_PROMPT",
    "FILTER_PROMPT",
    "operator_stage",
    "STAGES",
    "CHILD_REASONING_PROMPT",
    "SIBLING_REASONING_PROMPT",
    "DIRECT_RAG_PROMPT",
    "format_qa_pairs",
    "SOURCE_SELECTION_PROMPT",
    "describe_sources",
    "match_sources",
]
