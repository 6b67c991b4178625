"""Does a local model's next-token distribution depend on what the KV cache held before?

    python -m benchmarks.local_kv_history [--out benchmarks/results/local_kv_history.json]

One ~730-token prompt (the bundled Gemma-3-270M) is evaluated from an empty context, then again
after a context that already holds its first ``cut`` tokens (so only the rest is evaluated, in
other llama.cpp batches), for several ``cut``. Reports, per cut, whether the last-token logits are
bitwise equal to the fresh evaluation, the largest absolute difference, and whether the argmax
(the greedy token) is the same. Prefix states (``LocalEngine.prefix_states``) are off: this
measures llama.cpp's evaluation, not the saved-state cache.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np


def main(argv: list[str] | None = None) -> int:
    from atomgraph.local.engine import LocalEngine, bundled_model_path

    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    e = LocalEngine(bundled_model_path())
    e.prefix_states = 0
    text = " ".join(f"Sentence {i} says the singer number {i} performed at stadium {i * 7}." for i in range(40))
    prompt = e.chat_prompt([("user", "Question: " + text)])
    rows = []
    with e.lock:
        e.llm.n_tokens = 0
        e.llm._ctx.kv_cache_clear()
        ref = e.evaluate(prompt)
        for cut in (1, 5, 17, 33, 64, 100, 200, 300, 450, 511, 512, 513, len(prompt) - 2):
            e.llm.n_tokens = 0
            e.llm._ctx.kv_cache_clear()
            e.evaluate(prompt[: cut + 1])
            e.llm.n_tokens = cut  # the context keeps prompt[:cut]; the rest is evaluated after it
            x = e.evaluate(prompt)
            rows.append({"cached_prefix": cut, "bitwise_equal": bool(np.array_equal(ref, x)),
                         "max_abs_logit_diff": round(float(np.abs(ref - x).max()), 4),
                         "same_argmax": bool(np.argmax(ref) == np.argmax(x))})
    out = {"benchmark": "local_kv_history", "model": e.name, "prompt_tokens": len(prompt), "n_batch": e.llm.n_batch,
           "rows": rows}
    text = json.dumps(out, indent=2)
    if args.out:
        open(args.out, "w").write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
