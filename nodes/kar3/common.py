"""What KAR³'s nodes share: the runtimes and the atom index a run reads.

Both are built from their method's declaration like every method's runtime:
``Kar3Runtime.for_method("kar3", ...)`` is the kit's :class:`~atomgraph.nodes.runtime.MethodRuntime`
plus the atom index (QA; context and settings section from the ``kar3`` declaration);
``MethodRuntime.for_method("kar3_index", ...)`` (typed :data:`Kar3IndexRuntime`) runs the
atomizer (at its own temperature, 0.7 in the paper, through ``rt.ask(..., temperature=...)``;
every QA step runs at the settings' temperature). How
knowledge is shown to the model lives with the prompts (``prompts/kar3/``).
"""

from __future__ import annotations

from typing import Any, Iterable

from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.state.kar3 import Kar3Context, Kar3IndexContext
from atomgraph.tools.atom_index import AtomIndex
from atomgraph.tools.base import KnowledgeSource, SourceSet


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


# The atomizer's runtime (the ``kar3_index`` graph): ``MethodRuntime.for_method("kar3_index", model, [], settings)``.
Kar3IndexRuntime = MethodRuntime[Kar3IndexContext]
