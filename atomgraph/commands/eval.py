"""`atomgraph eval`: score a predictions file, run a method over a dataset, report runs.

    atomgraph eval score PREDICTIONS.jsonl [--dataset NAME] [--json]
    atomgraph eval run --method rag --dataset hotpotqa-dev-100 [--limit N] [--concurrency C] --out DIR
    atomgraph eval run ... --workers 2   (the questions answered in 2 processes; this one writes the records)
    atomgraph eval run ... --server http://127.0.0.1:2024   (each question a run on a LangGraph Server)
    atomgraph eval report DIR... [--out FILE] [--plots DIR] [--usage-plots]
    atomgraph eval methods [--json]

Models for `run` come from settings (ATOMGRAPH_MODEL, ...), or from ``--model NAME``, or
from your own Python object: ``--model-factory my_pkg.models:make`` (a function taking the
settings and returning a chat model or a role→model mapping; also ``$ATOMGRAPH_MODEL_FACTORY``).
``--model scripted:RULES.json`` runs a scripted model (``atomgraph.testing.ScriptedChatModel``;
file: ``{"rules": [[regex, response], ...], "default": ..., "latency_s": ...}``) for dry runs
and tests. Sources likewise: ``--sources wikipedia,google`` or ``--sources-factory mod:fn``
(a function taking the settings and returning knowledge sources).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from atomgraph.environment import env_value
from atomgraph.commands.common import (add_deadline_arg, add_model_source_args, model_and_sources, plain_help,
                                       print_json, seconds)
from atomgraph.evaluation.runner import MAX_CONCURRENCY
from atomgraph.graphs.registry import method_names


def register(sub) -> None:
    p = sub.add_parser("eval", help="score predictions, run methods over datasets, report runs",
                       description=plain_help(__doc__.split("\n\n", 1)[1]), formatter_class=_raw())
    esub = p.add_subparsers(dest="eval_command", metavar="SUBCOMMAND")

    s = esub.add_parser("score", help="EM / F1 / cover-EM of a predictions file")
    s.add_argument("predictions", help="JSON lines with 'predicted' and 'gold' (or a run directory)")
    s.add_argument("--dataset", help="dataset name or file giving question types, for per-type scores")
    s.add_argument("--json", action="store_true", help="print JSON instead of text")
    s.add_argument("--encoding", default="utf-8", help="text encoding of the files read (default utf-8)")
    s.set_defaults(func=cmd_score)

    r = esub.add_parser("run", help="run a method over a dataset, appending to DIR/predictions.jsonl")
    r.add_argument("--method", help=f"method: {', '.join(method_names())}")
    r.add_argument("--dataset", help="dataset name (e.g. hotpotqa-dev-100, blendqa) or file")
    r.add_argument("--encoding", default="utf-8", help="text encoding of a --dataset file (default utf-8)")
    r.add_argument("--out", help="run directory; rerunning the same command resumes it (default with --recipe: "
                                 "runs/RECIPE)")
    r.add_argument("--recipe", nargs="?", const="", metavar="NAME",
                   help="a paper setting (models, embeddings, parameters, dataset) from evaluation/recipes; "
                        "'--recipe --list' lists them with the paper's numbers")
    r.add_argument("--list", action="store_true", help="with --recipe: list the recipes")
    r.add_argument("--allow-degraded", action="store_true",
                   help="run even when a part the setting names is missing (an index, a key, an endpoint); the run "
                        "is marked degraded in run.json, its closing lines and every report row, and is not set "
                        "beside the paper's number")
    r.add_argument("--data-dir", metavar="DIR",
                   help="the shared data folder named datasets are read from (default: $ATOMGRAPH_SHARED_DATA, else "
                        "./shared/data or ../shared/data; a recipe run does not read the variable, only this option); "
                        "printed and recorded in run.json with each file's sha256")
    r.add_argument("--set", action="append", metavar="KEY=VALUE", default=None,
                   help="set one setting explicitly (repeatable; atomr.prompt_pack=musique, temperature=0.2): the only "
                        "way the environment's or atomgraph.toml's values reach a recipe run; listed in run.json")
    r.add_argument("--limit", type=int, help="first N examples only")
    r.add_argument("--concurrency", type=_concurrency, default=4,
                   help=f"examples in flight at once, 1 to {MAX_CONCURRENCY} (default 4)")
    r.add_argument("--workers", type=_workers, default=1,
                   help="processes answering the questions, each with its share of --concurrency (default 1: this "
                        "process); this process alone writes the records, so a rerun resumes as with one")
    r.add_argument("--timeout", type=seconds, help="seconds allowed per example; then it is cancelled "
                   "(recorded as its error)")
    add_deadline_arg(r)
    r.add_argument("--retry-errors", action="store_true",
                   help="run again every example whose record holds an error (by default only those that "
                        "failed for the provider, a knowledge source or a time bound: failed calls, source failures, circuit "
                        "breaker, deadline); without it a rerun that leaves other errored examples exits 1")
    r.add_argument("--force-new", action="store_true",
                   help="move an earlier run in --out aside (into --out/previous-TIME/) and start afresh, "
                        "instead of refusing a run with another model or other parameters")
    add_model_source_args(r)
    r.add_argument("--checkpoint", metavar="PATH",
                   help="SQLite file saving every step of every question (a thread each); a killed run resumes "
                        "its unfinished questions from their last completed step")
    r.add_argument("--server", metavar="URL",
                   help="run each question on a LangGraph Server deployment (langgraph dev / langgraph up) at URL, "
                        "through langgraph_sdk; records, resume and summary stay here (see docs: Scaling out)")
    r.add_argument("--server-api-key", metavar="KEY", help="the deployment's API key (default $LANGGRAPH_API_KEY)")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.set_defaults(func=cmd_run, warms=True)

    rep = esub.add_parser("report", help="Markdown tables and plots comparing run directories")
    rep.add_argument("dirs", nargs="+", help="run directories")
    rep.add_argument("--out", help="also write the Markdown to this file")
    rep.add_argument("--plots", help="folder for PNG plots (default: beside --out, else ./eval_plots)")
    rep.add_argument("--no-plots", action="store_true")
    rep.add_argument("--usage-plots", action="store_true",
                     help="also plot LLM calls, retriever calls, tokens and dollars per question, per method")
    rep.add_argument("--html", metavar="FILE",
                     help="also write one self-contained HTML page: the runs' table (ours beside the paper's), each "
                          "run against the first, and every question's answers and trace, expandable")
    rep.set_defaults(func=cmd_report)

    cmp_ = esub.add_parser("compare", help="two runs question by question: both answers, F1, which flipped, and the "
                                           "paired difference with a bootstrap interval")
    cmp_.add_argument("run_a", metavar="RUN_A", help="run directory (or predictions file) A")
    cmp_.add_argument("run_b", metavar="RUN_B", help="run directory (or predictions file) B")
    cmp_.add_argument("--metric", default="f1", choices=("f1", "em", "cover_em"), help="the metric compared (default f1)")
    cmp_.add_argument("--all", action="store_true", help="a line for every question, not only those that differ")
    cmp_.add_argument("--json", action="store_true", help="print the comparison as JSON")
    cmp_.set_defaults(func=cmd_compare)

    m = esub.add_parser("methods", help="list every registered method with a one-line description")
    m.add_argument("--json", action="store_true", help="print a JSON object name -> description")
    m.set_defaults(func=cmd_methods)

    p.set_defaults(func=lambda args: p.print_help() or 2)


def _whole_number(text: str, most: int) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= most:
        raise argparse.ArgumentTypeError(f"must be from 1 to {most}, not {value}")
    return value


def _concurrency(text: str) -> int:
    return _whole_number(text, MAX_CONCURRENCY)


def _workers(text: str) -> int:
    from atomgraph.evaluation.workers import MAX_WORKERS

    return _whole_number(text, MAX_WORKERS)


def _raw():
    import argparse

    return argparse.RawDescriptionHelpFormatter


def cmd_score(args) -> int:
    from atomgraph.evaluation.report import score_predictions

    result = score_predictions(args.predictions, dataset=args.dataset, encoding=args.encoding)
    if args.json:
        print_json(result)
        return 0
    print(f"{result['file']}: n={result['n']}  EM {result['em']:.2f}  F1 {result['f1']:.2f}  "
          f"cover-EM {result['cover_em']:.2f}")
    if result.get("skipped"):
        print("  skipped: " + ", ".join(f"{n} {why}" for why, n in result["skipped"].items()))
    for t, v in result["by_type"].items():
        print(f"  {t:<20} n={v['n']:<4} EM {v['em']:.2f}  F1 {v['f1']:.2f}  cover-EM {v['cover_em']:.2f}")
    if result.get("retrieval"):
        ret = result["retrieval"]
        print(f"  retrieval (n={ret['n']}): P {ret['precision']:.2f}  R {ret['recall']:.2f}  "
              f"F1 {ret['f1']:.2f}  perfect recall {ret['perfect_recall']:.2f}")
    return 0


def _list_recipes(as_json: bool = False) -> int:
    from atomgraph.evaluation.recipe import all_recipes, describe

    for r in all_recipes():
        print(describe(r))
    return 0


def _apply_recipe(args):
    """The recipe's method, dataset, output folder and settings on ``args``; its settings."""
    from atomgraph.errors import ConfigError
    from atomgraph.evaluation.recipe import load_recipe, recipe_settings, resolve_dataset

    from atomgraph.evaluation.recipe import env_not_applied, not_applied, parse_sets

    recipe = load_recipe(args.recipe)
    sets = parse_sets(getattr(args, "set", None))
    for opt in ("method", "dataset"):
        given = getattr(args, opt)
        if given and given != getattr(recipe, opt):
            raise ConfigError(f"--{opt} {given!r} contradicts recipe {recipe.name!r} ({getattr(recipe, opt)!r}); "
                              "drop the option or the recipe")
    args.method, args.dataset = recipe.method, resolve_dataset(recipe)
    settings = recipe_settings(recipe, sets=sets)  # a bad value is one line, before anything is printed
    args.out = args.out or str(Path("runs") / recipe.name)
    values = ", ".join(f"{k} {v:g}" for k, v in recipe.paper_values.items())
    print(f"recipe {recipe.name}: {recipe.title} — paper: {values}", file=sys.stderr)
    for need in recipe.needs:
        print(f"  needs: {need}", file=sys.stderr)
    for k, v in sets.items():
        print(f"  --set {k}={v!r}", file=sys.stderr)
    ignored = {**not_applied(sets), **env_not_applied(args)}
    options = {f"--{o.replace('_', '-')}": getattr(args, o) for o in ("model", "model_factory", "sources",
                                                                     "sources_factory") if getattr(args, o, None)}
    for option, value in options.items():  # explicit options over the recipe: applied, printed and recorded
        print(f"  {option} {value}", file=sys.stderr)
    if ignored:
        print("  not applied (the environment or atomgraph.toml; a recipe is sealed, use --set KEY=VALUE): "
              + ", ".join(f"{k}={v!r}" for k, v in ignored.items()), file=sys.stderr)
    args.run_info = {"recipe": recipe.name, "paper": recipe.paper, "table": recipe.table, "row": recipe.row,
                     "metric": recipe.metric, "paper_values": dict(recipe.paper_values),
                     "set": {k: v for k, v in sets.items()},
                     "not_applied": {k: ("***" if "key" in k.lower() else v) for k, v in ignored.items()}}
    if options:
        args.run_info["options"] = options
    if getattr(args, "model_factory", None):
        args.run_info["model_factory"] = args.model_factory
    return recipe, settings


