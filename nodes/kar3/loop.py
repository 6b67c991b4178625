"""KAR³'s loop, in one place: the runtime its nodes share, why it ends and where it goes after each node.

    propose → retrieve → select ─┐   (on while no exit is set)
       ▲                         │
       └─────────────────────────┘   any exit → answer

Every exit is decided by :func:`loop_exit` (after each node's round) or :func:`refuse_start`
(before the first round), with its text in :data:`EXIT_TEXT`; the nodes report what happened
(proposals, hits, a pick), and the edges (:func:`after_propose`, :func:`after_retrieve`,
:func:`after_select`) follow ``state["exit"]``.

Every node reaches the model and the atom index through :class:`Kar3Runtime`, built from the
method's declaration like every method's runtime (``Kar3Runtime.for_method("kar3", ...)``: the
kit's :class:`~atomgraph.nodes.runtime.MethodRuntime` plus the atom index a run reads). How
knowledge is shown to the model lives with the prompts (``prompts/kar3/``).
"""

from __future__ import annotations

from typing import Any, Iterable, Literal

from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.state.kar3 import AtomHit, ExitReason, Kar3Context, Kar3State, Round
from atomgraph.tools.atom_index import AtomIndex
from atomgraph.tools.base import KnowledgeSource, SourceSet


# --- the runtime: the kit's runtime plus the atom index a run reads ---------------------------
class Kar3Runtime(MethodRuntime[Kar3Context]):
    """The runtime of the ``kar3`` graph: build it with ``Kar3Runtime.for_method("kar3", model, sources,
    settings[, index=...])``."""

    def __init__(self, context_cls: type[Kar3Context], section: str, models: Any = None, sources: Any = None,
                 settings: Any = None, roles: tuple[str, ...] | None = None, *, index: AtomIndex | None = None):
        super().__init__(context_cls, section, models, [] if sources is None else sources, settings, roles)
        self._sources_given = sources
        self._index = index
        self._indexes: dict[str, AtomIndex] = {}

    def atom_index(self, params: Kar3Context) -> tuple[AtomIndex | None, str | None]:
        """The atom index this run reads, or None with the reason: ``params.collection`` when
        set, else an atom source among the sources the graph was given, else the collection the
        settings name."""
        if params.collection:
            return self._open(params.collection)
        if self._index is not None:
            return self._index, self._index.unavailable_reason()
        if self._sources_given is not None:
            given = self._sources_given
            items: Iterable[KnowledgeSource] = given.available.values() if isinstance(given, SourceSet) else given
            for s in items:
                idx = getattr(s, "index", None)
                if isinstance(idx, AtomIndex):
                    return idx, idx.unavailable_reason()
            return None, ("no atom source among the sources given to the graph; pass AtomSource(collection) "
                          "or set the run's 'collection'")
        s = self.settings()
        return self._open(s.kar3.collection or s.chroma_collection)

    def _open(self, name: str) -> tuple[AtomIndex, str | None]:
        if name not in self._indexes:
            s = self.settings()
            self._indexes[name] = AtomIndex(name, path=s.chroma_path, host=s.chroma_host, port=s.chroma_port, settings=s)
        idx = self._indexes[name]
        return idx, idx.unavailable_reason()


# --- the loop: its exits and edges ------------------------------------------------------------
EXIT_TEXT: dict[str, str] = {
    "max_chunks": "N chunks chosen",
    "enough": "the proposer gave an empty list of sub-questions",
    "proposer_unreadable": "the proposer's reply could not be read (the authors end the loop)",
    "nothing_retrieved": "nothing retrieved (proposals, then the backups)",
    "selector_none": "no readable pick, neither among the atomic questions nor among the same candidates as paragraphs",
    "no_index": "no atom index to retrieve from (no answer: KAR³ does not fall back to closed-book)",
    "invalid_question": "the question cannot be asked",
}

Step = Literal["propose", "retrieve", "select"]


def loop_exit(step: Step, r: Round, chosen: list[AtomHit], params: Kar3Context) -> ExitReason | None:
    """Why the loop ends after ``step`` of round ``r`` (None: it goes on). Sets ``r.ended``.

    - propose: the proposer gave an empty list of sub-questions (``enough``), or a reply that
      could not be read (``proposer_unreadable``: the authors' parser reads it as "do not
      decompose"; the switch ``proposer_question_fallback`` asks the question itself instead);
    - retrieve: nothing retrieved, the backups included (``nothing_retrieved``);
    - select: no readable pick (``selector_none``), or N chunks chosen (``max_chunks``).
    """
    reason: ExitReason | None = None
    if step == "propose" and r.enough:
        reason = "enough"
    elif step == "propose" and r.proposer_unreadable:
        reason = "proposer_unreadable"
    elif step == "retrieve" and not r.hits:
        reason = "nothing_retrieved"
    elif step == "select":
        if r.choice is None:
            reason = "selector_none"
        elif len(chosen) >= params.max_chunks:
            reason = "max_chunks"
    r.ended = reason
    return reason


def refuse_start(r: Round, reason: Literal["invalid_question", "no_index"], why: str) -> ExitReason:
    """The loop does not start: the question cannot be asked, or there is no atom index."""
    r.ended = reason
    r.notes.append(why)
    return reason


def after_propose(state: Kar3State) -> Literal["retrieve", "answer"]:
    return "answer" if state.get("exit") else "retrieve"


def after_retrieve(state: Kar3State) -> Literal["select", "answer"]:
    return "answer" if state.get("exit") else "select"


def after_select(state: Kar3State) -> Literal["propose", "answer"]:
    return "answer" if state.get("exit") else "propose"
