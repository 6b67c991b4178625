"""Run parameters and state of the Wikipedia indexing graph (``wikipedia_index``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field
from typing_extensions import TypedDict


@dataclass(kw_only=True)
class WikipediaIndexContext:
    """How a corpus is read, split and written (the same options as ``atomgraph index wikipedia``)."""

    format: Annotated[Literal["auto", "jsonl", "hipporag", "hotpot-bz2", "tsv"],
                      Field(description="Input format ('auto' reads it from the file name and content).")] = "auto"
    batch_size: Annotated[int, Field(ge=1, description="Passages embedded and written per batch (one transaction).")] = 256
    max_tokens: Annotated[int, Field(ge=16, description="Longer passages are split into pieces of at most this many tokens.")] = 256
    limit: Annotated[int | None, Field(ge=0, description="Read at most this many records (empty: all).")] = None


class WikipediaIndexInput(TypedDict, total=False):
    inputs: list[str]  # corpus files
    collection: str  # Chroma collection (default: settings.chroma_collection)


class WikipediaIndexOutput(TypedDict, total=False):
    stats: dict  # what the run did (read, unique, added, skipped, count, seconds, ...)
    error: str | None


class WikipediaIndexState(WikipediaIndexInput, WikipediaIndexOutput, total=False):
    pass
