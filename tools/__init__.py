"""Knowledge sources (Chroma/Wikipedia, Google via SerpAPI, Wikidata via SPARQL) and indexes."""

from atomgraph.tools.base import KnowledgeSource, SourceRetriever, SourceSet
from atomgraph.tools.registry import build_sources, register_source, registered_sources

__all__ = ["KnowledgeSource", "SourceRetriever", "SourceSet", "build_sources", "register_source", "registered_sources"]
