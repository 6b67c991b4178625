"""Every benchmark runs: each script in ``benchmarks/`` is a step of ``benchmarks/run_all.py`` (``make bench``,
``make bench-arm``, ``make bench-local``), every file in ``benchmarks/results/`` is written by a step, and
each script imports, and parses its ``--help`` and the arguments its steps give it."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import pytest

from benchmarks.run_all import GROUPS, RESULTS

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"
HELPERS = {"__init__", "stats", "run_all"}  # the package, what the scripts share, the runner itself
STEPS = [step for steps in GROUPS.values() for step in steps]
SCRIPTS = sorted({s.module.removeprefix("benchmarks.") for s in STEPS if s.module.startswith("benchmarks.")})


def test_every_script_is_a_step_of_a_make_target():
    on_disk = {p.stem for p in BENCH.iterdir() if p.suffix in (".py", ".sh") and p.stem not in HELPERS}
    assert on_disk - set(SCRIPTS) == set(), "scripts no make target runs: wire them into run_all.py or delete them"
    assert set(SCRIPTS) - on_disk == set(), "steps naming scripts that do not exist"
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    for group, target in (("bench", "bench"), ("arm", "bench-arm"), ("local", "bench-local")):
        assert f"\n{target}: " in makefile and f"benchmarks.run_all {group}" in makefile, target


def test_every_results_file_is_written_by_a_step():
    written = {name for s in STEPS for name in s.writes}
    present = {p.name for p in (REPO / RESULTS).iterdir() if p.is_file()}
    assert present - written == set(), "results files no step writes: delete them or name them in run_all.py"
    for step in STEPS:
        named = " ".join(step.args)
        # a step names each JSON file it writes in its arguments unless the script writes it under a fixed name
        for name in step.writes:
            stem = name.rsplit(".", 1)[0]
            assert name in named or stem in named or stem in (BENCH / f"{step.module.split('.')[-1]}.py").read_text(
                encoding="utf-8"), (step.name, name)


@pytest.mark.parametrize("script", SCRIPTS + ["run_all"])
def test_help_imports_and_parses(script, capsys):
    module = importlib.import_module(f"benchmarks.{script}")
    with pytest.raises(SystemExit) as stop:
        module.main(["--help"])
    assert stop.value.code == 0
    assert "usage:" in capsys.readouterr().out


class _Parsed(Exception):
    pass


@pytest.mark.parametrize("step", [s for s in STEPS if s.module.startswith("benchmarks.")], ids=lambda s: s.name)
def test_each_step_s_arguments_parse(step, monkeypatch):
    """The step's own command line, stopped right after the script's parser accepted it (nothing runs)."""
    from benchmarks import run_all

    parse = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        raise _Parsed(parse(self, args, namespace))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    argv = run_all._argv(step, "/nonexistent/jar-bird", "/nonexistent/bird")[3:]  # past python -m MODULE
    with pytest.raises(_Parsed):
        importlib.import_module(step.module).main(argv)


def test_the_throughput_baseline_child_gets_the_run_s_options_but_its_own_output():
    from benchmarks.bench_throughput import baseline_argv

    argv = ["--methods", "rag,kar3", "--baseline", "6f96e5c", "--out=x.json", "--workers-at", "64",
            "--questions", "256", "--out", "y.json"]
    assert baseline_argv(argv) == ["--methods", "rag,kar3", "--questions", "256"]


def test_an_inverted_file_candidate_records_what_a_check_on_the_collection_s_own_vectors_sees(tmp_path):
    pytest.importorskip("faiss")
    import numpy as np

    from benchmarks import bench_arm_dense as bench

    rng = np.random.default_rng(0)
    vectors = bench._unit(rng.standard_normal((3000, bench.DIM), dtype=np.float32))
    queries = bench._unit(vectors[:40] + 0.3 * rng.standard_normal((40, bench.DIM), dtype=np.float32))
    truth = bench.exact_top(vectors, queries)
    res = bench.measure_ann("ivfpqfs16", vectors, queries, truth, [queries[:5]] * 3, 1.0, tmp_path / "ivf.faiss")
    assert list(res["search"]) == ["1", "2", "4", "8", "16"]  # nprobe up to every list
    assert all(0.0 <= row["own_recall_at_10"] <= 1.0 for row in res["search"].values())
    assert res["search"]["16"]["recall_at_10"] >= 0.9 and res["search"]["16"]["own_recall_at_10"] >= 0.9
    exact = {k: {"ms": 1.0} for k in ("matvec", "batched", "faiss_flat")}
    table = bench.table({"sizes": {"3000": {"random": {"exact": exact, "ann": {"ivfpqfs16": res}}}}})
    assert "own vectors reach 0.97 at nprobe" in table


def test_one_cpu_holds_every_thread_of_the_process_and_gives_them_back():
    import os
    import threading

    from benchmarks.bench_throughput import one_cpu

    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs and thread affinity")
    allowed = os.sched_getaffinity(0)
    seen: dict = {}
    go = threading.Event()
    before = threading.Thread(target=lambda: (go.wait(10), seen.setdefault("before", os.sched_getaffinity(0))))
    before.start()
    with one_cpu():
        go.set()
        before.join(10)
        started = threading.Thread(target=lambda: seen.setdefault("started", os.sched_getaffinity(0)))
        started.start()
        started.join(10)
        seen["main"] = os.sched_getaffinity(0)
    assert seen == {"before": {min(allowed)}, "started": {min(allowed)}, "main": {min(allowed)}}
    assert os.sched_getaffinity(0) == allowed
