"""Batch threads of the in-process model: a prompt and the small batches a trie beam evaluates.

    nice python -m benchmarks.bench_local_threads [--batch-threads 1 2]

llama-cpp-python runs a batch of tokens on ``n_threads_batch`` threads (its default: every core)
and a single token on ``n_threads`` (half the cores). ``beam_decode`` evaluates, when it moves
from one hypothesis to another, the tokens after their common prefix as one small batch (2-6
tokens). Per setting: a 900-token prompt, then batches of 1-6 tokens after it, each timed alone,
on the bundled Gemma-3-270M with ``n_threads=1``. ``LocalEngine`` sets ``n_threads_batch`` to
``n_threads``. Timings depend on the machine's load (recorded).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

OUT = Path(__file__).resolve().parent / "results" / "local_threads.json"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch-threads", type=int, nargs="+", default=[1, 2])
    a = ap.parse_args(argv)
    import llama_cpp

    from atomgraph.local.engine import bundled_model_path

    res = {"benchmark": "local_threads", "load_before": os.getloadavg(), "cpus": os.cpu_count(), "runs": {}}
    for tb in a.batch_threads:
        llm = llama_cpp.Llama(model_path=str(bundled_model_path()), n_ctx=4096, n_threads=1, n_threads_batch=tb,
                              verbose=False, logits_all=False)
        toks = llm.tokenize(("The quick brown fox jumps over the lazy dog. " * 120).encode())[:900]
        t = time.perf_counter()
        llm.eval(toks)
        run = {"prompt_900_s": round(time.perf_counter() - t, 2), "batch_s": {}}
        for n in (1, 2, 3, 4, 5, 6):
            llm.n_tokens = 900
            t = time.perf_counter()
            llm.eval(toks[100:100 + n])
            run["batch_s"][n] = round(time.perf_counter() - t, 3)
        res["runs"][f"n_threads_batch={tb}"] = run
        print(tb, json.dumps(run), flush=True)
        llm.close()
    res["load_after"] = os.getloadavg()
    OUT.write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
