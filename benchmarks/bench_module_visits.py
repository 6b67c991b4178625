"""How far one question travels through the code: project modules and functions a method visits.

One question through a method's graph (``graph.invoke``) with a scripted model and in-memory
knowledge, after one warm-up question, under ``sys.setprofile``: every Python call whose code lives
in the project (``atomgraph/ state/ nodes/ graphs/ tools/ prompts/ evaluation/``) is counted —
distinct modules, distinct functions, module switches (each time the project module in control
of a thread changes, by a call or a return), and A→B→A returns (control going from A to B and
straight back to A). A reader following the question
goes through these modules; fewer is easier to follow.

    python -m benchmarks.bench_module_visits [--methods atomr,kar3,arm,rag,self_ask] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from benchmarks.stats import write_result

REPO = Path(__file__).resolve().parents[1]
PROJECT = tuple(str(REPO / d) + os.sep for d in ("atomgraph", "state", "nodes", "graphs", "tools", "prompts",
                                                 "evaluation"))
QUESTION = "In which city did Werner Heisenberg's doctoral advisor die?"
PASSAGES = [
    ("Werner Heisenberg", "Werner Heisenberg was a German theoretical physicist. His doctoral advisor was Arnold "
                          "Sommerfeld."),
    ("Arnold Sommerfeld", "Arnold Sommerfeld was a German physicist. Sommerfeld died in Munich in 1951."),
    ("Munich", "Munich is the capital of Bavaria."),
]


def _module(filename: str) -> str | None:
    if not filename.startswith(PROJECT):
        return None
    return str(Path(filename).relative_to(REPO).with_suffix(""))


class Profiler:
    """Counts the project calls made while :attr:`active`, in every thread (graph nodes run on
    worker threads and the shared event loop's thread): install it before anything starts threads."""

    def __init__(self):
        self.active = False
        self.local = threading.local()
        self.lock = threading.Lock()
        self.reset()
        threading.setprofile(self.hook)
        sys.setprofile(self.hook)

    def reset(self) -> None:
        self.modules: Counter = Counter()
        self.functions: set[tuple[str, str]] = set()
        self.sequences: list[list[str]] = []  # per thread: the project module in control, each time it changes

    def _enter(self, mod: str | None) -> None:
        """The project module now in control of this thread (calls and returns both move it)."""
        if not (mod and self.active):
            return
        seq = getattr(self.local, "seq", None)
        if seq is None or getattr(self.local, "epoch", None) is not self.sequences:
            seq = self.local.seq = []
            self.local.epoch = self.sequences
            with self.lock:
                self.sequences.append(seq)
        if not seq or seq[-1] != mod:
            seq.append(mod)

    def hook(self, frame, event, arg):  # noqa: ARG002
        if event not in ("call", "return"):
            return
        stack = getattr(self.local, "stack", None)
        if stack is None:
            stack = self.local.stack = []
        if event == "call":
            mod = _module(frame.f_code.co_filename)
            stack.append(mod)
            if mod and self.active:
                with self.lock:
                    self.modules[mod] += 1
                    self.functions.add((mod, frame.f_code.co_name))
                self._enter(mod)
        elif stack:
            stack.pop()
            self._enter(next((m for m in reversed(stack) if m), None))

    def measure(self, run: Callable[[], Any]) -> dict:
        self.reset()
        self.active = True
        try:
            out = run()
        finally:
            self.active = False
        switches = sum(max(0, len(s) - 1) for s in self.sequences)
        aba = sum(1 for s in self.sequences for i in range(len(s) - 2) if s[i] == s[i + 2])
        return {"modules": len(self.modules), "functions": len(self.functions),
                "module_switches": switches, "a_b_a_returns": aba, "answer": (out or {}).get("answer"),
                "by_folder": dict(Counter(m.split(os.sep)[0] for m in self.modules)),
                "module_list": sorted(self.modules)}


def _atomr() -> Callable[[], Any]:
    from atomgraph.graphs.registry import build_method
    from atomgraph.testing import answer_reply, atomr_scripted_model
    from atomgraph.tools.memory_source import InMemorySource

    plan = {QUESTION: {"1. Who was the doctoral advisor of Werner Heisenberg?":
                       'Relate("Werner Heisenberg", "doctoral advisor")',
                       "2. In which city did [1] die?": 'Relate("[1]", "place of death")'}}
    model = atomr_scripted_model({QUESTION: {QUESTION: plan[QUESTION]}},
                                 answer=lambda stage, text: answer_reply("Munich" if "die" in text else "Sommerfeld"))
    graph = build_method("atomr", model=model, sources=[InMemorySource(PASSAGES, name="wikipedia")])
    return lambda: graph.invoke({"question": QUESTION})


def _kar3() -> Callable[[], Any]:
    from atomgraph.graphs.registry import build_method
    from atomgraph.settings import Settings
    from atomgraph.testing import kar3_scripted_model
    from atomgraph.tools.atom_source import AtomSource, atoms_from_settings
    folder = Path(tempfile.mkdtemp(prefix="bench-visits-"))
    settings = Settings(cache=False, chroma_path=str(folder / "chroma"), chroma_collection="visits",
                        data_dirs=[str(folder)])  # the corpus below: a graph input lies under data_dirs
    model = kar3_scripted_model(plans={QUESTION: [["Who was Heisenberg's doctoral advisor?"],
                                                  ["Where did Arnold Sommerfeld die?"]]}, answer="Munich")
    index_graph = build_method("kar3_index", model=model, settings=settings)
    corpus = folder / "corpus.json"
    corpus.write_text(json.dumps([{"title": t, "text": x} for t, x in PASSAGES]))
    index_graph.invoke({"inputs": [str(corpus)], "collection": "visits"})
    source: AtomSource = atoms_from_settings(settings)
    graph = build_method("kar3", model=model, sources=[source], settings=settings)
    return lambda: graph.invoke({"question": QUESTION})


def _arm() -> Callable[[], Any]:
    from atomgraph.graphs.arm import build_arm_graph
    from atomgraph.testing import ScriptedChatModel
    from atomgraph.tools.arm_index import ArmIndex
    from atomgraph.tools.objects import DataObject

    index = ArmIndex.build([DataObject(f"p{i}", "passage", t, x) for i, (t, x) in enumerate(PASSAGES)],
                           use_cache=False)
    model = ScriptedChatModel(stages={
        "arm_decompose": '["Heisenberg doctoral advisor", "died city"]',
        "arm_align": lambda prompt: prompt.split("Options:\n", 1)[1].splitlines()[0],
        "arm_draft": '{"add": [], "drop": []}',
        "arm_verify": '{"reasoning": "advisor, then where he died", "objects": ["p0", "p1"]}',
        "arm_answer": "Sommerfeld died in Munich.\nSo the answer is: Munich",
    })
    graph = build_arm_graph(model=model, objects=index)
    return lambda: graph.invoke({"question": QUESTION})


def _baseline(name: str) -> Callable[[], Callable[[], Any]]:
    def make() -> Callable[[], Any]:
        from atomgraph.graphs.registry import build_method
        from atomgraph.testing import ScriptedChatModel
        from atomgraph.tools.memory_source import InMemorySource

        model = ScriptedChatModel(default="Follow up: Who was Heisenberg's advisor?\nSo the answer is: Munich")
        graph = build_method(name, model=model, sources=[InMemorySource(PASSAGES, name="wikipedia")])
        return lambda: graph.invoke({"question": QUESTION})
    return make


SETUPS: dict[str, Callable[[], Callable[[], Any]]] = {
    "atomr": _atomr, "kar3": _kar3, "arm": _arm, "rag": _baseline("rag"), "self_ask": _baseline("self_ask"),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default=",".join(SETUPS))
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "module_visits.json"))
    args = ap.parse_args(argv)
    os.environ.setdefault("ATOMGRAPH_CACHE", "false")
    results = {}
    profiler = Profiler()
    for name in [m.strip() for m in args.methods.split(",") if m.strip()]:
        run = SETUPS[name]()
        run()  # warm-up: imports, lazily built models and sources
        results[name] = profiler.measure(run)
        r = results[name]
        print(f"{name:10s} modules {r['modules']:3d}  functions {r['functions']:4d}  switches {r['module_switches']:5d}"
              f"  A→B→A {r['a_b_a_returns']:5d}  answer {r['answer']!r}")
    write_result({"question": QUESTION, "methods": results}, args.out, show=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
