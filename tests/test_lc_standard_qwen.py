"""LangChain's standard integration suite (``ChatModelIntegrationTests``) over ``ChatLocalLlama``
with the instruction-tuned Qwen2.5-Coder-1.5B-Instruct (``local:qwen2.5-1.5b``), nothing marked
expected-to-fail: tools are offered through the model's own chat template and its calls read
from its replies (``atomgraph.local.chat``).

Slow (minutes on one thread), so it runs only when asked for and when the model is installed:
``make test-qwen`` (``ATOMGRAPH_QWEN_SUITE=1``, the ``qwen`` extra). Elsewhere — ``make test``,
CI's ``dev`` install — the module is skipped and says why."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("langchain_tests", reason="langchain-tests (the dev extra) is not installed")

QWEN = "qwen2.5-1.5b"


def _qwen_file() -> str:
    """The checked Qwen GGUF (resolved at collection, in the user's model folder: the tests'
    own settings point the model folder at an empty temporary one), or a module skip saying why."""
    if os.environ.get("ATOMGRAPH_QWEN_SUITE") != "1":
        pytest.skip("the Qwen standard suite takes minutes: run it with `make test-qwen` "
                    "(ATOMGRAPH_QWEN_SUITE=1 and the qwen extra)", allow_module_level=True)
    from atomgraph.errors import ConfigError
    from atomgraph.local.packaged import packaged_model, packaged_model_path, part_files

    try:
        part_files(packaged_model(QWEN))
        return str(packaged_model_path(QWEN))
    except ConfigError as exc:
        pytest.skip(f"the Qwen model is not installed: {exc}", allow_module_level=True)


QWEN_FILE = _qwen_file()

from langchain_tests.integration_tests import ChatModelIntegrationTests  # noqa: E402

from atomgraph.local.chat import ChatLocalLlama  # noqa: E402


class QwenChatLocalLlama(ChatLocalLlama):
    """ChatLocalLlama over the Qwen file with a default output cap that bounds the suite's time
    and still holds a tool call in the model's own format (about 30 tokens)."""

    model_path: str | None = QWEN_FILE
    model: str = f"local:{QWEN}"
    max_tokens: int = 64


class TestQwenChatLocalLlamaIntegration(ChatModelIntegrationTests):
    @property
    def chat_model_class(self) -> type[ChatLocalLlama]:
        return QwenChatLocalLlama

    @property
    def supports_json_mode(self) -> bool:
        return True
