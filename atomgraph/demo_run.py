"""The offline demo (``atomgraph demo`` / ``make demo``): ATOMR over the demo knowledge pack.

1. the chat model(s) are resolved first, so a missing model is reported before any work;
2. the pack's passages are indexed into an embedded Chroma collection (``atomgraph-demo``
   under ``.atomgraph/demo/`` by default; ingestion is content-hashed, so a second run adds
   nothing);
3. the pack's ``kg.ttl`` is served in process (pyoxigraph) as the ``wikidata`` source, and
   Google joins when ``SERPAPI_API_KEY`` is set;
4. the demo questions run through the evaluation runner (:func:`~atomgraph.evaluation.runner.arun_eval`,
   one at a time, a fresh ``predictions.jsonl`` under the demo folder each run), so each
   record is the same as an experiment's: answer, scores, trace, usage and cost.

>>> result = run_demo(model=my_chat_model, limit=2)
>>> print(render_summary(result))
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from atomgraph.demo_pack import PASSAGES_FILE, kg_path, load_questions, pack_dir
from atomgraph.evaluation.datasets import Example
from atomgraph.evaluation.metrics import mean
from atomgraph.evaluation.records import jsonable
from atomgraph.models import ModelsArg, resolve_models
from atomgraph.settings import Settings, get_settings
from atomgraph.state.run import add_usage
from atomgraph.tools.base import SourceSet
from atomgraph.tools.registry import build_sources

DEMO_COLLECTION = "atomgraph-demo"
DEFAULT_PERSIST = ".atomgraph/demo"


@dataclass
class DemoResult:
    """Every question's evaluation record (question, gold, predicted, metrics, trace, usage)
    and the totals."""

    records: list[dict] = field(default_factory=list)
    indexed: dict[str, Any] = field(default_factory=dict)  # the ingestion summary
    sources: list[str] = field(default_factory=list)
    unavailable_sources: dict[str, str] = field(default_factory=dict)

    @property
    def mean_f1(self) -> float:
        """Mean F1 over the questions, in percent."""
        return 100 * mean(r["metrics"]["f1"] for r in self.records) if self.records else 0.0

    @property
    def mean_em(self) -> float:
        return 100 * mean(r["metrics"]["em"] for r in self.records) if self.records else 0.0

    @property
    def errors(self) -> int:
        return sum(1 for r in self.records if r.get("error"))

    @property
    def answered(self) -> int:
        """Questions that ended with an answer (right or wrong)."""
        return sum(1 for r in self.records if not r.get("error") and str(r.get("predicted") or "").strip())

    @property
    def fallbacks(self) -> int:
        """Questions that fell back somewhere (the plan or a node; :func:`fallback_reasons`)."""
        return sum(1 for r in self.records if fallback_reasons(r))

    def nothing_ran(self) -> str | None:
        """Why no question could run (no question at all, or every question failed before the
        model replied once), else None: the demo ran, whatever its answers."""
        if not self.records:
            return "no demo question ran"
        if all(r.get("error") and not (r.get("usage") or {}).get("completion_tokens") for r in self.records):
            first = str(self.records[0].get("error"))
            return f"every question failed before the model replied (first: {first[:200]})"
        return None

    def usage(self):
        """Usage summed over every question (:class:`~atomgraph.state.run.UsageSummary`)."""
        return add_usage(r["usage"] for r in self.records)

    def as_dict(self) -> dict:
        u = self.usage()
        return {
            "questions": jsonable(self.records),
            "summary": {
                "n": len(self.records),
                "mean_f1": self.mean_f1,
                "mean_em": self.mean_em,
                "answered": self.answered,
                "errors": self.errors,
                "fallbacks": self.fallbacks,
                "usage": u.model_dump(mode="json"),
                "sources": self.sources,
                "unavailable_sources": self.unavailable_sources,
                "indexed": self.indexed,
            },
        }


# --- the pieces ------------------------------------------------------------------------------

def demo_settings(settings: Settings | None = None, persist: str | Path | None = None) -> Settings:
    """``settings`` pointed at the demo pack: the embedded Chroma folder ``persist`` (default
    ``.atomgraph/demo``), collection ``atomgraph-demo``, and ``kg.ttl`` as the Wikidata file;
    Google only when a SerpAPI key is set."""
    settings = settings or get_settings()
    sources = ["wikipedia", "google", "wikidata"] if settings.serpapi_api_key else ["wikipedia", "wikidata"]
    return settings.model_copy(update={
        "chroma_path": str(persist or DEFAULT_PERSIST),
        "chroma_host": None,
        "chroma_collection": DEMO_COLLECTION,
        "wikidata_file": str(kg_path()),
        "sources": sources,
    })


def index_demo_passages(settings: Settings, *, progress: bool = False):
    """Index the pack's passages into ``settings.chroma_path`` / ``settings.chroma_collection``
    (already-indexed passages are skipped). Returns the :class:`~atomgraph.tools.ingest.IngestStats`."""
    from atomgraph.tools.ingest import ingest

    Path(settings.chroma_path).mkdir(parents=True, exist_ok=True)
    return ingest(
        [pack_dir() / PASSAGES_FILE], settings.chroma_collection, settings=settings,
        persist=settings.chroma_path, fmt="jsonl", progress=progress,
    )


def demo_sources(settings: Settings) -> SourceSet:
    """The demo's knowledge sources (``settings`` from :func:`demo_settings`)."""
    return build_sources(settings, settings.sources)


