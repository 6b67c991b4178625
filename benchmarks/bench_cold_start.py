"""Cold start: how long a fresh ``atomgraph`` process takes to send its first model request and to
write its first answer, and how long a later question in the same process takes (warm).

A fixed-latency OpenAI-compatible server runs in this process on 127.0.0.1 (every request waits
``--latency-ms``, then gets the same short reply; the time each request arrives is recorded). A
small passage collection (40 HotpotQA passages from the shared data) is indexed first, by a fresh
``atomgraph index wikipedia`` process (measured too). Then each command runs as a fresh process:

- ``ask --method rag`` and ``ask --method atomr``: cold only (one question per process);
- ``eval run --method standard|cot|rag|kar3|atomr|arm`` over two questions at concurrency 1: cold = the
  first question (from the process's start), warm = the second (from the first one's record); ARM reads
  the 40 passages as its objects file, its index built and cached by a process before (as a first run
  leaves it);
- ``index wikipedia``: the embedding model ready (its "loaded" line; absent where the command
  prints none), and the whole build.

Before them, a fresh process loads the default embedding model once in the fresh user folder
(``first_load``): with onnxruntime that process exports it, a user's once-only cost. The processes run
with bytecode compiled, as an install leaves it: ``PYTHONDONTWRITEBYTECODE`` is dropped and the
measured tree's own modules are compiled first into a ``PYTHONPYCACHEPREFIX`` folder of the run (the
tree itself is not written). ``imports_only_s``: a bare process importing what a rag run imports
(:data:`IMPORTS`), under the same load: the floor a first request can reach.

``--busy N`` starts N CPU-bound processes for the measurement (stopped after it): a loaded row.
``--table`` prints the Markdown table of ``--out`` (docs/reference/cold-start.md) and measures nothing.

``--atomgraph EXE`` measures another install (the tree before a change: ``--label before``);
results of other labels already in ``--out`` are kept, so rounds of two installs run alternately
(``--label after-1``, ``before-1``, ``after-2``, ...) share the machine's load. ``--runtimes`` also compares embedding
runtimes for the bundled all-MiniLM-L6-v2 (``embedding_runtime``: sentence-transformers against
onnxruntime over its ONNX export, made here into a fresh model folder): a fresh process's time to its
first vector, the cosine of their vectors on the shared corpora, and the encoding rate. The machine's load average is recorded with each run:
absolute times are for the record; the ratios (cold ÷ warm) are what compares.

    python -m benchmarks.bench_cold_start [--latency-ms 200] [--label after] [--atomgraph EXE] [--busy N]
        [--only ask_rag eval_rag ...] [--embedding-runtime onnxruntime|sentence-transformers] [--runtimes] [--out FILE]
        [--table]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from benchmarks.stats import write_result

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ATOMGRAPH_SHARED_DATA", str(ROOT.parent / "shared" / "data")))
REPLY = "So the answer is: Paris"
COMMANDS = ("index", "ask_rag", "ask_atomr", "eval_standard", "eval_cot", "eval_rag", "eval_kar3", "eval_atomr",
            "eval_arm")
# what an `eval run --method rag` imports to reach its first request, imported by a bare process: the floor
IMPORTS = "import chromadb, onnxruntime, tokenizers, langchain_openai, langgraph.graph, tiktoken"


def _stage_replies(questions: list[str]):
    """A reply by stage, so that each method reaches its retrieval: ATOMR's plan is one Search
    leaf under the question, source selection picks Wikipedia, KAR³'s atomizer turns each sentence
    into a question (``atomgraph.testing.sentence_atoms``), its proposer proposes the question itself
    and its selections take the first candidate; every other stage gets :data:`REPLY`.
    The stage is read from the prompt as the tests' OpenAI-compatible server reads it."""
    sys.path.insert(0, str(ROOT / "tests"))
    from openai_compat_server import all_stages, stage_of

    from atomgraph.testing import chunks_in_context, question_of, sentence_atoms

    stages = all_stages()

    def reply(text: str) -> str:
        stage = stage_of(text, stages)
        if stage == "plan":
            q = next((q for q in sorted(questions, key=len, reverse=True) if q in text), questions[0])
            return json.dumps({q: [f"1. {q}"], f"1. {q}": f'Search("{q}")'})
        if stage == "source_selection":
            return "Wikipedia"
        if stage == "atomize":
            return sentence_atoms(text)
        if stage == "propose":  # KAR³: the question itself, then stop
            subs = [question_of(text)] if chunks_in_context(text) == 0 else []
            return json.dumps({"thinking": "", "sub_questions": subs})
        if stage in ("select", "select_paragraph"):
            return json.dumps({"thinking": "", ("question_idx" if stage == "select" else "paragraph_idx"): 1})
        return REPLY

    return reply


