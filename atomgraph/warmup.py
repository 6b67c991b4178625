"""Loading at the start of a run: what a run will need that takes seconds to load is loaded once,
on the main thread, before any question starts, each with a progress line — never lazily in a
worker thread while the questions wait.

:func:`warm_up` loads, for a method, its settings and what the caller passed:

- the local embedding model (on onnxruntime: its ONNX export, made once from the bundled weights
  where it is not there yet; on sentence-transformers: ``sentence_transformers`` → ``transformers``
  → ``torch`` and the weights; then one encoded text), when the run reads something that embeds:
  Chroma passages (``wikipedia``), KAR³'s atoms, ARM's objects, or a given source holding such a model;
- ARM's index of the run's objects file (``arm.objects``), built or read from its cache, and where structure
  alignment runs, its unit embeddings (every object's sentences, cells and columns): read from the index cache,
  else embedded once and written there — more than :data:`UNIT_PRIME_LIMIT` texts not cached are left to the
  questions that need them, and a line says so;
- the packages of the stores and models the run opens (``chromadb``, the chat model's provider);
- the in-process chat model's GGUF weights (``local``), for every role the method declares;
- the tokenizer that checks every reply's reported usage (cl100k_base), where a model is configured.

The command line runs a process's start (its imports, and what :func:`warm_up` loads) with the garbage
collector paused (:func:`pause_collector`): what loads there lives for the whole run, and collecting
it only costs (full collections of 70–190 ms each). When the start is over (:func:`started`: at the end of
:func:`warm_up`, else where the command begins its work) the objects made so far are frozen
(``gc.freeze``: later collections skip them) and the collector runs again.

A closed-book method (``standard``, ``cot``) loads no embedding model. Each loader is
process-wide and behind a lock (:func:`atomgraph.onnx_embeddings.load_onnx`,
:func:`atomgraph.embeddings.load_sentence_transformer`,
:func:`atomgraph.local.engine.load_engine`, :func:`atomgraph.nodes.arm.pipeline.index_for_file`),
so whatever is still loaded on first use is loaded once while concurrent first users wait.
Lines go to the ``atomgraph.progress`` logger (the command line shows them on stderr):

    loading the embedding model sentence-transformers/all-MiniLM-L6-v2 ...
    loaded the embedding model sentence-transformers/all-MiniLM-L6-v2 in 0.9 s; embeddings: onnxruntime (exported
    2026-11-29 14:04 UTC to ~/.cache/atomgraph/models/onnx/all-MiniLM-L6-v2-8bb2f1d457b3be1d)
"""

from __future__ import annotations

import importlib
from typing import Any, Iterable

from atomgraph.progress import WarmUp, pause_collector, started  # noqa: F401  (the command line imports them from here)

CLOSED_BOOK = ("standard", "cot")  # methods that read no knowledge source
EMBEDDING_SOURCES = ("wikipedia", "atoms")  # registered sources that embed their queries
CHROMA_SOURCES = ("wikipedia", "atoms")


def warm_up(method: str | None = None, settings: Any = None, model: Any = None, sources: Any = None, *,
            show: bool = True, models: bool = True, embeddings: bool = True,
            runtimes: list | None = None) -> dict[str, float]:
    """Load what a run of ``method`` (None, or an index method: the settings' embedding model) will use; the
    seconds each step took. ``model`` / ``sources``: what the run was given (None: the settings').
    ``runtimes``: a list given each local embedding model's runtime record (model, wanted, used, why:
    :meth:`~atomgraph.embeddings.SentenceTransformerEmbeddings.runtime_record`).
    A model or source that cannot be built is left for the run to report."""
    from atomgraph.settings import get_settings

    settings = settings or get_settings()
    w = WarmUp(show)
    index = method is not None and _kind(method) == "index"  # builds a Chroma collection with the settings' model
    reads = method is None or index or method not in CLOSED_BOOK
    names = _source_names(method, settings, sources) if method is not None and reads and not index else []
    if index or any(n in CHROMA_SOURCES for n in names):
        _import(w, "chromadb")
    if embeddings and reads:
        from atomgraph.embeddings import warm_embeddings

        for emb in _embeddings_of(method, settings, sources, names, index):
            warm_embeddings(emb, w)
    if method == "arm":
        _arm_index(settings, w)
    if models and method is not None:
        _models(method, settings, model, w)
    if runtimes is not None:
        runtimes.extend(w.runtimes)
    started()
    return w.seconds


def worker_warm(method: str, model: Any, sources: Any, settings: Any) -> list[dict]:
    """An ``eval run --workers`` worker process's start (``EvalOptions.worker_warm``): the models and
    indexes its questions use, loaded before its first question; what runs its local embedding models."""
    runtimes: list[dict] = []
    warm_up(method, settings, model, sources, show=False, runtimes=runtimes)
    return runtimes


def _kind(method: str) -> str:
    from atomgraph.errors import ConfigError
    from atomgraph.methods import declaration

    try:
        return declaration(method).kind
    except ConfigError:  # an unknown method: the run says so
        return "qa"


def _import(w: WarmUp, module: str) -> None:
    import sys

    if module not in sys.modules:
        try:
            w.step(module, lambda: importlib.import_module(module))
        except ImportError:  # the run says what is missing, in its own words
            pass


