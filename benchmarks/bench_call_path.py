"""The kit's call path: the cost of one stage call through ``rt.ask`` against a bare model call.

One call through :meth:`MethodRuntime.ask` (:func:`atomgraph.nodes.call.call_stage`) formats the stage's prompt, calls the capped model
under the stage's tags with the kit's call recorder attached, reads the reply with the
stage's parser and returns the record; the bare call is ``model.ainvoke(messages)`` on the
same scripted model (no latency). Both run alternately in one process; the figures are the
median per-call wall time over rounds and the least per-call CPU time (``time.process_time``:
steadier on a shared machine), and their difference is the kit's overhead per call.

    python -m benchmarks.bench_call_path [--calls 300] [--rounds 7] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.baselines import STAGES
from atomgraph.settings import Settings
from atomgraph.state.baselines import ClosedBookContext
from atomgraph.testing import ScriptedChatModel
from benchmarks.stats import write_result

QUESTION = "Who was the doctoral advisor of Werner Heisenberg?"


async def _per_call(fn, n: int) -> tuple[float, float]:
    """(wall, CPU) seconds per call."""
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        await fn()
    return (time.perf_counter() - t0) / n, (time.process_time() - c0) / n


async def measure(calls: int, rounds: int) -> dict:
    stage = STAGES["standard"]
    model = ScriptedChatModel(default="So the answer is: Arnold Sommerfeld")
    rt = MethodRuntime(ClosedBookContext, "standard", models=model, sources=[], settings=Settings(cache=False))
    variables = {"question": QUESTION, "examples": ""}
    messages = stage.prompt.format_messages(**variables)

    async def kit():
        res = await rt.ask(stage, variables, None)
        assert res.ok

    async def bare():
        await model.ainvoke(messages)

    await kit(), await bare()  # warm-up: caches, imports
    kit_s, bare_s = [], []
    for _ in range(rounds):
        kit_s.append(await _per_call(kit, calls))
        bare_s.append(await _per_call(bare, calls))
    k, b = statistics.median(w for w, _ in kit_s), statistics.median(w for w, _ in bare_s)
    kc, bc = min(c for _, c in kit_s), min(c for _, c in bare_s)
    return {"calls_per_round": calls, "rounds": rounds, "rt_ask_ms": round(1e3 * k, 3),
            "bare_model_ms": round(1e3 * b, 3), "overhead_ms": round(1e3 * (k - b), 3),
            "ratio_rt_ask_to_bare": round(k / b, 2),
            "rt_ask_cpu_ms": round(1e3 * kc, 3), "bare_model_cpu_ms": round(1e3 * bc, 3),
            "overhead_cpu_ms": round(1e3 * (kc - bc), 3), "ratio_cpu": round(kc / bc, 2)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    result = asyncio.run(measure(args.calls, args.rounds))
    write_result(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
