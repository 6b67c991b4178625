"""What the ``arm`` graph's nodes share: the runtime with the data collection (its index opened
once per run, by the first stage), the decoding mode (how the decoder is constrained, decided
once, here), and a small memo of per-question values (the question's scores, computed once).

Every node reads the run's :class:`~atomgraph.state.arm.ArmContext`, reaches the
model only through :meth:`ArmRuntime.ask <atomgraph.nodes.runtime.MethodRuntime.ask>` (a
constraint from :mod:`atomgraph.prompts.constraints` in the backend's own request form), and
turns a failed call or an unreadable reply into a note in ``problems`` and a documented
fallback, never into an exception. Only a missing model or data-collection configuration
raises ``ConfigError``.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from typing import Any, Awaitable, Callable

from atomgraph.nodes.arm.collection import Collection
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.constraints import backend, is_local
from atomgraph.state.arm import ArmContext
from atomgraph.state.arm_graph import ArmState, Decoding
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


class ArmRuntime(MethodRuntime[ArmContext]):
    """The method runtime plus the data collection (its index is opened once per run): build it
    with ``ArmRuntime.for_method("arm", model, [], settings, collection=Collection(...))``."""

    MEMO_SIZE = 32  # per-question values kept (a batch's questions in flight)

    def __init__(self, context_cls: type[ArmContext], section: str, models: Any = None, sources: Any = None,
                 settings: Any = None, roles: tuple[str, ...] | None = None, *, collection: Collection):
        super().__init__(context_cls, section, models, [] if sources is None else sources, settings, roles)
        self.collection = collection
        self._memo: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    async def memo(self, key: Any, make: Callable[[], Awaitable[Any]]) -> Any:
        """``await make()`` once per ``key`` (the question's scores: the ``retrieve`` and
        ``structure`` nodes ask for the same); the last ``MEMO_SIZE`` keys are kept."""
        with self._lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                return self._memo[key]
        value = await make()
        with self._lock:
            self._memo[key] = value
            while len(self._memo) > self.MEMO_SIZE:
                self._memo.popitem(last=False)
        return value

    def index(self, ctx: ArmContext) -> ArmIndex:
        """The run's index as the first stage opened it (opened now if no stage has)."""
        return self.collection.index(ctx.objects, ctx.index_cache, reopen=False)

    async def aindex(self, ctx: ArmContext) -> ArmIndex:
        """:meth:`index` without blocking the event loop (a first opening reads the objects file
        and loads the embedding model: ``langgraph dev`` forbids that on the loop)."""
        found = self.collection.opened(ctx.objects, ctx.index_cache)
        return found if found is not None else await asyncio.to_thread(self.index, ctx)

    async def aopen(self, ctx: ArmContext) -> ArmIndex:
        """The index opened for this run (the first stage: a changed objects file is re-read)."""
        return await asyncio.to_thread(self.collection.index, ctx.objects, ctx.index_cache)

    async def decoding(self, ctx: ArmContext, state: ArmState, role: str) -> Decoding:
        """The run's decoding (alignment's, from the state), else decided for ``role``'s model now
        (keywords replayed: no alignment call was made). May ask a server who it is: in a thread."""
        known = state.get("decoding") or {}
        if known.get("backend"):
            return known
        return await asyncio.to_thread(decoding_mode, await self.amodel(role), ctx.decoding)


def titles(index: ArmIndex, ids: list[str]) -> list[str]:
    return [index.objects[index.position(i)].title for i in ids]