def _source_names(method: str | None, settings: Any, sources: Any) -> list[str]:
    """The settings' sources the run will open; a Chroma-backed one only where its store is there
    (a server, or the folder), so a run whose passages are not indexed loads no model for them."""
    from pathlib import Path

    if sources is not None:
        return []
    names = list(settings.sources) + (["atoms"] if method == "kar3" else [])
    store = bool(settings.chroma_host) or Path(settings.chroma_path).expanduser().is_dir()
    return [n for n in names if store or n not in CHROMA_SOURCES]


def _given_sources(sources: Any) -> Iterable[Any]:
    if sources is None or isinstance(sources, (str, bytes)):
        return []
    try:
        return list(sources)
    except TypeError:
        return [sources]


def _embeddings_of(method: str | None, settings: Any, sources: Any, names: list[str], index: bool) -> list[Any]:
    """The embedding models the run will query: the given sources' own, else the settings' one
    where a source (or the method's index) embeds."""
    from atomgraph.embeddings import embedding_model
    from atomgraph.errors import ConfigError

    found = []
    for source in _given_sources(sources):
        for holder in (source, getattr(source, "index", None)):
            emb = getattr(holder, "embeddings", None) if holder is not None else None
            if emb is not None and not callable(emb):
                found.append(emb)
                break
    if method is None or index or any(n in EMBEDDING_SOURCES for n in names) or (method == "arm" and _arm_objects(settings)):
        try:
            found.append(embedding_model(settings))
        except ConfigError:  # a misnamed model: the run's own check says so
            pass
    unique: dict[tuple, Any] = {}
    for emb in found:
        unique.setdefault((getattr(emb, "location", id(emb)), getattr(emb, "device", None)), emb)
    return list(unique.values())


UNIT_PRIME_LIMIT = 20_000  # texts: ARM's unit embeddings not cached are embedded at the start up to this many
# (about 6 CPU-ms a text: the shared HotpotQA objects' 5,357 in 32 CPU-s), else by the questions that need them


def _arm_index(settings: Any, w: WarmUp) -> None:
    """ARM's index of ``arm.objects`` (when set and present): built, or read from its cache; then, where
    structure alignment runs, its unit embeddings (:func:`_arm_units`)."""
    from pathlib import Path

    objects = _arm_objects(settings)
    if objects:
        from atomgraph.nodes.arm.pipeline import index_for_file

        arm = settings.section("arm")
        cache = getattr(arm, "index_cache", None)
        index = w.step(f"ARM's index of {Path(objects).name}", lambda: index_for_file(objects, cache))
        if getattr(arm, "structure_alignment", True):
            _arm_units(index, w)


def _arm_units(index: Any, w: WarmUp) -> None:
    """ARM's unit embeddings (every object's sentences, cells and columns: what structure alignment
    compares), loaded before the first question: read from the index's cache folder where they are
    there, else embedded (progress lines) and written there when at most :data:`UNIT_PRIME_LIMIT` texts;
    more are left to the questions that need them, which a line says."""
    from atomgraph.nodes.arm.structure_alignment import UnitCache
    from atomgraph.progress import say
    from atomgraph.tools.arm_index import BuildProgress

    units = UnitCache.of(index)
    what = "ARM's unit embeddings (sentences, cells, columns)"
    where = getattr(index, "cache_path", None)
    if where is not None and (where / units.file_name).is_file():
        w.step(what, units.load_cached, note=lambda: "read from the index cache" if units.complete
               else "the index cache holds them for other units: embedded again")
    if units.complete:
        return
    pending = units.pending()
    if pending <= UNIT_PRIME_LIMIT:
        w.step(f"{what}, embedding {pending:,} texts once",
               lambda: units.prime_all(BuildProgress(None if w.show else False, prefix="ARM")),
               note=lambda: "written to the index cache" if where is not None else "not cached (no index cache folder)")
    elif w.show:
        say(f"{what}: not cached, {pending:,} texts (over {UNIT_PRIME_LIMIT:,} are not embedded at the start): "
            "the first questions embed their candidates' units as they need them, seconds each; "
            "`atomgraph retrieve --method arm` embeds them all once and caches them")


def _arm_objects(settings: Any) -> str:
    """The settings' ARM objects file, when it is there ("" otherwise)."""
    from pathlib import Path

    objects = getattr(settings.section("arm"), "objects", None) or ""
    return objects if objects and Path(objects).expanduser().exists() else ""


def _models(method: str, settings: Any, model: Any, w: WarmUp) -> None:
    """The method's chat models built (their provider packages imported) and in-process weights loaded."""
    from atomgraph.errors import AtomgraphError
    from atomgraph.methods import declaration
    from atomgraph.models import resolve_models

    try:
        roles = declaration(method).roles
        by_role = w.step("the chat model", lambda: resolve_models(model, settings, roles))
    except AtomgraphError:  # no model configured, or a wrong name: the run's own check says so
        return
    from atomgraph.nodes.call import usage_encoding

    # every reply's server-reported usage is checked against this tokenizer (nodes/call.py): 0.4 s to load
    w.step("the usage tokenizer cl100k_base", usage_encoding)
    for m in {id(m): m for m in by_role.values()}.values():
        while getattr(m, "bound", None) is not None:  # a Runnable wrapping the model
            m = m.bound
        if getattr(type(m), "in_process_constraints", False) and hasattr(m, "engine"):
            w.step(f"the local model {getattr(m, 'model', '')}", lambda m=m: m.engine)
