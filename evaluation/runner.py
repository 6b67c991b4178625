"""Run a method over a dataset, append one record per finished example, resume after a kill.

>>> result = run_eval("rag", "hotpotqa-dev-100", "runs/rag-hotpot", limit=20, concurrency=4)

``DIR/predictions.jsonl`` gets one line per example as soon as it finishes (prediction,
gold, metrics, trace, usage, latency, error); ``DIR/run.json`` holds the run's metadata
(method, dataset, settings without secrets, and the run's *fingerprint*: its model(s) and the
method's parameters). Running the same command again skips the examples already in the file,
so a killed run ends with each example exactly once; examples that ended in a transient
error (a failed model call, the circuit breaker, a deadline, a timeout) are run again, and
with ``retry_errors=True`` every errored example is (their old records move to
``DIR/retried.jsonl``). A rerun whose fingerprint differs is refused (``force_new=True``
moves the old run aside into ``DIR/previous-<time>/`` and starts afresh), and so is a
directory whose records do not read as whole records of this method (a stub, a duplicate,
a missing field: the message names the file and line; nothing is rewritten).
An error in one example (model or source failure, a limit hit, a timeout) is recorded on
that example and the run goes on; :func:`outcomes` counts errors, fallbacks and refused
answers by reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import fcntl
import json
import logging
import os
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from langchain_core.language_models import BaseChatModel

from atomgraph.errors import ConfigError
from atomgraph.evaluation.datasets import Example, load_dataset
from atomgraph.jsonl import UTF8_ONLY, check_out_dir, read_json
from atomgraph.evaluation.metrics import answer_scores, answer_text, mean, retrieval_scores
from atomgraph.evaluation.records import RecordWriter, jsonable, read_records
from atomgraph.state.run import calls_cost, output_of, price_table, summarize_usage
from atomgraph.imports import import_object  # noqa: F401 - re-exported: part of this module's API
from atomgraph.settings import Settings, get_settings

log = logging.getLogger(__name__)

PREDICTIONS = "predictions.jsonl"
RUN_META = "run.json"
RETRIED = "retried.jsonl"
SECRET_FIELDS = {"openai_api_key", "serpapi_api_key"}
MAX_CONCURRENCY = 64  # examples in flight at once, at most (each holds its model calls and sources)
MODEL_FIELDS = ("model", "planner_model", "executor_model", "answerer_model", "atomizer_model", "proposer_model",
                "selector_model", "decoder_model", "temperature", "structured_output", "stage_max_tokens")
# errors worth running again on a rerun: the provider, not the method, failed
TRANSIENT = ("model call failed", "circuit breaker", "deadline", "timed out", "every model call failed",
             "connection", "rate limit", "Timeout", "APIError", "APIConnectionError",
             # a knowledge source failed (store, server, network): the source, not the method
             "every source call failed", "SourceError", "SourceUnavailable", "Could not connect")


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
    retried: int = 0  # errored examples of an earlier run that this run ran again
    outcome: dict = field(default_factory=dict)  # outcomes(records of this run)
    kept_errors: int = 0  # errored records of an earlier run left as they were (not transient, no retry_errors)
    workers: int = 1  # processes that answered the questions
    unfinished: list[str] = field(default_factory=list)  # ids left unrecorded: their worker process ended
    worker_failures: list[str] = field(default_factory=list)  # each worker that ended early, and how
    embedding_runtimes: list[dict] = field(default_factory=list)  # what ran the workers' embedding models

    @property
    def all_failed(self) -> bool:
        """Every example this run finished ended in an error (and it finished some)."""
        return self.finished > 0 and self.errors == self.finished


# --- plugging in models and sources ------------------------------------------------------

def scripted_model_from_file(path: str | os.PathLike) -> BaseChatModel:
    """A :class:`~atomgraph.testing.ScriptedChatModel` from a JSON file:
    ``{"rules": [[regex, response], ...], "default": str, "latency_s": float, "model_name": str}``."""
    from atomgraph.testing import ScriptedChatModel

    from atomgraph.jsonl import UTF8_ONLY, read_json

    spec = read_json(path, what="scripted model file", error=ConfigError, hint=UTF8_ONLY)
    if isinstance(spec, list):
        spec = {"rules": spec}
    if not isinstance(spec, dict):
        raise ConfigError(f"{path}: expected a JSON object {{\"rules\": [...], \"default\": ...}} or a list of rules")
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


def model_identity(model: Any, settings: Settings) -> dict:
    """The model(s) a run uses, as names: the object's (``model``: a chat model or a role→model
    mapping) or the settings' model fields."""
    from atomgraph.models import model_name

    if isinstance(model, BaseChatModel):
        return {"model": model_name(model)}
    if isinstance(model, dict):
        return {str(role): model_name(m) if isinstance(m, BaseChatModel) else str(m) for role, m in model.items()}
    snap = settings.model_dump(mode="json")
    return {k: snap.get(k) for k in MODEL_FIELDS if snap.get(k) not in (None, {}, [])}


# Settings that may differ between a run and its resumption: where things are kept, how fast
# it goes, not what it computes.
RESUMABLE = frozenset({"cache", "cache_path", "cache_refresh", "requests_per_second", "rate_limits", "rate_limit_burst",
                       "request_timeout", "max_retries", "chroma_path", "chroma_host", "chroma_port",
                       "embedding_device", "embedding_batch_size", "embedding_runtime", "atomr.max_parallel",
                       "data_dirs", "allowed_models"})  # what a client may name: access, not the run's setting


