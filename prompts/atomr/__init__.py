"""ATOMR prompt templates and output parsers."""

from atomgraph.prompts.atomr.tree_parser import TreeParseError, parse_tree

__all__ = ["parse_tree", "TreeParseError"]
