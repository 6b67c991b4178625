"""The bundled all-MiniLM-L6-v2 on onnxruntime: sentence-transformers' vectors without importing torch.

The default embedding model (``settings.embedding_runtime = "onnxruntime"``) runs the bundled
weights as an ONNX graph: the bundled tokenizer (``tokenizers``), the exported transformer
(``onnxruntime``), mean pooling over the attention mask and L2 normalisation in numpy — the three
modules of the sentence-transformers model (``modules.json``: Transformer, mean Pooling, Normalize),
truncated at its ``max_seq_length`` (256 tokens). Loading it imports those three packages only; a
fresh process has its first vector in about 2 s where sentence-transformers (``torch``,
``transformers``) takes 15–30 s on a busy machine (docs/reference/cold-start.md).

- **Export, once.** No package holds the ONNX file: the first process that needs it exports it from
  the bundled weights (``torch.onnx`` with the ``onnx`` package, both in the ``embeddings`` extra)
  into the model folder (``ATOMGRAPH_MODEL_DIR``, default ``~/.cache/atomgraph/models``), under
  ``onnx/all-MiniLM-L6-v2-<sha256 of the weights>/``, written to a temporary name and renamed into
  place. It is checked there against sentence-transformers on :data:`PROBES` (one padded batch:
  a question, a passage past the truncation length, accented and CJK text, an empty string): a
  least cosine below :data:`MIN_COSINE` keeps it out, recorded in ``export.json`` with the reason,
  so a later process does not export again for the same torch and onnx versions.
- **Re-use.** Every later process loads the saved file and encodes two probes, comparing them with
  the vectors recorded at export: a file that does not load or no longer gives them is exported
  again, once. The weights' sha256 is kept beside the exports with the file's size and modification
  time, so a later process hashes nothing.
- **Fallback, said.** Where the file cannot be made (``onnxruntime``, ``tokenizers`` or ``onnx``
  absent, the export failing or its check) the model runs on sentence-transformers, and a warning
  of the ``atomgraph.embeddings`` logger says why, once per process; a run never fails for it.

Both runtimes give the same vectors (least cosine 0.9999999 on the shared corpora), so both have
the same :func:`~atomgraph.embeddings.embedding_id`: a collection indexed by one is queried by the other.
"""

from __future__ import annotations

import importlib.util
import io
import json
import logging
import os
import threading
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from atomgraph.embeddings import SentenceTransformerEmbeddings, load_sentence_transformer

log = logging.getLogger("atomgraph.embeddings")

EXPORT_VERSION = 1
MIN_COSINE = 0.999  # an export whose vectors fall below this on a probe is not used
CHECK_ON_LOAD = 2  # probes a later process encodes to check the saved file
PROBES = (
    "Which city was the birthplace of the physicist who proposed the theory of general relativity?",
    "Paris",
    " ".join(f"Sentence {i} of a long passage about the Rhine, its bridges and the towns on its banks."
             for i in range(40)),  # past max_seq_length: truncated
    "Ça s'écrit « Zürich » en français, 東京 en japonais.",
    "",
    "  leading and trailing spaces  ",
    "SELECT name FROM singer WHERE age > 30 ORDER BY name",
    "1969 Apollo 11 landed on 20 July; Armstrong stepped out at 02:56 UTC.",
)

_LOADED: dict[str, tuple[Any, str, bool]] = {}  # bundled folder -> (model, what runs it, fell back)
_LOCK = threading.Lock()