def effective_config(settings: Settings) -> dict:
    """The run's settings as dotted keys without secrets (``evaluation.recipe.effective_config``)."""
    from atomgraph.evaluation.recipe import effective_config as dotted

    return dotted(settings)


def run_fingerprint(method: str, dataset: str, model: Any, settings: Settings, recipe: str | None = None) -> dict:
    """What makes two runs comparable: method, dataset, model(s), the server they are asked at
    (``base_url``: the same model name at another server is another model), the recipe and the
    method's parameters (its settings section). A rerun into a directory must match it."""
    params = settings.model_dump(mode="json").get(method)
    return {"method": method, "dataset": dataset, "models": model_identity(model, settings),
            "base_url": settings.openai_base_url, "recipe": recipe,
            "temperature": settings.temperature, "params": params if isinstance(params, dict) else {}}


# --- outcomes -----------------------------------------------------------------------------

def failure_kind(text: object) -> str:
    """A short category of an error or fallback reason, for counting."""
    from atomgraph.prompts.stage import refusal_reason

    t = str(text or "")
    refused = refusal_reason(t)
    if refused:
        return f"answer refused ({refused})"
    low = t.lower()
    for needle, kind in (("circuit breaker", "circuit breaker"), ("deadline", "deadline"),
                         ("timed out", "timed out"), ("never searched", "never searched"),
                         ("every model call failed", "every model call failed"),
                         ("model call failed", "model call failed"), ("unreadable", "unreadable reply"),
                         ("step limit", "step limit"), ("limit reached", "step limit"),
                         ("every source call failed", "no evidence (every source call failed)"),
                         ("knowledge source unavailable", "source unavailable"),
                         ("knowledge sources unavailable", "source unavailable"),
                         ("no knowledge source is available", "source unavailable")):
        if needle in low:
            return kind
    return "other"


def fallbacks_of(trace: dict) -> list[dict]:
    """The fallbacks a method recorded in its trace, by kind (:mod:`atomgraph.evaluation.fallbacks`:
    ``trace["fallbacks"]``, ATOMR's plan failure, node → direct RAG, closed-book root, budget;
    KAR³'s closed-book answer)."""
    from atomgraph.evaluation.fallbacks import fallbacks_in

    return fallbacks_in(trace)


def outcomes(records: Sequence[dict]) -> dict:
    """How the examples ended: ``answered`` (no error), ``errors`` by kind (:func:`failure_kind`),
    ``fallbacks`` by kind (examples whose method fell back at some stage), ``refused``
    (examples where an answer was refused under the answer contract: as the error or a fallback)."""
    from collections import Counter

    errors: Counter = Counter()
    fallbacks: Counter = Counter()
    refused = 0
    for r in records:
        kinds = []
        if r.get("error"):
            kinds.append(failure_kind(r["error"]))
            errors[kinds[-1]] += 1
        for f in r.get("fallbacks") or fallbacks_of(r.get("trace") or {}):
            kind = f.get("kind") or failure_kind(f.get("reason"))
            kinds.append(failure_kind(f.get("reason")))
            fallbacks[kind] += 1
        refused += any(k.startswith("answer refused") for k in kinds)
    from atomgraph.evaluation.fallbacks import answered_by_fallback

    return {"examples": len(records), "answered": sum(1 for r in records if not r.get("error")),
            "answered_by_fallback": sum(1 for r in records if answered_by_fallback(r)),
            "errors": dict(errors.most_common()), "fallbacks": dict(fallbacks.most_common()), "refused": refused,
            "usage_flagged": sum(int((r.get("usage") or {}).get("usage_flagged") or 0) for r in records),
            **_source_failures(records), **suspect_counts(records)}


def suspect_counts(records: Sequence[dict]) -> dict[str, int]:
    """Over ``records``: ``suspect_evidence`` (retrieved passages that address the model, flagged:
    :mod:`atomgraph.injection`), ``dropped_evidence`` (of those, dropped: ``drop_suspect_evidence``)
    and ``suspect_examples`` (examples that retrieved at least one)."""
    def n(r: dict, key: str) -> int:
        return int((r.get("usage") or {}).get(key) or 0)

    return {"suspect_evidence": sum(n(r, "suspect_evidence") for r in records),
            "dropped_evidence": sum(n(r, "dropped_evidence") for r in records),
            "suspect_examples": sum(1 for r in records if n(r, "suspect_evidence"))}


def _source_failures(records: Sequence[dict]) -> dict:
    """Source calls that failed during the run, by source, and the examples they touched: a source
    that dies mid-run shows in the closing lines even where the questions still ended."""
    from collections import Counter

    by_source: Counter = Counter()
    touched = 0
    for r in records:
        failed = (r.get("usage") or {}).get("retriever_failures_by_source") or {}
        by_source.update(failed)
        touched += bool(failed)
    return {"source_failures": dict(by_source.most_common()), "examples_with_source_failures": touched}


