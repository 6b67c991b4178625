"""A token trie over a set of allowed strings (corpus n-grams), for constrained decoding.

>>> trie = TokenTrie.build(["marie curie", "nobel prize", "nobel prize in physics"], engine)
>>> trie.next_tokens([])                         # token ids that can start an allowed string
>>> trie.is_complete(engine.tokenize("nobel prize"))
True

**Two spellings.** A list of n-grams is decoded as ``(first, second, third)``; Gemma-style
tokenizers glue the space to the next word (``", paris"`` is ``[",", " paris"]``), so every
string has a *first* spelling (right after the opening delimiter, no leading space) and a
*following* spelling (after the separator, with its leading space). Both live in the trie;
``first=`` picks one.

**Token sequences.** A string is split on spaces into words (ARM's n-grams are lower-case words
joined by one space) and its tokens are the concatenation of each word's tokens (the first word
bare or spaced, the others spaced). Tokenising the distinct words instead of every n-gram makes
a 10^6-n-gram trie cost a few seconds, not minutes; the sequence decodes to exactly the string.

**Storage.** Each spelling is one ``int32`` matrix (max tokens × strings), columns sorted
lexicographically, rows padded with -1, so the strings under a prefix are one contiguous range
found with a binary search per token; children are the distinct ids in the next row of that
range. About ``4 × max_len`` bytes per string and spelling (see ``nbytes``); no per-node objects.

**Persistence.** :meth:`TokenTrie.build` keys the trie by a hash of the (sorted, distinct) strings
and the tokenizer's identity (:attr:`LocalEngine.tokenizer_id`), saves it under
``cache_dir/<key>/`` (``.npz``), and loads it back next time; a damaged cache is rebuilt.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from atomgraph.files import atomic_dir

if TYPE_CHECKING:
    from atomgraph.local.engine import LocalEngine

log = logging.getLogger(__name__)

TRIE_VERSION = 1
MAX_TOKENS = 12  # longer strings (0.05% of HotpotQA's n-grams for Gemma) are left out, counted in ``dropped``


def default_trie_dir() -> Path:
    from atomgraph.environment import env_value

    return Path(env_value("ATOMGRAPH_TRIE_DIR") or Path.home() / ".cache" / "atomgraph" / "tries")


class _Spelling:
    """Sorted, padded token sequences (column-major) with prefix-range lookups."""

    def __init__(self, cols: np.ndarray):
        self.cols = np.ascontiguousarray(cols, dtype=np.int32)  # (max_len, n)
        self.max_len, self.n = self.cols.shape
        self._root: np.ndarray | None = None

    def range(self, prefix: Sequence[int]) -> tuple[int, int]:
        lo, hi = 0, self.n
        for j, t in enumerate(prefix):
            if j >= self.max_len or lo >= hi:
                return lo, lo
            col = self.cols[j, lo:hi]
            a = int(np.searchsorted(col, t, "left"))
            b = int(np.searchsorted(col, t, "right"))
            lo, hi = lo + a, lo + b
        return lo, hi

    def children(self, prefix: Sequence[int]) -> np.ndarray:
        if not prefix and self._root is not None:
            return self._root
        d = len(prefix)
        lo, hi = self.range(prefix)
        if lo >= hi or d >= self.max_len:
            return np.empty(0, dtype=np.int32)
        col = self.cols[d, lo:hi]
        keep = np.empty(len(col), dtype=bool)
        keep[0] = True
        np.not_equal(col[1:], col[:-1], out=keep[1:])
        out = col[keep]
        out = out[out >= 0]
        if not prefix:
            self._root = out
        return out

    def complete(self, prefix: Sequence[int]) -> bool:
        d = len(prefix)
        if d == 0:
            return False
        lo, hi = self.range(prefix)
        if lo >= hi:
            return False
        return d == self.max_len or int(self.cols[d, lo]) == -1  # -1 pads sort first


def _sorted_cols(seqs: list[list[int]], max_len: int) -> np.ndarray:
    n = len(seqs)
    rows = np.full((n, max(max_len, 1)), -1, dtype=np.int32)
    for i, s in enumerate(seqs):
        rows[i, : len(s)] = s
    order = np.lexsort(rows.T[::-1])  # lexsort: last key is primary
    rows = rows[order]
    if n > 1:  # distinct sequences only
        dup = np.all(rows[1:] == rows[:-1], axis=1)
        rows = rows[np.r_[True, ~dup]]
    return np.ascontiguousarray(rows.T)


class TokenTrie:
    """Allowed strings as token sequences in two spellings (see the module docstring)."""

    def __init__(self, first: np.ndarray, following: np.ndarray, *, key: str = "", count: int = 0,
                 dropped: int = 0, build_seconds: float = 0.0):
        self._first = _Spelling(first)
        self._following = _Spelling(following)
        self.key = key
        self.count = count  # distinct strings
        self.dropped = dropped  # strings left out (empty, or longer than MAX_TOKENS tokens)
        self.build_seconds = build_seconds
        self.loaded_from_cache = False

    # --- queries --------------------------------------------------------------------------

    def _sp(self, first: bool) -> _Spelling:
        return self._first if first else self._following

    def next_tokens(self, prefix_ids: Sequence[int], *, first: bool = True) -> np.ndarray:
        """Sorted distinct token ids that extend ``prefix_ids`` towards an allowed string."""
        return self._sp(first).children(list(prefix_ids))

    def is_complete(self, prefix_ids: Sequence[int], *, first: bool = True) -> bool:
        """Whether ``prefix_ids`` spells a whole allowed string."""
        return self._sp(first).complete(list(prefix_ids))

    def __len__(self) -> int:
        return self.count

    def __repr__(self) -> str:  # stable: part of a cached reply's key
        return f"TokenTrie(key={self.key!r}, count={self.count})"

    @property
    def nbytes(self) -> int:
        return int(self._first.cols.nbytes + self._following.cols.nbytes)

    @property
    def max_len(self) -> int:
        return max(self._first.max_len, self._following.max_len)

    # --- construction ---------------------------------------------------------------------

    @classmethod
    def build(cls, strings: Iterable[str], engine: "LocalEngine", *, cache_dir: str | Path | None = None,
              use_cache: bool = True) -> "TokenTrie":
        """The trie of ``strings`` for ``engine``'s tokenizer, loaded from the cache when the same
        strings were built with the same tokenizer before (``use_cache=False``: build, don't save)."""
        distinct = sorted({" ".join(s.split()) for s in strings if isinstance(s, str)} - {""})
        key = trie_key(distinct, engine.tokenizer_id)
        where = (Path(cache_dir).expanduser() if cache_dir is not None else default_trie_dir()) / key
        if use_cache and (where / "meta.json").is_file():
            try:
                trie = cls.load(where)
                if trie.key == key:
                    trie.loaded_from_cache = True
                    return trie
            except Exception as exc:  # noqa: BLE001 - a damaged cache is rebuilt, never fatal
                log.warning("token trie cache %s unreadable (%s); rebuilding", where, exc)
        trie = cls.from_strings(distinct, engine, key=key)
        if use_cache:
            try:
                trie.save(where)
            except OSError as exc:
                log.warning("cannot write the token trie cache to %s (%s)", where, exc)
        return trie

    @classmethod
    def from_strings(cls, strings: Sequence[str], engine: "LocalEngine", *, key: str = "") -> "TokenTrie":
        t0 = time.perf_counter()
        words = sorted({w for s in strings for w in s.split(" ")})
        bare = dict(zip(words, engine.tokenize_many(words)))
        spaced = dict(zip(words, engine.tokenize_many(" " + w for w in words)))
        first: list[list[int]] = []
        following: list[list[int]] = []
        dropped = 0
        for s in strings:
            ws = s.split(" ")
            rest: list[int] = []
            ok = True
            for w in ws[1:]:
                t = spaced[w]
                if t is None:
                    ok = False
                    break
                rest += t
            a, b = bare[ws[0]], spaced[ws[0]]
            if not ok or a is None or b is None or not (a + rest) or len(b) + len(rest) > MAX_TOKENS \
                    or len(a) + len(rest) > MAX_TOKENS:
                dropped += 1
                continue
            first.append(a + rest)
            following.append(b + rest)
        n = len(first)
        f = _sorted_cols(first, max((len(x) for x in first), default=1))
        g = _sorted_cols(following, max((len(x) for x in following), default=1))
        return cls(f, g, key=key, count=n, dropped=dropped, build_seconds=time.perf_counter() - t0)

    def save(self, where: str | Path) -> None:
        with atomic_dir(where) as tmp:
            np.savez(tmp / "trie.npz", first=self._first.cols, following=self._following.cols)
            (tmp / "meta.json").write_text(json.dumps({
                "version": TRIE_VERSION, "key": self.key, "count": self.count, "dropped": self.dropped,
            }))

    @classmethod
    def load(cls, where: str | Path) -> "TokenTrie":
        where = Path(where)
        meta = json.loads((where / "meta.json").read_text())
        if meta.get("version") != TRIE_VERSION:
            raise ValueError(f"trie version {meta.get('version')} != {TRIE_VERSION}")
        with np.load(where / "trie.npz") as arrays:
            return cls(arrays["first"], arrays["following"], key=meta["key"], count=meta["count"],
                       dropped=meta.get("dropped", 0))


def trie_key(distinct_sorted: Sequence[str], tokenizer_id: str) -> str:
    h = hashlib.sha256(f"v{TRIE_VERSION}|{tokenizer_id}|".encode())
    for s in distinct_sorted:
        h.update(s.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()[:20]


def corpus_ngrams(objects) -> set[str]:
    """ARM's corpus n-grams (1–3 normalised words per field) of ``objects``: the strings an ARM
    trie allows. Uses :mod:`atomgraph.tools.arm_index`'s own tokenisation."""
    from atomgraph.tools.arm_index import ngrams, object_fields, tokens

    out: set[str] = set()
    for o in objects:
        for f in object_fields(o):
            out.update(ngrams(tokens(f)))
    return out


class TrieUnion:
    """Several tries read as one (the strings of any of them): what the beam decoder needs of a
    trie (:meth:`next_tokens`, :meth:`is_complete`). ARM's constrained decomposition decodes its
    keywords under the question's own n-grams (a small trie built per question) and the
    collection's (the shared corpus trie) without merging the two."""

    def __init__(self, *tries: "TokenTrie"):
        self.tries = tuple(tries)

    def next_tokens(self, prefix_ids: Sequence[int], *, first: bool = True) -> np.ndarray:
        parts = [t.next_tokens(prefix_ids, first=first) for t in self.tries]
        parts = [p for p in parts if len(p)]
        if len(parts) == 1:
            return parts[0]
        return np.unique(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int32)

    def is_complete(self, prefix_ids: Sequence[int], *, first: bool = True) -> bool:
        return any(t.is_complete(prefix_ids, first=first) for t in self.tries)

    def __len__(self) -> int:  # an upper bound: strings in two tries count twice
        return sum(len(t) for t in self.tries)

    def __repr__(self) -> str:  # stable: part of a cached reply's key
        return "TrieUnion(" + ", ".join(repr(t) for t in self.tries) + ")"
