"""KAR³ (PIKE-RAG's knowledge-aware task decomposition) as a LangGraph workflow.

    START → propose → retrieve → select ─┐
               ▲                         │ (loop: fewer than N chunks, and no exit)
               └─────────────────────────┘
    propose / retrieve / select ──(exit)──→ answer → END

``propose`` asks for as many diverse atomic sub-questions as the proposer can raise, given
the question and the chunks chosen so far (an empty list ends the loop); ``retrieve``
matches them against the atomic questions of the atom index (k = 4 each for several, 8 for
one; score ≥ δ on ``delta_metric``; chunks already chosen dropped; proposal order), with the
authors' backups when nothing is left (the question against atoms, then against chunks);
``select`` makes the selector pick one candidate (1..N, read from ``question_idx``; no
readable pick: the same candidates as paragraphs), whose chunk joins the context; ``answer``
answers from the chosen chunks. The loop ends when N chunks are chosen, the proposer gives an
empty list, nothing is retrieved, or no pick is readable; ``trace["rounds"]`` records every
round and ``trace["exit"]`` why it ended.

>>> graph = build_kar3_graph(model=my_model, sources=[AtomSource("musique")])
>>> graph.invoke({"question": "..."}, context={"max_chunks": 3})["answer"]

The atom index is built by the ``kar3_index`` graph (``atomgraph index atoms``). Run
parameters: :class:`~atomgraph.state.kar3.Kar3Context` (settings section ``[kar3]``).
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START

from atomgraph.lc import MethodGraph
from atomgraph.models import ModelsArg
from atomgraph.nodes.kar3.loop import (
    Kar3Runtime, after_propose, after_retrieve, after_select, make_answer_node, make_propose_node, make_retrieve_node,
    make_select_node,
)
from atomgraph.settings import Settings
from atomgraph.state.kar3 import Kar3State


def build_kar3_graph(model: ModelsArg = None, sources: Any = None, settings: Settings | None = None,
                     checkpointer: Any = None):
    """Compile the KAR³ QA graph.

    ``model``: one chat model, or a role map (``proposer``, ``selector``, ``answerer``).
    ``sources``: include an :class:`~atomgraph.tools.atom_source.AtomSource` (its index is
    used); None: the collection ``settings.kar3.collection`` (else ``chroma_collection``).
    A run's ``collection`` parameter overrides both.
    """
    rt = Kar3Runtime.for_method("kar3", model, sources, settings)
    g = rt.state_graph(Kar3State)
    g.add_node("propose", make_propose_node(rt))
    g.add_node("retrieve", make_retrieve_node(rt))
    g.add_node("select", make_select_node(rt))
    g.add_node("answer", make_answer_node(rt))
    g.add_edge(START, "propose")
    g.add_conditional_edges("propose", after_propose)
    g.add_conditional_edges("retrieve", after_retrieve)
    g.add_conditional_edges("select", after_select)
    g.add_edge("answer", END)
    return MethodGraph(g.compile(checkpointer=checkpointer, name="kar3"))


# The graph `langgraph dev` and Studio load (models and the atom index from settings, resolved
# when a run starts).
graph = build_kar3_graph().graph