class LatencyServer:
    """OpenAI-compatible chat completions on 127.0.0.1: each request waits ``latency_s`` and gets
    the reply for its stage (:func:`_stage_replies`); :attr:`arrivals` holds ``(time.time(), last
    message text)`` per request."""

    def __init__(self, latency_s: float, questions: list[str]):
        self.latency_s = latency_s
        self.reply = _stage_replies(questions)
        from openai_compat_server import send_json  # the tests' server's reply writer
        self.arrivals: list[tuple[float, str]] = []
        self.watch: dict = {}  # {"pid": N}: at the first request after, its process's schedstat (_schedstat)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                t = time.time()
                if "pid" in server.watch and "at_first" not in server.watch:
                    server.watch["at_first"] = _schedstat(server.watch["pid"])
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                messages = body.get("messages") or [{}]
                server.arrivals.append((t, str(messages[-1].get("content") or "")))
                time.sleep(server.latency_s)
                structured = (body.get("response_format") or {}).get("type") == "json_schema"
                text = server.reply("\n".join(str(m.get("content") or "") for m in messages))
                if structured and not text.startswith("{"):
                    text = "{}"
                send_json(self, {
                    "id": "cold", "object": "chat.completion", "created": 0, "model": body.get("model", "m"),
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def first_after(self, t: float) -> float | None:
        return next((a for a, _ in sorted(self.arrivals) if a >= t), None)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _schedstat(pid: int) -> tuple[float, float]:
    """(CPU seconds, seconds waiting for a CPU) of the process's threads so far, from /proc (Linux)."""
    import glob

    run = wait = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            a, w, _ = open(f).read().split()
        except (OSError, ValueError):
            continue
        run, wait = run + int(a), wait + int(w)
    return round(run / 1e9, 3), round(wait / 1e9, 3)


def _env(home: Path, port: int, chroma: Path, runtime: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ATOMGRAPH_", "OPENAI_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"PYTHONPYCACHEPREFIX": str(home / "pycache"), "OMP_NUM_THREADS": "1",
        "HOME": str(home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False",
        "OPENAI_API_KEY": "not-checked", "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "ATOMGRAPH_MODEL": "cold-start-model", "ATOMGRAPH_CACHE": "false", "ATOMGRAPH_SOURCES": "wikipedia",
        "ATOMGRAPH_CHROMA_PATH": str(chroma), "ATOMGRAPH_CHROMA_COLLECTION": "wikipedia",
        "ATOMGRAPH_PROGRESS_EVERY": "5",
    })
    if runtime:
        env["ATOMGRAPH_EMBEDDING_RUNTIME"] = runtime
    return env


def _run(argv: list[str], env: dict, cwd: Path, watch: Path | None = None, timeout_s: float = 900,
         server: "LatencyServer | None" = None) -> dict:
    """Run one fresh process; the time (from its start) of each stderr line and of each line
    appended to ``watch`` (a predictions file)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            encoding="utf-8", errors="replace")
    if server is not None:
        server.watch.clear()
        server.watch["pid"] = proc.pid
    lines: list[tuple[float, str]] = []
    records: list[float] = []

    def read_err():
        for line in proc.stderr:
            lines.append((time.time() - t0, line.rstrip()))

    def watch_file():
        seen = 0
        while proc.poll() is None:
            if watch is not None and watch.is_file():
                n = watch.read_text(encoding="utf-8", errors="replace").count("\n")
                records.extend([time.time() - t0] * (n - seen))
                seen = max(seen, n)
            time.sleep(0.02)

    readers = [threading.Thread(target=read_err, daemon=True), threading.Thread(target=watch_file, daemon=True)]
    for r in readers:
        r.start()
    try:
        out = proc.stdout.read()
        proc.wait(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
    for r in readers:
        r.join(timeout=5)
    if watch is not None and watch.is_file():  # lines written between the last poll and the exit
        n = watch.read_text(encoding="utf-8", errors="replace").count("\n")
        records.extend([time.time() - t0] * (n - len(records)))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # this process's CPU (the only child reaped meanwhile)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    at_first = server.watch.get("at_first") if server is not None else None
    return {"t0": t0, "exit_s": round(time.time() - t0, 3), "cpu_s": round(cpu, 3), "rc": proc.returncode, "stderr": lines,
            "cpu_to_first_request_s": at_first[0] if at_first else None,
            "cpu_wait_to_first_request_s": at_first[1] if at_first else None,
            "stdout_tail": out[-300:], "records_s": records}


def _warm_done(run: dict) -> float | None:
    """When the run's last warm-up line ("loaded ...") came: its start is over."""
    return max((round(t, 3) for t, line in run["stderr"] if line.startswith("loaded ")), default=None)


def _loaded_at(run: dict) -> float | None:
    return next((round(t, 3) for t, line in run["stderr"] if line.startswith("loaded the embedding model")), None)


def _runtime(run: dict) -> str | None:
    """What ran the embedding model, as the run's line names it (``onnxruntime`` / ``sentence-transformers``)."""
    return next((line.partition("; embeddings: ")[2].split()[0] for _, line in run["stderr"] if "; embeddings: " in line),
                None)


def _corpus(folder: Path, n: int = 40) -> tuple[Path, list[dict]]:
    objects = [json.loads(x) for x in (DATA / "retrieval" / "hotpotqa" / "objects.jsonl").read_text().splitlines()[:n]]
    corpus = folder / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"title": o["title"], "text": o["text"]}) + "\n" for o in objects))
    (folder / "objects.jsonl").write_text("".join(json.dumps(o) + "\n" for o in objects))  # ARM's objects
    questions = folder / "questions.jsonl"
    qs = [json.loads(x) for x in (DATA / "retrieval" / "hotpotqa" / "questions.jsonl").read_text().splitlines()[:2]]
    questions.write_text("".join(json.dumps({"question": q["question"], "answers": q.get("answers") or ["x"]}) + "\n"
                                 for q in qs))
    return corpus, qs