def demo_models(settings: Settings, factory: str | None = None) -> ModelsArg:
    """The chat model(s): from ``factory`` ("module:function", see
    :func:`~atomgraph.evaluation.runner.model_from_spec`), else from settings. Raises
    :class:`~atomgraph.errors.ConfigError` when none is configured."""
    from atomgraph.evaluation.runner import model_from_spec

    given = model_from_spec(None, factory, settings) if factory else None
    return resolve_models(given, settings)


def demo_examples(limit: int | None = None) -> list[Example]:
    """The pack's questions as evaluation examples."""
    questions = load_questions()
    if limit is not None:
        questions = questions[: max(0, limit)]
    return [Example(id=q["id"], question=q["question"], answers=list(q["answers"]), question_type=q.get("type"))
            for q in questions]


# --- a whole demo run ----------------------------------------------------------------------------

async def arun_demo(
    settings: Settings | None = None,
    *,
    persist: str | Path | None = None,
    limit: int | None = None,
    model: ModelsArg = None,
    factory: str | None = None,
    on_record: Callable[[int, dict], None] | None = None,
    on_indexed: Callable[[Any], None] | None = None,
    progress: bool = False,
) -> DemoResult:
    """Run the demo; ``on_indexed(stats)`` is called once the passages are indexed and
    ``on_record(i, record)`` as each question finishes.

    ``model``: chat model(s) to use (default: ``factory``, else settings). Questions run one
    after another; a question that fails is recorded with its error and the run goes on.
    """
    from atomgraph.evaluation.runner import EvalOptions, arun_eval

    settings = demo_settings(settings, persist)
    models = resolve_models(model, settings) if model is not None else demo_models(settings, factory)
    examples = demo_examples(limit)
    stats = await asyncio.to_thread(index_demo_passages, settings, progress=progress)
    if on_indexed is not None:
        on_indexed(stats)
    sources = demo_sources(settings)
    result = DemoResult(indexed=stats.as_dict(), sources=list(sources.available), unavailable_sources=dict(sources.unavailable))

    def finished(record: dict) -> None:
        result.records.append(record)
        if on_record is not None:
            on_record(len(result.records), record)

    await arun_eval("atomr", examples, Path(settings.chroma_path) / "run", EvalOptions(
        model=models, sources=sources, settings=settings, dataset_name="demo", concurrency=1, progress=False,
        resume=False, on_record=finished))
    return result


def run_demo(settings: Settings | None = None, **kwargs: Any) -> DemoResult:
    """Synchronous :func:`arun_demo`."""
    from atomgraph.loop_clients import closing_clients

    return asyncio.run(closing_clients(arun_demo(settings, **kwargs)))


# --- rendering -----------------------------------------------------------------------------------

def render_record(i: int, record: dict) -> str:
    from atomgraph.render import render_atomr_trace, render_usage

    lines = [
        f"Q{i} ({record['id']}, {record.get('question_type') or 'question'}): {record['question']}",
        f"  Answer: {record['predicted'] or '(none)'}",
        f"  Gold:   {' | '.join(record['gold'])}",
        f"  F1 {100 * record['metrics']['f1']:.1f}  EM {100 * record['metrics']['em']:.0f}  ({record['latency_s']:.1f} s)",
    ]
    if record.get("stopped"):
        lines.append(f"  Stopped early: {record['stopped']}")
    if record.get("error"):
        lines.append(f"  Error: {record['error']}")
    trace = record.get("trace") or {}
    if trace.get("nodes"):
        lines.append("  Executed tree:")
        lines += ["    " + ln for ln in render_atomr_trace(trace).splitlines()]
    lines.append("  " + render_usage(record))
    return "\n".join(lines)


def fallback_reasons(record: dict) -> list[str]:
    """Each fallback of one question, by kind (:mod:`atomgraph.evaluation.fallbacks`: plan
    failure, node → direct RAG by reason, closed-book root, budget, KAR³ closed-book)."""
    from atomgraph.evaluation.fallbacks import fallbacks_in

    return [f["kind"] for f in fallbacks_in(record.get("trace") or {})]


def render_summary(result: DemoResult) -> str:
    u = result.usage()
    by_source = ", ".join(f"{k} {v}" for k, v in sorted(u.retriever_calls_by_source.items())) or "none"
    n = len(result.records)
    from atomgraph.evaluation.fallbacks import count_fallbacks, headline

    first = headline(count_fallbacks([{**r, "predicted": r.get("predicted", r.get("answer"))} for r in result.records]))
    lines = [first] if first and first.startswith("WARNING") else []
    lines += [
        f"Demo summary: {n} questions: {result.answered} answered, {n - result.answered - result.errors} "
        f"without an answer, {result.errors} with errors, {result.fallbacks} fell back; "
        f"mean F1 {result.mean_f1:.1f}, EM {result.mean_em:.1f}",
        f"  LLM calls: {u.llm_calls} ({u.prompt_tokens} prompt + {u.completion_tokens} completion tokens)",
        f"  Retriever calls: {u.retriever_calls} ({by_source})",
        f"  Sources: {', '.join(result.sources) or 'none'}",
    ]
    for name, why in result.unavailable_sources.items():
        lines.append(f"  Unavailable: {name}: {why}")
    reasons = [fallback_reasons(r) for r in result.records]
    fell = sum(1 for r in reasons if r)
    lines.append(f"  Fallbacks: {fell} of {len(result.records)} questions fell back somewhere")
    counts: dict[str, int] = {}
    for rs in reasons:
        for why in rs:
            counts[why] = counts.get(why, 0) + 1
    for why, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        lines.append(f"    {n} × {why}")
    return "\n".join(lines)
