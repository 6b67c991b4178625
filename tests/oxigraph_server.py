"""A pytest plugin: a real Oxigraph SPARQL server on 127.0.0.1, loaded with the test KG.

Use it with ``pytest_plugins = ["tests.oxigraph_server"]`` (or import the fixture) and ask for
``oxigraph_endpoint``: the server's query URL. The server binary comes with the ``oxigraph``
pip package (``<venv>/bin/oxigraph``); it is started once per session on a free port, its
data loaded with ``oxigraph load`` into a temporary folder, and stopped at the end.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

TEST_KG = Path(__file__).parent / "fixtures" / "wikidata_test.ttl"


def oxigraph_binary() -> str | None:
    here = Path(sys.executable).parent / "oxigraph"
    if here.is_file():
        return str(here)
    return shutil.which("oxigraph")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class OxigraphServer:
    url: str  # the SPARQL query endpoint
    base: str
    process: subprocess.Popen

    def count_triples(self) -> int:
        query = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"
        req = urllib.request.Request(
            self.url + "?" + urllib.parse.urlencode({"query": query}),
            headers={"Accept": "text/csv"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            return int(resp.read().decode().splitlines()[1])


def start_oxigraph(data: Path, workdir: Path, timeout: float = 30.0) -> OxigraphServer:
    binary = oxigraph_binary()
    if binary is None:
        pytest.skip("the oxigraph server binary is not installed (pip install oxigraph)")
    location = workdir / "store"
    subprocess.run([binary, "load", "--location", str(location), "--file", str(data)], check=True,
                   capture_output=True, timeout=120)
    port = free_port()
    log = open(workdir / "oxigraph.log", "wb")
    proc = subprocess.Popen(
        [binary, "serve", "--location", str(location), "--bind", f"127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    server = OxigraphServer(url=f"{base}/query", base=base, process=proc)
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"oxigraph exited with {proc.returncode}: {(workdir / 'oxigraph.log').read_text()}")
        try:
            server.count_triples()
            return server
        except OSError:
            if time.monotonic() > deadline:
                stop_oxigraph(server)
                raise RuntimeError("oxigraph did not become ready in time")
            time.sleep(0.1)


def stop_oxigraph(server: OxigraphServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=10)


@pytest.fixture(scope="session")
def oxigraph_server(tmp_path_factory) -> OxigraphServer:
    server = start_oxigraph(TEST_KG, tmp_path_factory.mktemp("oxigraph"))
    yield server
    stop_oxigraph(server)


@pytest.fixture(scope="session")
def oxigraph_endpoint(oxigraph_server) -> str:
    return oxigraph_server.url
