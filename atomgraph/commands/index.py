"""``atomgraph index``: build and inspect the Wikipedia passage collection.

    atomgraph index wikipedia INPUT... --collection NAME [--persist DIR]
        [--format auto|jsonl|hipporag|hotpot-bz2|tsv] [--batch-size N] [--max-tokens N] [--limit N]
    atomgraph index info --collection NAME [--persist DIR]
    atomgraph index atoms INPUT... --collection NAME   (KAR³ atomizing; see atomgraph.commands.index_atoms)
"""

from __future__ import annotations

import json
import os
import sys

from atomgraph.tools.corpus_readers import FORMATS


def register(sub) -> None:
    p = sub.add_parser("index", help="build or inspect a vector collection of passages")
    isub = p.add_subparsers(dest="index_command", metavar="{wikipedia,atoms,info}")

    w = isub.add_parser("wikipedia", help="embed passages from corpus files into a Chroma collection")
    w.add_argument("inputs", nargs="+", metavar="INPUT", help="corpus file(s) or a directory of HotpotQA .bz2 files")
    _where(w)
    w.add_argument("--format", default="auto", choices=["auto", *FORMATS], help="corpus format (default: detect)")
    w.add_argument("--batch-size", type=int, default=256, help="passages embedded and written per batch (default 256)")
    w.add_argument("--max-tokens", type=int, default=256, help="split passages longer than this many tokens (default 256)")
    w.add_argument("--limit", type=int, default=None, help="read at most N records")
    w.add_argument("--encoding", default="utf-8", help="text encoding of the inputs (default utf-8; text that is "
                   "not in it is an error naming the file and line)")
    w.add_argument("--no-progress", action="store_true", help="no progress bar")
    w.add_argument("--json", action="store_true", help="print the summary as JSON")
    w.set_defaults(func=_run_wikipedia, warms=True)

    from atomgraph.commands.index_atoms import register as register_atoms

    register_atoms(isub)

    i = isub.add_parser("info", help="size and embedding model of a collection")
    _where(i)
    i.add_argument("--json", action="store_true", help="print as JSON")
    i.set_defaults(func=_run_info)

    p.set_defaults(func=lambda args: p.print_help() or 2)


def _where(parser) -> None:
    parser.add_argument("--collection", default=None, help="collection name (default: settings.chroma_collection)")
    parser.add_argument("--persist", default=None, help="embedded Chroma folder (default: settings.chroma_path)")


def _run_wikipedia(args) -> int:
    from atomgraph.settings import get_settings
    from atomgraph.tools.ingest import ingest

    settings = get_settings()
    try:
        stats = ingest(
            args.inputs,
            args.collection,
            settings=settings,
            persist=args.persist,
            fmt=args.format,
            batch_size=args.batch_size,
            max_tokens=args.max_tokens,
            limit=args.limit,
            encoding=args.encoding,
            progress=not args.no_progress,  # a bar on a terminal, periodic lines in a log
        )
    except KeyboardInterrupt as exc:
        stats = getattr(exc, "stats", None)
        if stats is not None:
            print(stats.summary() + " - run the same command again to resume", file=sys.stderr)
        raise
    print(json.dumps(stats.as_dict()) if args.json else stats.summary())
    return 0


def _run_info(args) -> int:
    from atomgraph.settings import get_settings
    from atomgraph.tools.chroma_source import ChromaWikipediaSource

    from atomgraph.errors import ConfigError

    settings = get_settings()
    collection = args.collection or settings.chroma_collection
    host = None if args.persist else settings.chroma_host
    folder = args.persist or (None if host else settings.chroma_path)
    if folder and os.path.exists(folder) and not os.path.isdir(folder):
        raise ConfigError(f"the Chroma folder {folder} is a file, not a folder")
    # Reading the recorded model needs no embedding model: pass the configured name lazily.
    source = ChromaWikipediaSource(
        collection, path=args.persist or settings.chroma_path, host=host, port=settings.chroma_port, settings=settings
    )
    info = source.info()
    if args.json:
        print(json.dumps(info))
    elif not info["exists"]:
        print(f"collection {collection!r} does not exist at {info['where']}")
        return 1
    else:
        print(
            f"collection {collection!r} at {info['where']}: {info['count']} passages, "
            f"embedding model {info['embedding_model']} ({info['embedding_dim']} dims)"
        )
    return 0 if info["exists"] else 1
