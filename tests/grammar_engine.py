"""A real grammar engine at token level for tests and benchmarks: llguidance (vLLM's ``guidance``
structured-outputs backend) over the bundled Gemma-3 vocabulary, read through llama.cpp."""

from __future__ import annotations

import warnings


class BundledTokenizer:
    """The bundled model's vocabulary as llguidance sees it (``.tok``); the vocabulary-only
    llama.cpp model it reads through stays alive with this object."""

    def __init__(self):
        import llama_cpp
        from llguidance.llamacpp import lltokenizer_from_vocab

        from atomgraph.local.engine import bundled_model_path

        self._llm = llama_cpp.Llama(model_path=str(bundled_model_path()), vocab_only=True, verbose=False)
        with warnings.catch_warnings():  # llguidance reads each token's attributes by a deprecated name
            warnings.simplefilter("ignore", DeprecationWarning)
            self.tok = lltokenizer_from_vocab(llama_cpp.llama_model_get_vocab(self._llm.model))


def matcher(tok, gbnf: str):
    """An llguidance matcher of ``gbnf`` (GBNF read as Lark); a grammar it cannot read fails here."""
    import llguidance

    m = llguidance.LLMatcher(tok, llguidance.gbnf_to_lark.any_to_lark(gbnf), log_level=0)
    assert not m.is_error(), m.get_error()
    return m


def accepts(tok, gbnf: str, text: str) -> bool:
    """``text``, tokenized, is a whole sentence of ``gbnf``."""
    m = matcher(tok, gbnf)
    return m.consume_tokens(tok.tokenize_str(text)) and not m.is_error() and m.is_accepting()