def cmd_run(args) -> int:
    from contextlib import ExitStack

    from atomgraph.environment import sealed_environment
    from atomgraph.evaluation.datasets import using_data_dir

    with ExitStack() as stack:
        if args.recipe is not None and not (args.list or args.recipe == ""):
            stack.enter_context(sealed_environment())  # a recipe reads no run-choosing variable (printed as not applied)
        if getattr(args, "data_dir", None):
            print(f"  --data-dir {args.data_dir}", file=sys.stderr)
            stack.enter_context(using_data_dir(args.data_dir))
        return _run(args)


def _data_files(dataset: str) -> list[dict]:
    """The files a dataset run evaluates, each with its resolved path and sha256 (run.json's
    ``run.data``), so a run says what it read."""
    from atomgraph.evaluation.datasets import DATASETS, data_dir
    from atomgraph.files import sha256_file

    paths = [data_dir() / rel for rel in DATASETS[dataset][0]] if dataset in DATASETS else [Path(dataset)]
    return [{"path": str(p.resolve()), "sha256": sha256_file(p)} for p in paths if p.is_file()]


def _named_dataset(dataset: str) -> bool:
    from atomgraph.evaluation.datasets import DATASETS

    return dataset in DATASETS


def _check_needs(args, settings, model, sources, *, named: bool) -> list[str]:
    """A recipe or named-dataset run: every part its setting names checked before the first model
    call (:mod:`atomgraph.evaluation.needs`); a missing part refuses the run, naming each and how
    to provide it, unless --allow-degraded (then the parts are returned, to be recorded). A run
    over a server checks nothing here: the server opens its own sources."""
    from atomgraph.errors import ConfigError
    from atomgraph.evaluation.needs import missing_parts

    if not named or args.server:
        return []
    missing = missing_parts(args.method, settings, model_given=model is not None, sources_given=sources is not None)
    if not missing:
        return []
    if not args.allow_degraded:
        raise ConfigError(f"{args.method} on {args.dataset} cannot run its setting; missing: " + "; ".join(missing)
                          + " (or --allow-degraded to run anyway, marked degraded)")
    for part in missing:
        print(f"  DEGRADED (--allow-degraded): missing {part}", file=sys.stderr)
    return missing