def _compile(python: str, env: dict, cwd: Path) -> None:
    """The measured tree's own modules compiled into the run's ``PYTHONPYCACHEPREFIX`` (as an install compiles)."""
    code = ("import compileall, os, atomgraph; root = os.path.dirname(os.path.dirname(atomgraph.__file__)); "
            "[compileall.compile_dir(os.path.join(root, d), quiet=1) for d in "
            "('atomgraph', 'graphs', 'nodes', 'tools', 'state', 'prompts', 'evaluation') if os.path.isdir(os.path.join(root, d))]")
    subprocess.run([python, "-c", code], env=env, cwd=cwd, check=True, capture_output=True, timeout=600)


def _busy(n: int) -> list[subprocess.Popen]:
    """N CPU-bound processes (a loaded machine), stopped by the caller."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def measure(exe: str, latency_s: float, only: list[str] | None, runtime: str | None = None, busy: int = 0) -> dict:
    wanted = [c for c in COMMANDS if only is None or c in only]
    burners = _busy(busy)
    try:
        return _measure(exe, latency_s, wanted, runtime, busy)
    finally:
        for b in burners:
            b.kill()
            b.wait()


def _measure(exe: str, latency_s: float, wanted: list[str], runtime: str | None, busy: int) -> dict:
    time.sleep(5 if busy else 0)  # the load average follows the burners
    out: dict = {"load_before": list(os.getloadavg()), "busy": busy}
    with tempfile.TemporaryDirectory(prefix="atomgraph-cold-") as tmp:
        folder = Path(tmp)
        chroma = folder / "chroma"
        corpus, questions = _corpus(folder)
        server = LatencyServer(latency_s, [q["question"] for q in questions])
        env = _env(folder, server.port, chroma, runtime)
        python = str(Path(exe).parent / "python")
        _compile(python, env, folder)
        # the first process of a fresh user folder loads the default embedding model (onnxruntime: exports it)
        first = _run([python, "-c",
                      "from atomgraph.embeddings import embedding_model; embedding_model().embed_query('x')"], env, folder)
        out["first_load"] = {"done_s": first["exit_s"], "rc": first["rc"]}
        floor = [_run([python, "-c", IMPORTS], env, folder) for _ in range(2)]
        out["imports_only_s"] = round(min(f["exit_s"] for f in floor), 3)
        out["imports_only_cpu_s"] = round(min(f["cpu_s"] for f in floor), 3)
        arm_env = {**env, "ATOMGRAPH_ARM__OBJECTS": str(folder / "objects.jsonl")}
        if "eval_arm" in wanted:  # ARM's index of the objects, built and cached as a first run leaves it
            built = _run([python, "-c", "from atomgraph.nodes.arm.pipeline import index_for_file; "
                          f"index_for_file({str(folder / 'objects.jsonl')!r})"], arm_env, folder)
            out["arm_index_build"] = {"done_s": built["exit_s"], "rc": built["rc"]}
        run = _run([exe, "index", "wikipedia", str(corpus), "--persist", str(chroma), "--collection", "wikipedia"],
                   env, folder)
        if "index" in wanted:
            out["index"] = {"embedding_model_ready_s": _loaded_at(run), "done_s": run["exit_s"], "cpu_s": run["cpu_s"],
                            "rc": run["rc"],
                            "runtime": _runtime(run)}
        if "eval_kar3" in wanted:  # KAR³'s atom index over the same passages (atomized by the server)
            run = _run([exe, "index", "atoms", "--from-collection", "wikipedia", "--collection", "wikipedia",
                        "--concurrency", "8"], env, folder)
            out["index_atoms"] = {"embedding_model_ready_s": _loaded_at(run), "done_s": run["exit_s"], "rc": run["rc"]}
        for name in wanted:
            if name.startswith("ask_"):
                method = name.split("_", 1)[1]
                run = _run([exe, "ask", questions[0]["question"], "--method", method], env, folder, server=server)
                first = server.first_after(run["t0"])
                out[name] = {"cold_first_request_s": round(first - run["t0"], 3) if first else None,
                             "cold_first_answer_s": run["exit_s"], "embedding_model_ready_s": _loaded_at(run),
                             "warm_up_done_s": _warm_done(run), "cpu_s": run["cpu_s"], "rc": run["rc"],
                             "cpu_to_first_request_s": run["cpu_to_first_request_s"],
                             "cpu_wait_to_first_request_s": run["cpu_wait_to_first_request_s"]}
            elif name.startswith("eval_"):
                method = name.split("_", 1)[1]
                where = folder / f"run-{method}"
                run = _run([exe, "eval", "run", "--method", method, "--dataset", str(folder / "questions.jsonl"),
                            "--out", str(where), "--concurrency", "1", "--limit", "2"],
                           arm_env if method == "arm" else env, folder, watch=where / "predictions.jsonl", server=server)
                t0, recs = run["t0"], run["records_s"]
                first = server.first_after(t0)
                row = {"cold_first_request_s": round(first - t0, 3) if first else None,
                       "cold_first_answer_s": round(recs[0], 3) if recs else None,
                       "warm_up_done_s": _warm_done(run), "cpu_s": run["cpu_s"],
                       "cpu_to_first_request_s": run["cpu_to_first_request_s"],
                       "cpu_wait_to_first_request_s": run["cpu_wait_to_first_request_s"],
                       "embedding_model_ready_s": _loaded_at(run), "rc": run["rc"], "exit_s": run["exit_s"]}
                if len(recs) >= 2:
                    second = server.first_after(t0 + recs[0])
                    row["warm_first_request_s"] = round(second - t0 - recs[0], 3) if second else None
                    row["warm_answer_s"] = round(recs[1] - recs[0], 3)
                out[name] = row
            print(name, json.dumps(out.get(name)), file=sys.stderr, flush=True)
        server.close()
    out["load_after"] = list(os.getloadavg())
    return out


# --- embedding runtimes ----------------------------------------------------------------------------------

_FIRST_VECTOR = """
import time; t0 = time.perf_counter()
from atomgraph.embeddings import embedding_model
from atomgraph.settings import Settings
e = embedding_model(Settings(embedding_runtime={runtime!r}))
e.embed_query("warm up")
print(time.perf_counter() - t0)
print(e.runtime)
"""


def _first_vector(runtime: str, env: dict) -> tuple[float, str]:
    """A fresh process's seconds from its start to its first vector of the default model on ``runtime``."""
    done = subprocess.run([sys.executable, "-c", _FIRST_VECTOR.format(runtime=runtime)], env=env, capture_output=True,
                          text=True, timeout=900, cwd=ROOT)
    lines = done.stdout.strip().splitlines()
    if done.returncode or len(lines) < 2:
        raise RuntimeError(f"the {runtime} child failed: {done.stderr[-500:]}")
    return round(float(lines[-2]), 3), lines[-1]


