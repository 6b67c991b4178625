"""ATOMR prompt templates and output parsers."""
