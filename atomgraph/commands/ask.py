"""``atomgraph ask "QUESTION" [--method atomr] [--sources ...] [--json]``.

Models come from settings (ATOMGRAPH_MODEL, ...), or ``--model NAME``, or your own Python
object: ``--model-factory my_pkg.models:make`` (also ``$ATOMGRAPH_MODEL_FACTORY``), a
function taking the settings and returning a chat model or a role→model mapping;
``--model scripted:RULES.json`` runs a scripted model. Sources likewise: ``--sources
wikipedia,google`` or ``--sources-factory my_pkg.sources:make`` (settings → sources).
These work as in ``atomgraph eval run`` (see :mod:`atomgraph.evaluation.runner`).

``--checkpoint PATH`` saves the run after every step in an SQLite file (a thread per
question); running the same command again after a kill resumes the question from its last
completed step, without repeating its model calls (:mod:`atomgraph.checkpoint`).
"""

from __future__ import annotations

import asyncio
import sys

from atomgraph.commands.common import (add_deadline_arg, add_model_source_args, deadline_config, model_and_sources,
                                       print_json)
from atomgraph.graphs.registry import method_names


def register(sub) -> None:
    p = sub.add_parser("ask", help="answer one question and show how it was answered")
    p.add_argument("question", help="the question")
    p.add_argument("--method", default="atomr", help=f"method: {', '.join(method_names())} (default: atomr)")
    add_model_source_args(p)
    add_deadline_arg(p)
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--checkpoint", metavar="PATH",
                   help="SQLite file saving every step; rerun after a kill to resume (a thread per question)")
    p.add_argument("--thread", help="thread id in the --checkpoint file (default: method + question)")
    p.set_defaults(func=run, warms=True)


async def _ask(graph, question: str, show_progress: bool, config: dict | None = None,
               start: object = ...) -> dict:
    result: dict = {}
    inp = {"question": question} if start is ... else start
    checkpointed = bool(((config or {}).get("configurable") or {}).get("thread_id"))
    durable = {"durability": "sync"} if checkpointed else {}  # each step saved before the next one starts
    async for mode, chunk in graph.astream(inp, config, stream_mode=["updates", "values"], **durable):
        if mode == "values":
            result = chunk
        elif show_progress:
            for node, update in chunk.items():
                for run in ((update or {}).get("runs") or {}).values():
                    status = f"→ {run.answer}" if run.step is None else f"→ next: {run.step}"
                    print(f"  {node} [{run.id}] {status}", file=sys.stderr)
                if node == "plan" and update:
                    print(f"  plan: {len(update['tree'])} nodes", file=sys.stderr)
    # "values" chunks carry the whole state; keep what the graph declares as its output.
    keys = getattr(graph, "output_channels", None)
    if isinstance(keys, (list, tuple)):
        result = {k: result[k] for k in keys if k in result}
    return {"question": question, **result}


async def _durable_ask(args, model, sources, settings, show: bool) -> dict:
    """The question on its thread of the ``--checkpoint`` file: new, resumed after a kill, or
    (already finished) read back."""
    from atomgraph.checkpoint import open_checkpointer, resume_input, thread_id
    from atomgraph.graphs.registry import build_method

    async with open_checkpointer(args.checkpoint) as saver:
        graph = build_method(args.method, model=model, sources=sources, settings=settings, checkpointer=saver)
        config = {"configurable": {"thread_id": args.thread or thread_id(args.method, args.question)}}
        start, status = await resume_input(graph, {"question": args.question}, config)
        if not args.quiet:
            print(f"checkpoint {args.checkpoint}, thread {config['configurable']['thread_id']}: {status}",
                  file=sys.stderr)
        if status == "finished":
            values = dict((await graph.aget_state(config)).values)
            keys = getattr(graph, "output_channels", None)
            if isinstance(keys, (list, tuple)):
                values = {k: values[k] for k in keys if k in values}
            return {"question": args.question, **values}
        return await _ask(graph, args.question, show, config, start)


def run(args) -> int:
    from atomgraph.graphs.registry import build_method
    from atomgraph.warmup import warm_up

    settings, model, sources = model_and_sources(args)
    show = not (args.json or args.quiet)
    warm_up(args.method, settings, model, sources, show=show)  # loaded here, not inside the first step
    if getattr(args, "checkpoint", None):
        result = asyncio.run(_durable_ask(args, model, sources, settings, show))
    else:
        graph = build_method(args.method, model=model, sources=sources, settings=settings)
        result = asyncio.run(_ask(graph, args.question, show_progress=show,
                                  config=deadline_config(getattr(args, "deadline", None))))
    if args.json:
        print_json(result)
        return 0 if not result.get("error") else 1
    from atomgraph.render import render_trace, render_usage

    print(f"Answer: {result.get('answer', '')}")
    if result.get("stopped"):
        print(f"Stopped early: {result['stopped']}")
    if result.get("error"):
        print(f"Error: {result['error']}")
    shown = render_trace(result.get("trace") or {})
    if shown:
        print()
        print(shown)
    print()
    print(render_usage(result))
    return 0 if not result.get("error") else 1

