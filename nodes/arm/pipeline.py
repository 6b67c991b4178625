"""ARM's pipeline: what the ``arm`` graph's stages share, and the ends of a run.

decompose → align → retrieve (§3.2.1, :mod:`~atomgraph.nodes.arm.information_alignment`) →
structure (§3.2.2, :mod:`~atomgraph.nodes.arm.structure_alignment`) → verify → aggregate
(§3.3, :mod:`~atomgraph.nodes.arm.self_verification`) → answer (here).

- the data collection (:class:`Collection`): given to the graph builder (``objects=``: an
  :class:`ArmIndex`, a list of :class:`DataObject`, or a path), or named by the run's ``objects``
  parameter (the ``[arm]`` settings section: ``ATOMGRAPH_ARM__OBJECTS=objects.jsonl``), a file or
  a folder holding ``objects.jsonl``. Indexes built from files are kept per process, keyed by the
  file's path, size and modification time, so a graph serving many questions indexes once;
- the runtime (:class:`ArmRuntime`): the method runtime plus the collection (its index opened
  once per run, by the first stage), the decoding mode (how the decoder is constrained, decided
  once per model, here) and a small memo of per-question values (the question's scores, computed
  once for ``retrieve`` and ``structure``);
- the route after ``decompose`` (:func:`after_decompose`), the ``answer`` node and the run's
  trace (:func:`trace`);
- the comparison retrievers of ARM's experiments (Appendix D.2): dense and BM25, and the result
  type every object retriever returns (:class:`RetrievalResult`). ARM's own retrieval is the
  ``arm`` graph (:func:`atomgraph.graphs.arm.arm_retriever`, with or without a model);
  :func:`atomgraph.graphs.arm.retrieve` picks one of the three by name.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Sequence

from langchain_core.runnables import RunnableConfig

from atomgraph.errors import ConfigError
from atomgraph.injection import fence
from atomgraph.nodes.arm.information_alignment import _top, suspect_positions
from atomgraph.nodes.arm.self_verification import verbalize_object
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.arm import ANSWER
from atomgraph.prompts.constraints import backend, is_local
from atomgraph.state.arm import ArmContext
from atomgraph.state.arm_graph import ArmState, Decoding
from atomgraph.tools.arm_index import ArmIndex, stopwords, tokens
from atomgraph.tools.objects import DataObject, Question, load_objects

# --- the data collection and its index (built once, then reused) -------------------------------------

MISSING = (
    "ARM needs a data collection: set ATOMGRAPH_ARM__OBJECTS (or 'objects' under [arm] in atomgraph.toml, "
    "or the run context's 'objects') to an objects.jsonl file or a folder holding one"
)

_LOCK = threading.Lock()
_BY_FILE: dict[tuple, ArmIndex] = {}


def objects_file(path: str | Path) -> Path:
    """The objects.jsonl named by ``path`` (the file, or ``objects.jsonl`` in the folder)."""
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "objects.jsonl"
    if not p.is_file():
        raise ConfigError(f"ARM objects: {p} does not exist ({MISSING})")
    return p


def index_for_file(path: str | Path, cache_dir: str | None = None) -> ArmIndex:
    """The index of the objects in ``path``, built once per process (and cached on disk)."""
    p = objects_file(path)
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns, cache_dir)
    with _LOCK:
        if key not in _BY_FILE:
            _BY_FILE[key] = ArmIndex.build(load_objects(p), cache_dir=cache_dir)
        return _BY_FILE[key]


class Collection:
    """The graph's objects: given at build time, or read from the run's ``objects`` path."""

    def __init__(self, objects: Any = None, embeddings: Any = None):
        self._given = objects
        self._embeddings = embeddings
        self._index: ArmIndex | None = objects if isinstance(objects, ArmIndex) else None
        self._lock = threading.Lock()
        self._opened: dict[tuple, ArmIndex] = {}  # (objects path, cache dir) -> the index last opened

    def opened(self, objects_path: str | None = None, cache_dir: str | None = None) -> ArmIndex | None:
        """The index :meth:`index` last opened for these arguments (None: not opened yet)."""
        return self._index if self._index is not None else self._opened.get((objects_path, cache_dir))

    @property
    def given(self) -> bool:
        return self._given is not None

    def index(self, objects_path: str | None = None, cache_dir: str | None = None, *, reopen: bool = True) -> ArmIndex:
        """The index (opened once per run: the run's first stage opens it, checking that a file
        has not changed; ``reopen=False``, the later stages, reuse what it opened)."""
        if self._index is not None:
            return self._index
        if not reopen and (objects_path, cache_dir) in self._opened:
            return self._opened[(objects_path, cache_dir)]
        found = self._open(objects_path, cache_dir)
        self._opened[(objects_path, cache_dir)] = found
        return found

    def _open(self, objects_path: str | None, cache_dir: str | None) -> ArmIndex:
        given = self._given
        if isinstance(given, (str, Path)):
            return index_for_file(given, cache_dir)
        if given is not None:
            objs: Sequence[DataObject] = list(given)
            if not objs or not all(isinstance(o, DataObject) for o in objs):
                raise ConfigError("ARM objects must be an ArmIndex, a path, or a non-empty list of DataObject")
            with self._lock:
                if self._index is None:
                    self._index = ArmIndex.build(objs, embeddings=self._embeddings, cache_dir=cache_dir,
                                                 use_cache=cache_dir is not None)
            return self._index
        if not objects_path:
            raise ConfigError(MISSING)
        return index_for_file(objects_path, cache_dir)


# --- the runtime: the collection, the decoding, the per-question memo -----------------------------------

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
        self._decodings: dict[tuple[int, str], tuple[Any, Decoding]] = {}  # (id(model), requested) -> (model, decoding)

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
        """The run's index as the first stage opened it (opened now if no stage has); a run's
        own objects and index cache only under the operator's data_dirs (``check_paths``)."""
        self.check_paths(ctx)
        return self.collection.index(ctx.objects, ctx.index_cache, reopen=False)

    async def aindex(self, ctx: ArmContext) -> ArmIndex:
        """:meth:`index` without blocking the event loop (a first opening reads the objects file
        and loads the embedding model: ``langgraph dev`` forbids that on the loop)."""
        found = self.collection.opened(ctx.objects, ctx.index_cache)
        return found if found is not None else await asyncio.to_thread(self.index, ctx)

    async def aopen(self, ctx: ArmContext) -> ArmIndex:
        """The index opened for this run (the first stage: a changed objects file is re-read)."""
        return await asyncio.to_thread(self._open, ctx)

    def _open(self, ctx: ArmContext) -> ArmIndex:
        self.check_paths(ctx)  # before anything is opened
        return self.collection.index(ctx.objects, ctx.index_cache)

    async def decoding(self, ctx: ArmContext, state: ArmState, role: str) -> Decoding:
        """The run's decoding (alignment's, from the state), else decided for ``role``'s model now
        (keywords replayed: no alignment call was made)."""
        known = state.get("decoding") or {}
        if known.get("backend"):
            return known
        return await self.decoding_of(role, ctx.decoding)

    async def decoding_of(self, role: str, requested: str = "auto") -> Decoding:
        """How ``role``'s model is constrained (:func:`decoding_mode`), decided once per model and
        ``requested`` mode (deciding may ask a server who it is: in a thread); a copy, the caller's
        to annotate."""
        model = await self.amodel(role)
        key = (id(model), requested)
        found = self._decodings.get(key)
        if found is None or found[0] is not model:
            found = self._decodings[key] = (model, await asyncio.to_thread(decoding_mode, model, requested))
        return Decoding(**found[1])


