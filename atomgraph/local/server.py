"""llama-cpp-python's OpenAI-compatible server (``python -m llama_cpp.server``, the ``server`` extra)
serving a GGUF model on 127.0.0.1, started and stopped by a ``with`` block: what the tests and the
served-grammar benchmark run every method against.

>>> with llama_cpp_server() as url:               # the bundled Gemma-3-270M; url = "http://127.0.0.1:PORT/v1"
...     settings = Settings(model="gemma-270m", openai_base_url=url, openai_api_key="not-needed")

The same server by hand (docs/guides/served-models.md)::

    python -m llama_cpp.server --model MODEL.gguf --model_alias NAME --host 127.0.0.1 --port 8000
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

from atomgraph.errors import ConfigError

ALIAS = "gemma-270m"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def llama_cpp_server(model_path: str | os.PathLike | None = None, *, alias: str = ALIAS, n_ctx: int = 4096,
                     threads: int = 1, batch_threads: int = 2, chat_format: str | None = "gemma",
                     start_s: float = 180.0, log: str | os.PathLike | None = None) -> Iterator[str]:
    """``python -m llama_cpp.server`` with ``model_path`` (default: the bundled Gemma-3-270M) on a free
    port of 127.0.0.1, as model ``alias``; yields its ``/v1`` base URL once ``/models`` answers, and
    stops it on leaving. ``chat_format``: the server's chat template (``gemma``: the bundled model's;
    None: the one in the GGUF). Its output goes to ``log`` (default: discarded). ConfigError when the
    ``server`` extra is missing or the server does not start within ``start_s`` seconds."""
    import httpx

    from atomgraph.extras import require

    for module in ("llama_cpp.server.app", "uvicorn"):
        require(module, "server", "llama-cpp-python's server")
    if model_path is None:
        from atomgraph.local.engine import bundled_model_path

        model_path = bundled_model_path()
    port = free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path), "--model_alias", alias,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
           "--n_threads_batch", str(batch_threads), "--verbose", "False"]
    if chat_format:
        cmd += ["--chat_format", chat_format]
    out = Path(log).open("w") if log else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "OMP_NUM_THREADS": "1"})
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + start_s
        while True:
            if proc.poll() is not None:
                raise ConfigError(f"llama_cpp.server exited with status {proc.returncode} before it served")
            try:
                if httpx.get(url + "/models", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise ConfigError(f"llama_cpp.server did not answer at {url} within {start_s:g} s")
            time.sleep(0.2)  # polling the port: the server signals readiness no other way
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log:
            out.close()