def _run(args) -> int:
    from atomgraph.errors import ConfigError
    from atomgraph.evaluation.runner import EvalOptions, describe_outcome, run_eval

    recipe = None
    if args.recipe is not None:
        if args.list or args.recipe == "":
            return _list_recipes()
        recipe, recipe_base = _apply_recipe(args)
    elif args.list:
        raise ConfigError("--list lists recipes: atomgraph eval run --recipe --list")
    missing = [f"--{o}" for o in ("method", "dataset", "out") if not getattr(args, o)]
    if missing:
        raise ConfigError(f"eval run needs {', '.join(missing)} (or --recipe NAME)")
    if recipe is None and getattr(args, "set", None):
        from atomgraph.evaluation.recipe import apply_sets, parse_sets
        from atomgraph.settings import get_settings

        sets = parse_sets(args.set)
        recipe_base = apply_sets(get_settings(), sets)
        args.run_info = {"set": sets}
        for k, v in sets.items():
            print(f"  --set {k}={v!r}", file=sys.stderr)
    if args.server and recipe is None and env_value("ATOMGRAPH_MODEL_FACTORY") and not args.model_factory:
        print("  $ATOMGRAPH_MODEL_FACTORY not applied: a server run uses the server's models (name one with --model)",
              file=sys.stderr)
    settings, model, sources = model_and_sources(args, require_model=False,
                                                 base=recipe_base if recipe is not None or getattr(args, "set", None)
                                                 else None,
                                                 require_sources=not args.server,  # a server opens its own
                                                 sealed=recipe is not None or bool(args.server))
    from atomgraph.evaluation.datasets import apply_dataset_setting, describe_applied

    _, _, applied = apply_dataset_setting(args.method, args.dataset, settings, sources_given=sources is not None)
    print(f"{args.method} on {args.dataset}: {describe_applied(applied)}", file=sys.stderr)
    args.run_info = {**(getattr(args, "run_info", None) or {}), "data": _data_files(args.dataset)}
    degraded = _check_needs(args, settings, model, sources, named=recipe is not None or _named_dataset(args.dataset))
    if degraded:
        args.run_info["degraded"] = degraded
    if recipe is None:  # an unsealed run takes the run-choosing variables: recorded with what they chose
        from atomgraph.environment import run_choosing_set

        if run_choosing_set():
            args.run_info["environment"] = run_choosing_set()
    server, fallback = {}, ""
    if args.server:
        server = {"server": args.server, "server_context": server_context(args, settings),
                  "server_api_key": args.server_api_key or os.environ.get("LANGGRAPH_API_KEY")}
        from atomgraph.warmup import CLOSED_BOOK

        if args.method not in CLOSED_BOOK:  # the server's processes load and run the embedding models
            args.run_info["embedding_runtime"] = SERVER_RUNTIME
    elif args.workers <= 1 and (_named_dataset(args.dataset) or Path(args.dataset).is_file()):
        # the models and indexes load here, once, not in the first questions (each of N workers loads its own);
        # a missing dataset file: the run's one-line error, nothing loaded first
        from atomgraph.warmup import warm_up

        runtimes: list[dict] = []
        warm_up(args.method, settings, model, sources, show=not args.no_progress, runtimes=runtimes)
        fallback = _record_embedding_runtime(args, runtimes)
    from atomgraph.warmup import started, worker_warm

    started()  # the start is over (atomgraph.warmup): the questions begin
    if args.workers > 1 and args.sources and not args.sources_factory:
        sources = None  # opened and checked above; each worker opens the named sources itself (settings.sources)
    result = run_eval(args.method, args.dataset, args.out, EvalOptions(
        limit=args.limit, concurrency=args.concurrency, workers=args.workers,
        model=model, sources=sources, settings=settings, timeout_s=args.timeout, deadline_s=args.deadline,
        progress=not args.no_progress, dataset_name=args.dataset, retry_errors=args.retry_errors,
        force_new=args.force_new, checkpoint=args.checkpoint, encoding=args.encoding,
        recipe=recipe.name if recipe is not None else None,
        run_info=getattr(args, "run_info", None), worker_warm=worker_warm if args.workers > 1 else None, **server,
    ))
    if result.embedding_runtimes:  # each worker process loaded its own: recorded in run.json by the run
        fallback = _fallback_line(result.embedding_runtimes)
    retried = f" ({result.retried} errored examples run again)" if result.retried else ""
    o = result.outcome or {}
    if o.get("answered") and o.get("answered_by_fallback") == o.get("answered"):
        print(f"WARNING: {args.method} on {args.dataset}: every answer of this run ({o['answered']} of "
              f"{o['examples']}) came from a fallback, none from the method itself: {describe_outcome(o)}")
    print(f"{args.method} on {args.dataset}: {result.finished} run now{retried}, {result.skipped} already done, "
          f"{result.errors} with errors; F1 {result.f1:.2f}, cost ${result.cost_usd:.4f} "
          f"-> {Path(args.out) / 'predictions.jsonl'}")
    if fallback:  # the same vectors, more slowly: said, and recorded in run.json
        print(f"FALLBACK: {fallback}")
    if degraded:
        print(f"DEGRADED: this run lacked {len(degraded)} part(s) of its setting ({'; '.join(degraded)}); "
              "its figures are not the setting's")
    if recipe is not None:
        values = ", ".join(f"{k} {v:g}" for k, v in recipe.paper_values.items())
        if degraded:
            print(f"paper ({recipe.paper}, {recipe.table}, {recipe.row}): {values} — not comparable: this run is degraded")
        else:
            print(f"paper ({recipe.paper}, {recipe.table}, {recipe.row}): {values}")
    if result.finished:
        print(f"  this run: {describe_outcome(result.outcome)}")
    if result.workers > 1:
        print(f"  {result.workers} worker processes answered the questions, {args.concurrency} in flight in all"
              + (f"; {'; '.join(result.worker_failures)}" if result.worker_failures else ""))
    if result.unfinished:
        print(f"atomgraph: error: {len(result.unfinished)} question(s) are not recorded: their worker process ended "
              f"({', '.join(result.unfinished[:10])}{' ...' if len(result.unfinished) > 10 else ''}); rerun the same "
              "command to run them", file=sys.stderr)
        return 1
    if result.all_failed:
        print(f"atomgraph: error: every one of the {result.finished} examples run failed "
              f"({', '.join(result.outcome['errors'])})", file=sys.stderr)
        return 1
    if result.kept_errors:  # the job is not done: say so, and how to finish it
        print(f"atomgraph: error: {result.kept_errors} example(s) in {args.out} still hold an error from an earlier "
              "run and were not run again (not a provider, source or time failure); add --retry-errors to run "
              "them again", file=sys.stderr)
        return 1
    return 0


