"""`atomgraph retrieve --method dense|bm25|arm --objects O.jsonl --questions Q.jsonl --k 5`.

Retrieves k objects per question with the chosen method over the ARM index of the objects
(:mod:`atomgraph.tools.arm_index`, built once and cached), and prints recall, precision, F1
and perfect recall in percent, overall and by group (multi-gold questions; multi-table ones
separately). ``--out DIR`` writes ``results.jsonl`` (one line per question, with ARM's
trace) and ``summary.json``. ``--dense-search`` picks exact or ANN dense search,
``--max-object-chars`` the size over which an object is refused (:class:`ArmIndex`). ``--every N`` keeps
every Nth question and ``--limit N`` the first N (of those); ``--no-keywords`` drops the questions'
replayable keywords. ARM parameters come from :class:`atomgraph.state.arm.ArmContext`
(``--set name=value`` overrides one).

With a chat model (``--model``, ``--model-factory`` or the settings' decoder model), ``--method
arm`` runs the ``arm`` graph up to its vote: LLM decomposition and constrained alignment
(replayed ``keywords`` still skip the model), drafts, verification and the weighted vote.
Without one, or with ``--no-llm``, it is the same graph without a model (``llm=False``: keywords
replayed, else the question's own corpus n-grams; no verification), and the command says so on
its first line (stderr) and in ``--json`` (``"llm": false``, ``"llm_free_because"``).
"""

from __future__ import annotations

import json
import sys
from dataclasses import fields

from atomgraph.errors import ConfigError


def _parse_sets(items: list[str]) -> dict:
    from atomgraph.state.arm import ArmContext

    names = {f.name for f in fields(ArmContext)} - {"objects", "index_cache", "answer"}
    out: dict = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in names:
            raise ConfigError(f"--set {item!r}: expected NAME=VALUE with NAME one of {', '.join(sorted(names))}")
        try:
            out[name] = json.loads(value)
        except json.JSONDecodeError:
            out[name] = value
        except (ValueError, RecursionError):  # a 5,000-digit number, nesting too deep
            raise ConfigError(f"--set {name}: unreadable value ({value[:40]}...)") from None
    return out


def _run(args) -> int:
    from pydantic import ValidationError

    from atomgraph.evaluation.retrieval import evaluate, format_summary, run_counts
    from atomgraph.graphs.arm import retrieve
    from atomgraph.state.arm import ArmContext
    from atomgraph.tools.arm_index import ArmIndex
    from atomgraph.tools.objects import load_objects, load_questions

    if args.k < 1:
        raise ConfigError("--k must be at least 1")
    try:
        ctx = ArmContext.validated(**{**_parse_sets(args.set), "k": args.k})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        raise ConfigError(f"--set {where}: {first['msg']}" if where else f"--set: {first['msg']}") from None
    objects = load_objects(args.objects, encoding=args.encoding)
    questions = load_questions(args.questions, object_ids=[o.id for o in objects], encoding=args.encoding)
    if args.every is not None:
        if args.every < 1:
            raise ConfigError("--every must be at least 1")
        questions = questions[:: args.every]
    if args.limit is not None:
        if args.limit < 1:
            raise ConfigError("--limit must be at least 1")
        questions = questions[: args.limit]
    if args.no_keywords:  # the model decomposes every question (no replay)
        from dataclasses import replace

        questions = [replace(q, keywords=None) for q in questions]
    from atomgraph.jsonl import check_out_dir  # the inputs read: now the folders it writes

    if args.out:
        check_out_dir(args.out, what="output folder (--out)")
    if args.cache and not args.no_cache:
        check_out_dir(args.cache, what="index cache folder (--cache)")
    shown = False if getattr(args, "no_progress", False) else None  # None: lines once a stage runs past a few seconds
    from atomgraph.warmup import started, warm_up

    if args.method != "bm25":  # the embedding model loads here, said, not inside the index build's first batch

        warm_up(None, show=shown is None, models=False)
    started()  # the start is over (atomgraph.warmup)
    index = ArmIndex.build(objects, cache_dir=args.cache, use_cache=not args.no_cache,
                           dense=args.method != "bm25",  # BM25 pays for no embeddings
                           dense_search=args.dense_search, max_object_chars=args.max_object_chars, progress=shown)
    if args.method in ("dense", "arm"):
        index.prime_queries([q.question for q in questions], progress=shown)
    if args.method == "arm" and ctx.structure_alignment:
        from atomgraph.nodes.arm.structure_alignment import UnitCache

        UnitCache.of(index).prime_all(progress=shown)  # sentence/cell/column embeddings, once per collection (cached)
    llm = _llm_retriever(args, index, ctx) if args.method == "arm" and not args.no_llm else None
    no_model = None
    if args.method == "arm" and llm is None:  # the same graph, without a model: said, never silent
        from dataclasses import replace

        from atomgraph.graphs.arm import arm_retriever

        no_model = "--no-llm" if args.no_llm else "no model configured (--model, --model-factory or a decoder model)"
        print(f"ARM without a model ({no_model}): the LLM-free pipeline — keywords replayed, else the question's "
              "own corpus n-grams; drafts aggregated by their votes, no verification", file=sys.stderr)
        ctx = replace(ctx, llm=False)
        fn = arm_retriever(index, ctx)
    else:
        fn = llm or (lambda q: retrieve(args.method, q, index, args.k, ctx))
    extensions = ctx.extensions() if args.method == "arm" else {}  # what of the run is not the paper's setting
    if args.method == "arm":
        ext = ", ".join(f"{k}={v}" for k, v in extensions.items())
        said = f"the paper's, except {ext} (--set paper=true for the paper's setting)" if ext else "the paper's"
        print(f"ARM settings: {said}", file=sys.stderr)
    run = evaluate(fn, questions, objects, method=args.method, k=args.k, out_dir=args.out,
                   progress=not getattr(args, "no_progress", False))
    if args.json:
        payload = {"method": args.method, "k": args.k, "objects": len(objects), "questions": len(questions),
                   "groups": run.summary, "errors": sum(1 for r in run.records if "error" in r),
                   "counts": run_counts(run.records)}
        if args.method == "arm":
            payload["context"] = ctx.to_json()
            payload["extensions"] = extensions
            payload["llm"] = llm is not None
            if no_model:
                payload["llm_free_because"] = no_model
        if args.out:
            payload["out"] = str(args.out)
        print(json.dumps(payload, indent=2))
    else:
        print(format_summary(run))
        if args.out:
            print(f"per-question results: {args.out}/results.jsonl", file=sys.stderr)
    return 0


