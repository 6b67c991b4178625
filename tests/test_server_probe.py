"""The server probe as servers are deployed: a vLLM started with ``--api-key`` answers its
``/models`` listing only to the configured key; the probe sends it. A probe that fails is
reported (the reason reaches the call's record and a warning), never silently free decoding."""

from __future__ import annotations

import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from langchain_openai import ChatOpenAI

from atomgraph.backends import backend, probe_server

KEY = "sk-test-0123"


class KeyedServer:
    """``GET /v1/models`` on 127.0.0.1, owned by vLLM, for the right bearer key only."""

    def __init__(self):
        self.auth: list[str | None] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                outer.auth.append(self.headers.get("Authorization"))
                if self.headers.get("Authorization") != f"Bearer {KEY}":
                    body = b'{"error": "Unauthorized"}'
                    self.send_response(401)
                else:
                    body = json.dumps({"object": "list", "data": [{"id": "m", "owned_by": "vllm"}]}).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    probe_server.cache_clear()
    s = KeyedServer()
    yield s
    s.close()
    probe_server.cache_clear()


def test_the_probe_sends_the_configured_api_key(server):
    model = ChatOpenAI(model="m", base_url=server.url, api_key=KEY)
    kind, why = backend(model)
    assert (kind, why) == ("vllm", f"vLLM at {server.url}: structured_outputs")
    assert server.auth == [f"Bearer {KEY}"]


def test_a_refused_probe_is_reported_not_silently_free(server, caplog):
    model = ChatOpenAI(model="m", base_url=server.url, api_key="sk-wrong")
    with caplog.at_level(logging.WARNING, logger="atomgraph.backends"):
        kind, why = backend(model)
    assert kind == "other"
    assert "could not be probed" in why and "HTTP 401" in why and "set the decoding backend explicitly" in why
    assert "sk-wrong" not in why and "sk-wrong" not in caplog.text  # the key is never shown
    assert any("cannot probe" in r.getMessage() for r in caplog.records)
    # an explicit backend needs no probe
    assert backend(model, "vllm") == ("vllm", "set to 'vllm'")


def test_an_unreachable_server_is_reported():
    probe_server.cache_clear()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = ChatOpenAI(model="m", base_url=f"http://127.0.0.1:{port}/v1", api_key="x")
    kind, why = backend(model)
    assert kind == "other" and "could not be probed" in why and "ConnectError" in why
    probe_server.cache_clear()