def describe_outcome(o: dict) -> str:
    """One line of :func:`outcomes` for a summary."""
    def counts(d: dict) -> str:
        return ", ".join(f"{v} {k}" for k, v in d.items())

    by = o.get("answered_by_fallback", 0)
    if by and by == o["answered"]:
        parts = [f"{o['answered']} of {o['examples']} answered, ALL by fallbacks (none by the method itself)"]
    elif by:
        parts = [f"{o['answered']} of {o['examples']} answered ({by} by fallbacks)"]
    else:
        parts = [f"{o['answered']} of {o['examples']} answered"]
    if o["errors"]:
        parts.append(f"{sum(o['errors'].values())} failed ({counts(o['errors'])})")
    if o["fallbacks"]:
        parts.append(f"{sum(o['fallbacks'].values())} fallbacks ({counts(o['fallbacks'])})")
    parts.append(f"{o['refused']} with a refused answer")
    if o.get("suspect_evidence"):
        dropped = o.get("dropped_evidence", 0)
        parts.append(f"{o['suspect_evidence']} retrieved passages addressed the model in {o['suspect_examples']} "
                     "examples (flagged in the trace" + (f"; {dropped} dropped)" if dropped else ")"))
    if o.get("source_failures"):
        parts.append(f"{sum(o['source_failures'].values())} source calls failed in {o['examples_with_source_failures']} "
                     f"examples ({counts(o['source_failures'])})")
    if o.get("usage_flagged"):
        parts.append(f"{o['usage_flagged']} calls whose server-reported usage disagrees with the tokenizer's "
                     "count (flagged)")
    return "; ".join(parts)


def is_transient(record: dict) -> bool:
    """The record's error came from the provider or a time bound, not from the method."""
    err = str(record.get("error") or "")
    return bool(err) and any(t.lower() in err.lower() for t in TRANSIENT)


# --- one example -------------------------------------------------------------------------

def build_record(example: Example, values: dict, *, method: str, dataset: str, latency_s: float,
                 prices: dict, error: str | None = None) -> dict:
    """The JSON record of one finished example (graph output ``values``, the method output
    contract of :mod:`atomgraph.state.run`)."""
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
    failed_calls = [c for c in llm_calls if getattr(c, "error", None) or (isinstance(c, dict) and c.get("error"))]
    if not error and not values.get("error") and llm_calls and len(failed_calls) == len(llm_calls):
        first = failed_calls[0]
        why = getattr(first, "error", None) or (first.get("error") if isinstance(first, dict) else None)
        error = f"every model call failed ({len(llm_calls)} of {len(llm_calls)}; first: {why})"[:1000]
    if not error and not values.get("error"):  # any method: evidence from no source, every call failed
        from atomgraph.tools.base import retrieval_failure

        error = retrieval_failure(retriever_calls)
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
            "cached_calls": usage.cached_calls,  # answered from the response cache (no tokens, no dollars)
            "llm_calls_by_role": usage.llm_calls_by_role,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "tokens_by_role": usage.tokens_by_role,
            "tokens_by_model": usage.tokens_by_model,
            "retriever_calls": usage.retriever_calls,
            "retriever_calls_by_source": usage.retriever_calls_by_source,
            "retriever_failures_by_source": usage.retriever_failures_by_source,
            "llm_errors": sum(1 for c in llm_calls if getattr(c, "error", None) or (isinstance(c, dict) and c.get("error"))),
            "retriever_errors": sum(1 for c in retriever_calls if getattr(c, "error", None) or (isinstance(c, dict) and c.get("error"))),
            "cost_usd": cost,
            "unpriced_models": unpriced,
            # calls whose server-reported usage disagrees with the tokenizer's count (kept as reported, flagged)
            "usage_flagged": sum(1 for c in llm_calls if (getattr(c, "usage_flag", None)
                                                          or (isinstance(c, dict) and c.get("usage_flag")))),
            # retrieved passages that address the model (atomgraph.injection): flagged, and of those dropped
            "suspect_evidence": _retrieval_count(retriever_calls, "suspect"),
            "dropped_evidence": _retrieval_count(retriever_calls, "dropped"),
        },
        "latency_s": latency_s,
        "stopped": values.get("stopped"),
        "error": error or values.get("error"),
        "fallbacks": fallbacks_of(values.get("trace") or {}),
        "trace": jsonable(values.get("trace") or {}),
        "method": method,
        "dataset": dataset,
        "finished_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def _retrieval_count(calls: Sequence[Any], key: str) -> int:
    """The sum of ``key`` (``suspect`` or ``dropped``) over retriever call records."""
    return sum(int((c.get(key) if isinstance(c, dict) else getattr(c, key, 0)) or 0) for c in calls)


async def _run_one(graph, example: Example, *, method: str, dataset: str, prices: dict,
                   timeout_s: float | None, deadline_s: float | None = None,
                   run_context: dict | None = None, durable: bool = False) -> dict:
    from atomgraph.checkpoint import resume_input, thread_id

    config: dict = {"configurable": {"thread_id": thread_id(method, example.question, dataset=dataset,
                                                            example_id=example.id), **(run_context or {})}}
    if deadline_s is not None:  # the runtime refuses model calls after it; the method ends with its best answer
        config["configurable"]["deadline"] = time.time() + deadline_s
    t0 = time.perf_counter()
    error = None
    start: Any = {"question": example.question}
    if durable:  # a question killed mid-run resumes from its last completed step
        start, _ = await resume_input(graph, start, config)
    try:
        # durable: each step saved before the next starts; else once, when the question ends (failed or cut too)
        durability = {"durability": "sync" if durable else "exit"}
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


async def _run_remote(remote, example: Example, *, method: str, dataset: str, prices: dict,
                      timeout_s: float | None, deadline_s: float | None, fresh: bool) -> dict:
    """One example as a server run (:mod:`atomgraph.evaluation.remote`), recorded as locally."""
    t0 = time.perf_counter()
    info: dict = {"url": remote.url}
    try:
        values, error, info = await remote.run(example.question, example.id, fresh=fresh, timeout_s=timeout_s,
                                               deadline_s=deadline_s)
    except Exception as exc:  # the server went away: a transient error, retried on a rerun
        values, error = {}, f"server connection failed ({type(exc).__name__}: {exc})"[:1000]
    record = build_record(example, values, method=method, dataset=dataset, latency_s=time.perf_counter() - t0,
                          prices=prices, error=error)
    record["server"] = info
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


