"""ARM's ``served_alignment="grammar"``: the grammar of a collection's corpus n-grams, its size
and what it costs grammar engines to compile and to apply, at 10^4 and 10^5 n-grams.

For each size (the first N corpus n-grams, in sorted order, of a real collection's objects,
prefix-closed like every corpus n-gram set), in one run:

- the prefix-factored grammar (:func:`atomgraph.prompts.constraints.list_grammar`) against a
  flat alternation of the same n-grams: bytes, rules, the widest alternation, build time;
- llguidance (vLLM's ``guidance`` structured-outputs backend) over the bundled Gemma-3
  tokenizer (262,144 tokens): GBNF → Lark conversion (what vLLM does with a GBNF grammar),
  matcher construction, the token mask per step; a corpus list accepted, a foreign word refused;
- llama.cpp's grammar sampler (the llama.cpp server's engine) through the bundled in-process
  model: grammar parse, and tokens/s of a constrained reply against a free one;
- xgrammar (vLLM's default backend), when installed: compile time, in a child process
  stopped after ``--xgrammar-timeout`` seconds.

    python -m benchmarks.bench_ngram_grammar [--objects FILE] [--sizes 10000 100000] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import sys
import time
import warnings
from pathlib import Path

from atomgraph.prompts.arm import ngram_list_grammar
from atomgraph.prompts.constraints import gbnf_literal
from benchmarks.stats import write_result

DEFAULT_OBJECTS = Path(__file__).resolve().parents[2] / "shared" / "data" / "retrieval" / "hotpotqa" / "objects.jsonl"


def corpus_ngrams(path: Path) -> list[str]:
    """Every corpus n-gram of the objects, as the ARM index keys them (no embeddings needed)."""
    from atomgraph.tools.arm_index import ngrams, object_fields, tokens
    from atomgraph.tools.objects import load_objects

    out: set[str] = set()
    for o in load_objects(path):
        for f in object_fields(o):
            out.update(ngrams(tokens(f)))
    return sorted(out)


def prefix_closed(keys: list[str]) -> list[str]:
    out = set()
    for k in keys:
        ws = k.split(" ")
        out.update(" ".join(ws[:i]) for i in range(1, len(ws) + 1))
    return sorted(out)


def flat_grammar(strings: list[str]) -> str:
    return 'root ::= "(" item (", " item)* ")"\nitem ::= ' + " | ".join(gbnf_literal(s) for s in strings) + "\n"


def _widest(gbnf: str) -> int:
    return max(len(line.split(" | ")) for line in gbnf.splitlines()[1:])


def _xgrammar_compile(gbnf: str, vocab: list[bytes], eos: int, q) -> None:
    import xgrammar as xgr

    info = xgr.TokenizerInfo(vocab, vocab_type=xgr.VocabType.RAW, vocab_size=len(vocab), stop_token_ids=[eos])
    t0 = time.perf_counter()
    xgr.GrammarCompiler(info, max_threads=2, cache_enabled=False).compile_grammar(gbnf)
    q.put(time.perf_counter() - t0)


def xgrammar_seconds(gbnf: str, vocab: list[bytes], eos: int, timeout: float) -> float | str:
    try:
        import xgrammar  # noqa: F401
    except ImportError:
        return "not installed"
    q = mp.get_context("fork").Queue()
    p = mp.get_context("fork").Process(target=_xgrammar_compile, args=(gbnf, vocab, eos, q))
    p.start()
    p.join(timeout)
    if p.is_alive():
        p.kill()
        p.join()
        return f"> {timeout:g} s (stopped)"
    return round(q.get(), 2) if not q.empty() else "failed"


def measure(path: Path, sizes: list[int], xgrammar_timeout: float) -> dict:
    import llama_cpp
    import llguidance
    from llguidance.gbnf_to_lark import any_to_lark
    from llguidance.llamacpp import lltokenizer_from_vocab

    from atomgraph.local.chat import ChatLocalLlama
    from atomgraph.local.engine import load_engine
    from atomgraph.prompts.arm import ALIGN_LIST

    t0 = time.perf_counter()
    every = corpus_ngrams(path)
    result: dict = {"objects": str(path), "corpus_ngrams": len(every), "read_s": round(time.perf_counter() - t0, 2),
                    "sizes": []}
    engine = load_engine()
    vocab_ptr = llama_cpp.llama_model_get_vocab(engine.llm.model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        tok = lltokenizer_from_vocab(vocab_ptr)
    vocab = [engine.token_bytes(t) for t in range(engine.n_vocab)]
    model = ChatLocalLlama()
    msgs = ALIGN_LIST.messages({"question": "Which university did the physicist who won the 1932 Nobel Prize attend?",
                                "keyword": "physics prize"})
    t0 = time.perf_counter()
    free = model.invoke(msgs, max_tokens=24, temperature=0)
    free_tps = free.usage_metadata["output_tokens"] / (time.perf_counter() - t0)
    for n in sizes:
        strings = prefix_closed(every[:n])
        t0 = time.perf_counter()
        gbnf = ngram_list_grammar(strings).gbnf
        build = time.perf_counter() - t0
        flat = flat_grammar(strings)
        row: dict = {"ngrams": len(strings),
                     "factored": {"bytes": len(gbnf.encode()), "rules": gbnf.count("::="), "widest": _widest(gbnf),
                                  "build_s": round(build, 3)},
                     "flat": {"bytes": len(flat.encode()), "rules": 2, "widest": len(strings)}}
        # llguidance
        t0 = time.perf_counter()
        lark = any_to_lark(gbnf)
        convert = time.perf_counter() - t0
        t0 = time.perf_counter()
        m = llguidance.LLMatcher(tok, lark, log_level=0)
        build_m = time.perf_counter() - t0
        sample = "(" + ", ".join(strings[i] for i in (0, len(strings) // 3, 2 * len(strings) // 3)) + ")"
        ids = tok.tokenize_str(sample)
        masks = []
        for t in ids:
            t1 = time.perf_counter()
            m.compute_bitmask()
            masks.append(time.perf_counter() - t1)
            m.consume_token(t)
        accepted = not m.is_error() and m.is_accepting()
        m2 = llguidance.LLMatcher(tok, lark, log_level=0)
        refused = not (m2.consume_tokens(tok.tokenize_str(f"({strings[0]}, zzqqxx)")) and m2.is_accepting())
        row["llguidance"] = {"gbnf_to_lark_s": round(convert, 2), "matcher_s": round(build_m, 2),
                             "mask_ms_median": round(statistics.median(masks) * 1000, 3),
                             "mask_ms_max": round(max(masks) * 1000, 3), "error": m.get_error() if m.is_error() else None,
                             "accepts_corpus_list": accepted, "refuses_foreign_word": refused}
        # llama.cpp
        t0 = time.perf_counter()
        engine.grammar(gbnf)
        parse = time.perf_counter() - t0
        t0 = time.perf_counter()
        reply = model.invoke(msgs, grammar=gbnf, max_tokens=24, temperature=0)
        secs = time.perf_counter() - t0
        out_tokens = reply.usage_metadata["output_tokens"]
        row["llama_cpp"] = {"parse_s": round(parse, 2), "constrained_reply_s": round(secs, 2),
                            "tokens_per_s": round(out_tokens / secs, 2), "free_tokens_per_s": round(free_tps, 2),
                            "reply": reply.content}
        row["xgrammar_compile_s"] = {"factored": xgrammar_seconds(gbnf, vocab, engine.llm.token_eos(), xgrammar_timeout)}
        if n <= 10_000:
            row["xgrammar_compile_s"]["flat"] = xgrammar_seconds(flat, vocab, engine.llm.token_eos(), xgrammar_timeout)
        result["sizes"].append(row)
        print(json.dumps(row), flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--objects", type=Path, default=DEFAULT_OBJECTS)
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    p.add_argument("--xgrammar-timeout", type=float, default=300.0)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if not args.objects.is_file():
        print(f"skipped: {args.objects} not found")
        return 0
    write_result(measure(args.objects, args.sizes, args.xgrammar_timeout), args.out, show=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