def _corpora_texts(per: int = 120) -> dict[str, list[str]]:
    texts = {}
    for name in ("hotpotqa", "musique", "spider"):
        rows = [json.loads(x) for x in (DATA / "retrieval" / name / "objects.jsonl").read_text().splitlines()]
        texts[name] = [f"{o['title']}\n{o['text']}"[:2000] for o in rows[:: max(1, len(rows) // per)]][:per]
    rows = json.loads((DATA / "hipporag" / "2wikimultihopqa_corpus.json").read_text())
    texts["2wikimultihopqa"] = [f"{p['title']}\n{p['text']}" for p in rows[:: max(1, len(rows) // per)]][:per]
    texts["hotpotqa questions"] = [json.loads(x)["question"] for x in
                                   (DATA / "retrieval" / "hotpotqa" / "questions.jsonl").read_text().splitlines()][:per]
    return texts


def runtimes(rounds: int = 2) -> dict:
    """The default model on sentence-transformers against onnxruntime (atomgraph.onnx_embeddings, exported
    here into a fresh model folder): a fresh process's start to its first vector, the vectors on the
    shared corpora, the encoding rate."""
    from atomgraph.onnx_embeddings import OnnxMiniLM

    with tempfile.TemporaryDirectory(prefix="atomgraph-onnx-") as tmp:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1",
               "ATOMGRAPH_MODEL_DIR": tmp}
        export_s, note = _first_vector("onnxruntime", env)  # the first process exports
        if not note.startswith("onnxruntime"):
            return {"skipped": note}
        start: dict[str, list[float]] = {"sentence_transformers": [], "onnxruntime": []}
        for _ in range(rounds):
            for name in ("onnxruntime", "sentence-transformers"):
                start[name.replace("-", "_")].append(_first_vector(name, env)[0])
        from atomgraph.embeddings import SentenceTransformerEmbeddings, embedding_model
        from atomgraph.settings import Settings

        os.environ["ATOMGRAPH_MODEL_DIR"] = tmp
        try:
            onnx = embedding_model(Settings())
            onnx.load()
            assert isinstance(onnx.model, OnnxMiniLM), onnx.runtime
        finally:
            os.environ.pop("ATOMGRAPH_MODEL_DIR", None)
        st = SentenceTransformerEmbeddings(onnx.location, onnx.model_id)
        st.encode(["warm up"])
        vectors, st_s, ort_s, n = {}, 0.0, 0.0, 0
        for name, texts in _corpora_texts().items():
            t = time.perf_counter()
            a = st.encode(texts)
            st_s += time.perf_counter() - t
            t = time.perf_counter()
            b = onnx.encode(texts)
            ort_s += time.perf_counter() - t
            n += len(texts)
            cos = (a * b).sum(1)
            vectors[name] = {"texts": len(texts), "min_cosine": round(float(cos.min()), 7),
                             "max_abs_diff": float(f"{float(abs(a - b).max()):.2g}")}
    return {"first_process_with_export_s": export_s, "first_vector_s": start, "vectors": vectors,
            "texts_per_s": {"sentence_transformers": round(n / st_s, 1), "onnxruntime": round(n / ort_s, 1)},
            "load": list(os.getloadavg())}


ROWS = (("index", "`index wikipedia` (40 passages)"), ("ask_rag", "`ask --method rag`"),
        ("ask_atomr", "`ask --method atomr`"), ("eval_standard", "`eval run --method standard`"),
        ("eval_cot", "`eval run --method cot`"), ("eval_rag", "`eval run --method rag`"),
        ("eval_kar3", "`eval run --method kar3`"), ("eval_atomr", "`eval run --method atomr`"),
        ("eval_arm", "`eval run --method arm`"))


def _median(values: list) -> float | None:
    import statistics

    values = [v for v in values if isinstance(v, (int, float))]
    return round(statistics.median(values), 2) if values else None


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}".rstrip("0").rstrip(".") if v < 10 else f"{v:.1f}"


def table(result: dict, condition: str) -> str:
    """The Markdown table of the rounds labelled ``before-<condition>-N`` and ``after-<condition>-N``:
    medians, seconds; ``before → after`` where both were measured."""
    import re

    runs = result.get("runs", {})
    by = {side: [r for label, r in runs.items() if re.fullmatch(rf"{side}-{condition}-\d+", label)]
          for side in ("before", "after")}

    def cell(name: str, key: str, both: bool = True) -> str:
        a = _median([(r.get(name) or {}).get(key) for r in by["after"]])
        b = _median([(r.get(name) or {}).get(key) for r in by["before"]])
        return f"{_fmt(b)} → {_fmt(a)}" if both and by["before"] else _fmt(a)

    loads = [x for side in by.values() for r in side for x in (r.get("load_before", [None])[0], r.get("load_after", [None])[0])
             if x is not None]
    lines = [f"Rounds: {len(by['before'])} before, {len(by['after'])} after; load average (1 min) "
             f"{min(loads):.1f}–{max(loads):.1f}; a bare process importing what a rag run imports: "
             f"{_fmt(_median([r.get('imports_only_s') for r in by['after']]))} s, "
             f"{_fmt(_median([r.get('imports_only_cpu_s') for r in by['after']]))} s CPU "
             f"(before's rounds {_fmt(_median([r.get('imports_only_s') for r in by['before']]))} s).", "",
             "| command | start over (last \"loaded\" line) | first model request, cold | its CPU / waiting for a CPU "
             "| first answer, cold | the process's CPU | warm: first request / answer |", "|---|---|---|---|---|---|---|"]
    for name, title in ROWS:
        if not any(name in r for side in by.values() for r in side):
            continue
        if name == "index":
            lines.append(f"| {title} | {cell(name, 'embedding_model_ready_s')} | — | — | done {cell(name, 'done_s')} "
                         f"| {cell(name, 'cpu_s')} | — |")
            continue
        warm = "—"
        if any((r.get(name) or {}).get("warm_answer_s") is not None for r in by["after"]):
            warm = f"{cell(name, 'warm_first_request_s', False)} / {cell(name, 'warm_answer_s', False)}"
        sched = (f"{cell(name, 'cpu_to_first_request_s')} / {cell(name, 'cpu_wait_to_first_request_s')}"
                 if any((r.get(name) or {}).get("cpu_to_first_request_s") is not None for r in by["after"]) else "—")
        lines.append(f"| {title} | {cell(name, 'warm_up_done_s')} | {cell(name, 'cold_first_request_s')} | {sched} "
                     f"| {cell(name, 'cold_first_answer_s')} | {cell(name, 'cpu_s')} | {warm} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--latency-ms", type=float, default=200.0)
    ap.add_argument("--atomgraph", default=str(Path(sys.executable).parent / "atomgraph"), help="the command to measure")
    ap.add_argument("--label", default="after", help="the name these figures are kept under in --out")
    ap.add_argument("--only", nargs="*", choices=COMMANDS, default=None)
    ap.add_argument("--runtimes", action="store_true", help="also compare embedding runtimes")
    ap.add_argument("--embedding-runtime", choices=("onnxruntime", "sentence-transformers"), default=None,
                    help="the commands' ATOMGRAPH_EMBEDDING_RUNTIME (default: the install's default)")
    ap.add_argument("--busy", type=int, default=0, help="CPU-bound processes to run beside the measurement")
    ap.add_argument("--out", default=None)
    ap.add_argument("--table", metavar="CONDITION", default=None,
                    help="print the Markdown table of --out's rounds labelled before|after-CONDITION-N; measure nothing")
    args = ap.parse_args(argv)
    if args.table:
        print(table(json.loads(Path(args.out or ROOT / "benchmarks/results/cold_start.json").read_text()), args.table))
        return 0
    result: dict = {}
    if args.out and Path(args.out).is_file():
        result = json.loads(Path(args.out).read_text(encoding="utf-8"))
    result.setdefault("runs", {})
    result["latency_ms"] = args.latency_ms
    if args.only != []:  # `--only` naming nothing: no command measured (`--runtimes` alone)
        result["runs"].setdefault(args.label, {}).update(
            measure(str(Path(args.atomgraph).absolute()), args.latency_ms / 1000, args.only, args.embedding_runtime,
                    args.busy))
    if args.runtimes:
        result["embedding_runtimes"] = runtimes()
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
