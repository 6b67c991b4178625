"""``atomgraph index atoms``: KAR³'s knowledge atomizing into an atom index.

    atomgraph index atoms INPUT... --collection NAME [--persist DIR] [--format ...] [--max-tokens N] [--limit N]
        [--concurrency N] [--temperature T] [--write-batch N] [--model ...] [--json]
    atomgraph index atoms --from-collection PASSAGES [--collection NAME] ...

Chunks go to collection NAME, their atomic questions to NAME_atoms. Rerunning the same
command atomizes only the chunks not yet done (a killed run resumes).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from atomgraph.commands.common import add_model_source_args, model_and_sources
from atomgraph.tools.corpus_readers import FORMATS


def register(isub) -> None:
    a = isub.add_parser("atoms", help="KAR³: write the atomic questions each chunk answers (atom index)")
    a.add_argument("inputs", nargs="*", metavar="INPUT", help="corpus file(s), as for 'index wikipedia'")
    a.add_argument("--from-collection", default=None, help="atomize an existing passages collection instead")
    a.add_argument("--collection", default=None,
                   help="chunk collection written (atoms in NAME_atoms; default: --from-collection, else settings)")
    a.add_argument("--persist", default=None, help="embedded Chroma folder (default: settings.chroma_path)")
    a.add_argument("--format", default=None, choices=["auto", *FORMATS], help="corpus format (default: detect)")
    a.add_argument("--encoding", default=None, help="text encoding of the corpus files (default utf-8; read strictly)")
    a.add_argument("--split-chunks", action="store_true", default=None,
                   help="split passages longer than --max-tokens (default: atomize whole paragraphs, as the authors do)")
    a.add_argument("--atom-question-filter", action="store_true", default=None,
                   help="keep only atomizer lines that are atomic questions (ours; the authors keep every line)")
    a.add_argument("--max-tokens", type=int, default=None, help="with --split-chunks: the chunk size in tokens (default 256)")
    a.add_argument("--limit", type=int, default=None, help="read at most N records (or chunks)")
    a.add_argument("--concurrency", type=int, default=None, help="chunks atomized at once (default 8)")
    a.add_argument("--temperature", type=float, default=None, help="atomizer temperature (default 0.7, as in the paper)")
    a.add_argument("--write-batch", type=int, default=None, help="atomized chunks written per batch (default 32)")
    add_model_source_args(a)
    a.add_argument("--no-progress", action="store_true", help="no progress bar")
    a.add_argument("--json", action="store_true", help="print the summary as JSON")
    a.set_defaults(func=run, warms=True)


def summary(stats: dict) -> str:
    reasons = ", ".join(f"{k} {v}" for k, v in sorted((stats.get("rejected_by_reason") or {}).items()))
    return (f"atomized {stats.get('atomized', 0)} chunks ({stats.get('atoms', 0)} atomic questions; "
            f"{stats.get('rejected_lines', 0)} atomizer lines rejected{f' ({reasons})' if reasons else ''}), "
            f"skipped {stats.get('skipped', 0)} already atomized, failed {stats.get('failed', 0)} (rerun to retry); "
            f"{stats.get('llm_calls', 0)} LLM calls, {stats.get('prompt_tokens', 0)} prompt + "
            f"{stats.get('completion_tokens', 0)} completion tokens, ${stats.get('cost_usd', 0):.4f}; "
            f"{stats.get('seconds', 0):.1f}s; {stats.get('collection')!r} now holds {stats.get('collection_chunks', 0)} "
            f"chunks, {stats.get('collection_atoms', 0)} atoms"
            + (f"; records not atomized: {', '.join(f'{n} {why}' for why, n in stats['skipped_records'].items())}"
               if stats.get("skipped_records") else ""))


def run(args) -> int:
    from atomgraph.errors import ConfigError
    from atomgraph.graphs.kar3_index import build_kar3_index_graph

    if not args.inputs and not args.from_collection:
        raise ConfigError("give corpus file(s) or --from-collection NAME")
    if args.inputs and args.from_collection:
        raise ConfigError("give corpus file(s) or --from-collection, not both")
    settings, model, _ = model_and_sources(args, require_sources=False)
    if args.persist:
        settings = settings.model_copy(update={"chroma_path": args.persist, "chroma_host": None})
    # the operator's own command line: the files it names are data it declares (data_dirs binds a run's client)
    settings = settings.model_copy(update={"data_dirs": [*settings.data_dirs, *args.inputs]})
    if not settings.chroma_host:  # the store's folder: a file, or unwritable, is one clear line (nothing created)
        from atomgraph.jsonl import check_out_dir

        check_out_dir(settings.chroma_path, what="Chroma folder", create=False)
    context = {k: v for k, v in {
        "format": args.format, "encoding": args.encoding, "split_chunks": args.split_chunks,
        "atom_question_filter": args.atom_question_filter, "max_tokens": args.max_tokens, "limit": args.limit,
        "atomizer_concurrency": args.concurrency, "atomizer_temperature": args.temperature,
        "write_batch": args.write_batch}.items() if v is not None}
    from atomgraph.warmup import started, warm_up

    if all(os.path.exists(p) for p in args.inputs):  # a missing input: the graph's one-line error, nothing loaded first
        warm_up("kar3_index", settings, model, show=not args.no_progress)  # loaded here, not in the first atomizing
    started()  # the start is over (atomgraph.warmup)
    graph = build_kar3_index_graph(model=model, settings=settings,
                                   progress=not args.no_progress)  # a bar on a terminal, periodic lines in a log
    inp = {"inputs": list(args.inputs), **({"from_collection": args.from_collection} if args.from_collection else {}),
           **({"collection": args.collection} if args.collection else {})}
    out = asyncio.run(graph.ainvoke(inp, context=context))
    stats = out.get("stats") or {}
    if args.json:
        print(json.dumps({**stats, "error": out.get("error")}))
    elif out.get("error"):
        print(f"atomgraph: error: {out['error']}", file=sys.stderr)
    else:
        print(summary(stats))
    return 2 if out.get("error") else 0
