"""``atomgraph ask "QUESTION" [--method atomr] [--sources ...] [--json]``.

Models come from settings (ATOMGRAPH_MODEL, ...), or ``--model NAME``, or your own Python
object: ``--model-factory my_pkg.models:make`` (also ``$ATOMGRAPH_MODEL_FACTORY``), a
function taking the settings and returning a chat model or a role→model mapping;
``--model scripted:RULES.json`` runs a scripted model. Sources likewise: ``--sources
wikipedia,google`` or ``--sources-factory my_pkg.sources:make`` (settings → sources).
These work as in ``atomgraph eval run`` (see :mod:`atomgraph.evaluation.runner`).
"""

from __future__ import annotations

import asyncio
import json
import sys

from atomgraph.commands.common import add_model_source_args, model_and_sources
from atomgraph.graphs.registry import method_names


def register(sub) -> None:
    p = sub.add_parser("ask", help="answer one question and show how it was answered")
    p.add_argument("question", help="the question")
    p.add_argument("--method", default="atomr", help=f"method: {', '.join(method_names())} (default: atomr)")
    add_model_source_args(p)
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=run)


async def _ask(graph, question: str, show_progress: bool) -> dict:
    result: dict = {}
    async for mode, chunk in graph.astream({"question": question}, stream_mode=["updates", "values"]):
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


def run(args) -> int:
    from atomgraph.graphs.registry import build_method

    settings, model, sources = model_and_sources(args)
    graph = build_method(args.method, model=model, sources=sources, settings=settings)
    result = asyncio.run(_ask(graph, args.question, show_progress=not (args.json or args.quiet)))
    if args.json:
        from atomgraph.evaluation.records import jsonable

        print(json.dumps(jsonable(result), ensure_ascii=False, indent=2))
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

