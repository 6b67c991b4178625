"""CPU per text of the bundled all-MiniLM-L6-v2 on onnxruntime, for graph variants of its export.

Each variant is an ONNX file run by :class:`atomgraph.onnx_embeddings.OnnxMiniLM` (its tokenizer, padding
to the batch's longest text, mean pooling, normalisation); the variants run alternately, round by round
(the order rotated), on the same texts from the shared data, so the machine's other work falls on all of
them alike. Workloads: single questions (one text a call, as a question's query), batches of 16 questions
(a run's query batch), batches of 64 of questions, ARM units (passage sentences) and passages (truncated
at 256 tokens). CPU: the process's user + system seconds per text (onnxruntime runs one thread,
``OMP_NUM_THREADS=1``); the machine's load average is recorded beside them. Each variant's vectors are
compared with sentence-transformers' on the shared corpora (least cosine per corpus).

    python -m benchmarks.bench_onnx_embedding [--rounds 3] [--variant NAME=PATH ...] [--out FILE]

Without ``--variant``: the export in the model folder, encoded as the installed code encodes (``sub-batches``:
sorted by token count, sub-batches padded to their own longest) and as before (``padded to the batch``: each
batch of 64 padded to its longest text); ``--variant NAME=PATH`` adds an ONNX file, encoded both ways.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ATOMGRAPH_SHARED_DATA", str(ROOT.parent / "shared" / "data")))
if not DATA.is_dir():
    DATA = Path("/work/shared/data")


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def texts(per: int = 64) -> dict[str, list[str]]:
    r = DATA / "retrieval"
    questions = [q["question"] for name in ("hotpotqa", "musique") for q in _rows(r / name / "questions.jsonl")[: per // 2]]
    objects = _rows(r / "hotpotqa" / "objects.jsonl")
    sentences = [s.strip() for o in objects[:: max(1, len(objects) // per)]
                 for s in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9])", o["text"]) if s.strip()][:per]
    passages = [f"{o['title']}\n{o['text']}" for name in ("hotpotqa", "musique", "spider")
                for o in _rows(r / name / "objects.jsonl")[:: 97][: per // 3 + 1]][:per]
    return {"questions": questions[:per], "sentences": sentences, "passages": passages}


def corpora(per: int = 120) -> dict[str, list[str]]:
    """The cosine check's texts: as ``bench_cold_start --runtimes`` takes them."""
    out = {}
    for name in ("hotpotqa", "musique", "spider"):
        rows = _rows(DATA / "retrieval" / name / "objects.jsonl")
        out[name] = [f"{o['title']}\n{o['text']}"[:2000] for o in rows[:: max(1, len(rows) // per)]][:per]
    rows = json.loads((DATA / "hipporag" / "2wikimultihopqa_corpus.json").read_text())
    out["2wikimultihopqa"] = [f"{p['title']}\n{p['text']}" for p in rows[:: max(1, len(rows) // per)]][:per]
    out["hotpotqa questions"] = [q["question"] for q in _rows(DATA / "retrieval" / "hotpotqa" / "questions.jsonl")][:per]
    return out


class PaddedToBatch:
    """The encoding before sub-batching (for the comparison): texts ordered by characters, batches of
    ``batch_size`` padded to their longest text, on the same session and tokenizer as ``model``."""

    def __init__(self, model):
        self.model = model

    def encode(self, texts: list[str], batch_size: int = 64):
        import numpy as np

        m = self.model
        out = np.zeros((len(texts), m.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for start in range(0, len(texts), batch_size):
            idx = order[start:start + batch_size]
            enc = m.tokenizer.encode_batch([texts[i].strip() for i in idx])
            width = max(len(e.ids) for e in enc)
            ids = np.full((len(idx), width), m.pad_id, dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, e in enumerate(enc):
                ids[row, : len(e.ids)] = e.ids
                mask[row, : len(e.ids)] = 1
            hidden = m.session.run(None, {"ids": ids, "mask": mask, "tt": np.zeros_like(ids)})[0]
            pooled = (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
            out[idx] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return out


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def workloads(model, t: dict[str, list[str]]) -> dict[str, float]:
    """CPU-ms per text of each workload for ``model`` (an OnnxMiniLM)."""
    out = {}

    def run(name, batches):
        c = _cpu()
        n = 0
        for b in batches:
            model.encode(b, batch_size=64)
            n += len(b)
        out[name] = 1000 * (_cpu() - c) / n

    q = t["questions"]
    run("single question", [[x] for x in q])
    run("16 questions", [q[i:i + 16] for i in range(0, len(q), 16)])
    run("64 questions", [q])
    run("64 sentences", [t["sentences"]])
    run("64 passages", [t["passages"]])
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--variant", action="append", default=[], help="NAME=PATH of an ONNX file (repeatable)")
    ap.add_argument("--no-cosine", action="store_true", help="skip the check against sentence-transformers")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "onnx_embedding.json"))
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import numpy as np

    from atomgraph.embeddings import SentenceTransformerEmbeddings, embedding_model
    from atomgraph.onnx_embeddings import OnnxMiniLM
    from atomgraph.settings import Settings

    emb = embedding_model(Settings())
    emb.load()
    models = {"padded to the batch": PaddedToBatch(emb.model), "sub-batches": emb.model}
    for v in args.variant:
        name, _, path = v.partition("=")
        models[name] = OnnxMiniLM(path, emb.location)
        models[f"padded to the batch, {name}"] = PaddedToBatch(models[name])
    t = texts()
    for m in models.values():
        workloads(m, {k: v[:2] for k, v in t.items()})  # warm each session once
    per: dict[str, dict[str, list[float]]] = {n: {} for n in models}
    loads = [os.getloadavg()[0]]
    names = list(models)
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            for w, ms in workloads(models[name], t).items():
                per[name].setdefault(w, []).append(round(ms, 3))
        loads.append(os.getloadavg()[0])
        print(f"round {r + 1}: load {loads[-1]:.2f}", {n: {w: v[-1] for w, v in d.items()} for n, d in per.items()}, flush=True)
    result: dict = {"made": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rounds": args.rounds,
                    "load_1min": [round(x, 2) for x in loads], "cpu_ms_per_text": per,
                    "median": {n: {w: float(np.median(v)) for w, v in d.items()} for n, d in per.items()}}
    if not args.no_cosine:
        st = SentenceTransformerEmbeddings(emb.location, emb.model_id)
        cos: dict[str, dict[str, float]] = {n: {} for n in models}
        for corpus, xs in corpora().items():
            ref = st.encode(xs)
            for n, m in models.items():
                cos[n][corpus] = round(float((ref * m.encode(xs)).sum(1).min()), 7)
        result["least_cosine_to_sentence_transformers"] = cos
    for n in models:
        print(n, result["median"][n], result.get("least_cosine_to_sentence_transformers", {}).get(n))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
