"""The package reads top-down: each floor imports only floors below it (any import statement, lazy ones too).

floor 0  atomgraph.errors, atomgraph.injection, state/   data types, errors, the evidence fence (no imports)
floor 1  the foundation: settings, methods, models, backends, local engine, cache, files, text, embeddings;
         lc (a compiled method graph's LangChain face: MethodGraph.as_tool / as_retriever)
floor 2  prompts/, tools/                               stages and constraints; knowledge sources and indexes
floor 3  nodes/                                         node functions, the method runtime
floor 4  graphs/                                        graph builders
floor 5  evaluation/                                    datasets, metrics, runs, reports, recipes
floor 6  the application: CLI, commands, demo, the retrievers over ARM and KAR³, rendering; test doubles

Test doubles (``atomgraph.testing``) are imported by no module of the package
but the CLI's explicit ``--model scripted:RULES.json``.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = {"atomgraph": "atomgraph", "state": "atomgraph.state", "nodes": "atomgraph.nodes", "graphs": "atomgraph.graphs",
         "tools": "atomgraph.tools", "prompts": "atomgraph.prompts", "evaluation": "atomgraph.evaluation"}
APPLICATION = ("atomgraph.cli", "atomgraph.commands", "atomgraph.demo_pack", "atomgraph.demo_run", "atomgraph.retrievers", "atomgraph.render", "atomgraph.testing", "atomgraph.warmup")
FLOORS = (("atomgraph.errors", 0), ("atomgraph.injection", 0), ("atomgraph.state", 0), ("atomgraph.prompts", 2), ("atomgraph.tools", 2),
          ("atomgraph.nodes", 3), ("atomgraph.graphs", 4), ("atomgraph.evaluation", 5))
# Known exceptions, each with its reason; the list only shrinks.
ALLOWED = {
    ("atomgraph.local.trie", "atomgraph.tools.arm_index"): "the trie reuses ARM's n-gram tokenisation (one tokeniser)",
    ("atomgraph.evaluation.runner", "atomgraph.testing"): "--model scripted:RULES.json, asked for by name",
    ("atomgraph.state.atomr", "atomgraph.prompts.atomr.stages"): "AtomRContext validates prompt_pack against the packs",
}


def _floor(module: str) -> int | None:
    if not module.startswith("atomgraph"):
        return None
    if any(module == a or module.startswith(a + ".") for a in APPLICATION):
        return 6
    for prefix, floor in FLOORS:
        if module == prefix or module.startswith(prefix + "."):
            return floor
    return 1


def _imports() -> list[tuple[str, str]]:
    found = []
    for folder, package in ROOTS.items():
        for path in (REPO / folder).rglob("*.py"):
            rel = path.relative_to(REPO / folder).with_suffix("")
            module = ".".join([package, *rel.parts]).removesuffix(".__init__")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    found += [(module, node.module)]
                elif isinstance(node, ast.Import):
                    found += [(module, a.name) for a in node.names]
    return found


def test_each_floor_imports_only_floors_below():
    upward = sorted({(a, b) for a, b in _imports() if _floor(b) is not None and _floor(b) > _floor(a)} - set(ALLOWED))
    assert upward == [], "\n".join(f"{a} (floor {_floor(a)}) imports {b} (floor {_floor(b)})" for a, b in upward)


def test_the_allowed_exceptions_still_exist():
    """An exception that is gone leaves the list (so the list shows what is left to mend)."""
    present = set(_imports())
    assert [pair for pair in ALLOWED if pair not in present] == []


def test_no_network_client_under_prompts():
    for path in (REPO / "prompts").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for client in ("import httpx", "import requests", "urllib.request", "import socket"):
            assert client not in text, f"{path.relative_to(REPO)} uses {client}"