# --- the route after decompose, the answer node and the trace ---------------------------------------------

def after_decompose(state: ArmState) -> str:
    """``answer`` (which reports the error) when the question or the collection was refused, else ``align``."""
    return "answer" if state.get("error") else "align"


def make_answer_node(art: ArmRuntime) -> Callable:
    async def answer(state: ArmState, config: RunnableConfig) -> dict[str, Any]:
        ctx = art.params(config)
        out: dict[str, Any] = {"stopped": None}
        problems: list[str] = []
        if state.get("error"):
            out.update(answer="", answers=[], error=state["error"])
        elif not ctx.answer:
            out.update(answer="", answers=[], error=None)
        else:
            index = await art.aindex(ctx)
            ids = state.get("retrieved_ids") or []
            objects = fence("\n\n".join(verbalize_object(index, index.objects[index.position(i)], state["question"],
                                                         ctx.verbalize_top_rows) for i in ids)) or "(nothing was retrieved)"
            result = await art.ask(ANSWER, {"question": state["question"], "objects": objects}, config)
            out["llm_calls"] = [result.call]
            if result.ok:
                out.update(answer=result.value, answers=[result.value], error=None)
            else:
                problems.append(f"answer: {result.problem}")
                out.update(answer="", answers=[], error=result.problem)
        out["trace"] = trace(state, ctx, problems)
        if not state.get("error") and ctx.answer:  # the objects read that address the model (atomgraph.injection)
            suspect = suspect_positions(index)
            out["trace"]["suspect_objects"] = [i for i in state.get("retrieved_ids") or []
                                               if index.position(i) in suspect]
        out["retrieved_ids"] = state.get("retrieved_ids") or []
        out["retrieved_titles"] = state.get("retrieved_titles") or []
        if problems:
            out["problems"] = problems
        return out

    return answer