def _read_meta(out_dir: Path) -> dict | None:
    path = out_dir / RUN_META
    if not path.exists():
        return None
    try:
        old = read_json(path, what="run record", error=ConfigError, hint=UTF8_ONLY)
        if not isinstance(old, dict):
            raise ConfigError(f"{path}: not a JSON object")
        return old
    except ConfigError as exc:
        raise ConfigError(f"{path} cannot be read ({str(exc)[:300]}); the run directory was left as it is. "
                          "Repair it, use another --out, or start afresh with --force-new") from None


def _method_names() -> list[str]:
    from atomgraph.graphs.registry import method_names

    return method_names()


def _defaults() -> Settings:
    from atomgraph.evaluation.recipe import sealed_defaults

    return sealed_defaults()


def _differing(then: dict, now: dict, defaults: dict) -> list[str]:
    """The keys whose values differ between a recorded run and this one, less a key the record
    does not hold that is at its default now: a setting added to atomgraph since that run, which
    ran under the behaviour its default keeps."""
    return [k for k in sorted(set(then) | set(now))
            if then.get(k) != now.get(k) and not (k not in then and now.get(k) == defaults.get(k))]


def _check_meta(out_dir: Path, meta: dict) -> None:
    """ConfigError when the directory holds a different run (method, dataset, model, base URL,
    recipe, parameters), or records without the ``run.json`` that says whose they are."""
    old = _read_meta(out_dir)
    if old is None:
        pred = out_dir / PREDICTIONS
        if pred.exists() and pred.stat().st_size > 0:
            raise ConfigError(f"{out_dir} holds records ({PREDICTIONS}) but no {RUN_META} saying which method, model, "
                              "server and parameters made them; they cannot be resumed as this run. Use another "
                              "--out, or --force-new to move them aside")
        return
    for key in ("method", "dataset"):
        if old.get(key) != meta[key]:
            raise ConfigError(
                f"{out_dir} holds a run of {key} {old.get(key)!r}, not {meta[key]!r}; use another --out directory "
                "(or --force-new to move the old run aside)"
            )
    before, now = old.get("fingerprint"), meta["fingerprint"]
    defaults = effective_config(_defaults())
    if isinstance(before, dict):
        params_default = {k.split(".", 1)[1]: v for k, v in defaults.items() if k.startswith(f"{meta['method']}.")}
        diff = [k for k in ("models", "temperature") if before.get(k) != now.get(k)]
        a, b = before.get("params"), now.get("params")
        if (_differing(a, b, params_default) if isinstance(a, dict) and isinstance(b, dict) else a != b):
            diff.append("params")
        # a run.json from before base_url/recipe were recorded is compared on what it holds
        diff += [k for k in ("base_url", "recipe") if k in before and before.get(k) != now.get(k)]
        if diff:
            def changed(k):
                a, b = before.get(k), now.get(k)
                if isinstance(a, dict) and isinstance(b, dict):  # name the differing keys
                    return "; ".join(f"{k}.{x}: {a.get(x)!r} then, {b.get(x)!r} now"
                                     for x in _differing(a, b, params_default if k == "params" else {}))
                return f"{k}: {a!r} then, {b!r} now"
            detail = "; ".join(changed(k) for k in diff)
            raise ConfigError(f"{out_dir} holds a run with other {', '.join(diff)} ({detail[:600]}); its records "
                              "would mix with these. Use another --out, or --force-new to move the old run aside")
    if isinstance(old.get("config"), dict) and isinstance(meta.get("config"), dict):
        a, b = old["config"], meta["config"]
        # another method's section is not this run's setting (its own section is the fingerprint's params)
        others = {m for m in _method_names() if m != meta["method"]}
        differ = [k for k in _differing(a, b, defaults) if k not in RESUMABLE and k.split(".", 1)[0] not in others]
        if differ:
            detail = "; ".join(f"{k}: {a.get(k)!r} then, {b.get(k)!r} now" for k in differ)
            raise ConfigError(f"{out_dir} holds a run under another configuration ({', '.join(differ)}: "
                              f"{detail[:600]}); resuming would mix them. Use the same settings (--set), another "
                              "--out, or --force-new to move the old run aside")


def _move_aside(out_dir: Path) -> Path | None:
    """Move the run's files into ``DIR/previous-<time>/`` (``--force-new``)."""
    files = [out_dir / n for n in (PREDICTIONS, RUN_META, RETRIED) if (out_dir / n).exists()]
    if not files:
        return None
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    dest = out_dir / f"previous-{stamp}"
    n = 1
    while dest.exists():
        n += 1
        dest = out_dir / f"previous-{stamp}-{n}"
    dest.mkdir()
    for f in files:
        f.rename(dest / f.name)
    return dest


