"""The ARM index over a set of objects (§3.1 and Appendix A of the ARM paper).

Three views of the same objects, built once and cached on disk:

- **corpus n-grams** (n = 1..3 over normalised lower-case tokens, never crossing a field
  boundary such as title/text or one column name and the next) in a ``marisa_trie.Trie``:
  n-gram → key id, with postings (key id → object indices) in two CSR numpy arrays. The trie
  answers exact membership (the alignment invariant) and prefix lookups (shortlists);
- **BM25** over each object's tokens, with ``bm25s`` (Lucene variant);
- **embeddings** of each object's serialised chunks with the project's embedding model
  (:func:`atomgraph.embeddings.embedding_model`), L2-normalised in a numpy matrix; an
  object's dense score is its best chunk's cosine similarity (Appendix D.2).

Tables are indexed by title, description, column names (``snake_case``/``camelCase``
split into words) and cell values when rows exist. The index also records *title
mentions*: which objects mention another passage's title (the entity links of §3.2.2).

The cache directory holds one sub-folder per content key: a hash of the objects, the
embedding model id and the index version, so a changed file or model never reads stale
vectors.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from atomgraph.errors import AtomgraphError
from atomgraph.files import atomic_dir
from atomgraph.tools.objects import Chunk, DataObject, chunk_object, split_identifier

log = logging.getLogger(__name__)

INDEX_VERSION = 1
MAX_N = 3
_TOKEN = re.compile(r"[^\W_]+")
_PAREN = re.compile(r"\s*\([^)]*\)\s*$")


# --- tokens and n-grams ----------------------------------------------------------------------

def raw_tokens(text: str) -> list[str]:
    """Word tokens of ``text`` (Unicode NFKC, case kept; underscores split words)."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text or ""))


def tokens(text: str) -> list[str]:
    """Normalised tokens: NFKC, case-folded, words and numbers (``_`` and punctuation split)."""
    return [t.casefold() for t in raw_tokens(text)]


def normalize_ngram(text: str) -> str:
    """The canonical n-gram string of ``text``: its normalised tokens joined by one space."""
    return " ".join(tokens(text))


def ngrams(toks: Sequence[str], max_n: int = MAX_N) -> Iterable[str]:
    """All n-grams (1 ≤ n ≤ ``max_n``) of one token sequence, as space-joined strings."""
    for n in range(1, max_n + 1):
        for i in range(len(toks) - n + 1):
            yield " ".join(toks[i : i + n])


def object_fields(obj: DataObject) -> list[str]:
    """The separately tokenised fields of an object: n-grams never cross two of them."""
    if not obj.is_table:
        return [obj.title, obj.text]
    fields = [split_identifier(obj.title), obj.text]
    fields.extend(split_identifier(c) for c in obj.columns)
    for row in obj.rows:
        fields.extend(row)
    return fields


def object_tokens(obj: DataObject) -> list[str]:
    """All normalised tokens of an object (its BM25 document)."""
    return [t for f in object_fields(obj) for t in tokens(f)]


def title_key(title: str) -> str:
    """A title as a mention key: a trailing "(disambiguation)" dropped, normalised tokens."""
    return normalize_ngram(_PAREN.sub("", title))


def title_mentions(objects: Sequence[DataObject], stopwords: frozenset[str], max_len: int = 8) -> list[list[int]]:
    """For each object, the other passages whose title it mentions (§3.2.2 entity links).

    A mention is a token span equal to the passage's title key, starting with a capital
    letter or a digit in the original text (so "hell" the word does not link to "Hell");
    titles made only of stopwords, or longer than ``max_len`` tokens, are not linked.
    """
    by_title: dict[str, list[int]] = {}
    for j, o in enumerate(objects):
        if o.is_table:
            continue
        key = title_key(o.title)
        toks = key.split()
        if not toks or len(toks) > max_len or all(t in stopwords for t in toks):
            continue
        by_title.setdefault(key, []).append(j)
    if not by_title:
        return [[] for _ in objects]
    longest = max(len(k.split()) for k in by_title)
    out: list[list[int]] = []
    for i, o in enumerate(objects):
        found: set[int] = set()
        texts = [o.text] if not o.is_table else [c for r in o.rows for c in r]
        for text in texts:
            raw = raw_tokens(text)
            low = [t.casefold() for t in raw]
            for p in range(len(raw)):
                if not (raw[p][:1].isupper() or raw[p][:1].isdigit()):
                    continue
                for L in range(min(longest, len(raw) - p), 0, -1):
                    hit = by_title.get(" ".join(low[p : p + L]))
                    if hit:
                        found.update(j for j in hit if j != i)
                        break
        out.append(sorted(found))
    return out