def _llm_retriever(args, index, ctx):
    """The ``arm`` graph as a retriever when a chat model is given or configured, else None."""
    from atomgraph.commands.common import model_and_sources

    settings, model, _ = model_and_sources(args, require_model=False, require_sources=False)
    if model is None and not settings.model_for("decoder"):
        return None
    from atomgraph.graphs.arm import arm_retriever

    return arm_retriever(index, ctx, model=model, settings=settings)


def register(sub) -> None:
    p = sub.add_parser("retrieve", help="object retrieval (dense, BM25, ARM) scored against gold ids")
    p.add_argument("--method", choices=["dense", "bm25", "arm"], default="arm")
    p.add_argument("--objects", required=True, metavar="O.jsonl", help="objects: {id, kind, title, text, columns?, rows?}")
    p.add_argument("--questions", required=True, metavar="Q.jsonl", help="questions: {id, question, gold_ids, keywords?}")
    p.add_argument("--encoding", default="utf-8", help="text encoding of the objects and questions files (default utf-8)")
    p.add_argument("--k", type=int, default=5, help="objects retrieved per question (default 5)")
    p.add_argument("--out", metavar="DIR", help="write results.jsonl and summary.json here")
    p.add_argument("--limit", type=int, help="only the first N questions (after --every)")
    p.add_argument("--every", type=int, metavar="N", help="only every Nth question (the 1st, the N+1st, ...)")
    p.add_argument("--no-keywords", action="store_true",
                   help="ignore the questions' keywords: ARM decomposes each question itself (with a model), "
                        "or uses its corpus n-grams (without one)")
    p.add_argument("--cache", metavar="DIR", help="index cache folder (default $ATOMGRAPH_ARM_CACHE or ~/.cache/atomgraph/arm-index)")
    p.add_argument("--no-cache", action="store_true", help="build the index in memory only")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="override an ArmContext field (repeatable)")
    p.add_argument("--dense-search", choices=["auto", "exact", "ann"],
                   help="dense search: exact, ANN (faiss product-quantised scan, re-ranked exactly), or auto = "
                        "exact up to 20,000 chunks (default: $ATOMGRAPH_ARM_DENSE_SEARCH or auto)")
    p.add_argument("--max-object-chars", type=int, metavar="N",
                   help="refuse (leave out, with a warning) objects over N characters; 0 = no limit "
                        "(default: $ATOMGRAPH_ARM_MAX_OBJECT_CHARS or 1,000,000)")
    p.add_argument("--json", action="store_true", help="print a machine-readable JSON object")
    p.add_argument("--model", help="chat model for ARM's LLM stages (default: settings), or scripted:RULES.json")
    p.add_argument("--model-factory", help="module:function returning the model(s) (default: $ATOMGRAPH_MODEL_FACTORY)")
    p.add_argument("--no-llm", action="store_true", help="ARM without a model, even where one is configured")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress (default: a bar on a terminal, a line with rate and ETA every 30 s in a log)")
    p.set_defaults(func=_run, sources=None, sources_factory=None, warms=True)


__all__ = ["register"]
