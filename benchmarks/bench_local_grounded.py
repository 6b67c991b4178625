"""Evidence-grounded answers for the in-process model, measured in one run.

ATOMR's direct-RAG stage answers each question from the evidence shown, with the bundled
Gemma-3-270M (completion-style prompt, general pack), two ways:

- ``free``: the stage's reply as the model writes it (text mode, the stage's stop sequences,
  the stage's parser);
- ``chat`` (``--chat``, demo questions only): the free reply prompted in chat turns, as before
  the base model was prompted as a completion;
- ``grounded``: the same free reasoning and paraphrase, then the Answer List decoded by
  constrained beam search over a token trie of the evidence's n-grams, or "Unknown"
  (:func:`atomgraph.local.grounded.grounded_reply`).

Questions and evidence: the 8 demo questions with the 4 demo passages that share the most content
words with the question (a lexical retriever, no embedding model); the first N HotpotQA and N
MuSiQue questions of ``../shared/data/retrieval`` (HippoRAG's splits; prompt demonstrations left
out) with their gold passages. These are HippoRAG's *train* questions (its splits are the only
questions here with a corpus and gold passages; ATOMR's dev splits carry no passages); a question
that any prompt pack demonstrates is skipped, so none of the measured questions is a
demonstration. EM/F1 are the evaluation's (``evaluation/metrics.py``); cost per question is
seconds (the prompt's evaluation included; for the grounded arm, its free part is the free arm's
reply up to ``Answer List:``, identical under greedy decoding from the same history, so it is not
generated twice and its share of the free arm's seconds, by tokens, is counted), model calls, prompt and output tokens, and the beam
search's model evaluations. Each question's prompt is evaluated once from an empty KV cache and
saved; both modes restore it, so they answer from the same cache history. Every reply goes to the
JSONL next to the results (``--resume`` goes on from it).

    nice python -m benchmarks.bench_local_grounded --n 50
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RETRIEVAL = REPO.parent / "shared" / "data" / "retrieval"


def demo_rows() -> list[dict]:
    from atomgraph.demo_pack import load_passages, load_questions
    from atomgraph.text import content_words

    passages = load_passages()
    words = [content_words(p["title"] + " " + p["text"]) for p in passages]
    rows = []
    for q in load_questions():
        qw = content_words(q["question"])
        ranked = sorted(range(len(passages)), key=lambda i: (-len(qw & words[i]), i))[:4]
        rows.append({"set": "demo", "question": q["question"], "answers": q["answers"],
                     "passages": [passages[i] for i in ranked]})
    return rows


def dataset_rows(name: str, n: int) -> list[dict]:
    from benchmarks.bench_local_prompting import demo_questions

    folder = RETRIEVAL / name
    if not folder.is_dir():
        return []
    objects = {}
    for line in (folder / "objects.jsonl").open(encoding="utf-8"):
        o = json.loads(line)
        objects[o["id"]] = o
    skip = demo_questions()
    rows = []
    for line in (folder / "questions.jsonl").open(encoding="utf-8"):
        q = json.loads(line)
        if " ".join(q["question"].split()).lower() in skip or not q.get("answers"):
            continue
        rows.append({"set": name, "question": q["question"], "answers": q["answers"],
                     "passages": [objects[i] for i in q["gold_ids"] if i in objects]})
        if len(rows) >= n:
            break
    return rows


def knowledge(passages: list[dict]) -> str:
    return "Wikipedia Passages:\n" + "\n".join(f"[{i}] {p['title']} | {p['text']}" for i, p in enumerate(passages, 1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10, help="HotpotQA and MuSiQue questions each (default 10)")
    ap.add_argument("--cap", type=int, default=96, help="output tokens of the free part (default 96)")
    ap.add_argument("--beam-width", type=int, default=2, help="beam width of the grounded list (default 2)")
    ap.add_argument("--max-items", type=int, default=3, help="answers in a grounded list at most (default 3)")
    ap.add_argument("--chat", action="store_true", help="also the free reply in chat turns, on the demo questions")
    ap.add_argument("--no-share-free", dest="share_free", action="store_false",
                    help="generate the grounded arm's free part again instead of taking the free arm's")
    ap.add_argument("--resume", action="store_true", help="keep the JSONL's questions and run the rest")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "local_grounded.json"))
    args = ap.parse_args(argv)

    from atomgraph.evaluation.metrics import answer_scores
    from atomgraph.local.chat import _turns
    from atomgraph.local.engine import load_engine
    from atomgraph.local.grounded import grounded_reply
    from atomgraph.prompts.atomr.stages import DIRECT_RAG_STAGE

    engine = load_engine()
    hot, mus = dataset_rows("hotpotqa", args.n), dataset_rows("musique", args.n)
    # HotpotQA and MuSiQue alternate, so a run stopped early has measured both sets alike
    rows = demo_rows() + [r for pair in zip(hot, mus) for r in pair] + hot[len(mus):] + mus[len(hot):]
    stage = DIRECT_RAG_STAGE
    totals: dict[str, dict] = {}
    t_all = time.perf_counter()
    out_path = Path(args.out)
    done = set()
    jsonl = out_path.with_suffix(".jsonl")
    if args.resume and jsonl.is_file():  # a bounded run goes on where it stopped
        for line in jsonl.open(encoding="utf-8"):
            rec = json.loads(line)
            done.add((rec["set"], rec["question"], rec["mode"]))
            add(totals, rec)
    with jsonl.open("a" if args.resume else "w", encoding="utf-8") as log:
        for row in rows:
            q = " ".join(row["question"].split())
            modes = ("free", "grounded", "chat") if row["set"] == "demo" and args.chat else ("free", "grounded")
            modes = [m for m in modes if (row["set"], q, m) not in done]
            if not modes:
                continue
            msgs = stage.messages({"question": q, "knowledge": knowledge(row["passages"])})
            prompt = engine.prompt(_turns(msgs))
            # One KV-cache history per question: the prompt (less its last token) evaluated from an
            # empty context and saved; each mode restores it (the same KV entries a fresh evaluation
            # gives) and evaluates the last token alone, so both modes answer from the same history.
            # The prompt's seconds are counted in each mode's cost, as a real call pays them.
            engine.reset_cache()
            t0 = time.perf_counter()
            with engine.lock:
                engine.evaluate(prompt[:-1])
                engine.remember(prompt[:-1])
            prompt_s = time.perf_counter() - t0
            free_gen = None
            for mode in modes:
                t0 = time.perf_counter()
                beam_evals = 0
                extra = 0.0
                if mode in ("free", "chat"):  # chat: the same free reply, prompted in chat turns (before item 2)
                    p = prompt if mode == "free" else engine.chat_prompt(_turns(msgs))
                    gen = engine.generate(p, max_tokens=args.cap, stop=list(stage.stop))
                    text, n_out = gen.text, len(gen.tokens)
                    if mode == "free":
                        free_gen = gen
                else:
                    # The free part is the free arm's greedy reply up to "Answer List:" (same prompt, same
                    # history): it is not generated twice; its seconds (the free arm's, by tokens) are counted.
                    shared = free_gen.text if (free_gen is not None and args.share_free) else None
                    rep = grounded_reply(engine, prompt, [p["title"] + " | " + p["text"] for p in row["passages"]],
                                         stop=list(stage.stop), max_tokens=args.cap, beam_width=args.beam_width,
                                         max_items=args.max_items, free_text=shared)
                    text, n_out, beam_evals = rep.text, rep.output_tokens, rep.beam_evaluations
                    if shared is not None:
                        head_tokens = len(engine.tokenize(shared.split("Answer List:", 1)[0]))
                        extra = free_gen.seconds * min(1.0, head_tokens / max(len(free_gen.tokens), 1))
                secs = time.perf_counter() - t0 + extra + (prompt_s if mode != "chat" else 0.0)
                try:
                    parsed = stage.parse(text)
                    answers, err = ([] if parsed.unknown else list(parsed.answers)), None
                except ValueError as exc:
                    answers, err = [], str(exc)[:200]
                pred = answers[0] if answers else ""
                sc = answer_scores(pred, row["answers"])
                rec = {"set": row["set"], "mode": mode, "question": q, "gold": row["answers"],
                       "predicted": pred, "em": sc["em"], "f1": sc["f1"], "error": err, "reply": text,
                       "seconds": round(secs, 2), "prompt_seconds": round(prompt_s, 2), "prompt_tokens": len(prompt),
                       "output_tokens": n_out, "calls": 1, "beam_evaluations": beam_evals,
                       "free_part_from_free_arm": mode == "grounded" and extra > 0}
                add(totals, rec)
                log.write(json.dumps(rec, ensure_ascii=False) + "\n")
                log.flush()
                print(f"{row['set']}:{mode}: {pred!r} gold={row['answers'][0]!r} f1={sc['f1']:.2f} {secs:.1f}s",
                      file=sys.stderr, flush=True)
                write_summary(out_path, args, engine, rows, totals, t_all)
    return write_summary(out_path, args, engine, rows, totals, t_all, final=True)


def add(totals: dict, rec: dict) -> None:
    t = totals.setdefault(f"{rec['set']}:{rec['mode']}", {"n": 0, "em": 0.0, "f1": 0.0, "parsed": 0, "answered": 0,
                                                         "seconds": 0.0, "prompt_tokens": 0, "output_tokens": 0,
                                                         "calls": 0, "beam_evaluations": 0})
    t["n"] += 1
    t["em"] += rec["em"]
    t["f1"] += rec["f1"]
    t["parsed"] += rec["error"] is None
    t["answered"] += bool(rec["predicted"])
    t["seconds"] += rec["seconds"]
    for k in ("prompt_tokens", "output_tokens", "calls", "beam_evaluations"):
        t[k] += rec.get(k, 0)


def paired(jsonl: Path, a: str = "free", b: str = "grounded", resamples: int = 2000) -> dict:
    """Per set and pooled: F1 of ``b`` minus ``a`` on the same questions, its 95% paired bootstrap
    interval (seed 0), and the questions ``b`` wins, loses, ties."""
    import numpy as np

    by: dict[tuple[str, str], dict[str, float]] = {}
    for line in jsonl.open(encoding="utf-8"):
        rec = json.loads(line)
        by.setdefault((rec["set"], rec["question"]), {})[rec["mode"]] = rec["f1"]
    out = {}
    sets = sorted({k[0] for k in by})
    for name in [*sets, "hotpotqa+musique", "all"]:
        keep = sets if name == "all" else (["hotpotqa", "musique"] if name == "hotpotqa+musique" else [name])
        d = np.array([m[b] - m[a] for (st, _), m in by.items() if st in keep and a in m and b in m])
        if not len(d):
            continue
        rng = np.random.default_rng(0)
        boots = d[rng.integers(0, len(d), size=(resamples, len(d)))].mean(axis=1)
        out[name] = {"n": int(len(d)), "f1_diff": round(100 * float(d.mean()), 1),
                     "ci95": [round(100 * float(np.percentile(boots, 2.5)), 1),
                              round(100 * float(np.percentile(boots, 97.5)), 1)],
                     "wins": int((d > 0).sum()), "losses": int((d < 0).sum()), "ties": int((d == 0).sum())}
    return out


def write_summary(out_path, args, engine, rows, totals, t_all, final: bool = False) -> int:
    """The results so far (``complete`` false until every question ran: a bounded run that was
    stopped still leaves its numbers)."""
    summary = {}
    for key, t in totals.items():
        n = t["n"]
        summary[key] = {"n": n, "em": round(100 * t["em"] / n, 1), "f1": round(100 * t["f1"] / n, 1),
                        "parsed": t["parsed"], "answered": t["answered"],
                        "seconds_per_question": round(t["seconds"] / n, 2),
                        "calls_per_question": round(t["calls"] / n, 2),
                        "prompt_tokens_per_question": round(t["prompt_tokens"] / n, 1),
                        "output_tokens_per_question": round(t["output_tokens"] / n, 1),
                        "beam_evaluations_per_question": round(t["beam_evaluations"] / n, 1)}
    res = {"benchmark": "local_grounded", "model": engine.name, "stage": "direct_rag", "prompt_format": "completion",
           "evidence": {"demo": "4 passages by content-word overlap", "hotpotqa": "gold passages",
                        "musique": "gold passages"},
           "n": {"demo": len([r for r in rows if r["set"] == "demo"]), "hotpotqa": len([r for r in rows if r["set"] == "hotpotqa"]),
                 "musique": len([r for r in rows if r["set"] == "musique"])},
           "cap": args.cap, "beam_width": args.beam_width, "max_items": args.max_items, "complete": final,
           "results": summary, "grounded_minus_free_f1": paired(out_path.with_suffix(".jsonl")), "wall_s": round(time.perf_counter() - t_all, 1),
           "command": f"python -m benchmarks.bench_local_grounded --n {args.n} --cap {args.cap} "
                      f"--beam-width {args.beam_width} --max-items {args.max_items}" + (" --chat" if args.chat else "")}
    out_path.write_text(json.dumps(res, indent=2) + "\n")
    if final:
        print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