# --- the index ---------------------------------------------------------------------------------

def content_key(objects: Sequence[DataObject], model_id: str, *, rows_per_chunk: int, passage_chars: int) -> str:
    """The cache key: a hash of the objects, the embedding model and the index settings."""
    h = hashlib.sha256()
    h.update(json.dumps({"v": INDEX_VERSION, "model": model_id, "rows": rows_per_chunk, "chars": passage_chars}).encode())
    for o in objects:
        h.update(json.dumps(o.to_json(), sort_keys=True, ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()[:24]


def default_cache_dir() -> Path:
    """``$ATOMGRAPH_ARM_CACHE``, else ``$XDG_CACHE_HOME/atomgraph/arm-index`` (``~/.cache``)."""
    env = os.environ.get("ATOMGRAPH_ARM_CACHE")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "atomgraph" / "arm-index"


@dataclass
class ArmIndex:
    """N-gram trie + postings, BM25 and chunk embeddings over ``objects`` (see module doc)."""

    objects: list[DataObject]
    trie: "object"  # marisa_trie.Trie
    post_indptr: np.ndarray
    post_indices: np.ndarray
    bm25: "object"  # bm25s.BM25
    chunk_objects: np.ndarray  # chunk row -> object index
    chunk_vectors: np.ndarray  # (chunks, dim), L2-normalised
    mentions: list[list[int]]  # object -> passages whose title it mentions
    embeddings: "object"  # langchain Embeddings, for queries
    model_id: str
    key: str = ""

    # -- construction --------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        objects: Sequence[DataObject],
        *,
        embeddings=None,
        cache_dir: str | Path | None = None,
        rows_per_chunk: int = 20,
        passage_chars: int = 2000,
        use_cache: bool = True,
        dense: bool = True,
    ) -> "ArmIndex":
        """Build the index, or load it from ``cache_dir`` (default :func:`default_cache_dir`)
        when the same objects were indexed with the same embedding model before.
        ``dense=False``: no embedding model and no chunk vectors (BM25 and n-grams only; what
        ``retrieve --method bm25`` needs)."""
        from atomgraph.embeddings import embedding_id, embedding_model

        objects = list(objects)
        if not objects:
            raise AtomgraphError("cannot index an empty set of objects")
        emb = embedding_model(embeddings) if dense else None
        model_id = embedding_id(emb) if dense else "none (no dense vectors)"
        key = content_key(objects, model_id, rows_per_chunk=rows_per_chunk, passage_chars=passage_chars)
        folder = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        where = folder / key
        if use_cache and (where / "meta.json").is_file():
            try:
                index = cls._load(where, objects, emb, model_id, key)
                index.cache_path = where
                return index
            except Exception as exc:  # noqa: BLE001 - a damaged cache is rebuilt, never fatal
                log.warning("ARM index cache %s unreadable (%s); rebuilding", where, exc)
        index = cls._build(objects, emb, model_id, key, rows_per_chunk, passage_chars)
        if use_cache:
            try:
                index._save(where)
                index.cache_path = where
            except OSError as exc:
                log.warning("cannot write the ARM index cache to %s (%s)", where, exc)
        return index

    @classmethod
    def _build(cls, objects, emb, model_id, key, rows_per_chunk, passage_chars) -> "ArmIndex":
        import bm25s
        import marisa_trie

        postings: dict[str, list[int]] = {}
        docs: list[list[str]] = []
        for i, o in enumerate(objects):
            seen: set[str] = set()
            for f in object_fields(o):
                seen.update(ngrams(tokens(f)))
            for g in seen:
                postings.setdefault(g, []).append(i)
            docs.append(object_tokens(o))
        trie = marisa_trie.Trie(postings.keys())
        indptr = np.zeros(len(trie) + 1, dtype=np.int64)
        lists: list[list[int]] = [[] for _ in range(len(trie))]
        for g, ids in postings.items():
            lists[trie[g]] = ids
        indptr[1:] = np.cumsum([len(x) for x in lists])
        indices = np.fromiter((i for x in lists for i in x), dtype=np.int32, count=int(indptr[-1]))

        bm25 = bm25s.BM25()
        bm25.index([d or [""] for d in docs], show_progress=False)

        chunks: list[Chunk] = [c for o in objects for c in chunk_object(o, rows_per_chunk=rows_per_chunk, passage_chars=passage_chars)]
        pos = {o.id: i for i, o in enumerate(objects)}
        chunk_objects = np.array([pos[c.object_id] for c in chunks], dtype=np.int32)
        vectors = _embed(emb, [c.text for c in chunks]) if emb is not None else np.zeros((len(chunks), 0), np.float32)
        mentions = title_mentions(objects, stopwords())
        return cls(list(objects), trie, indptr, indices, bm25, chunk_objects, vectors, mentions, emb, model_id, key)

    def _save(self, where: Path) -> None:
        with atomic_dir(where) as tmp:
            self.trie.save(str(tmp / "ngrams.marisa"))
            np.savez(tmp / "arrays.npz", indptr=self.post_indptr, indices=self.post_indices,
                     chunk_objects=self.chunk_objects, chunk_vectors=self.chunk_vectors)
            self.bm25.save(str(tmp / "bm25"), show_progress=False)
            (tmp / "mentions.json").write_text(json.dumps(self.mentions))
            (tmp / "meta.json").write_text(json.dumps({"version": INDEX_VERSION, "model": self.model_id,
                                                       "objects": len(self.objects), "key": self.key}))

    @classmethod
    def _load(cls, where: Path, objects, emb, model_id, key) -> "ArmIndex":
        import bm25s
        import marisa_trie

        meta = json.loads((where / "meta.json").read_text())
        if meta.get("version") != INDEX_VERSION or meta.get("model") != model_id or meta.get("objects") != len(objects):
            raise ValueError("cache metadata does not match")
        trie = marisa_trie.Trie()
        trie.load(str(where / "ngrams.marisa"))
        arrays = np.load(where / "arrays.npz")
        bm25 = bm25s.BM25.load(str(where / "bm25"), show_progress=False)
        mentions = json.loads((where / "mentions.json").read_text())
        return cls(list(objects), trie, arrays["indptr"], arrays["indices"], bm25, arrays["chunk_objects"],
                   arrays["chunk_vectors"], mentions, emb, model_id, key)

    # -- n-grams ----------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.objects)

    @property
    def ids(self) -> list[str]:
        return [o.id for o in self.objects]

    def position(self, object_id: str) -> int:
        if not hasattr(self, "_pos"):
            self._pos = {o.id: i for i, o in enumerate(self.objects)}
        return self._pos[object_id]

    def has_ngram(self, ngram: str) -> bool:
        """Whether ``ngram`` (already canonical: :func:`normalize_ngram`) is a corpus n-gram."""
        return isinstance(ngram, str) and bool(ngram) and ngram in self.trie

    def ngram_objects(self, ngram: str) -> np.ndarray:
        """Indices of the objects containing ``ngram`` (empty when it is not a corpus n-gram)."""
        if not self.has_ngram(ngram):
            return np.empty(0, dtype=np.int32)
        k = self.trie[ngram]
        return self.post_indices[self.post_indptr[k] : self.post_indptr[k + 1]]

    def document_frequency(self, ngram: str) -> int:
        if not self.has_ngram(ngram):
            return 0
        k = self.trie[ngram]
        return int(self.post_indptr[k + 1] - self.post_indptr[k])

    def with_prefix(self, prefix: str, limit: int = 200) -> list[str]:
        """Up to ``limit`` corpus n-grams starting with ``prefix`` (a trie prefix lookup)."""
        out = []
        for g in self.trie.iterkeys(prefix):
            out.append(g)
            if len(out) >= limit:
                break
        return out

    @property
    def unigrams(self) -> list[str]:
        """The corpus vocabulary (1-grams), for fuzzy matching."""
        if not hasattr(self, "_unigrams"):
            self._unigrams = [g for g in self.trie.iterkeys() if " " not in g]
        return self._unigrams

    # -- scores -----------------------------------------------------------------------------

    def bm25_scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every object for a bag of query tokens (zeros for an empty query)."""
        toks = [t for t in query_tokens if t]
        if not toks:
            return np.zeros(len(self.objects), dtype=np.float32)
        return np.asarray(self.bm25.get_scores(toks), dtype=np.float32)[: len(self.objects)]

    def embed_query(self, text: str) -> np.ndarray:
        """The normalised query vector (cached per text; :meth:`prime_queries` fills it in batch)."""
        cache = self.__dict__.setdefault("_query_cache", {})
        vec = cache.get(text)
        if vec is None:
            vec = _embed(self.embeddings, [text or " "], query=True)[0]
            if len(cache) < 100_000:
                cache[text] = vec
        return vec

    def prime_queries(self, texts: Sequence[str]) -> None:
        """Embed many query texts in one batch (evaluation runs), filling the query cache."""
        cache = self.__dict__.setdefault("_query_cache", {})
        todo = [t for t in dict.fromkeys(texts) if t not in cache]
        if todo:
            for t, v in zip(todo, _embed(self.embeddings, [t or " " for t in todo], query=True)):
                cache[t] = v

    def dense_scores(self, text_or_vector) -> np.ndarray:
        """Cosine similarity of every object to a query: the best of its chunks (Appendix D.2)."""
        q = self.embed_query(text_or_vector) if isinstance(text_or_vector, str) else np.asarray(text_or_vector)
        sims = self.chunk_vectors @ q.astype(np.float32)
        out = np.full(len(self.objects), -1.0, dtype=np.float32)
        np.maximum.at(out, self.chunk_objects, sims)
        return out

    def database_members(self, database: str) -> list[int]:
        """Positions of the tables of ``database``."""
        if not hasattr(self, "_by_db"):
            by: dict[str, list[int]] = {}
            for i, o in enumerate(self.objects):
                if o.is_table and o.database is not None:
                    by.setdefault(o.database, []).append(i)
            self._by_db = by
        return self._by_db.get(database, [])

    def nearest_objects(self, p: int, n: int) -> list[int]:
        """The ``n`` objects whose (mean-chunk) vectors are closest to object ``p``'s."""
        sims = self.object_vectors @ self.object_vectors[p]
        n = min(n, len(sims))
        top = np.argpartition(-sims, n - 1)[:n] if n < len(sims) else np.arange(len(sims))
        return [int(i) for i in top[np.argsort(-sims[top], kind="stable")]]

    @property
    def object_vectors(self) -> np.ndarray:
        """One normalised vector per object (mean of its chunks), for semantic compatibility."""
        if not hasattr(self, "_obj_vecs"):
            dim = self.chunk_vectors.shape[1]
            acc = np.zeros((len(self.objects), dim), dtype=np.float32)
            np.add.at(acc, self.chunk_objects, self.chunk_vectors)
            norms = np.linalg.norm(acc, axis=1, keepdims=True)
            self._obj_vecs = acc / np.where(norms == 0, 1, norms)
        return self._obj_vecs


def _embed(emb, texts: list[str], *, query: bool = False) -> np.ndarray:
    """Normalised float32 vectors of ``texts`` (sentence-transformers fast path when present)."""
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    encode = getattr(emb, "encode", None)
    if callable(encode):
        vecs = np.asarray(encode(texts), dtype=np.float32)
    elif query:
        vecs = np.asarray([emb.embed_query(t) for t in texts], dtype=np.float32)
    else:
        vecs = np.asarray(emb.embed_documents(texts), dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.where(norms == 0, 1, norms)


def stopwords() -> frozenset[str]:
    """English stopwords (bm25s' list) plus question words, case-folded."""
    from bm25s.stopwords import STOPWORDS_EN

    extra = {"what", "which", "who", "whom", "whose", "when", "where", "why", "how", "many", "much", "did", "does",
             "do", "is", "was", "were", "are", "has", "have", "had", "show", "find", "give",
             "return", "also", "both", "same", "s", "from", "than", "each", "all", "any", "its", "his", "her",
             "their", "whom", "i", "we", "you", "me", "us", "our", "can", "could", "would", "should", "been", "being"}
    return frozenset({w.casefold() for w in STOPWORDS_EN} | extra)
