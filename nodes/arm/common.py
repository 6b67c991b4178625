"""What the ``arm`` graph's nodes share: the runtime with the data collection, the decoding
mode (how the decoder is constrained, decided once, here), and the question's scores.

Every node reads the run's :class:`~atomgraph.state.arm_graph.ArmGraphContext`, reaches the
model only through :meth:`ArmRuntime.ask <atomgraph.nodes.runtime.MethodRuntime.ask>` (a
constraint from :mod:`atomgraph.prompts.constraints` in the backend's own request form), and
turns a failed call or an unreadable reply into a note in ``problems`` and a documented
fallback, never into an exception. Only a missing model or data-collection configuration
raises ``ConfigError``.
"""

from __future__ import annotations

import asyncio
from typing import Any


from atomgraph.nodes.arm.collection import Collection
from atomgraph.nodes.arm.pool import Scores
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.constraints import backend, is_local
from atomgraph.state.arm_graph import ArmGraphContext, ArmState, Decoding
from atomgraph.tools.arm_index import ArmIndex

# The alignment form each backend gets (the trace's ``decoding.mode``; ``ArmContext.decoding``
# names a backend by it): a token trie in process, a shortlist constraint on servers.
MODES: dict[str, str] = {"local": "local_trie_beam", "vllm": "vllm_choice", "llamacpp": "llamacpp_grammar",
                         "openai": "openai_json_schema", "other": "free"}


def decoding_mode(model: Any, requested: str = "auto") -> Decoding:
    """How ``model`` is constrained: ``{"mode", "backend", "why"}`` (the backend from
    :func:`atomgraph.prompts.constraints.backend`, detected or as ``requested``)."""
    req = (requested or "auto").strip().lower()
    if req == "local_trie_beam" and not is_local(model):  # only an in-process model decodes over the token trie
        return Decoding(mode="free", backend="other",
                        why="local_trie_beam asked for, but the model is not in-process: unconstrained, then snapped")
    kind, why = backend(model, "local" if req == "local_trie_beam" else req)
    return Decoding(mode=MODES[kind], backend=kind, why=why)


class ArmRuntime(MethodRuntime[ArmGraphContext]):
    """The method runtime plus the data collection (its index is resolved per run): build it with
    ``ArmRuntime.for_method("arm", model, [], settings, collection=Collection(...))``."""

    def __init__(self, context_cls: type[ArmGraphContext], section: str, models: Any = None, sources: Any = None,
                 settings: Any = None, roles: tuple[str, ...] | None = None, *, collection: Collection):
        super().__init__(context_cls, section, models, [] if sources is None else sources, settings, roles)
        self.collection = collection

    @property
    def rt(self) -> "ArmRuntime":
        """The runtime itself (nodes once reached the kit through ``art.rt``)."""
        return self

    def index(self, ctx: ArmGraphContext) -> ArmIndex:
        return self.collection.index(ctx.objects, ctx.index_cache)

    async def aindex(self, ctx: ArmGraphContext) -> ArmIndex:
        """:meth:`index` in a thread: the first call reads the objects file and loads the
        embedding model, which must not block the event loop (``langgraph dev`` forbids it)."""
        return await asyncio.to_thread(self.index, ctx)

    async def decoding(self, ctx: ArmGraphContext, state: ArmState, role: str) -> Decoding:
        """The run's decoding (alignment's, from the state), else decided for ``role``'s model now
        (keywords replayed: no alignment call was made). May ask a server who it is: in a thread."""
        known = state.get("decoding") or {}
        if known.get("backend"):
            return known
        return await asyncio.to_thread(decoding_mode, await self.amodel(role), ctx.decoding)


async def question_scores(art: ArmRuntime, ctx: ArmGraphContext, state: ArmState) -> tuple[ArmIndex, Scores]:
    """Every object's scores for the question and its aligned n-gram lists."""
    index = await art.aindex(ctx)
    groups = [a["ngrams"] for a in state.get("alignment") or []]
    # embeds the question and each keyword's n-gram list: in a thread, off the event loop
    return index, await asyncio.to_thread(Scores.of, index, state["question"], groups, ctx.bm25_weight)


def titles(index: ArmIndex, ids: list[str]) -> list[str]:
    return [index.objects[index.position(i)].title for i in ids]
