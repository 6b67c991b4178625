"""Wikipedia passages in a Chroma collection: the text knowledge source.

The collection lives in embedded storage (``chromadb.PersistentClient(settings.chroma_path)``)
or, when ``settings.chroma_host`` is set, on a Chroma server (``chromadb.HttpClient``);
everything else is the same code path. Vectors always come from atomgraph's embedding
model (:mod:`atomgraph.embeddings`), never from Chroma's default embedding function.

Collections are built by ``atomgraph index wikipedia`` (:mod:`atomgraph.tools.ingest`).
Their metadata records the embedding model and dimension that built them; querying or
adding with another model raises :class:`~atomgraph.errors.ConfigError`.

Distances are cosine (``hnsw`` space ``cosine``: ``d = 1 - cos(q, p)``), and each result's
score is the cosine similarity ``score = 1 - d`` (1 = same direction; higher is closer).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from atomgraph.embeddings import embedding_id, embedding_model
from atomgraph.errors import ConfigError, SourceError
from atomgraph.settings import Settings, get_settings
from atomgraph.state.run import Evidence
from atomgraph.tools.base import KnowledgeSource
from atomgraph.tools.query_embedding import Batcher, query_vectors

log = logging.getLogger(__name__)

# Keys of the collection metadata written by atomgraph.
META_MODEL = "atomgraph_embedding_model"
META_DIM = "atomgraph_embedding_dim"
META_KIND = "atomgraph_kind"
KIND = "passages"


def index_hint(collection: str, persist: str | None = None) -> str:
    where = f" --persist {persist}" if persist else ""
    return f"atomgraph index wikipedia CORPUS_FILE --collection {collection}{where}"


# One client per store per process, opened under a lock: chromadb's clients share one
# "system" per folder or server, and building two at once from different threads loses
# (``Could not connect to tenant default_tenant``, ``'RustBindingsAPI' object has no attribute
# 'bindings'``, ``KeyError`` on the folder). A built client is safe to query from any thread.
_CLIENTS: dict[tuple, Any] = {}
_CLIENTS_LOCK = threading.Lock()


def chroma_client(*, path: str | None = None, host: str | None = None, port: int = 8000, create: bool = True):
    """An embedded client at ``path``, or an HTTP client for ``host:port`` (the same one for
    every caller in this process). ``None`` when the embedded folder does not exist and
    ``create`` is false. An unreachable server is a :class:`SourceError`."""
    if not host and path is None:
        raise ConfigError("no Chroma location: set ATOMGRAPH_CHROMA_PATH (embedded) or ATOMGRAPH_CHROMA_HOST (server)")
    key = ("http", host, int(port)) if host else ("path", str(Path(path).resolve()))
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is not None and (host or Path(path).is_dir()):
            return client
        if not host and not create and not Path(path).is_dir():
            return None
        client = _CLIENTS[key] = _new_client(path=path, host=host, port=port)
        return client


def _new_client(*, path: str | None, host: str | None, port: int):
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if host:
        try:
            return chromadb.HttpClient(host=host, port=port, settings=chroma_settings)
        except Exception as exc:  # noqa: BLE001 - connection failures vary by transport
            raise SourceError(f"cannot reach the Chroma server at {host}:{port}: {exc}") from exc
    try:
        return chromadb.PersistentClient(path=path, settings=chroma_settings)
    except ValueError as exc:  # the user's own client on this folder, opened with chromadb's default settings
        if "different settings" not in str(exc):
            raise
    try:
        return chromadb.PersistentClient(path=path, settings=ChromaSettings())
    except ValueError as exc:
        if "different settings" not in str(exc):
            raise
        raise ConfigError(
            f"the Chroma folder {path} is already open in this process with other client settings; "
            "pass that client to the source: ChromaWikipediaSource(collection, client=your_client)"
        ) from None


def get_collection(client, name: str):
    """The named collection, or ``None`` when it does not exist. Our vectors are always
    passed explicitly, so no embedding function is attached."""
    try:
        return client.get_collection(name=name, embedding_function=None)
    except Exception as exc:  # NotFoundError (1.x) / ValueError (older) / InvalidCollectionException
        if "does not exist" in str(exc) or type(exc).__name__ in {"NotFoundError", "InvalidCollectionException"}:
            return None
        raise


def create_collection(client, name: str, model_id: str, dim: int):
    """Get or create ``name`` for passages embedded by ``model_id`` (cosine space)."""
    try:
        collection = client.get_or_create_collection(
            name=name,
            embedding_function=None,
            configuration={"hnsw": {"space": "cosine"}},
            metadata={META_MODEL: model_id, META_DIM: int(dim), META_KIND: KIND},
        )
    except Exception as exc:  # noqa: BLE001 - chromadb raises its own error types by version
        if "name" in str(exc).lower() and ("valid" in str(exc).lower() or "expected" in str(exc).lower()):
            raise ConfigError(
                f"invalid collection name {name!r}: use 3-512 characters from a-z A-Z 0-9 . _ -, "
                "starting and ending with a letter or digit"
            ) from None
        raise SourceError(f"cannot create Chroma collection {name!r}: {exc}") from exc
    check_model(collection, model_id, dim)
    return collection


def recorded_model(collection) -> tuple[str | None, int | None]:
    meta = collection.metadata or {}
    dim = meta.get(META_DIM)
    return meta.get(META_MODEL), int(dim) if dim is not None else None


def check_model(collection, model_id: str, dim: int | None = None) -> None:
    """Refuse a collection built by another embedding model (or not by atomgraph)."""
    built_by, built_dim = recorded_model(collection)
    if built_by is None:
        raise ConfigError(
            f"Chroma collection {collection.name!r} records no embedding model (not built by atomgraph index); "
            "rebuild it with 'atomgraph index wikipedia' or use another --collection"
        )
    if built_by != model_id or (dim is not None and built_dim is not None and dim != built_dim):
        raise ConfigError(
            f"Chroma collection {collection.name!r} was built with embedding model {built_by!r}"
            f"{f' ({built_dim} dims)' if built_dim else ''}, but the configured model is {model_id!r}"
            f"{f' ({dim} dims)' if dim else ''}; set ATOMGRAPH_EMBEDDING_MODEL={built_by} "
            "or index into another collection"
        )


class ChromaWikipediaSource(KnowledgeSource):
    """Top-k Wikipedia passages ("Title | text") by embedding similarity."""

    name = "wikipedia"
    kind = "text"
    description = (
        "Wikipedia passages (encyclopedic text about people, places, works, organisations and events), "
        "searched by meaning."
    )

    def __init__(
        self,
        collection: str = "wikipedia",
        *,
        path: str | None = None,
        host: str | None = None,
        port: int = 8000,
        embeddings: Embeddings | str | None = None,
        settings: Settings | None = None,
        name: str | None = None,
        description: str | None = None,
        client: Any = None,
    ):
        """``client`` and ``embeddings`` open a collection you built yourself (your own
        chromadb client, e.g. ``store._client`` of a ``langchain_chroma.Chroma``): with
        ``embeddings`` given, a collection that records no embedding model is searched with
        them (scores converted from its distance space to cosine similarity)."""
        self.settings = settings or get_settings()
        self._user_embeddings = embeddings is not None and not isinstance(embeddings, str)
        self.collection_name = collection
        self.host = host
        self.port = port
        self.path = None if host else (path or self.settings.chroma_path)
        if name:
            self.name = name
        if description:
            self.description = description
        self.embeddings = embedding_model(embeddings if embeddings is not None else self.settings)
        self.model_id = embedding_id(self.embeddings)
        self._client = client
        self._collection = None
        self._lock = threading.Lock()
        self._primed: dict[str, list[float]] = {}  # query -> its vector, embedded ahead (prime_queries)
        self._searches = Batcher(self._search_many)  # searches at the same moment: one batch

    # --- storage ----------------------------------------------------------------------------
    def _open(self, *, create: bool = False):
        """The collection, opened once (under this source's lock; the client is the process's
        one for this store), or ``None`` when it does not exist."""
        if self._collection is not None:
            return self._collection
        with self._lock:
            if self._collection is not None:
                return self._collection
            if self._client is None:
                self._client = chroma_client(path=self.path, host=self.host, port=self.port, create=create)
            if self._client is None:
                return None
            self._collection = get_collection(self._client, self.collection_name)
            return self._collection

    def _where(self) -> str:
        return f"{self.host}:{self.port}" if self.host else str(self.path)

    def unavailable_reason(self) -> str | None:
        try:
            collection = self._open()
        except (SourceError, ConfigError) as exc:
            return str(exc)
        if collection is None:
            return (
                f"Chroma collection {self.collection_name!r} does not exist at {self._where()}; "
                f"build it with: {index_hint(self.collection_name, self.path)}"
            )
        try:
            self._check(collection)
            if collection.count() == 0:
                return (
                    f"Chroma collection {self.collection_name!r} at {self._where()} is empty; "
                    f"fill it with: {index_hint(self.collection_name, self.path)}"
                )
        except ConfigError as exc:
            return str(exc)
        return None

    def _check(self, collection) -> None:
        """Refuse a collection built by another model; one that records none is accepted when
        the caller passed the embeddings it was built with."""
        if self._user_embeddings and recorded_model(collection)[0] is None:
            return
        check_model(collection, self.model_id)

    def _score(self, collection, distance: float) -> float:
        """Cosine similarity from a distance of the collection's space (``cosine`` for ours;
        a user's collection may be squared ``l2`` (Chroma's default) or ``ip``)."""
        space = "cosine"
        if self._user_embeddings and recorded_model(collection)[0] is None:
            try:
                space = (collection.configuration or {}).get("hnsw", {}).get("space") or "l2"
            except Exception:  # noqa: BLE001 - older chromadb: metadata holds the space
                space = (collection.metadata or {}).get("hnsw:space", "l2")
        return 1.0 - distance / 2.0 if space == "l2" else 1.0 - distance

    def count(self) -> int:
        collection = self._open()
        return 0 if collection is None else collection.count()

    # --- search -----------------------------------------------------------------------------
    PRIMED_MAX = 1024  # query vectors held for searches to come; the oldest go first

    def prime_queries(self, queries: list[str]) -> int:
        """Embed ``queries`` in one batch ahead of their searches (:func:`query_vectors`); each
        search of one of them then takes its vector instead of embedding it alone. How many were
        embedded. ATOMR's scheduler primes the queries of the steps it sends together."""
        todo = [q for q in dict.fromkeys(queries) if q and q.strip() and q not in self._primed]
        if not todo:
            return 0
        vectors = query_vectors(self.embeddings, todo)
        with self._lock:
            for q, v in zip(todo, vectors):
                self._primed[q] = list(v)
            for q in list(self._primed)[: max(0, len(self._primed) - self.PRIMED_MAX)]:
                del self._primed[q]
        return len(todo)

    def _query_vectors(self, queries: list[str]) -> list[list[float]]:
        """The queries' primed vectors, the others embedded in one batch."""
        with self._lock:
            vectors = {q: self._primed.pop(q) for q in queries if q in self._primed}
        todo = [q for q in dict.fromkeys(queries) if q not in vectors]
        vectors.update(zip(todo, query_vectors(self.embeddings, todo)))
        return [vectors[q] for q in queries]

    def _search_many(self, asks: list[tuple[str, int]]) -> list[dict]:
        """The Chroma results of searches ``(query, k)`` running at the same moment: their queries
        embedded in one batch, then one Chroma query per distinct ``k`` (a query of several vectors
        costs about a tenth of one query a vector each)."""
        collection = self._opened()
        try:
            vectors = self._query_vectors([q for q, _ in asks])
        except (ConfigError, SourceError):
            raise
        except Exception as exc:  # noqa: BLE001 - the embedding model's failure, named as such (not Chroma's)
            raise SourceError(f"embedding the queries for {self.collection_name!r} failed: "
                              f"{type(exc).__name__}: {exc}") from exc
        _, built_dim = recorded_model(collection)
        if built_dim is not None and len(vectors[0]) != built_dim:
            check_model(collection, self.model_id, len(vectors[0]))
        out: list[dict] = [{} for _ in asks]
        for k in dict.fromkeys(k for _, k in asks):
            at = [i for i, (_, kk) in enumerate(asks) if kk == k]
            res = self._query(collection, [vectors[i] for i in at], k)
            for j, i in enumerate(at):
                out[i] = {key: [res[key][j]] for key in ("ids", "documents", "metadatas", "distances")}
        return out

    def _opened(self):
        """The collection, opened; a :class:`SourceError` saying why when it does not exist."""
        collection = self._open()
        if collection is None:
            raise SourceError(self.unavailable_reason() or f"Chroma collection {self.collection_name!r} is missing")
        return collection

    def search(self, query: str, k: int = 3) -> list[Evidence]:
        collection = self._opened()
        self._check(collection)
        if not query or not query.strip() or k < 1:
            return []
        try:  # with the searches running at the same moment (threads): one embedding batch, one query
            res = self._searches.run([(query, k)])[0]
        except (ConfigError, SourceError):
            raise
        except Exception as exc:  # noqa: BLE001 - storage/server failures are one failed call
            if not _gone(exc):
                raise SourceError(f"Chroma query on {self.collection_name!r} failed: {exc}") from exc
            # deleted since it was opened (and perhaps indexed again): open it again by name, once
            self._drop(collection)
            try:
                collection = self._opened()
            except SourceError as missing:
                raise missing from exc
            self._check(collection)
            try:  # the same search on the collection opened again, alone
                res = self._search_many([(query, k)])[0]
            except (ConfigError, SourceError):
                raise
            except Exception as again:  # noqa: BLE001
                raise SourceError(f"Chroma query on {self.collection_name!r} failed: {again}") from again
        out = []
        for pid, doc, meta, dist in zip(res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0]):
            meta = dict(meta or {})
            title = str(meta.pop("title", "") or "")
            out.append(
                Evidence(title=title, text=doc or "", source=self.name, id=pid, score=self._score(collection, float(dist)),
                         metadata=meta)
            )
        return out

    @staticmethod
    def _query(collection, vectors: list[list[float]], k: int):
        """The top ``k`` of each vector (Chroma returns at most what the collection holds: no count first)."""
        return collection.query(query_embeddings=vectors, n_results=k, include=["documents", "metadatas", "distances"])

    def _drop(self, stale) -> None:
        """Forget ``stale``, a handle to a collection deleted under this source: the next
        :meth:`_open` opens the collection again by name."""
        with self._lock:
            if self._collection is stale:
                self._collection = None

    # --- LangChain ---------------------------------------------------------------------------
    def vectorstore(self):
        """The same collection as a ``langchain_chroma.Chroma`` vector store (our embeddings,
        cosine relevance scores)."""
        from langchain_chroma import Chroma

        collection = self._open()
        if collection is None:
            raise SourceError(self.unavailable_reason() or "missing collection")
        self._check(collection)
        return Chroma(
            client=self._client,
            collection_name=self.collection_name,
            embedding_function=self.embeddings,
            create_collection_if_not_exists=False,
            relevance_score_fn=lambda distance: 1.0 - distance,
        )

    def info(self) -> dict[str, Any]:
        collection = self._open()
        if collection is None:
            return {"collection": self.collection_name, "where": self._where(), "exists": False}
        model, dim = recorded_model(collection)
        return {
            "collection": self.collection_name,
            "where": self._where(),
            "exists": True,
            "count": collection.count(),
            "embedding_model": model,
            "embedding_dim": dim,
        }


def _gone(exc: Exception) -> bool:
    """Whether a Chroma failure says the collection no longer exists (deleted under an open handle)."""
    try:
        from chromadb.errors import NotFoundError
    except ImportError:  # pragma: no cover - older chromadb
        NotFoundError = ()  # type: ignore[assignment]  # noqa: N806
    return isinstance(exc, NotFoundError) or "does not exist" in str(exc)


def wikipedia_from_settings(settings: Settings) -> ChromaWikipediaSource:
    """The registry's factory for the ``wikipedia`` source."""
    return ChromaWikipediaSource(
        settings.chroma_collection,
        path=settings.chroma_path,
        host=settings.chroma_host,
        port=settings.chroma_port,
        settings=settings,
    )
