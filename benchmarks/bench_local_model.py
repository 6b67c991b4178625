"""The in-process local model (bundled Gemma-3-270M over llama-cpp-python), measured in one run.

- load time of the GGUF;
- tokens per second: free greedy generation, under a JSON-schema grammar, and trie-constrained
  beam decoding (beam width 1 and 4), with the per-token cost of each against free generation
  (ratios within this run);
- token trie build time and size at 10^4, 10^5 and 10^6 n-grams (HotpotQA's corpus n-grams,
  topped up with n-grams recombined from its words), and its lookup cost.

    python -m benchmarks.bench_local_model [--out benchmarks/results/local_model.json] [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OBJECTS = REPO.parent / "shared" / "data" / "retrieval" / "hotpotqa" / "objects.jsonl"
SCHEMA = {"type": "object", "properties": {"reasoning": {"type": "string"}, "answers": {
    "type": "array", "items": {"type": "string"}}}, "required": ["reasoning", "answers"]}


def _ngrams(n: int, base: list[str], seed: int = 0) -> list[str]:
    """``n`` distinct n-grams: the corpus's own, then 2- and 3-grams recombined from its words."""
    out = list(dict.fromkeys(base))[:n]
    seen = set(out)
    words = sorted({w for g in base for w in g.split()})
    rng = random.Random(seed)
    while len(out) < n:
        g = " ".join(rng.choice(words) for _ in range(rng.choice((2, 3))))
        if g not in seen:
            seen.add(g)
            out.append(g)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "local_model.json"))
    ap.add_argument("--tokens", type=int, default=48, help="tokens generated per measurement")
    ap.add_argument("--quick", action="store_true", help="trie sizes up to 10^5 only")
    args = ap.parse_args(argv)

    from atomgraph.local.beam import beam_decode
    from atomgraph.local.engine import LocalEngine, bundled_model_path, load_engine
    from atomgraph.local.trie import TokenTrie, corpus_ngrams
    from atomgraph.tools.objects import load_objects

    res: dict = {"model": "bundled Gemma-3-270M Q4_K_M", "tokens": args.tokens}
    t0 = time.perf_counter()
    LocalEngine(bundled_model_path()).close()
    res["load_s"] = round(time.perf_counter() - t0, 3)
    engine = load_engine()
    prompt = engine.chat_prompt([("user", "Write a long story about a lighthouse keeper and the sea.")])

    def rate(**kw) -> tuple[float, int]:
        engine.generate(prompt, max_tokens=2, **kw)  # warm: the prompt is cached
        g = engine.generate(prompt, max_tokens=args.tokens, **kw)
        return len(g.tokens) / g.seconds, len(g.tokens)

    free, n_free = rate()
    grammar = engine.json_schema_grammar(SCHEMA)
    gram, n_gram = rate(grammar=grammar, close_json=SCHEMA)
    res["free_tok_s"], res["grammar_tok_s"] = round(free, 2), round(gram, 2)
    res["free_tokens"], res["grammar_tokens"] = n_free, n_gram

    base = sorted(corpus_ngrams(load_objects(OBJECTS)))
    trie = TokenTrie.from_strings(base, engine)
    kw_prompt = engine.chat_prompt([("user", "Rewrite as corpus phrases in parentheses: american film director")])
    for width in (1, 4):
        beam_decode(engine, kw_prompt, trie, beam_width=width, max_tokens=2)  # warm
        r = beam_decode(engine, kw_prompt, trie, beam_width=width, max_items=4, max_tokens=args.tokens // 2)
        res[f"trie_beam{width}_tok_s"] = round(r.evaluated_tokens / r.seconds, 2)
        res[f"trie_beam{width}_evaluated"] = r.evaluated_tokens
    res["ratio_grammar_vs_free_per_token"] = round(free / gram, 2)
    res["ratio_trie_beam1_vs_free_per_token"] = round(free / res["trie_beam1_tok_s"], 2)
    res["ratio_trie_beam4_vs_free_per_token"] = round(free / res["trie_beam4_tok_s"], 2)

    sizes = [10**4, 10**5] if args.quick else [10**4, 10**5, 10**6]
    res["trie"] = []
    for n in sizes:
        strings = _ngrams(n, base)
        tracemalloc.start()
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            tr = TokenTrie.build(strings, engine, cache_dir=tmp)
            build = time.perf_counter() - t0
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            t1 = time.perf_counter()
            again = TokenTrie.build(strings, engine, cache_dir=tmp)
            load = time.perf_counter() - t1
        probes = [engine.tokenize(s)[:2] for s in strings[:: max(1, n // 500)]]
        t2 = time.perf_counter()
        for p in probes:
            tr.next_tokens(p[:1])
            tr.is_complete(p)
        lookup_us = (time.perf_counter() - t2) / len(probes) * 1e6
        row = {"ngrams": n, "kept": len(tr), "dropped": tr.dropped, "build_s": round(build, 2),
               "reload_s": round(load, 3), "reloaded_from_cache": again.loaded_from_cache,
               "bytes": tr.nbytes, "bytes_per_ngram": round(tr.nbytes / max(1, len(tr)), 1),
               "peak_build_mib": round(peak / 2**20, 1), "lookup_us": round(lookup_us, 1)}
        res["trie"].append(row)
        print(json.dumps(row), flush=True)

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2))
    print(json.dumps({k: v for k, v in res.items() if k != "trie"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
