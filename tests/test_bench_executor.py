"""The executor benchmark measures what it says (benchmarks/bench_atomr_executor.py): on a few
released trees, the calls its bound is computed from are the calls the scripted model received,
and no run beats its bound."""

from __future__ import annotations

import argparse
import asyncio

import pytest

from benchmarks import bench_atomr_executor as bench


async def test_bound_is_the_executed_trees_and_never_beaten(shared_data, monkeypatch):
    released = shared_data / "atomr" / "released"
    if not (released / bench.FILES[0]).exists():
        pytest.skip(f"{released} holds no released trees")
    monkeypatch.setattr(bench, "RELEASED", released)
    result = await bench.main_async(argparse.Namespace(trees=2, latency=0.01, repeats=1, search_answers=2, busy=0))
    s = result["summary"]
    assert s["trees"] == 2 and s["plans_refused"] == 0 and list(s["phases"]) == ["quiet"]
    quiet = s["phases"]["quiet"]
    # every executed call sleeps L: no schedule beats the dependency chain of the executed tree, and the
    # authors' schedule (one call at a time) takes at least every call's latency
    assert quiet["concurrent_over_dependency_bound_min"] >= 1.0
    assert quiet["sequential_over_calls_median"] >= 1.0
    for r in result["rows"]["quiet"]:
        assert r["dependency_bound_calls"] <= r["superstep_bound_calls"] <= r["serial_bound_calls"] <= r["calls"]
        assert r["sequential_s"] >= r["calls"] * 0.01
    assert quiet["overhead_ratio_atomr_over_bare"] > 0 and quiet["steps_measured"] > 2


async def test_one_call_at_a_time_serialises_concurrent_calls():
    model = bench.OneCallAtATime(stages={"x": "ok"}, latency_s=0.05)
    t0 = asyncio.get_running_loop().time()
    await asyncio.gather(*(model.ainvoke("hi", config={"tags": ["stage:x"]}) for _ in range(3)))
    assert asyncio.get_running_loop().time() - t0 >= 0.15 and len(model.calls) == 3


def test_step_depth_counts_a_program_then_an_answer():
    relate = [{"stage": "kg_program"}, {"stage": "kg_program"}, {"stage": "relate"}]
    assert bench.step_depth("run_operator", relate) == 2  # program, then the executor, per sub-call
    assert bench.step_depth("run_operator", [{"stage": "search"}] * 3) == 1  # a fan-out runs at once
    assert bench.step_depth("run_operator", []) == 0  # skipped, or no evidence
    assert bench.step_depth("direct_rag", [{"stage": "direct_rag"}] * 2) == 1
