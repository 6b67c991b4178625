"""HTTP clients that follow the event loop using them, for OpenAI-compatible chat models.

langchain-openai gives every ``ChatOpenAI`` without an ``http_async_client`` of its own one
process-wide ``httpx.AsyncClient`` per base URL and timeout (an ``lru_cache``). Its pooled
connections belong to the event loop that opened them; once that loop is closed, the next
``asyncio.run`` (a second ``run_eval`` in a script, the next test, a notebook helper) reuses or
closes them and the call fails with ``RuntimeError: Event loop is closed`` — a fresh graph built
from the settings included, since the cache is global.

:class:`LoopLocalAsyncClient` is an ``httpx.AsyncClient`` that sends each request through a
client of the running loop's own (made on first use in that loop, dropped with the loop), and
:func:`loop_safe` gives a ChatOpenAI such a client: the models built from the settings
(:func:`atomgraph.models.chat_model_named`) and a ChatOpenAI passed to a graph
(:func:`atomgraph.models.resolve_models`, on a copy) get one. A model with an
``http_async_client`` of its caller's is left as it is; sync calls keep the sync client (bound
to no loop).
"""

from __future__ import annotations

import asyncio
import functools
import os
import sys
import weakref
from typing import Any


def _httpx() -> Any:
    """The httpx library the installed openai SDK takes (``httpx2`` for openai>=3, else ``httpx``)."""
    try:
        from langchain_openai._compat import httpx as lib
    except ImportError:
        import httpx as lib
    return lib


_MADE: "weakref.WeakSet[Any]" = weakref.WeakSet()  # every LoopLocalAsyncClient, for closing_clients


@functools.lru_cache(maxsize=None)
def tls_context(lib: Any) -> Any:
    """The library's default TLS context (its CA store; ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` as set
    when first asked), built once a process and shared by every loop's client: loading the CA store
    costs 15-30 ms of CPU, which each ``asyncio.run`` of a script, each ``ask`` and each evaluation
    run would otherwise pay again. None where the library has no ``create_ssl_context`` (each client
    then builds its own, as by default)."""
    make = getattr(lib, "create_ssl_context", None)
    return make() if callable(make) else None


@functools.lru_cache(maxsize=None)
def _client_class(lib: Any) -> type:
    class LoopLocalAsyncClient(lib.AsyncClient):
        """An ``AsyncClient`` whose requests go through one client per running event loop."""

        def __init__(self, base_url: str | None = None, timeout: Any = None) -> None:
            # its own transport never sends (send goes through the loop's client): an idle one, no TLS
            # context built for it (loading the CA store costs ~30 ms of CPU per model built)
            super().__init__(timeout=timeout if timeout is not None else lib.Timeout(600.0), follow_redirects=True,
                             transport=lib.AsyncBaseTransport())
            self._base_url_arg = base_url
            self._timeout_arg = timeout
            self._per_loop: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]" = weakref.WeakKeyDictionary()
            _MADE.add(self)

        def _make(self) -> Any:
            shared = tls_context(lib)
            tls = {} if shared is None else {"verify": shared}
            try:  # langchain-openai's own client class (the SDK's connection limits and defaults), where it has one
                from langchain_openai.chat_models._client_utils import _AsyncHttpxClientWrapper

                client = _AsyncHttpxClientWrapper(base_url=self._base_url_arg or os.environ.get("OPENAI_BASE_URL")
                                                  or "https://api.openai.com/v1", timeout=self._timeout_arg, **tls)
                if isinstance(client, lib.AsyncClient):
                    return client
            except Exception:  # another version: a plain client with the SDK's defaults
                pass
            return lib.AsyncClient(timeout=self._timeout_arg if self._timeout_arg is not None else lib.Timeout(600.0),
                                   follow_redirects=True, **tls)

        def for_running_loop(self) -> Any:
            loop = asyncio.get_running_loop()
            client = self._per_loop.get(loop)
            if client is None or client.is_closed:
                client = self._per_loop[loop] = self._make()
            return client

        async def send(self, request: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            return await self.for_running_loop().send(request, **kwargs)

        async def aclose(self) -> None:
            client = self._per_loop.pop(asyncio.get_running_loop(), None)
            if client is not None:
                await client.aclose()
            await super().aclose()

    return LoopLocalAsyncClient


def LoopLocalAsyncClient(base_url: str | None = None, timeout: Any = None) -> Any:  # noqa: N802 - a class's factory
    """An ``AsyncClient`` (of the SDK's httpx library) that sends each request through a client of
    the running event loop's own."""
    return _client_class(_httpx())(base_url, timeout)


async def closing_clients(aw: Any) -> Any:
    """Await ``aw``, then close the running loop's clients of every :class:`LoopLocalAsyncClient`
    (what an ``asyncio.run`` of the kit's own runs: ``run_eval``, the demo). A client left open
    when its loop ends is closed by the garbage collector later, on whichever loop runs then,
    where its connections cannot close ("Task exception was never retrieved ... Event loop is
    closed" on stderr in a script's second run)."""
    try:
        return await aw
    finally:
        loop = asyncio.get_running_loop()
        for made in list(_MADE):
            client = made._per_loop.pop(loop, None)
            if client is not None and not client.is_closed:
                try:
                    await client.aclose()
                except Exception:  # noqa: BLE001 - a connection that cannot close cleanly is dropped
                    pass


def is_loop_local(client: Any) -> bool:
    return type(client).__name__ == "LoopLocalAsyncClient" and hasattr(client, "for_running_loop")


def _openai_base() -> type | tuple:
    # ChatOpenAI exists only once langchain_openai is imported: no import here (it takes a second)
    return getattr(sys.modules.get("langchain_openai.chat_models.base"), "BaseChatOpenAI", ())


def loop_safe(model: Any, *, copy: bool = False) -> Any:
    """``model`` with a :class:`LoopLocalAsyncClient` under its async OpenAI client when it is a
    ChatOpenAI (or subclass) using langchain-openai's shared default client; anything else is
    returned as it is. ``copy``: change a copy, not the caller's object."""
    if not isinstance(model, _openai_base()) or getattr(model, "http_async_client", None) is not None:
        return model
    root = getattr(model, "root_async_client", None)
    if root is None or is_loop_local(getattr(root, "_client", None)):
        return model
    client = LoopLocalAsyncClient(getattr(model, "openai_api_base", None), getattr(model, "request_timeout", None))
    target = model.model_copy() if copy else model
    target.root_async_client = root.copy(http_client=client)
    target.async_client = target.root_async_client.chat.completions
    return target


__all__ = ["LoopLocalAsyncClient", "closing_clients", "is_loop_local", "loop_safe"]