def _drop_for_retry(pred_path: Path, existing: list[dict], retry: list[dict]) -> None:
    """Move the records of examples run again to ``retried.jsonl`` and rewrite the predictions
    file without them (through a temporary file and a rename: all or nothing)."""
    from atomgraph.evaluation.records import safe_json

    gone = {id(r) for r in retry}
    with open(pred_path.parent / RETRIED, "a", encoding="utf-8") as fh:
        for r in retry:
            fh.write(safe_json(r) + "\n")
    tmp = pred_path.with_name(pred_path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        for r in existing:
            if id(r) not in gone:
                fh.write(safe_json(r) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, pred_path)


def _leave_out_demonstrations(examples: list, packs: list[str]) -> tuple[list, list[str]]:
    """(the examples that are not demonstrations of ``packs``, the ids left out): an example is a
    demonstration when a pack shows its question or a stage demonstration was written on it."""
    from atomgraph.prompts.atomr.stages import _norm_q, demonstration_questions

    shown: set[str] = set()
    for pack in packs:
        shown |= demonstration_questions(pack)
    left_out = [e.id for e in examples if _norm_q(e.question) in shown]
    gone = set(left_out)
    return [e for e in examples if e.id not in gone], left_out


@dataclass(kw_only=True)
class EvalOptions:
    """How :func:`arun_eval` runs a method over a dataset (every field optional).

    ``graph`` overrides the registry's graph (it should have a checkpointer so a failed
    example keeps the calls it made). ``resume=False`` starts the predictions file afresh
    instead of skipping the examples already in it; examples whose record holds a transient
    error (:func:`is_transient`) are run again, and with ``retry_errors`` every errored one.
    ``force_new`` moves a previous run in ``out_dir`` aside instead of refusing a differing
    one. ``deadline_s``: seconds each example may take before the method's model calls are
    refused (it then ends with its best answer, the reason recorded); ``timeout_s`` cancels
    the example outright. ``concurrency`` is 1 to :data:`MAX_CONCURRENCY`: the questions in
    flight at once, in all. ``workers``: the processes that answer them
    (:mod:`atomgraph.evaluation.workers`; 1, the default, answers them in this process), each
    with its share of ``concurrency``; this process alone writes the records. ``worker_warm``
    (``(method, model, sources, settings) -> runtime records``, picklable): what each worker runs
    before its first question, loading what the questions use (the command line passes
    :func:`atomgraph.warmup.worker_warm`; its embedding runtimes go into ``run.json``).
    ``on_record(record)`` is called as each example finishes (in dataset order when
    ``concurrency`` is 1).
    ``checkpoint``: an SQLite file saving every step of every question (:mod:`atomgraph.checkpoint`),
    so a killed run resumes its unfinished questions from their last completed step.
    A dataset file is read strictly as ``encoding`` before anything is created.
    ``recipe``: the name of the recipe the run follows (recorded; a rerun under another is refused).
    ``server``: the URL of a LangGraph Server deployment (``langgraph dev``/``langgraph up``)
    that runs each question (:mod:`atomgraph.evaluation.remote`); ``server_context`` is sent
    with every run (the method's parameters, ``model``, ``sources``), ``server_api_key`` as
    its ``x-api-key``. Records, resume and the summary are this process's, as for a local run.
    """

    limit: int | None = None
    concurrency: int = 4
    model: Any = None
    sources: Any = None
    settings: Settings | None = None
    graph: Any = None
    dataset_name: str | None = None
    timeout_s: float | None = None
    deadline_s: float | None = None
    progress: bool = True
    resume: bool = True
    retry_errors: bool = False
    force_new: bool = False
    on_record: Callable[[dict], None] | None = None
    checkpoint: str | os.PathLike | None = None
    encoding: str = "utf-8"
    recipe: str | None = None
    run_info: dict | None = None
    server: str | None = None
    server_api_key: str | None = None
    server_context: dict | None = None
    workers: int = 1
    worker_warm: Callable[[str, Any, Any, Settings], list[dict]] | None = None

    def check(self) -> None:
        """A ConfigError for an option no run can take (before anything is created)."""
        if self.server is not None and (self.checkpoint is not None or self.graph is not None
                                        or isinstance(self.model, BaseChatModel) or self.sources is not None):
            raise ConfigError("with --server the server runs the graph with its own models, sources and checkpointer: "
                              "name the model and sources by name (--model NAME, --sources a,b), without --checkpoint "
                              "or a model/sources factory")
        if not isinstance(self.concurrency, int) or not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise ConfigError(f"concurrency must be a whole number from 1 to {MAX_CONCURRENCY}, not {self.concurrency!r}")
        for label, v in (("timeout", self.timeout_s), ("deadline", self.deadline_s)):
            if v is not None and not (isinstance(v, (int, float)) and 0 < v < 10**7):
                raise ConfigError(f"the {label} must be a positive number of seconds, not {v!r}")
        self._check_workers()

    def _check_workers(self) -> None:
        from atomgraph.evaluation.workers import MAX_WORKERS, check_sendable

        if not isinstance(self.workers, int) or isinstance(self.workers, bool) or not 1 <= self.workers <= MAX_WORKERS:
            raise ConfigError(f"workers must be a whole number from 1 to {MAX_WORKERS}, not {self.workers!r}")
        if self.workers == 1:
            return
        if self.workers > self.concurrency:
            raise ConfigError(f"{self.workers} workers need a concurrency of at least {self.workers} (each answers at "
                              f"least one question at a time), not {self.concurrency}")
        for given, what in ((self.server, "--server (the server answers the questions)"),
                            (self.checkpoint, "--checkpoint (one SQLite file, written by one process)"),
                            (self.graph, "a graph object (each worker builds its own)")):
            if given is not None:
                raise ConfigError(f"--workers cannot run with {what}; use --workers 1")
        check_sendable(model=self.model, sources=self.sources, settings=self.settings)


async def arun_eval(method: str, dataset: str | Sequence[Example], out_dir: str | os.PathLike,
                    options: EvalOptions | None = None, *, _saver: Any = None, **kwargs: Any) -> RunResult:
    """Run ``method`` (a registered name) over ``dataset`` (a name, a path, or examples) as
    ``options`` say (:class:`EvalOptions`; its fields may also be given as keywords, e.g.
    ``limit=20``). Returns counts, the records now in the file and :func:`outcomes` of this
    run's records. ``run.json`` is written before the first record; a directory with records and
    no ``run.json``, or one of another model, base URL, recipe or parameters, is refused unless
    ``force_new``."""
    if options is not None and kwargs:
        raise TypeError("arun_eval takes its options as an EvalOptions or as keywords, not both")
    opts = options if options is not None else EvalOptions(**kwargs)
    if isinstance(dataset, (str, os.PathLike)):  # read (strictly) before anything is created
        opts = replace(opts, dataset_name=opts.dataset_name or str(dataset))
        dataset = load_dataset(dataset, limit=opts.limit, encoding=opts.encoding)
    opts.check()
    if opts.checkpoint is not None and _saver is None:
        from atomgraph.checkpoint import open_checkpointer

        async with open_checkpointer(opts.checkpoint) as saver:
            return await _run(method, list(dataset), out_dir, opts, saver)
    return await _run(method, list(dataset), out_dir, opts, _saver)


async def _run(method: str, dataset: list[Example], out_dir: str | os.PathLike, opts: EvalOptions,
               saver: Any) -> RunResult:
    """One evaluation run: its ``run.json`` facts and examples, then the examples run under the
    run directory's lock."""
    settings = opts.settings or get_settings()
    examples = dataset[:opts.limit] if opts.limit is not None else dataset
    out = check_out_dir(out_dir, what="run directory (--out)")
    meta, settings, run_context = _run_meta(method, opts, settings, len(examples))
    examples = _without_demonstrations(method, opts, settings, run_context, examples, meta)
    server_context = None
    if opts.server is not None:  # what runs is what the server is sent: that is the fingerprint
        server_context = server_run_context(settings, opts.server_context, meta.get("dataset_setting"))
        meta["fingerprint"] = _server_fingerprint(method, meta["dataset"], opts, server_context)
        meta["server"] = opts.server.rstrip("/")
    with _exclusive(out):
        if opts.force_new:
            _move_aside(out)
        _check_meta(out, meta)
        return await _run_locked(method, examples, out, opts, saver, meta, settings, run_context, server_context)


def _run_meta(method: str, opts: EvalOptions, settings: Settings, total: int) -> tuple[dict, Settings, dict]:
    """The run's ``run.json`` facts, its settings (with the dataset's declared setting applied)
    and its run context (the dataset's prompt pack)."""
    name = opts.dataset_name or "custom"
    model, recipe = opts.model, opts.recipe
    meta = {
        "method": method,
        "dataset": name,
        "limit": opts.limit,
        "total": total,
        "settings": settings_snapshot(settings),
        "model": type(model).__name__ if isinstance(model, BaseChatModel) else None,
        "recipe": recipe,
        "fingerprint": run_fingerprint(method, name, model, settings, recipe),
        "config": effective_config(settings),
        **({"run": opts.run_info} if opts.run_info else {}),
        "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    run_context: dict[str, Any] = {}
    if opts.dataset_name:
        # the dataset's declared setting (sources; ATOMR's prompt pack) unless the settings say otherwise
        from atomgraph.evaluation.datasets import apply_dataset_setting

        settings, run_context, applied = apply_dataset_setting(method, name, settings,
                                                               sources_given=opts.sources is not None)
        meta["dataset_setting"] = applied
        meta["settings"] = settings_snapshot(settings)
        meta["fingerprint"] = run_fingerprint(method, name, model, settings, recipe)
        meta["config"] = effective_config(settings)
        if "prompt_pack" in run_context:
            meta["prompt_pack"] = run_context["prompt_pack"]
    return meta, settings, run_context


def _without_demonstrations(method: str, opts: EvalOptions, settings: Settings, run_context: dict,
                            examples: list[Example], meta: dict) -> list[Example]:
    """``examples`` less the demonstration questions, which are not evaluated on: those of the
    ATOMR pack in use, and for a dataset whose demonstrations come from its own questions
    (BlendQA), that dataset pack's, whatever the method (recorded in ``meta``)."""
    name = meta["dataset"]
    packs = []
    if method == "atomr":
        packs.append(run_context.get("prompt_pack") or getattr(settings.section("atomr"), "prompt_pack", "general"))
    if opts.dataset_name:
        from atomgraph.evaluation.datasets import dataset_setting

        declared = dataset_setting(name)
        if declared.demonstrations_in_split and declared.prompt_pack not in packs:
            packs.append(declared.prompt_pack)
    if not packs:
        return examples
    examples, left_out = _leave_out_demonstrations(examples, packs)
    if left_out:
        meta["total"] = len(examples)
        named = " and ".join(repr(p) for p in packs)
        log.warning("%s on %s: %d question(s) left out: they are demonstrations of the %s prompt pack%s",
                    method, name, len(left_out), named, "s" if len(packs) > 1 else "")
    meta["demonstrations_left_out"] = left_out
    return examples


def _server_fingerprint(method: str, name: str, opts: EvalOptions, server_context: dict) -> dict:
    return {"method": method, "dataset": name,
            "models": {"server": opts.server.rstrip("/"), "model": server_context.get("model")
                       or "the server's configured model"},
            "base_url": None, "recipe": opts.recipe,
            "temperature": server_context.get("temperature"),
            "params": {k: v for k, v in server_context.items() if k not in ("model", "temperature")}}


async def _run_locked(method: str, examples: list[Example], out: Path, opts: EvalOptions, saver: Any,
                      meta: dict, settings: Settings, run_context: dict, server_context: dict | None) -> RunResult:
    """The examples not yet in the predictions file (and those to retry) run, each record
    written as it finishes; ``run.json`` written before the first."""
    from atomgraph.checkpoint import serializer
    from atomgraph.graphs.registry import build_method
    from langgraph.checkpoint.memory import InMemorySaver

    pred_path = out / PREDICTIONS
    if not opts.resume and pred_path.exists():
        pred_path.unlink()
    remote = None
    if opts.server is not None:
        from atomgraph.evaluation.remote import ServerRunner

        old = _read_meta(out) if opts.resume and not opts.force_new else None
        meta["server_run_id"] = (old or {}).get("server_run_id") or str(uuid.uuid4())
        remote = ServerRunner(opts.server, method, run_id=meta["server_run_id"], api_key=opts.server_api_key,
                              context=server_context, configurable=run_context)
        await remote.check()
    existing = read_records(pred_path, validate="run", method=method)  # refuses a damaged file, changes nothing
    existing = read_records(pred_path, repair=True, validate="run", method=method)  # now cut a killed last line
    wanted = {e.id for e in examples}
    retry = [r for r in existing if str(r["id"]) in wanted and r.get("error") and (opts.retry_errors or is_transient(r))]
    if retry:
        _drop_for_retry(pred_path, existing, retry)
        existing = [r for r in existing if not any(r is x for x in retry)]
    done = {str(r.get("id")) for r in existing}
    todo = [e for e in examples if e.id not in done]
    graph = opts.graph
    pooled = opts.workers > 1 and remote is None
    if graph is None and todo and remote is None and not pooled:
        graph = _build(build_method, method, model=opts.model, sources=opts.sources, settings=settings,
                       checkpointer=saver or InMemorySaver(serde=serializer()))
    meta["workers"] = opts.workers
    (out / RUN_META).write_text(json.dumps(jsonable(meta), indent=2), encoding="utf-8")
    records = list(existing)
    run = _Examples(method=method, dataset=meta["dataset"], opts=opts, prices=price_table(settings), graph=graph,
                    remote=remote, run_context=run_context, durable=saver is not None,
                    retried={str(r["id"]) for r in retry}, records=records)
    pool = None
    if pooled and todo:
        new, pool = await run.in_workers(todo, pred_path, len(examples) - len(todo), settings)
        if pool.runtimes:  # each worker loaded its own embedding models: what ran them, in run.json
            record_embedding_runtime(meta.setdefault("run", {}), pool.runtimes)
            (out / RUN_META).write_text(json.dumps(jsonable(meta), indent=2), encoding="utf-8")
    else:
        new = await run.all(todo, pred_path, len(examples) - len(todo))
    return RunResult(
        out_dir=out, total=len(examples), skipped=len(examples) - len(todo), finished=len(new),
        errors=sum(1 for r in new if r.get("error")),
        f1=100 * mean(r["metrics"]["f1"] for r in records),
        cost_usd=sum(r["usage"].get("cost_usd") or 0.0 for r in records), records=records,
        retried=len(retry), outcome=outcomes(new),
        kept_errors=sum(1 for r in existing if str(r.get("id")) in wanted and r.get("error")),
        workers=opts.workers, unfinished=list(pool.unfinished) if pool else [],
        worker_failures=list(pool.failures) if pool else [],
        embedding_runtimes=list(pool.runtimes) if pool else [],
    )


@dataclass(kw_only=True)
class _Examples:
    """The examples of one run, run ``opts.concurrency`` at a time, locally or on the server."""

    method: str
    dataset: str
    opts: EvalOptions
    prices: dict
    graph: Any
    remote: Any
    run_context: dict
    durable: bool
    retried: set[str]
    records: list[dict]

    async def one(self, ex: Example) -> dict:
        if self.remote is not None:
            return await _run_remote(self.remote, ex, method=self.method, dataset=self.dataset, prices=self.prices,
                                     timeout_s=self.opts.timeout_s, deadline_s=self.opts.deadline_s,
                                     fresh=ex.id in self.retried)
        return await _run_one(self.graph, ex, method=self.method, dataset=self.dataset, prices=self.prices,
                              timeout_s=self.opts.timeout_s, deadline_s=self.opts.deadline_s,
                              run_context=self.run_context, durable=self.durable)

    def _keep(self, writer: RecordWriter, rec: dict, new: list[dict], bar: Any) -> None:
        """A finished example's record: written (durable before the next), kept, handed to ``on_record``."""
        writer.write(rec)
        self._kept(rec, new, bar)

    async def _akeep(self, writer: RecordWriter, rec: dict, new: list[dict], bar: Any) -> None:
        """:meth:`_keep` on the event loop: the record's fsync waits off the loop; a record whose
        line is in the file is kept even if the run is cancelled while its fsync runs."""
        writer.append(rec)
        try:
            await writer.synced()
        finally:
            self._kept(rec, new, bar)

    def _kept(self, rec: dict, new: list[dict], bar: Any) -> None:
        self.records.append(rec)
        new.append(rec)
        if self.opts.on_record is not None:
            self.opts.on_record(rec)
        if bar is not None:
            bar.set_postfix_str(_postfix(self.records), refresh=False)
            bar.update(1)

    async def all(self, todo: list[Example], pred_path: Path, skipped: int) -> list[dict]:
        """Run ``todo``, each record written (and handed to ``on_record``) as it finishes."""
        new: list[dict] = []
        sem = asyncio.Semaphore(self.opts.concurrency)
        bar = _progress_bar(skipped + len(todo), skipped, self.method, self.dataset) if self.opts.progress else None

        async def worker(ex: Example) -> None:
            async with sem:
                rec = await self.one(ex)
            await self._akeep(writer, rec, new, bar)

        with RecordWriter(pred_path) as writer:
            try:
                await asyncio.gather(*(worker(e) for e in todo))
            finally:
                if bar is not None:
                    bar.close()
        return new

    async def in_workers(self, todo: list[Example], pred_path: Path, skipped: int, settings: Settings):
        """Run ``todo`` in ``opts.workers`` processes (:mod:`atomgraph.evaluation.workers`); each
        record written here as it arrives. Returns (the new records, the pool's outcome)."""
        import functools

        from atomgraph.environment import sealed, shared_data_dir
        from atomgraph.evaluation.workers import run_pool

        new: list[dict] = []
        bar = _progress_bar(skipped + len(todo), skipped, self.method, self.dataset) if self.opts.progress else None
        build = functools.partial(_worker_graph, self.method, self.opts.model, self.opts.sources, settings)
        warm = None if self.opts.worker_warm is None else \
            functools.partial(self.opts.worker_warm, self.method, self.opts.model, self.opts.sources, settings)
        answer = functools.partial(_run_one, method=self.method, dataset=self.dataset, prices=self.prices,
                                   timeout_s=self.opts.timeout_s, deadline_s=self.opts.deadline_s,
                                   run_context=self.run_context, durable=False)

        with RecordWriter(pred_path) as writer:
            try:
                outcome = await asyncio.to_thread(
                    run_pool, todo, workers=self.opts.workers, concurrency=self.opts.concurrency, build=build,
                    answer=answer, on_record=lambda rec: self._keep(writer, rec, new, bar), sealed=sealed(),
                    data_dir=shared_data_dir(), warm=warm)
            finally:
                if bar is not None:
                    bar.close()
        return new, outcome


def _worker_graph(method: str, model: Any, sources: Any, settings: Settings):
    """The graph a worker process answers with (:mod:`atomgraph.evaluation.workers`)."""
    from atomgraph.checkpoint import serializer
    from atomgraph.graphs.registry import build_method
    from langgraph.checkpoint.memory import InMemorySaver

    return _build(build_method, method, model=model, sources=sources, settings=settings,
                  checkpointer=InMemorySaver(serde=serializer()))


def record_embedding_runtime(run_info: dict, runtimes: list[dict]) -> None:
    """``run.json``'s ``run.embedding_runtime``: what ran the run's local embedding models (model,
    wanted, used, why), one record, or a list of the distinct ones."""
    if runtimes:
        run_info["embedding_runtime"] = runtimes[0] if len(runtimes) == 1 else runtimes


def server_run_context(settings: Settings, context: dict | None, applied: dict | None) -> dict:
    """The context each server run is sent: ``context`` (the method's parameters, ``model``,
    ``sources`` named on the command line) with the run's knowledge sources added where this
    run chose them: the dataset's declared sources, or sources its settings name (a recipe,
    ``--set``, the environment) other than the default. A server builds a run's sources from its
    context; without them it would read its own settings' sources, not the dataset's setting.
    Sent sources are the run's choice, so each must be usable on the server (asked for means
    required). The prompt pack goes as a configurable key (the run context of a local run)."""
    context = dict(context or {})
    if "sources" not in context:
        default = list(type(settings).model_fields["sources"].default_factory())
        declared = bool(applied and applied.get("declared") and isinstance(applied.get("sources"), list))
        if declared or list(settings.sources) != default:
            context["sources"] = list(settings.sources)
    return context


def _build(build_method, method: str, **kwargs: Any):
    try:
        return build_method(method, **kwargs)
    except TypeError as exc:  # a user's builder without a checkpointer parameter
        if "checkpointer" not in str(exc):
            raise
        kwargs.pop("checkpointer")
        return build_method(method, **kwargs)


def run_eval(method: str, dataset: str | Sequence[Example], out_dir: str | os.PathLike,
             options: EvalOptions | None = None, **kwargs: Any) -> RunResult:
    """Synchronous :func:`arun_eval` (not from inside a running event loop: await that instead)."""
    from atomgraph.loop_clients import closing_clients

    return asyncio.run(closing_clients(arun_eval(method, dataset, out_dir, options, **kwargs)))


def _progress_bar(total: int, initial: int, method: str, dataset: str):
    """A bar on a terminal, else a line with rate and ETA every 30 s (:mod:`atomgraph.progress`)."""
    from atomgraph.progress import progress

    return progress(total, f"{method} on {dataset}", "questions", initial=initial)


def _postfix(records: list[dict]) -> str:
    f1 = 100 * mean(r["metrics"]["f1"] for r in records)
    cost = sum(r["usage"].get("cost_usd") or 0.0 for r in records)
    errors = sum(1 for r in records if r.get("error"))
    return f"F1 {f1:.1f} | ${cost:.4f}" + (f" | {errors} errors" if errors else "")

