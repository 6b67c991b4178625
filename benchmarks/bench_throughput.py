"""Evaluation throughput: questions per second and CPU-ms per question, warm, against a model
server with a fixed latency, at several concurrencies, in one process and in two worker processes.

    python -m benchmarks.bench_throughput [--latency-ms 200] [--methods rag,kar3,atomr,arm]
        [--concurrency 1,8,32] [--questions 256] [--workers-at 64] [--baseline REV] [--profile METHOD] [--out FILE]

The model is ``tests/openai_compat_server.py`` in its own process on 127.0.0.1 (``--exact``: the
script's reply alone; ``--latency-ms``: every reply waits that long), answering every method's
stages from one script. The knowledge is the demo pack's 97 passages: a Chroma Wikipedia
collection (rag, ATOMR), a KAR³ atom index atomized by the scripted atomizer, and the same
passages as ARM's objects. Each method runs :func:`atomgraph.evaluation.runner.run_eval` (the
response cache off, no progress bar) once to warm up (imports, embedding model, indexes; what they
built is then frozen, ``gc.freeze``, as the command line's ``eval run`` freezes its start), then
once per concurrency over ``--questions`` distinct questions (the same question with a number,
so no two share a thread or a query vector); questions/s is counted from the end of the first wave (the
record numbered ``concurrency``: the ramp) to the last record; CPU-ms per question is this process's CPU time
(``time.process_time``, every thread) over the run, divided by its questions. The workers row runs
the same questions with ``--workers 2`` (the same total concurrency): its questions/s is counted
as above (the workers' start, imports included, is before the first counted record), and its
ratio to the one-process run at that concurrency is the scaling; ``core_scaling`` is its ratio to
a one-process run with every thread of the process held to one CPU (one worker, one core; Linux
only). Each run also records the whole machine's busy CPUs over it (``/proc/stat``: this process
and its threads, the workers, the model server, any other work); the CPUs there are over those the
one-process run kept busy bound what two workers can gain (``cpu_ceiling``, at most 2×). The load
average before and after is recorded, since other work on the machine shrinks it. ``--baseline REV`` then runs the same rows (no workers rows)
on the package as it was at git revision REV — installed apart (``pip install --no-deps
--target``), imported ahead of this checkout, against the same harness and server — and records
each method's CPU-ms per question ÷ the baseline's at each concurrency (``cpu_vs_baseline``): a
speed-up measured in one run on one machine. ``--profile METHOD`` prints the
cProfile of that method's run at the highest concurrency instead.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from benchmarks.stats import write_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODEL = "fake-served-model"
QUESTION = "Who directed Kuhle Wampe?"
ANSWER = "Slatan Dudow"
# What the server answers, by stage (as tests/test_langgraph_dev.py's script)
SCRIPT = {
    "*": f"Kuhle Wampe was directed by {ANSWER}.\nSo the answer is: {ANSWER}",
    "plan": json.dumps({QUESTION: "Relate(Kuhle Wampe, director)"}),
    "relate": f"Answer: {ANSWER}",
    "direct_rag": f"Answer: {ANSWER}",
    # each round's own proposal (its question and the request's number), as a real proposer's new text:
    # no two rounds, of one question or of two, share a query vector
    "propose": {"first_line_after": "## Question\n",
                "format": json.dumps({"thinking": "the director is missing", "sub_questions": ["{line} (aspect {n})"]})},
    "select": json.dumps({"thinking": "the first candidate asks what is missing", "question_idx": 1}),
    "answer": json.dumps({"rationale": "from the passages", "answer": ANSWER}),
    "arm_decompose": json.dumps(["Kuhle Wampe director", "film"]),
    "arm_align": {"first_line_after": "Options:\n"},
    "arm_verify": json.dumps({"reasoning": "the film, then its director", "objects": []}),
    "arm_answer": f"Kuhle Wampe was directed by {ANSWER}.\nSo the answer is: {ANSWER}",
}
PASSAGES = [{"title": "Kuhle Wampe", "text": "Kuhle Wampe is a 1932 German film directed by Slatan Dudow."},
            {"title": "Slatan Dudow", "text": "Slatan Dudow was a Bulgarian film director who worked in Germany."}]


def start_server(folder: Path, latency_ms: float) -> tuple[subprocess.Popen, str]:
    script = folder / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "openai_compat_server.py"), str(script),
                             "--all-stages", "--exact", "--latency-ms", str(latency_ms)],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    return proc, f"http://127.0.0.1:{int(proc.stdout.readline())}/v1"


def prepare(folder: Path, base_url: str):
    """The settings every run uses, with the three indexes built."""
    from atomgraph.demo_pack import pack_dir
    from atomgraph.graphs.kar3_index import build_kar3_index_graph
    from atomgraph.settings import Settings
    from atomgraph.testing import kar3_scripted_model
    from atomgraph.tools.ingest import ingest

    os.environ["ATOMGRAPH_ARM_CACHE"] = str(folder / "arm-index")  # inherited by the worker processes
    corpus = folder / "corpus.jsonl"
    rows = [json.loads(line) for line in (pack_dir() / "passages.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()] + PASSAGES
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    objects = folder / "objects.jsonl"
    objects.write_text("".join(json.dumps({"id": f"p{i}", "kind": "passage", "title": r["title"], "text": r["text"]})
                               + "\n" for i, r in enumerate(rows)), encoding="utf-8")
    settings = Settings(cache=False, chroma_path=str(folder / "chroma"), openai_base_url=base_url,
                        openai_api_key="not-needed", model=MODEL, sources=["wikipedia"],
                        kar3={"collection": "bench_kar3"}, data_dirs=[str(folder)],
                        arm={"objects": str(objects), "decoding": "free"})  # the fake server offers no constrained form
    ingest([str(corpus)], settings=settings)
    graph = build_kar3_index_graph(model=kar3_scripted_model(), settings=settings)
    out = graph.invoke({"inputs": [str(corpus)], "collection": "bench_kar3"}, context={"atom_question_filter": True})
    if out.get("error"):
        raise SystemExit(f"KAR³ index: {out['error']}")
    return settings


def examples(n: int, start: int = 0) -> list:
    from atomgraph.evaluation.datasets import Example

    return [Example(id=f"q{start + i}", question=QUESTION if i == 0 and start == 0 else f"{QUESTION[:-1]} (film {start + i})?",
                    answers=[ANSWER]) for i in range(n)]


def machine_busy_s() -> float | None:
    """CPU-seconds every CPU of the machine has spent busy since boot (``/proc/stat``: all but idle
    and iowait), None where it cannot be read."""
    try:
        ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def one_run(method: str, settings, folder: Path, questions: list, concurrency: int, workers: int = 1) -> dict:
    from atomgraph.evaluation.runner import EvalOptions, run_eval

    stamps: list[float] = []
    out = folder / f"run-{method}-{concurrency}-{workers}-{time.monotonic_ns()}"
    c0, t0, b0 = time.process_time(), time.perf_counter(), machine_busy_s()
    pool = {"workers": workers} if workers > 1 else {}
    result = run_eval(method, questions, out, EvalOptions(
        settings=settings, concurrency=concurrency, progress=False, dataset_name="bench",
        on_record=lambda rec: stamps.append(time.perf_counter()), **pool))
    wall, cpu, b1 = time.perf_counter() - t0, time.process_time() - c0, machine_busy_s()
    n = len(questions)
    first = min(concurrency, n - 1) - 1  # the last record of the first wave: the ramp (and workers' start) ends
    rate = (n - 1 - first) / (stamps[-1] - stamps[first]) if len(stamps) == n and stamps[-1] > stamps[first] else None
    return {"questions": n, "errors": result.errors, "questions_per_s": round(rate, 2) if rate else None,
            "wall_s": round(wall, 2), "cpu_ms_per_question": round(1000 * cpu / n, 1) if workers == 1 else None,
            "answered": result.outcome.get("answered"),
            # the whole machine's busy CPUs over the run: this process, its workers, the model server, other work
            "machine_cpus_busy": round((b1 - b0) / wall, 2) if b0 is not None and b1 is not None else None}


def _ratio(a: dict, b: dict) -> float | None:
    return round(a["questions_per_s"] / b["questions_per_s"], 2) if a["questions_per_s"] and b["questions_per_s"] else None


@contextmanager
def one_cpu():
    """This process's threads (those there and those they start) held to its first allowed CPU
    while inside; the model server, a process of its own, is not."""
    tasks = Path("/proc/self/task")
    allowed = os.sched_getaffinity(0)

    def pin(cpus: set[int]) -> None:
        for tid in os.listdir(tasks):
            try:
                os.sched_setaffinity(int(tid), cpus)
            except OSError:  # a thread that has ended
                pass

    pin({min(allowed)})
    try:
        yield
    finally:
        pin(allowed)


def few(method: str, questions: int) -> int:
    """Questions per run: ARM's slow questions (its solver) as few as a steady rate allows."""
    return 0 if method == "arm" else questions


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--latency-ms", type=float, default=200.0)
    p.add_argument("--methods", default="rag,kar3,atomr,arm")
    p.add_argument("--concurrency", default="1,8,32")
    p.add_argument("--questions", type=int, default=256, help="questions per run at the highest concurrency "
                                                             "(ARM, at 0.6 questions/s: twice the concurrency)")
    p.add_argument("--workers-at", type=int, default=64, help="the concurrency of the workers 1 vs 2 rows (0: none; "
                                                               "at most 64); with --latency-ms 50 every method is "
                                                               "bound by its CPU there, not the latency")
    p.add_argument("--workers-questions", type=int, default=384,
                   help="questions per run of the workers rows (ARM: four times --workers-at), many waves past the "
                        "workers' start")
    p.add_argument("--baseline", default=None, metavar="REV",
                   help="also run the rows on the package at git revision REV and record the CPU ratios")
    p.add_argument("--profile", default=None, metavar="METHOD")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    levels = [int(c) for c in args.concurrency.split(",")]
    with tempfile.TemporaryDirectory(prefix="atomgraph-throughput-") as tmp:
        folder = Path(tmp)
        server, base_url = start_server(folder, args.latency_ms)
        try:
            settings = prepare(folder, base_url)
            if args.profile:
                return profile(args.profile, settings, folder, max(levels), args.questions)
            result: dict = {"latency_ms": args.latency_ms, "cpus": os.cpu_count(), "load_before": os.getloadavg()[0],
                            "methods": {}}
            start = 10_000
            for method in methods:
                one_run(method, settings, folder, examples(4, start), 4)  # warm: imports, models, indexes
                gc.collect()  # what is built so far is frozen, as the command line's `eval run` freezes its start:
                gc.freeze()  # a collection scans what the measured runs make, not the models and indexes
                start += 4
                rows = {}
                for c in levels:
                    n = max(2 * c, min(few(method, args.questions), 8 * c)) if c > 1 else 8
                    rows[f"c{c}"] = one_run(method, settings, folder, examples(n, start), c)
                    start += n
                    print(method, f"c{c}", rows[f"c{c}"], file=sys.stderr, flush=True)
                if args.workers_at:
                    c = args.workers_at
                    n = max(4 * c if method == "arm" else 2 * c, few(method, args.workers_questions))  # ARM: 4 waves
                    one = one_run(method, settings, folder, examples(n, start), c)
                    two = one_run(method, settings, folder, examples(n, start + n), c, workers=2)
                    alone = {"questions_per_s": None}
                    if hasattr(os, "sched_setaffinity"):
                        with one_cpu():  # this process and every thread of it on one CPU: one worker, one core
                            alone = one_run(method, settings, folder, examples(n, start + 2 * n), c)
                    start += 3 * n
                    busy = one["machine_cpus_busy"]
                    rows["workers"] = {"concurrency": c, "one": one, "two": two, "one_on_one_cpu": alone,
                                       "scaling": _ratio(two, one),
                                       # the most two workers can gain: the CPUs there are over those one
                                       # process's run kept busy (it, its threads, the server), at most 2x
                                       "cpu_ceiling": round(min(2.0, os.cpu_count() / busy), 2) if busy else None,
                                       # one worker held to one CPU, then two workers on two
                                       "core_scaling": _ratio(two, alone)}
                    print(method, "workers", rows["workers"], file=sys.stderr, flush=True)
                result["methods"][method] = rows
            result["load_after"] = os.getloadavg()[0]
        finally:
            server.terminate()
            server.wait(timeout=10)
    if args.baseline and not args.profile:
        base = baseline_rows(args.baseline, argv if argv is not None else sys.argv[1:])
        result["baseline"] = base
        result["cpu_vs_baseline"] = {
            m: {c: round(row["cpu_ms_per_question"] / b["cpu_ms_per_question"], 2)
                for c, row in rows.items() if (b := base["methods"].get(m, {}).get(c))
                and row.get("cpu_ms_per_question") and b.get("cpu_ms_per_question")}
            for m, rows in result["methods"].items()}
    write_result(result, args.out)
    return 0