# what ``run.json`` says runs a served run's embedding models: the server's log says which runtime
SERVER_RUNTIME = {"used": "the server's", "why": "--server: the questions run on the server"}


def _record_embedding_runtime(args, runtimes: list[dict]) -> str:
    """What runs the run's local embedding models (``runtimes``, from its warm-up) goes into ``run.json``
    (``run.embedding_runtime``: model, wanted, used, why); a fallback (onnxruntime wanted,
    sentence-transformers used) is also returned as the line the run's summary shows ("" when none)."""
    from atomgraph.evaluation.runner import record_embedding_runtime

    record_embedding_runtime(args.run_info, runtimes)
    return _fallback_line(runtimes)


def _fallback_line(runtimes: list[dict]) -> str:
    """The runtimes that are not the ones wanted, as one line ("" when none)."""
    return "; ".join(f"the embedding model {r['model']} ran on {r['used']}, not {r['wanted']} ({r['why']})"
                     for r in runtimes if r["used"] != r["wanted"])


def server_context(args, settings) -> dict:
    """What every server run is sent as its context: the method's parameters (the settings' or
    recipe's section, so the server runs what the run's fingerprint says), and the model and
    sources when named on the command line."""
    from atomgraph.errors import ConfigError

    if args.model_factory or args.sources_factory or (args.model or "").startswith("scripted:"):
        raise ConfigError("--server runs the server's graphs: name the model and sources (--model NAME, "
                          "--sources a,b); a factory or a scripted model cannot be sent to it")
    params = settings.model_dump(mode="json").get(args.method)
    context = dict(params) if isinstance(params, dict) else {}
    if args.model:
        context["model"] = args.model
    if args.sources:
        context["sources"] = [s.strip() for s in args.sources.split(",") if s.strip()]
    return context


