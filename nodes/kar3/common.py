"""What KAR³'s nodes share: the runtimes and the atom index a run reads.

:class:`Kar3Runtime` is the kit's :class:`~atomgraph.nodes.runtime.MethodRuntime` plus the
atom index (QA; settings ``[kar3]``); :class:`Kar3IndexRuntime` runs the atomizer
(indexing; settings ``[kar3_index]``; at its own temperature, 0.7 in the paper, through
``rt.ask(..., temperature=...)``; every QA step runs at the settings' temperature). How
knowledge is shown to the model lives with the prompts (``prompts/kar3/``).
"""

from __future__ import annotations

from typing import Any, Iterable

from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.state.kar3 import Kar3Context, Kar3IndexContext
from atomgraph.tools.atom_index import AtomIndex
from atomgraph.tools.base import KnowledgeSource
from atomgraph.tools.registry import SourceSet


class Kar3Runtime(MethodRuntime[Kar3Context]):
    def __init__(self, models: Any = None, sources: Any = None, settings: Any = None, *, index: AtomIndex | None = None):
        super().__init__(Kar3Context, "kar3", models, [] if sources is None else sources, settings)
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



class Kar3IndexRuntime(MethodRuntime[Kar3IndexContext]):
    def __init__(self, models: Any = None, settings: Any = None):
        super().__init__(Kar3IndexContext, "kar3_index", models, [], settings)
