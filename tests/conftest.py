"""Shared fixtures. Data from ../shared/data is read in place; tests that need it skip
cleanly (with a message) where the folder is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
# One OpenMP thread per process: `make test` runs two xdist workers on a 2-CPU machine, and each
# worker's torch (MiniLM embeddings) would otherwise run two intra-op threads that spin against the
# other worker's (four busy threads on two CPUs). Set before torch is imported; inherited by the
# CLI, notebook and `langgraph dev` subprocesses the tests start. Measured (`pytest -n 2 --dist
# loadfile`, idle 2-CPU machine): 576 s → 496 s wall, user CPU 924 s → 771 s, the same
# 1,742 passed. The local model's threads are its own setting (ATOMGRAPH_LOCAL_THREADS).
os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("ATOMGRAPH_SHARED_DATA", REPO.parent / "shared" / "data"))


# The longest files first (seconds of test time in one `--durations=0` run, 2 CPUs), so
# `make test` (`pytest -n 2 --dist loadfile --no-loadscope-reorder`: xdist's own reordering is by
# number of tests) hands them out at the start and the run does not end with one worker finishing a
# long file while the other idles (longest-first scheduling). Files run whole on one worker in any
# order, so no test can depend on this; the rest keep their collection order.
LONGEST_FIRST = ("test_hostile_matrix.py",  # ~160 s
                 "test_local_contract.py",  # ~105 s
                 "test_llama_server.py",  # ~100 s (one CPU: the llama.cpp server and the run)
                 "test_notebooks.py",  # ~95 s
                 "test_langgraph_dev.py",  # ~80 s
                 "test_local_model.py",  # ~80 s
                 "test_lc_standard.py",  # ~60 s
                 "test_kar3_index.py",  # ~40 s
                 "test_sync_clients.py",  # ~37 s
                 "test_local_engine_speed.py")  # ~29 s


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: within a file, order kept


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} is absent")
    return SHARED_DATA


@pytest.fixture(scope="session")
def _session_caches(tmp_path_factory) -> Path:
    """Build caches (ARM unit caches, token tries) shared by the tests of one session (one xdist
    worker), never the developer's ``~/.cache``: a test's outcome cannot depend on what an earlier
    run, or another worker at the same moment, left there."""
    return tmp_path_factory.mktemp("caches")


@pytest.fixture(scope="session", autouse=True)
def _session_model_dir(_session_caches):
    """The model folder (the embedding model's ONNX export, assembled models) is the session's from the
    start, module fixtures included: the export is made once per session, never in ``~/.cache``."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATOMGRAPH_MODEL_DIR", str(_session_caches / "models"))
        yield


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path, monkeypatch, _session_caches, tmp_path_factory):
    """No test reads the developer's own model keys, config file or caches. The tests' data
    folders (``data_dirs``: what a run's context may name) are pytest's temporary folders and
    the shared data folder."""
    for key in list(os.environ):
        if key.startswith("ATOMGRAPH_") and key != "ATOMGRAPH_SHARED_DATA":
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("ATOMGRAPH_DATA_DIRS", f"{tmp_path_factory.getbasetemp()},{SHARED_DATA}")
    monkeypatch.setenv("ATOMGRAPH_ARM_CACHE", str(_session_caches / "arm-index"))
    monkeypatch.setenv("ATOMGRAPH_TRIE_DIR", str(_session_caches / "tries"))
    monkeypatch.setenv("ATOMGRAPH_MODEL_DIR", str(_session_caches / "models"))
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SERPAPI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("ATOMGRAPH_CACHE_PATH", str(tmp_path / "llm_cache.sqlite"))
    monkeypatch.setenv("ATOMGRAPH_CHROMA_PATH", str(tmp_path / "chroma"))
    monkeypatch.chdir(tmp_path)


def reset_local_history(engine) -> None:
    """Empty an in-process engine's KV cache and its saved prompt-prefix states: the next call
    evaluates its prompt from scratch, as in a fresh process. Greedy replies of the local model
    depend on what the context held before (llama.cpp evaluates a prompt in other batches when a
    prefix is reused), so a test that needs a fixed reply must not inherit the previous test's."""
    with engine.lock:
        engine._states.clear()
        engine.llm.n_tokens = 0
        engine.llm._ctx.kv_cache_clear()


@pytest.fixture(autouse=True)
def _fresh_local_model_history():
    """Every test starts with the local model's history empty, whichever tests ran before it in
    this process (or this xdist worker): the engine stays loaded, its cached states do not."""
    import sys

    module = sys.modules.get("atomgraph.local.engine")
    if module is not None:
        for engine in list(getattr(module, "_ENGINES", {}).values()):
            reset_local_history(engine)
    yield
