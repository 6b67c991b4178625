"""Bring your own knowledge: a LangChain retriever, vector store or plain function as a
knowledge source, through one adapter.

>>> from langchain_chroma import Chroma
>>> store = Chroma(collection_name="mydocs", embedding_function=my_embeddings, persist_directory="db")
>>> build_method("rag", model=m, sources=[store])                          # a VectorStore
>>> build_method("rag", model=m, sources=[store.as_retriever()])           # a BaseRetriever
>>> build_method("rag", model=m, sources=[lambda q: my_search(q)])         # query -> list[Document]
>>> as_source(store, name="handbook", description="Our staff handbook")   # name and description given

Whatever is accepted as ``sources`` (a graph builder's argument, ``--sources-factory``, a
``module:object`` entry in the ``sources`` setting) goes through :func:`as_source`:

- a :class:`~atomgraph.tools.base.KnowledgeSource` is used as it is;
- a ``VectorStore`` is searched with ``similarity_search_with_relevance_scores`` (scores kept;
  plain ``similarity_search`` where the store has no relevance function);
- a ``BaseRetriever`` is invoked with the query (a vector-store retriever gets ``k``; any other
  retriever returns its own number of documents and the first ``k`` are kept);
- a callable ``query -> list[Document]`` (or ``(query, k) -> ...`` when it takes a ``k``) is
  called; plain strings in its result become documents.

Name, kind and description are given or inferred (a Chroma store's collection name, else the
class name; kind ``text``). ``Document.metadata`` maps to the evidence: ``title`` (else
``name``, else ``source``) becomes the title, ``id`` (else ``doc_id``, ``chunk_id``, or the
document's own ``id``) the id, ``url`` the link; the rest stays in the evidence's metadata.
An error of the underlying store becomes a :class:`~atomgraph.errors.SourceError`, recorded
on the call like any source failure. Anything else is refused with a
:class:`~atomgraph.errors.ConfigError` naming what is accepted.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import warnings
from typing import Any, Callable

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever

from atomgraph.errors import ConfigError, SourceError
from atomgraph.state.run import Evidence
from atomgraph.tools.base import KnowledgeSource, SourceKind

ACCEPTED = ("a KnowledgeSource, a LangChain BaseRetriever, a LangChain VectorStore (e.g. langchain_chroma.Chroma), "
            "a registered source name, or a callable query -> list[Document]")
KINDS = ("text", "web", "kg")
TITLE_KEYS = ("title", "name", "source")
ID_KEYS = ("id", "doc_id", "chunk_id", "passage_id")


def document_to_evidence(doc: Document | str, source: str, score: float | None = None) -> Evidence:
    """One LangChain document as evidence of ``source`` (metadata mapped to title / id / url)."""
    if isinstance(doc, str):
        doc = Document(page_content=doc)
    if not isinstance(doc, Document):
        raise SourceError(f"source {source!r} returned a {type(doc).__name__}, not a Document")
    meta = dict(doc.metadata or {})
    title = next((str(meta.pop(k)) for k in TITLE_KEYS if meta.get(k) not in (None, "")), "")
    found = next((meta.pop(k) for k in ID_KEYS if meta.get(k) not in (None, "")), None)
    doc_id = found if found is not None else doc.id
    if score is None and isinstance(meta.get("score"), (int, float)):
        score = float(meta.pop("score"))
    url = meta.pop("url", None)
    return Evidence(title=title, text=doc.page_content or "", source=source, url=str(url) if url else None,
                    id=str(doc_id) if doc_id is not None else None, score=score,
                    metadata={k: v for k, v in meta.items() if k != "source"})


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_") or "documents"


def inferred_name(obj: Any) -> str:
    """A readable source name for ``obj``: a Chroma store's collection name, a function's
    name, else the class name."""
    store = obj.vectorstore if isinstance(obj, VectorStoreRetriever) else obj
    collection = getattr(store, "_collection_name", None) or getattr(getattr(store, "_collection", None), "name", None)
    if isinstance(collection, str) and collection:
        return _slug(collection)
    if inspect.isfunction(obj) and obj.__name__ != "<lambda>":
        return _slug(obj.__name__)
    if inspect.isfunction(obj):
        return "documents"
    return _slug(re.sub(r"(?<!^)(?=[A-Z])", "_", type(obj).__name__))


def _takes_k(fn: Callable) -> bool:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
    if any(p.name == "k" for p in params):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


class LangChainSource(KnowledgeSource):
    """A retriever, vector store or ``query -> list[Document]`` function as a knowledge source."""

    def __init__(self, target: Any, *, name: str | None = None, kind: SourceKind | None = None,
                 description: str | None = None):
        if isinstance(target, VectorStore):
            self.mode = "store"
        elif isinstance(target, BaseRetriever):
            self.mode = "retriever"
        elif callable(target):
            self.mode = "function"
        else:
            raise ConfigError(f"cannot use a {type(target).__name__} as a knowledge source; accepted: {ACCEPTED}")
        if kind is not None and kind not in KINDS:
            raise ConfigError(f"source kind {kind!r} is not one of {', '.join(KINDS)}")
        self.target = target
        self.name = name or inferred_name(target)
        self.kind = kind or "text"
        self.description = description or f"Documents from {type(target).__name__} {self.name!r}, searched by meaning."

    # --- search -------------------------------------------------------------------------
    def _fail(self, exc: Exception) -> SourceError:
        return SourceError(f"{self.name} ({type(self.target).__name__}) failed: {type(exc).__name__}: {exc}")

    def _evidence(self, found: Any, k: int) -> list[Evidence]:
        if found is None:
            return []
        if isinstance(found, (Document, str)):
            found = [found]
        out = []
        for item in list(found)[:k]:
            if isinstance(item, tuple) and len(item) == 2:  # (document, score)
                out.append(document_to_evidence(item[0], self.name, float(item[1])))
            else:
                out.append(document_to_evidence(item, self.name))
        return out

    def search(self, query: str, k: int = 3) -> list[Evidence]:
        if not query or not query.strip() or k < 1:
            return []
        try:
            if self.mode == "store":
                found = self._store_search(query, k)
            elif self.mode == "retriever":
                found = self.target.invoke(query, **self._retriever_kwargs(k))
            else:
                found = self.target(query, k) if _takes_k(self.target) else self.target(query)
        except SourceError:
            raise
        except Exception as exc:  # the user's store raising: one failed call
            raise self._fail(exc) from exc
        return self._evidence(found, k)

    async def asearch(self, query: str, k: int = 3) -> list[Evidence]:
        if not query or not query.strip() or k < 1:
            return []
        try:
            if self.mode == "store":
                found = await asyncio.to_thread(self._store_search, query, k)
            elif self.mode == "retriever":
                found = await self.target.ainvoke(query, **self._retriever_kwargs(k))
            elif inspect.iscoroutinefunction(self.target):
                found = await (self.target(query, k) if _takes_k(self.target) else self.target(query))
            else:
                return await asyncio.to_thread(self.search, query, k)
        except SourceError:
            raise
        except Exception as exc:
            raise self._fail(exc) from exc
        return self._evidence(found, k)

    def _store_search(self, query: str, k: int):
        try:
            with warnings.catch_warnings():  # "Relevance scores must be between 0 and 1": the store's own scale
                warnings.simplefilter("ignore", UserWarning)
                return self.target.similarity_search_with_relevance_scores(query, k=k)
        except NotImplementedError:
            return self.target.similarity_search(query, k=k)

    def _retriever_kwargs(self, k: int) -> dict:
        # A vector-store retriever takes search kwargs per call; other retrievers keep their own k.
        return {"k": k} if isinstance(self.target, VectorStoreRetriever) else {}


def as_source(obj: Any, *, name: str | None = None, kind: SourceKind | None = None,
              description: str | None = None) -> KnowledgeSource:
    """``obj`` as a knowledge source (see the module's docstring for what is accepted)."""
    if isinstance(obj, KnowledgeSource):
        if name:
            obj.name = name
        if description:
            obj.description = description
        if kind:
            obj.kind = kind
        return obj
    if isinstance(obj, (VectorStore, BaseRetriever)) or (callable(obj) and not isinstance(obj, type)):
        return LangChainSource(obj, name=name, kind=kind, description=description)
    raise ConfigError(f"cannot use {_describe(obj)} as a knowledge source; accepted: {ACCEPTED}")


def _describe(obj: Any) -> str:
    if isinstance(obj, type):
        return f"the class {obj.__name__} (pass an instance)"
    text = repr(obj)
    return f"a {type(obj).__name__} ({text[:60] + '...' if len(text) > 60 else text})"


# --- LangChain documents as ARM objects and KAR³ chunks -------------------------------------

def _doc_title_id(doc: Document, i: int) -> tuple[str, str | None]:
    if not isinstance(doc, Document):
        raise ConfigError(f"documents[{i}] is a {type(doc).__name__}, not a LangChain Document")
    meta = doc.metadata or {}
    title = next((str(meta[k]) for k in TITLE_KEYS if meta.get(k) not in (None, "")), "")
    found = next((meta[k] for k in ID_KEYS if meta.get(k) not in (None, "")), None)
    doc_id = found if found is not None else doc.id
    return title, str(doc_id) if doc_id is not None else None


def documents_to_objects(documents: Any) -> list:
    """LangChain documents as ARM :class:`~atomgraph.tools.objects.DataObject` s: a passage
    each (title and id from the metadata, as for sources; an id from the content otherwise),
    or a table where the metadata has ``columns`` (and ``rows``, ``database``). Invalid
    documents and repeated ids are a :class:`ConfigError` naming the document."""
    from atomgraph.errors import ParseError
    from atomgraph.tools.ingest import passage_id
    from atomgraph.tools.objects import parse_object

    out, seen = [], {}
    for i, doc in enumerate(documents or []):
        title, doc_id = _doc_title_id(doc, i)
        meta = doc.metadata or {}
        raw = {"id": doc_id or passage_id(title, doc.page_content), "title": title, "text": doc.page_content,
               "kind": meta.get("kind") or ("table" if meta.get("columns") else "passage")}
        for key in ("columns", "rows", "database"):
            if meta.get(key) is not None:
                raw[key] = meta[key]
        try:
            obj = parse_object(raw, f"documents[{i}]")
        except ParseError as exc:
            raise ConfigError(str(exc)) from None
        if obj.id in seen:
            raise ConfigError(f"documents[{i}] repeats the id {obj.id!r} of documents[{seen[obj.id]}]")
        seen[obj.id] = i
        out.append(obj)
    if not out:
        raise ConfigError("no documents given")
    return out


def documents_to_chunks(documents: Any) -> list:
    """LangChain documents as KAR³ chunks (:class:`~atomgraph.tools.atom_index.Chunk`): the
    document's id (metadata ``id`` etc., or ``Document.id``), else an id by content (as
    ``atomgraph index`` gives it), so atomizing again skips what is done. A repeated document
    is taken once; two documents with one id are a ConfigError. Other scalar metadata is kept."""
    from atomgraph.tools.atom_index import Chunk
    from atomgraph.tools.ingest import passage_id

    out, seen = [], {}
    for i, doc in enumerate(documents or []):
        title, doc_id = _doc_title_id(doc, i)
        if not (doc.page_content or "").strip():
            raise ConfigError(f"documents[{i}] has no text")
        cid = doc_id or passage_id(title, doc.page_content)
        content = passage_id(title, doc.page_content)
        if cid in seen:
            if seen[cid][1] == content:
                continue
            raise ConfigError(f"documents[{i}] repeats the id {cid!r} of documents[{seen[cid][0]}] with other text")
        seen[cid] = (i, content)
        meta = {k: v for k, v in (doc.metadata or {}).items()
                if k not in TITLE_KEYS + ID_KEYS and isinstance(v, (str, int, float, bool))}
        out.append(Chunk(cid, title, doc.page_content, metadata=meta))
    if not out:
        raise ConfigError("no documents given")
    return out
