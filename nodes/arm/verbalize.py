"""Drafts in words (Appendix C of the ARM paper): what the decoder reads.

Each object is serialised as in Appendix A (:func:`atomgraph.tools.objects.serialize`) but
keeps only its ``n`` rows or sentences most similar to the question (embedding similarity,
kept in their original order). Connections follow: joinable columns between tables
("column X in A connects with column Y in B"), and entity links ("A mentions B: '…'").
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from atomgraph.nodes.arm.compatibility import column_compatibility, sentences
from atomgraph.tools.arm_index import ArmIndex, title_key, tokens
from atomgraph.tools.objects import DataObject, serialize

MAX_UNITS = 200  # rows or sentences of one object compared with the question


def _encode(index: ArmIndex, texts: list[str]) -> np.ndarray:
    emb = index.embeddings
    encode = getattr(emb, "encode", None)
    vecs = np.asarray(encode(texts) if callable(encode) else emb.embed_documents(texts), dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.where(norms == 0, 1, norms)


MEMO_OBJECTS = 4096  # objects whose unit vectors are kept per index (drafts and questions share objects)


def unit_vectors(index: ArmIndex, obj: DataObject, units: list[str]) -> np.ndarray:
    """``_encode(index, units)`` of one object, encoded once per index (a draft's objects recur
    in the other drafts and in other questions' drafts); the same call, so the same vectors."""
    memo = index.__dict__.setdefault("_verbalize_units", {})
    vecs = memo.get(obj.id)
    if vecs is None or len(vecs) != len(units):
        vecs = _encode(index, units)
        if len(memo) >= MEMO_OBJECTS:
            memo.pop(next(iter(memo)))
        memo[obj.id] = vecs
    return vecs


def top_units(index: ArmIndex, obj: DataObject, question: str, n: int) -> list[int]:
    """Positions of the ``n`` rows (table) or sentences (passage) most similar to the question."""
    units = [" | ".join(r) for r in obj.rows] if obj.is_table else sentences(obj.text)
    units = units[:MAX_UNITS]
    if len(units) <= n:
        return list(range(len(units)))
    try:
        sims = unit_vectors(index, obj, units) @ index.embed_query(question)
    except Exception:  # noqa: BLE001 - fall back to word overlap when the encoder fails
        q = set(tokens(question))
        sims = np.array([len(q & set(tokens(u))) for u in units], dtype=float)
    return sorted(int(i) for i in np.argsort(-sims, kind="stable")[:n])


def verbalize_object(index: ArmIndex, obj: DataObject, question: str, n: int) -> str:
    keep = top_units(index, obj, question, n)
    if obj.is_table:
        body = serialize(obj, [obj.rows[i] for i in keep]) if obj.rows else serialize(obj)
    else:
        sents = sentences(obj.text)
        text = " ".join(sents[i] for i in keep) if len(sents) > n else obj.text
        body = f"Document name: {obj.title}\nDocument content: {text}"
    return f"Object id: {obj.id}\n{body}"


def _mention_sentence(a: DataObject, b: DataObject) -> str | None:
    key = title_key(b.title)
    for s in sentences(a.text) if not a.is_table else [" | ".join(r) for r in a.rows]:
        if key and key in " ".join(tokens(s)):
            return s
    return None


def connection(index: ArmIndex, a: DataObject, b: DataObject) -> str:
    """One connection between two draft objects, in words."""
    if a.is_table and b.is_table:
        best = max(((column_compatibility(a, x, b, y), x, y) for x in a.columns for y in b.columns),
                   default=(0.0, "", ""))
        if best[0] > 0:
            return f"column {best[1]} in {a.title} connects with column {best[2]} in {b.title}"
    for x, y in ((a, b), (b, a)):
        s = _mention_sentence(x, y)
        if s:
            return f"{x.title} includes \"{s[:300]}\" which mentions {y.title}"
    return f"{a.title} and {b.title} are related"


def verbalize_draft(index: ArmIndex, ids: Sequence[str], links: Sequence[dict], question: str, n: int) -> str:
    """The draft as the decoder reads it: objects, then connections among them."""
    objs = [index.objects[index.position(i)] for i in ids]
    parts = [verbalize_object(index, o, question, n) for o in objs]
    inside = set(ids)
    lines = [connection(index, index.objects[index.position(l["a"])], index.objects[index.position(l["b"])])
             for l in links if l.get("a") in inside and l.get("b") in inside]
    text = "\n\n".join(parts)
    if lines:
        text += "\n\nConnections:\n" + "\n".join(f"- {ln}" for ln in lines)
    return text