class OnnxMiniLM:
    """The exported transformer with the bundled tokenizer, mean pooling and normalisation
    (imports ``onnxruntime``, ``tokenizers`` and ``numpy`` only)."""

    def __init__(self, onnx_path: str | Path | bytes, location: str | Path):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        location = Path(location)
        config = json.loads((location / "sentence_bert_config.json").read_text(encoding="utf-8"))
        self.tokenizer = Tokenizer.from_file(str(location / "tokenizer.json"))
        self.tokenizer.enable_truncation(int(config.get("max_seq_length") or 256))
        self.tokenizer.no_padding()  # each sub-batch is padded to its own longest text (:meth:`encode`)
        self.pad_id = self.tokenizer.token_to_id("[PAD]") or 0
        options = ort.SessionOptions()
        options.intra_op_num_threads = _threads()
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only
        model = onnx_path if isinstance(onnx_path, bytes) else str(onnx_path)
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        self.dimension = int(self.session.get_outputs()[0].shape[-1])

    def encode(self, texts: list[str], batch_size: int = 64):
        """A float32 array of shape ``(len(texts), dimension)``, rows L2-normalised. The texts are
        tokenized unpadded, ordered by token count and run in sub-batches of at most ``batch_size``
        texts (:func:`sub_batches`), each padded to its own longest text: the transformer's CPU goes
        with the padded tokens it runs, one thread at about a quarter of a millisecond each."""
        import numpy as np

        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        enc = self.tokenizer.encode_batch([t.strip() for t in texts])
        lengths = [len(e.ids) for e in enc]
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])
        for start, end in sub_batches([lengths[i] for i in order], batch_size):
            idx = order[start:end]
            ids = np.full((len(idx), lengths[idx[0]]), self.pad_id, dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, i in enumerate(idx):
                ids[row, : lengths[i]] = enc[i].ids
                mask[row, : lengths[i]] = 1
            hidden = self.session.run(None, {"ids": ids, "mask": mask, "tt": np.zeros_like(ids)})[0]
            pooled = (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
            out[idx] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return out


CALL_TOKENS = 10  # a call's own cost, in tokens' worth (about 2.5 CPU-ms a call against 0.25 a token)
CALL_TOKEN_LIMIT = 1024  # padded tokens a call runs at most (larger calls cost more per token)


def sub_batches(lengths: list[int], batch_size: int = 64) -> list[tuple[int, int]]:
    """The ``[start, end)`` sub-batches of texts whose token counts ``lengths`` are in descending order,
    with the least cost: each costs :data:`CALL_TOKENS` plus its texts times its longest; at most
    ``batch_size`` texts and :data:`CALL_TOKEN_LIMIT` padded tokens each (a single text: any length)."""
    n = len(lengths)
    best = [0.0] + [float("inf")] * n  # best[j]: the least cost of the first j texts
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(j - 1, max(-1, j - 1 - batch_size), -1):  # the last sub-batch is [i, j)
            padded = (j - i) * lengths[i]
            if padded > CALL_TOKEN_LIMIT and j - i > 1:
                break
            cost = best[i] + CALL_TOKENS + padded
            if cost < best[j]:
                best[j], cut[j] = cost, i
    spans, j = [], n
    while j > 0:
        spans.append((cut[j], j))
        j = cut[j]
    return spans[::-1]


class OnnxEmbeddings(SentenceTransformerEmbeddings):
    """The bundled sentence-transformers model run on onnxruntime where its export is there or can
    be made, else on sentence-transformers (said once); the same vectors and ``model_id`` either way."""

    @property
    def model(self):
        return load_onnx(self.location)[0]

    def load(self, announce: Callable[[str], None] | None = None) -> None:
        load_onnx(self.location, announce)

    @property
    def runtime(self) -> str:
        """What runs the model, and why: ``onnxruntime (...)`` or ``sentence-transformers (...)``."""
        return load_onnx(self.location)[1]

    @property
    def fell_back(self) -> bool:
        """Whether the model runs on sentence-transformers because the export could not be used."""
        return load_onnx(self.location)[2]

    def runtime_record(self) -> dict[str, str]:
        _, runtime, fell_back = load_onnx(self.location)
        used, _, why = runtime.partition(" (")
        return {"model": self.model_id, "wanted": "onnxruntime", "used": used,
                "why": why[:-1] if why.endswith(")") else why}

    @property
    def dimension(self) -> int:
        model = self.model
        return model.dimension if isinstance(model, OnnxMiniLM) else super().dimension

    def encode(self, texts: list[str]):
        model = self.model
        if isinstance(model, OnnxMiniLM):
            return model.encode(list(texts), self.batch_size)
        return super().encode(texts)

    def __repr__(self) -> str:
        return f"<OnnxEmbeddings {self.model_id}>"


def load_onnx(location: str, announce: Callable[[str], None] | None = None) -> tuple[Any, str, bool]:
    """The model for the bundled folder ``location``, loaded once per process: ``(an OnnxMiniLM or
    the SentenceTransformer, what runs it and why, whether that is a fallback)``. ``announce`` is
    given a line before an export starts (it takes seconds)."""
    with _LOCK:
        loaded = _LOADED.get(location)
        if loaded is None:
            model, note = _load(location, announce or (lambda line: None))
            if model is None:
                log.warning("embeddings: sentence-transformers (%s)", note)
                loaded = (load_sentence_transformer(location), f"sentence-transformers ({note})", True)
            else:
                log.debug("embeddings: onnxruntime (%s)", note)
                loaded = (model, f"onnxruntime ({note})", False)
            _LOADED[location] = loaded
        return loaded


def _load(location: str, announce: Callable[[str], None]) -> tuple[OnnxMiniLM | None, str]:
    missing = _absent("onnxruntime", "tokenizers", "numpy")
    if missing:
        return None, f"{', '.join(missing)} not installed"
    folder = export_folder(Path(location))
    record = _read_json(folder / "export.json")
    again = ""
    if record and record.get("rejected") and record.get("versions") == _export_versions():
        return None, f"{str(record['rejected'])[:300]}; recorded in {folder / 'export.json'}: delete it to export again"
    if record and not record.get("rejected") and record.get("version") == EXPORT_VERSION:
        try:
            model = OnnxMiniLM(folder / "model.onnx", location)
            least = _least_cosine(model.encode(list(PROBES[:CHECK_ON_LOAD])), record["probes"][:CHECK_ON_LOAD])
            if least >= MIN_COSINE:
                return model, f"exported {record.get('made', '?')} to {folder}"
            again = f"the saved export gave other vectors (cosine {least:.4f}); "
        except Exception as exc:  # noqa: BLE001 - a damaged file is exported again
            again = f"the saved export did not load ({type(exc).__name__}); "
        log.warning("embeddings: %sexporting it again", again)
    absent = _absent("onnx", "torch", "sentence_transformers")
    if absent:
        return None, (f"{again}no ONNX export of the bundled weights, and {', '.join(absent)} "
                      "not installed to make one (pip install 'atomgraph[embeddings]')")
    announce(f"loading the embedding model's ONNX export: exporting it once, into {folder} ...")
    try:
        record = export_onnx(location, folder)
    except _Rejected as exc:
        return None, exc.record["rejected"]
    except OSError as exc:  # the cache folder: not recorded there, tried again next time
        return None, f"{again}the ONNX export could not be written ({type(exc).__name__}: {str(exc)[:200]})"
    except Exception as exc:  # noqa: BLE001 - any export failure leaves sentence-transformers, recorded
        why = f"the ONNX export failed ({type(exc).__name__}: {str(exc)[:200]})"
        try:
            _write_json(folder / "export.json", {"version": EXPORT_VERSION, "versions": _export_versions(), "rejected": why})
        except OSError:
            pass
        return None, f"{again}{why}"
    try:
        model = OnnxMiniLM(folder / "model.onnx", location)
    except Exception as exc:  # noqa: BLE001
        return None, f"the fresh ONNX export did not load ({type(exc).__name__})"
    return model, (f"{again}exported now to {folder} in {record['export_s']:.1f} s, "
                   f"least cosine {record['least_cosine']:.7f} to sentence-transformers on {len(PROBES)} probes")


def export_folder(location: Path) -> Path:
    """Where the export of the weights in ``location`` lives: keyed by their sha256."""
    from atomgraph.local.packaged import model_dir

    return model_dir() / "onnx" / f"all-MiniLM-L6-v2-{_weights_sha256(location)[:16]}"


def _weights_sha256(location: Path) -> str:
    """The sha256 of the weights and config, hashed once and kept with their sizes and times."""
    from atomgraph.files import atomic_file, sha256_file
    from atomgraph.local.packaged import model_dir

    files = [location / n for n in ("model.safetensors", "pytorch_model.bin", "config.json") if (location / n).is_file()]
    seen = [[str(f), f.stat().st_size, f.stat().st_mtime_ns] for f in files]
    stamp_path = model_dir() / "onnx" / "weights.json"
    stamps = _read_json(stamp_path) or {}
    entry = stamps.get(str(location))
    if isinstance(entry, dict) and entry.get("files") == seen and isinstance(entry.get("sha256"), str):
        return entry["sha256"]
    import hashlib

    digest = hashlib.sha256("\n".join(sha256_file(f) for f in files).encode()).hexdigest()
    stamps[str(location)] = {"files": seen, "sha256": digest}
    try:
        stamp_path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(stamp_path) as fh:
            fh.write(json.dumps(stamps).encode())
    except OSError:  # a read-only cache folder: hashed again next time
        pass
    return digest


def export_onnx(location: str, folder: Path) -> dict:
    """Export the transformer of the bundled model in ``location`` to ``folder/model.onnx`` and check it
    against sentence-transformers on :data:`PROBES`; ``folder/export.json`` records the outcome. A
    check that fails keeps the file out and records ``rejected`` with the reason."""
    import warnings

    import numpy as np
    import torch

    from atomgraph.files import atomic_file

    t0 = time.perf_counter()
    st = load_sentence_transformer(location)
    bert = st[0].auto_model.eval()

    class Hidden(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, ids, mask, tt):
            return self.bert(input_ids=ids, attention_mask=mask, token_type_ids=tt).last_hidden_state

    ids = torch.ones((2, 8), dtype=torch.long)
    mask = torch.ones((2, 8), dtype=torch.long)
    mask[1, 5:] = 0  # a padded row: no shortcut for an all-ones mask is traced into the graph
    axes = {0: "batch", 1: "tokens"}
    buffer = io.BytesIO()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's warnings are about shapes the export makes dynamic
        torch.onnx.export(Hidden(), (ids, mask, torch.zeros_like(ids)), buffer, input_names=["ids", "mask", "tt"],
                          output_names=["h"], dynamic_axes={"ids": axes, "mask": axes, "tt": axes, "h": axes},
                          opset_version=17, dynamo=False)
    reference = st.encode(list(PROBES), batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                          show_progress_bar=False)
    got = OnnxMiniLM(buffer.getvalue(), location).encode(list(PROBES))
    least = float((np.asarray(reference) * got).sum(1).min())
    record: dict[str, Any] = {"version": EXPORT_VERSION, "versions": _export_versions(),
                              "made": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "export_s": round(time.perf_counter() - t0, 2), "least_cosine": round(least, 7)}
    folder.mkdir(parents=True, exist_ok=True)
    if least < MIN_COSINE:
        record["rejected"] = (f"the ONNX export's vectors differ from sentence-transformers' (least cosine "
                              f"{least:.4f} < {MIN_COSINE} on {len(PROBES)} probes)")
        _write_json(folder / "export.json", record)
        raise _Rejected(record)
    record["probes"] = [[round(float(x), 7) for x in v] for v in reference[:CHECK_ON_LOAD]]
    with atomic_file(folder / "model.onnx") as fh:
        fh.write(buffer.getvalue())
    _write_json(folder / "export.json", record)  # after the file is in place: the record of a checked export
    return record


class _Rejected(Exception):
    def __init__(self, record: dict):
        super().__init__(record["rejected"])
        self.record = record


def _least_cosine(vectors, recorded: list[list[float]]) -> float:
    import numpy as np

    ref = np.asarray(recorded, dtype=np.float32)
    ref /= np.maximum(np.linalg.norm(ref, axis=1, keepdims=True), 1e-12)
    return float((np.asarray(vectors)[: len(ref)] * ref).sum(1).min())


def _absent(*modules: str) -> list[str]:
    """Those of ``modules`` that cannot be imported (found without importing them)."""
    out = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            out.append(name)
    return out


def _export_versions() -> dict[str, str]:
    out = {}
    for dist in ("torch", "onnx", "transformers"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = ""
    return out


def _threads() -> int:
    """onnxruntime's threads: ``OMP_NUM_THREADS`` where set (as torch reads it), else its own default."""
    try:
        return max(0, int(os.environ.get("OMP_NUM_THREADS", "0")))
    except ValueError:
        return 0


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_json(path: Path, data: dict) -> None:
    from atomgraph.files import atomic_file

    with atomic_file(path) as fh:
        fh.write(json.dumps(data).encode())
