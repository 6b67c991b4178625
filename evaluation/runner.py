"""Run a method over a dataset, append one record per finished example, resume after a kill.

>>> result = run_eval("rag", "hotpotqa-dev-100", "runs/rag-hotpot", limit=20, concurrency=4)

``DIR/predictions.jsonl`` gets one line per example as soon as it finishes (prediction,
gold, metrics, trace, usage, latency, error); ``DIR/run.json`` holds the run's metadata
(method, dataset, settings without secrets). Running the same command again skips the
examples already in the file, so a killed run ends with each example exactly once.
An error in one example (model or source failure, a limit hit, a timeout) is recorded on
that example and the run goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import fcntl
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from langchain_core.language_models import BaseChatModel

from atomgraph.errors import ConfigError
from atomgraph.evaluation.datasets import Example, load_dataset
from atomgraph.evaluation.metrics import answer_scores, answer_text, mean, retrieval_scores
from atomgraph.state.usage import calls_cost, price_table
from atomgraph.evaluation.records import RecordWriter, jsonable, read_records
from atomgraph.imports import import_object  # noqa: F401 - re-exported: part of this module's API
from atomgraph.settings import Settings, get_settings
from atomgraph.state.output import output_of
from atomgraph.state.usage import summarize_usage

PREDICTIONS = "predictions.jsonl"
RUN_META = "run.json"
SECRET_FIELDS = {"openai_api_key", "serpapi_api_key"}


@dataclass
class RunResult:
    out_dir: Path
    total: int  # examples in the (limited) dataset
    skipped: int  # already in predictions.jsonl before this run
    finished: int  # finished by this run
    errors: int  # records of this run with an error
    f1: float  # mean F1 (percent) over every record in the file
    cost_usd: float  # total over every record in the file
    records: list[dict] = field(default_factory=list, repr=False)


# --- plugging in models and sources ------------------------------------------------------

def scripted_model_from_file(path: str | os.PathLike) -> BaseChatModel:
    """A :class:`~atomgraph.testing.ScriptedChatModel` from a JSON file:
    ``{"rules": [[regex, response], ...], "default": str, "latency_s": float, "model_name": str}``."""
    from atomgraph.testing import ScriptedChatModel

    try:
        spec = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read scripted model file {path}: {exc}") from exc
    if isinstance(spec, list):
        spec = {"rules": spec}
    rules = spec.get("rules", [])
    if not isinstance(rules, list) or not all(isinstance(r, list) and len(r) == 2 for r in rules):
        raise ConfigError(f"{path}: 'rules' must be a list of [pattern, response] pairs")
    return ScriptedChatModel(
        rules=[tuple(r) for r in rules], default=spec.get("default"),
        latency_s=float(spec.get("latency_s", 0.0)), model_name=str(spec.get("model_name", "scripted")),
    )


def model_from_spec(spec: str | None, factory: str | None = None, settings: Settings | None = None):
    """The model(s) a run uses: ``factory`` ("module:function", called with the settings,
    returning a chat model or a role→model mapping), or ``scripted:PATH`` (a JSON rules
    file, for tests and dry runs), or None (the graph builds models from settings)."""
    if factory:
        fn = import_object(factory)
        return fn(settings or get_settings()) if callable(fn) else fn
    if spec and spec.startswith("scripted:"):
        return scripted_model_from_file(spec.split(":", 1)[1])
    return None


def settings_snapshot(settings: Settings) -> dict:
    """The settings as JSON, without secrets."""
    data = settings.model_dump(mode="json")
    for k in SECRET_FIELDS:
        if data.get(k):
            data[k] = "***"
    return data


# --- one example -------------------------------------------------------------------------

def build_record(example: Example, values: dict, *, method: str, dataset: str, latency_s: float,
                 prices: dict, error: str | None = None) -> dict:
    """The JSON record of one finished example (graph output ``values``, the method output
    contract of :mod:`atomgraph.state.output`)."""
    values = output_of(values)
    llm_calls = values["llm_calls"]
    retriever_calls = values["retriever_calls"]
    usage = summarize_usage(llm_calls, retriever_calls)
    cost, unpriced = calls_cost(llm_calls, prices)
    answers = [str(a) for a in (values.get("answers") or [])]
    predicted = values.get("answer")
    if predicted is None and answers:
        predicted = answer_text(answers)
    predicted = str(predicted or "")
    retrieved = [str(t) for t in values["retrieved_titles"]]
    retrieved_ids = [str(t) for t in values["retrieved_ids"]]
    metrics: dict[str, Any] = answer_scores(predicted, example.answers)
    metrics["retrieval"] = retrieval_scores(retrieved, example.gold_titles)
    metrics["retrieval_ids"] = retrieval_scores(retrieved_ids, example.gold_ids, key=str)
    return {
        "id": example.id,
        "question": example.question,
        "question_type": example.question_type,
        "predicted": predicted,
        "answers": answers,
        "gold": example.answers,
        "gold_titles": example.gold_titles,
        "gold_ids": example.gold_ids,
        "retrieved_titles": retrieved,
        "retrieved_ids": retrieved_ids,
        "metrics": metrics,
        "usage": {
            "llm_calls": usage.llm_calls,
            "llm_calls_by_role": usage.llm_calls_by_role,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "tokens_by_role": usage.tokens_by_role,
            "tokens_by_model": usage.tokens_by_model,
            "retriever_calls": usage.retriever_calls,
            "retriever_calls_by_source": usage.retriever_calls_by_source,
            "llm_errors": sum(1 for c in llm_calls if getattr(c, "error", None) or (isinstance(c, dict) and c.get("error"))),
            "retriever_errors": sum(1 for c in retriever_calls if getattr(c, "error", None) or (isinstance(c, dict) and c.get("error"))),
            "cost_usd": cost,
            "unpriced_models": unpriced,
        },
        "latency_s": latency_s,
        "stopped": values.get("stopped"),
        "error": error or values.get("error"),
        "trace": jsonable(values.get("trace") or {}),
        "method": method,
        "dataset": dataset,
        "finished_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


async def _run_one(graph, example: Example, *, method: str, dataset: str, prices: dict,
                   timeout_s: float | None, durable: bool = False) -> dict:
    from atomgraph.checkpoint import resume_input, thread_id

    config = {"configurable": {"thread_id": thread_id(method, example.question, dataset=dataset,
                                                      example_id=example.id)}}
    t0 = time.perf_counter()
    error = None
    start: Any = {"question": example.question}
    if durable:  # a question killed mid-run resumes from its last completed step
        start, _ = await resume_input(graph, start, config)
    try:
        durability = {"durability": "sync"} if durable else {}  # each step saved before the next starts
        values = await asyncio.wait_for(graph.ainvoke(start, config=config, **durability), timeout_s)
    except asyncio.TimeoutError:
        values, error = None, f"timed out after {timeout_s:g} s"
    except Exception as exc:  # one example's failure must not end the run
        values, error = None, f"{type(exc).__name__}: {exc}"[:1000]
    latency = time.perf_counter() - t0
    if values is None:
        values = await _partial_state(graph, config)
    record = build_record(example, values, method=method, dataset=dataset, latency_s=latency,
                          prices=prices, error=error)
    if not durable:  # a durable run keeps each finished thread (Studio can open and time-travel it)
        await _forget_thread(graph, config)
    return record


async def _partial_state(graph, config) -> dict:
    """What a failed run had recorded so far (calls made before the failure), if checkpointed."""
    if getattr(graph, "checkpointer", None) is None:
        return {}
    try:
        snapshot = await graph.aget_state(config)
        return dict(snapshot.values or {})
    except Exception:
        return {}


async def _forget_thread(graph, config) -> None:
    saver = getattr(graph, "checkpointer", None)
    if saver is not None and hasattr(saver, "adelete_thread"):
        with contextlib.suppress(Exception):
            await saver.adelete_thread(config["configurable"]["thread_id"])


# --- a run ---------------------------------------------------------------------------------

@contextlib.contextmanager
def _exclusive(out_dir: Path):
    fh = open(out_dir / ".lock", "w")
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"another run is writing to {out_dir}; wait for it or use another --out") from None
        yield
    finally:
        fh.close()


def _check_meta(out_dir: Path, meta: dict) -> None:
    path = out_dir / RUN_META
    if not path.exists():
        return
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return
    for key in ("method", "dataset"):
        if old.get(key) != meta[key]:
            raise ConfigError(
                f"{out_dir} holds a run of {key} {old.get(key)!r}, not {meta[key]!r}; use another --out directory"
            )


async def arun_eval(
    method: str,
    dataset: str | Sequence[Example],
    out_dir: str | os.PathLike,
    *,
    limit: int | None = None,
    concurrency: int = 4,
    model: Any = None,
    sources: Any = None,
    settings: Settings | None = None,
    graph: Any = None,
    dataset_name: str | None = None,
    timeout_s: float | None = None,
    progress: bool = True,
    resume: bool = True,
    on_record: Callable[[dict], None] | None = None,
    checkpoint: str | os.PathLike | None = None,
    _saver: Any = None,
) -> RunResult:
    """Run ``method`` (a registered name) over ``dataset`` (a name, a path, or examples).

    ``graph`` overrides the registry's graph (it should have a checkpointer so a failed
    example keeps the calls it made). ``resume=False`` starts the predictions file afresh
    instead of skipping the examples already in it. ``on_record(record)`` is called as each
    example finishes (in dataset order when ``concurrency`` is 1). Returns counts and the
    records now in the file. ``checkpoint``: an SQLite file saving every step of every
    question (:mod:`atomgraph.checkpoint`), so a killed run resumes its unfinished questions
    from their last completed step.
    """
    if checkpoint is not None:
        from atomgraph.checkpoint import open_checkpointer

        async with open_checkpointer(checkpoint) as saver:
            return await arun_eval(method, dataset, out_dir, limit=limit, concurrency=concurrency, model=model,
                                   sources=sources, settings=settings, graph=graph, dataset_name=dataset_name,
                                   timeout_s=timeout_s, progress=progress, resume=resume, on_record=on_record,
                                   _saver=saver)
    from atomgraph.checkpoint import serializer
    from atomgraph.graphs.registry import build_method
    from langgraph.checkpoint.memory import InMemorySaver

    if concurrency < 1:
        raise ConfigError("concurrency must be at least 1")
    settings = settings or get_settings()
    if isinstance(dataset, (str, os.PathLike)):
        name = dataset_name or str(dataset)
        examples = load_dataset(dataset, limit=limit)
    else:
        name = dataset_name or "custom"
        examples = list(dataset)[:limit] if limit is not None else list(dataset)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    meta = {
        "method": method,
        "dataset": name,
        "limit": limit,
        "total": len(examples),
        "settings": settings_snapshot(settings),
        "model": type(model).__name__ if isinstance(model, BaseChatModel) else None,
        "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    with _exclusive(out):
        _check_meta(out, meta)
        pred_path = out / PREDICTIONS
        if not resume and pred_path.exists():
            pred_path.unlink()
        existing = read_records(pred_path, repair=True)
        done = {str(r.get("id")) for r in existing}
        todo = [e for e in examples if e.id not in done]
        skipped = len(examples) - len(todo)
        if graph is None and todo:
            graph = _build(build_method, method, model=model, sources=sources, settings=settings,
                           checkpointer=_saver or InMemorySaver(serde=serializer()))
        (out / RUN_META).write_text(json.dumps(jsonable(meta), indent=2), encoding="utf-8")
        prices = price_table(settings)
        records = list(existing)
        new: list[dict] = []
        sem = asyncio.Semaphore(concurrency)
        bar = _progress_bar(len(examples), skipped, method, name) if progress else None

        async def worker(ex: Example) -> None:
            async with sem:
                rec = await _run_one(graph, ex, method=method, dataset=name, prices=prices, timeout_s=timeout_s,
                                     durable=_saver is not None)
            writer.write(rec)
            records.append(rec)
            new.append(rec)
            if on_record is not None:
                on_record(rec)
            if bar is not None:
                bar.set_postfix_str(_postfix(records), refresh=False)
                bar.update(1)

        with RecordWriter(pred_path) as writer:
            try:
                await asyncio.gather(*(worker(e) for e in todo))
            finally:
                if bar is not None:
                    bar.close()
    return RunResult(
        out_dir=out, total=len(examples), skipped=skipped, finished=len(new),
        errors=sum(1 for r in new if r.get("error")),
        f1=100 * mean(r["metrics"]["f1"] for r in records),
        cost_usd=sum(r["usage"]["cost_usd"] for r in records), records=records,
    )


def _build(build_method, method: str, **kwargs: Any):
    try:
        return build_method(method, **kwargs)
    except TypeError as exc:  # a user's builder without a checkpointer parameter
        if "checkpointer" not in str(exc):
            raise
        kwargs.pop("checkpointer")
        return build_method(method, **kwargs)


def run_eval(method: str, dataset: str | Sequence[Example], out_dir: str | os.PathLike, **kwargs: Any) -> RunResult:
    """Synchronous :func:`arun_eval` (not from inside a running event loop: await that instead)."""
    return asyncio.run(arun_eval(method, dataset, out_dir, **kwargs))


def _progress_bar(total: int, initial: int, method: str, dataset: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=f"{method} on {dataset}", unit="q", file=sys.stderr,
                dynamic_ncols=True)


def _postfix(records: list[dict]) -> str:
    f1 = 100 * mean(r["metrics"]["f1"] for r in records)
    cost = sum(r["usage"]["cost_usd"] for r in records)
    errors = sum(1 for r in records if r.get("error"))
    return f"F1 {f1:.1f} | ${cost:.4f}" + (f" | {errors} errors" if errors else "")