def trace(state: ArmState, ctx: ArmContext, problems: list[str]) -> dict[str, Any]:
    """What each stage did: keywords, decoding, alignment, candidates, drafts, verdicts, votes."""
    drafts = state.get("drafts") or []
    return {
        "method": "arm",
        "llm": ctx.llm,
        "keywords": state.get("keywords") or [],
        "keyword_source": state.get("keyword_source"),
        "added_keywords": state.get("added_keywords") or [],  # add_question_keywords (switch)
        "decoding": state.get("decoding") or {},
        "alignment": state.get("alignment") or [],
        "aligned": state.get("aligned") or [],
        "distinct_drafts": len({frozenset(d["ids"]) for d in state.get("drafts") or []}),
        "candidates": state.get("candidates") or [],
        "drafts": state.get("drafts") or [],
        "links": drafts[0]["links"] if drafts else [],  # the first draft's, as solved
        "mip": {k: v for k, v in drafts[0]["mip"].items() if k not in ("time_limited", "time_limit_s")} if drafts else {},
        "verdicts": state.get("verdicts") or [],
        "votes": state.get("votes") or [],
        "retrieved_ids": state.get("retrieved_ids") or [],
        "chosen": state.get("retrieved_ids") or [],
        "answered": bool(ctx.answer and not state.get("error")),
        "problems": list(state.get("problems") or []) + problems,
    }


# --- the comparison retrievers (Appendix D.2) and the result every object retriever returns -----------

@dataclass
class RetrievalResult:
    """Retrieved object ids, best first, with their scores and a trace of how."""

    method: str
    ids: list[str]
    scores: list[float]
    trace: dict[str, Any] = field(default_factory=dict)


def _question_text(question: Question | str) -> str:
    return question.question if isinstance(question, Question) else str(question or "")


def dense_retrieve(question: Question | str, index: ArmIndex, k: int = 5) -> RetrievalResult:
    """Top-k objects by cosine similarity of the question to their best chunk (Appendix D.2)."""
    scores = index.dense_scores(_question_text(question))
    top = _top(scores, k)
    return RetrievalResult("dense", [index.objects[i].id for i in top], [float(scores[i]) for i in top])


def bm25_retrieve(question: Question | str, index: ArmIndex, k: int = 5) -> RetrievalResult:
    """Top-k objects by BM25 over the question's tokens (stopwords dropped)."""
    stop = stopwords()
    q = [t for t in tokens(_question_text(question)) if t not in stop]
    scores = index.bm25_sparse(q)  # the objects holding a query token; every other scores 0
    top = _top(scores, k)
    return RetrievalResult("bm25", [index.objects[i].id for i in top], [float(scores[i]) for i in top])


METHODS = ("dense", "bm25", "arm")