def cmd_report(args) -> int:
    from atomgraph.evaluation.plots import write_plots
    from atomgraph.extras import require
    from atomgraph.state.run import price_table
    from atomgraph.evaluation.report import markdown_tables, summarize_runs
    from atomgraph.settings import get_settings

    from atomgraph.jsonl import check_out_dir, check_out_file

    rows = summarize_runs(args.dirs, price_table(get_settings()))  # every run read (strictly) before anything is written
    for directory, row in zip(args.dirs, rows):
        for why, n in (row.get("skipped") or {}).items():
            print(f"atomgraph: warning: {directory}: {n} {why} in its records (a write that never finished); "
                  "not reported", file=sys.stderr)
    text = markdown_tables(rows)
    folder = args.plots or (str(Path(args.out).parent) if args.out else "eval_plots")
    if args.out:
        check_out_file(args.out, what="report file (--out)")
    page = None
    if args.html:
        from atomgraph.evaluation.html_report import html_report

        check_out_file(args.html, what="HTML report file (--html)")
        page = html_report(args.dirs, price_table(get_settings()))
    if not args.no_plots:
        require("matplotlib", "plots", "evaluation plots", "or pass --no-plots")  # before anything is written
        check_out_dir(folder, what="plots folder")
    sys.stdout.write(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    if page is not None:
        Path(args.html).write_text(page, encoding="utf-8")
        print(f"html: {args.html}", file=sys.stderr)
    if not args.no_plots:
        for path in write_plots(rows, folder, usage=args.usage_plots):
            print(f"plot: {path}", file=sys.stderr)
    return 0


def cmd_compare(args) -> int:
    from atomgraph.evaluation.compare import compare_runs, format_comparison

    c = compare_runs(args.run_a, args.run_b, metric=args.metric)
    if args.json:
        print_json(c)
    else:
        print(format_comparison(c, every=args.all))
    return 0


def cmd_methods(args) -> int:
    from atomgraph.graphs.registry import method_descriptions

    methods = method_descriptions()
    if args.json:
        print_json(methods)
        return 0
    width = max((len(n) for n in methods), default=0)
    for name, description in methods.items():
        print(f"{name:<{width}}  {description}")
    return 0