def baseline_argv(argv: list[str]) -> list[str]:
    """This run's options for the baseline's child: all but ``--baseline``, ``--workers-at`` and
    ``--out`` (``--name value`` or ``--name=value``), which the child is given its own of."""
    keep, skip = [], {"--baseline", "--workers-at", "--out"}
    it = iter(argv)
    for a in it:
        if a.split("=", 1)[0] in skip:
            if "=" not in a:
                next(it, None)
            continue
        keep.append(a)
    return keep


def baseline_rows(rev: str, argv: list[str]) -> dict:
    """This benchmark's rows (no workers rows) on the package at git revision ``rev``: its tree from
    ``git archive``, installed into a folder of its own, and this script run in a child process
    whose imports find that folder first (its working folder holds links to this checkout's
    ``benchmarks`` and ``tests``, so harness and server are this checkout's)."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"],
                            capture_output=True, text=True, check=True).stdout.strip()
    keep = baseline_argv(argv)
    with tempfile.TemporaryDirectory(prefix="atomgraph-baseline-") as tmp:
        tree, pkg, here = Path(tmp) / "tree", Path(tmp) / "pkg", Path(tmp) / "run"
        for folder in (tree, here):
            folder.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        "--target", str(pkg), str(tree)], check=True)
        for name in ("benchmarks", "tests"):
            (here / name).symlink_to(ROOT / name)
        out = here / "baseline.json"
        env = {**os.environ, "PYTHONPATH": str(pkg)}
        subprocess.run([sys.executable, "-m", "benchmarks.bench_throughput", *keep, "--workers-at", "0",
                        "--out", str(out)], cwd=here, env=env, check=True, stdout=subprocess.DEVNULL)
        rows = json.loads(out.read_text(encoding="utf-8"))
    return {"revision": rev, "commit": commit, "methods": rows["methods"],
            "load_before": rows.get("load_before"), "load_after": rows.get("load_after")}


def profile(method: str, settings, folder: Path, concurrency: int, n: int) -> int:
    """The CPU profile of one run, every thread (``yappi``, CPU clock), else this thread's (cProfile)."""
    one_run(method, settings, folder, examples(4, 90_000), 4)
    try:
        import yappi
    except ImportError:
        yappi = None
    if yappi is None:
        import cProfile
        import pstats

        prof = cProfile.Profile(time.thread_time)
        prof.enable()
        row = one_run(method, settings, folder, examples(n, 91_000), concurrency)
        prof.disable()
        print(row, file=sys.stderr)
        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(40)
        return 0
    yappi.set_clock_type("cpu")
    yappi.start(builtins=True)
    row = one_run(method, settings, folder, examples(n, 91_000), concurrency)
    yappi.stop()
    print(row, file=sys.stderr)
    stats = yappi.get_func_stats()
    total = sum(t.ttot for t in yappi.get_thread_stats())
    print(f"CPU in all threads, profiled: {1000 * total / n:.1f} ms per question", file=sys.stderr)
    for key, title in (("ttot", "cumulative"), ("tsub", "own time")):
        print(f"--- by {title} (ms per question, share of all) ---", file=sys.stderr)
        for f in list(stats.sort(key, "desc"))[:45]:
            value = getattr(f, key)
            print(f"{1000 * value / n:8.2f} {100 * value / total:5.1f}%  {f.ncall:7d}  "
                  f"{f.module.split('site-packages/')[-1]}:{f.lineno} {f.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
