"""Evaluation harness: datasets, metrics, runs with resume, reports and plots.

>>> from atomgraph.evaluation import EvalOptions, load_dataset, run_eval, markdown_report
>>> run_eval("rag", "hotpotqa-dev-100", "runs/rag", EvalOptions(limit=20))
>>> print(markdown_report(["runs/rag"]))
"""

from atomgraph.evaluation.datasets import (
    CORPORA, DATASETS, DatasetError, Example, dataset_names, load_corpus, load_dataset,
)
from atomgraph.evaluation.metrics import (
    aggregate_scores, answer_scores, cover_em, exact_match, f1_score, normalize_answer, retrieval_scores,
)
from atomgraph.state.run import DEFAULT_PRICES, calls_cost, price_table
from atomgraph.evaluation.records import RecordWriter, read_records
from atomgraph.evaluation.report import (
    load_run, markdown_report, markdown_tables, score_predictions, summarize_run, summarize_runs,
)
from atomgraph.evaluation.runner import EvalOptions, RunResult, arun_eval, model_from_spec, run_eval

__all__ = [
    "CORPORA", "DATASETS", "DatasetError", "Example", "dataset_names", "load_corpus", "load_dataset",
    "aggregate_scores", "answer_scores", "cover_em", "exact_match", "f1_score", "normalize_answer",
    "retrieval_scores", "DEFAULT_PRICES", "calls_cost", "price_table", "RecordWriter", "read_records",
    "load_run", "markdown_report", "markdown_tables", "score_predictions", "summarize_run", "summarize_runs",
    "EvalOptions", "RunResult", "arun_eval", "model_from_spec", "run_eval",
]
