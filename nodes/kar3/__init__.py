"""KAR³'s nodes: indexing (load, atomize) and the QA loop (propose, retrieve, select, answer)."""
