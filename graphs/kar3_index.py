"""KAR³'s knowledge atomizing as a graph: a corpus (or an existing passages collection) into
an atom index.

    START → load → atomize → END

``load`` reads the chunks (whole paragraphs, as the authors atomize them; ``split_chunks``:
split as ``atomgraph index wikipedia`` splits them; content-hash ids either way; or every
passage of ``from_collection``) and keeps those not
yet atomized; ``atomize`` sends each to the atomizer (``atomizer_concurrency`` at once, at
``atomizer_temperature``), and keeps the lines that are atomic questions (rejects counted in ``stats``), and writes chunks
and atomic questions in batches. A killed run
loses at most the batches in flight; rerunning it atomizes only what is missing.

>>> graph.invoke({"inputs": ["corpus.json"], "collection": "musique"}, context={"atomizer_concurrency": 16})["stats"]
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START

from atomgraph.lc import MethodGraph
from atomgraph.models import ModelsArg
from atomgraph.nodes.kar3.index import make_atomize_node, make_load_node
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.settings import Settings
from atomgraph.state.kar3 import Kar3IndexInput, Kar3IndexOutput, Kar3IndexState


def build_kar3_index_graph(model: ModelsArg = None, settings: Settings | None = None, checkpointer: Any = None,
                           embeddings: Any = None, progress: bool = False):
    """Compile the atomizing graph (``model``: the atomizer, or a role map with ``atomizer``;
    ``embeddings``: an Embeddings object, default from settings; ``progress``: a progress bar)."""
    rt = MethodRuntime.for_method("kar3_index", model, [], settings)
    g = rt.state_graph(Kar3IndexState, Kar3IndexInput, Kar3IndexOutput)
    g.add_node("load", make_load_node(rt, embeddings))
    g.add_node("atomize", make_atomize_node(rt, embeddings, progress))
    g.add_edge(START, "load")
    g.add_edge("load", "atomize")
    g.add_edge("atomize", END)
    return MethodGraph(g.compile(checkpointer=checkpointer, name="kar3_index"))


graph = build_kar3_index_graph().graph
