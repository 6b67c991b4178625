"""Question sets as one example type: the ATOMR splits and the HippoRAG closed-corpus splits.

``load_dataset("hotpotqa-dev-100")`` reads a named split from the shared data folder;
``load_dataset("path/to/file.jsonl")`` reads any file in one of the supported shapes:

- JSON lines with ``question`` and ``answers`` (the ATOMR splits, BlendQA, CRAG), or with
  ``question`` and ``gold`` (prediction files);
- a JSON list in HotpotQA format (``question``, ``answer``, ``supporting_facts``) or in
  MuSiQue format (``question``, ``answer``, ``paragraphs``, ``question_decomposition``).

The data folder is, in order: the ``data_dir`` argument, ``$ATOMGRAPH_SHARED_DATA``,
``./shared/data``, ``../shared/data``, and ``shared/data`` beside the atomgraph checkout.
"""

from __future__ import annotations

import ast
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

from pydantic import BaseModel, Field

from atomgraph.environment import explicit_data_dir, shared_data_dir
from atomgraph.errors import AtomgraphError
from atomgraph.jsonl import iter_json_objects, read_json, read_text


class DatasetError(AtomgraphError):
    """A dataset name is unknown or a file cannot be read; the message says where."""


class Example(BaseModel):
    """One question with its gold answers."""

    id: str
    question: str
    answers: list[str]
    question_type: str | None = None
    gold_titles: list[str] = Field(default_factory=list)
    gold_ids: list[str] = Field(default_factory=list)  # object ids (the retrieval sets' "gold_ids")
    metadata: dict[str, Any] = Field(default_factory=dict)


_Q = "atomr/questions/single_source"
_M = "atomr/questions/multi_source"
_BLEND = [f"{_M}/BlendQA/kg-web_132.jsonl", f"{_M}/BlendQA/text-kg_163.jsonl", f"{_M}/BlendQA/web-text_150.jsonl"]

# name → (files relative to the data folder, description)
DATASETS: dict[str, tuple[list[str], str]] = {
    "hotpotqa-dev-100": ([f"{_Q}/HotpotQA/hotpotqa_dev_100.jsonl"], "HotpotQA dev split (IRCoT), 100"),
    "hotpotqa-test-500": ([f"{_Q}/HotpotQA/hotpotqa_test_500.jsonl"], "HotpotQA test split (IRCoT), 500"),
    "2wiki-dev-100": ([f"{_Q}/2WikiMultiHop/2wiki_dev_100.jsonl"], "2WikiMultiHopQA dev split, 100"),
    "2wiki-test-500": ([f"{_Q}/2WikiMultiHop/2wiki_test_500.jsonl"], "2WikiMultiHopQA test split, 500"),
    "musique-dev-100": ([f"{_Q}/Musique/musique_dev_100.jsonl"], "MuSiQue dev split, 100"),
    "musique-test-500": ([f"{_Q}/Musique/musique_test_500.jsonl"], "MuSiQue test split, 500"),
    "blendqa": (_BLEND, "BlendQA, all 445 (types kg-web, text-kg, web-text)"),
    "blendqa-kg-web": (_BLEND[:1], "BlendQA KG-Web, 132"),
    "blendqa-text-kg": (_BLEND[1:2], "BlendQA KG-Text, 163"),
    "blendqa-web-text": (_BLEND[2:], "BlendQA Web-Text, 150"),
    "crag-dev-100": ([f"{_M}/CRAG/CRAG_dev_100.jsonl"], "CRAG static dev split, 100"),
    "crag-test-500": ([f"{_M}/CRAG/CRAG_test_500.jsonl"], "CRAG static test split, 500"),
    "hipporag-hotpotqa": (["hipporag/hotpotqa_train.json"], "HotpotQA train sample with its 994-paragraph corpus"),
    "hipporag-musique": (["hipporag/musique_train.json"], "MuSiQue train sample with its 1,890-paragraph corpus"),
}

CORPORA: dict[str, str] = {
    "hipporag-hotpotqa": "hipporag/hotpotqa_train_corpus.json",
    "hipporag-musique": "hipporag/musique_train_corpus.json",
    "hipporag-2wiki": "hipporag/2wikimultihopqa_corpus.json",
}

# BlendQA's file names carry the paper's three question types.
_BLEND_TYPES = {"kg-web": "kg-web", "text-kg": "text-kg", "web-text": "web-text"}


# The ATOMR prompt pack (prompts/atomr/packs.py) of each dataset family: ``eval run`` of ATOMR
# on a dataset uses it unless the run's settings name a pack ([atomr] prompt_pack).
PROMPT_PACKS = {"hotpot": "hotpotqa", "2wiki": "2wiki", "musique": "musique", "crag": "crag", "blendqa": "blendqa"}


class DatasetSetting(BaseModel):
    """The paper's setting for a dataset family: ATOMR's prompt pack, the knowledge sources and
    the kind of answer the gold holds. ``eval run --dataset D`` uses it unless the run's settings
    say otherwise (``[atomr] prompt_pack``, ``sources``, ``--sources``, a recipe), and prints it."""

    family: str
    prompt_pack: str
    sources: list[str]
    answer_type: str
    paper: str = ""
    declared: bool = True
    # The dataset has no train/dev split, so its pack's demonstrations are written on a declared
    # subset of its own questions: every method's run of it leaves that subset out (not only
    # ATOMR's), so the rows of a table are scored on the same questions.
    demonstrations_in_split: bool = False

    def describe(self) -> str:
        head = f"dataset setting {self.family}" if self.declared else \
            "no declared setting for this dataset: the general one"
        return (f"{head}: prompt pack {self.prompt_pack}, sources {', '.join(self.sources)}, answers {self.answer_type}"
                + (f" ({self.paper})" if self.paper else ""))


_TEXT_ONLY = ["wikipedia"]
_ALL = ["wikipedia", "google", "wikidata"]
DATASET_SETTINGS: dict[str, DatasetSetting] = {
    "hotpot": DatasetSetting(family="hotpotqa", prompt_pack="hotpotqa", sources=_TEXT_ONLY,
                             answer_type="short spans, yes/no", paper="ATOMR Table 2: Wikipedia abstracts only"),
    "2wiki": DatasetSetting(family="2wiki", prompt_pack="2wiki", sources=_TEXT_ONLY,
                            answer_type="entity names and dates, yes/no", paper="ATOMR Table 2: Wikipedia only"),
    "musique": DatasetSetting(family="musique", prompt_pack="musique", sources=_TEXT_ONLY,
                              answer_type="short spans", paper="ATOMR Table 2: Wikipedia only"),
    "crag": DatasetSetting(family="crag", prompt_pack="crag", sources=_ALL,
                           answer_type="short answers (names, figures with units, dates), numbers as digits, yes/no",
                           paper="ATOMR Table 3: Google, Wikipedia and Wikidata; the crag pack (demonstrations "
                                 "from CRAG_dev_100, none in crag-test-500)"),
    "blendqa": DatasetSetting(family="blendqa", prompt_pack="blendqa", sources=_ALL,
                              answer_type="short answers (names, dates, figures, news phrases), numbers as digits, yes/no",
                              paper="ATOMR Table 3: Wikidata, Wikipedia and Google; the blendqa pack, written on 21 "
                                    "BlendQA questions that every BlendQA run leaves out",
                              demonstrations_in_split=True),
}
GENERAL_SETTING = DatasetSetting(family="general", prompt_pack="general", sources=_ALL, answer_type="short answers",
                                 declared=False)


def dataset_setting(dataset: str | os.PathLike | None) -> DatasetSetting:
    """The declared setting of a dataset name or file, else the general one (``declared`` False)."""
    key = Path(str(dataset or "")).name.lower()
    return next((st for family, st in DATASET_SETTINGS.items() if family in key), GENERAL_SETTING)


def apply_dataset_setting(method: str, dataset: str | os.PathLike | None, settings: Any,
                          sources_given: bool = False) -> tuple[Any, dict, dict]:
    """(settings, run context, what was applied) for ``method`` on ``dataset``: the dataset's
    sources unless the settings name other sources than the default (or source objects were
    given), and ATOMR's prompt pack unless the settings name one."""
    st = dataset_setting(dataset)
    applied: dict[str, Any] = {"setting": st.family, "declared": st.declared, "answer_type": st.answer_type}
    context: dict[str, Any] = {}
    default_sources = type(settings).model_fields["sources"].default_factory()
    if sources_given:
        applied["sources"] = "the source objects given"
    elif list(settings.sources) == list(default_sources) and list(st.sources) != list(settings.sources):
        settings = settings.model_copy(update={"sources": list(st.sources)})
        applied["sources"] = list(st.sources)
    else:
        applied["sources"] = list(settings.sources) if list(settings.sources) == list(st.sources) else \
            f"{', '.join(settings.sources)} (the run's settings, over the dataset's {', '.join(st.sources)})"
    if method == "atomr":
        named = getattr(settings.section("atomr"), "prompt_pack", "general")
        if named == "general" and st.prompt_pack != "general":
            context["prompt_pack"] = st.prompt_pack
            applied["prompt_pack"] = st.prompt_pack
        else:
            applied["prompt_pack"] = named if named == st.prompt_pack else \
                f"{named} (the run's settings, over the dataset's {st.prompt_pack})"
    return settings, context, applied


def describe_applied(applied: dict) -> str:
    """One line of :func:`apply_dataset_setting`'s result, for the start of a run."""
    head = f"dataset setting {applied['setting']}" if applied.get("declared") else \
        "no declared setting for this dataset: the general one"
    parts = [f"sources {applied['sources'] if isinstance(applied['sources'], str) else ', '.join(applied['sources'])}"]
    if "prompt_pack" in applied:
        parts.insert(0, f"prompt pack {applied['prompt_pack']}")
    parts.append(f"answers {applied['answer_type']}")
    return f"{head}: " + "; ".join(parts)


def prompt_pack_for(dataset: str | os.PathLike | None) -> str | None:
    """The prompt pack of a dataset name or file (``hotpotqa-dev-100`` -> ``hotpotqa``), or None."""
    key = Path(str(dataset or "")).name.lower()
    return next((pack for family, pack in PROMPT_PACKS.items() if family in key), None)



def dataset_names() -> list[str]:
    return list(DATASETS)


@contextmanager
def using_data_dir(path: str | os.PathLike) -> Iterator[None]:
    """Named datasets are read from ``path`` while inside (``eval run --data-dir``: explicit, so a
    sealed recipe run takes it, where it does not take ``$ATOMGRAPH_SHARED_DATA``)."""
    folder = Path(path)
    if not folder.is_dir():
        raise DatasetError(f"--data-dir {path}: no such folder")
    with explicit_data_dir(folder):
        yield


def data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """The shared data folder (:func:`atomgraph.environment.shared_data_dir`); DatasetError when
    none exists."""
    found = shared_data_dir(explicit)
    if found is None:
        raise DatasetError(
            "cannot find the shared data folder; pass data_dir or set ATOMGRAPH_SHARED_DATA "
            "to the folder holding atomr/ and hipporag/"
        )
    return found


def load_dataset(name_or_path: str | os.PathLike, *, limit: int | None = None,
                 data_dir_: str | os.PathLike | None = None, encoding: str = "utf-8") -> list[Example]:
    """Examples of a named dataset (``dataset_names()``) or of a file path (read strictly as
    ``encoding``: :mod:`atomgraph.jsonl`). A file that holds no example is an error."""
    key = str(name_or_path)
    if key in DATASETS:
        base = data_dir(data_dir_)
        out: list[Example] = []
        for rel in DATASETS[key][0]:
            out.extend(load_file(base / rel))
    elif Path(key).is_dir():
        raise DatasetError(f"{key} is a directory, not a dataset file; named datasets: {', '.join(DATASETS)}")
    elif Path(key).exists():
        out = load_file(Path(key), encoding=encoding)
        if not out:
            raise DatasetError(f"{key}: the dataset file holds no examples")
    else:
        raise DatasetError(f"unknown dataset {key!r} (not a file either); named datasets: {', '.join(DATASETS)}")
    dup = first_duplicate(e.id for e in out)
    if dup is not None:
        raise DatasetError(f"dataset {key!r} has duplicate example id {dup!r}")
    return out[:limit] if limit is not None else out


def first_duplicate(ids: Iterable[str]) -> str | None:
    """The first id that repeats an earlier one, in one pass (a set), or None."""
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            return i
        seen.add(i)
    return None


def load_file(path: Path, encoding: str = "utf-8") -> list[Example]:
    """Examples of one file, its shape detected from its content, read strictly (a byte that is
    not ``encoding``, bad JSON, a 5,000-digit number, deep nesting: a DatasetError naming the
    file and line)."""
    path = Path(path)
    text = read_text(path, encoding=encoding, what="dataset file", error=DatasetError)
    stripped = text.lstrip()
    if stripped.startswith("["):
        rows = read_json(path, encoding=encoding, what="dataset file", error=DatasetError)
        if not isinstance(rows, list):
            raise DatasetError(f"{path}: expected a JSON list of examples")
        return [_from_json_row(path, i, row) for i, row in enumerate(rows)]
    return list(_jsonl_examples(path, text))


def _jsonl_examples(path: Path, text: str) -> Iterator[Example]:
    stem = path.stem
    blend_type = next((t for k, t in _BLEND_TYPES.items() if stem.startswith(k)), None)
    for lineno, row in iter_json_objects(text.splitlines(), str(path), error=DatasetError):
        try:
            yield _from_atomr_row(row, lineno, stem, blend_type)
        except (KeyError, TypeError, ValueError) as exc:
            raise DatasetError(f"{path}:{lineno}: {exc}") from exc


def _answer_list(value: Any, field: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(a, (str, int, float)) for a in value):
        return [str(a) for a in value]
    raise ValueError(f"field {field!r} must be a string or a list of strings")


def _from_atomr_row(row: dict, lineno: int, stem: str, blend_type: str | None) -> Example:
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("missing field 'question'")
    if "answers" in row:
        answers = _answer_list(row["answers"], "answers")
    elif "gold" in row:
        answers = _answer_list(row["gold"], "gold")
    elif "answer" in row:
        answers = _answer_list(row["answer"], "answer")
    elif "gold_ids" in row:  # a retrieval-only question (e.g. Spider tables): no answer to score
        answers = []
    else:
        raise ValueError("missing field 'answers'")
    index = row.get("index", lineno - 1)
    ex_id = str(row.get("question_id") or row.get("id") or f"{stem}-{index}")
    gold_titles: list[str] = []
    qtype = row.get("type") or row.get("question_type")
    meta = {k: v for k, v in row.items() if k not in {"question", "answers", "question_id", "id", "gold_ids"}}
    gold_ids = [str(x) for x in row.get("gold_ids") or []]
    if blend_type:
        meta["subtype"] = row.get("type")
        qtype = blend_type
        gold_titles = [t for t in (_wiki_title(row.get("sub_source1")), _wiki_title(row.get("sub_source2"))) if t]
    elif not qtype and (hops := re.match(r"(\d+hop)", ex_id)):
        qtype = hops.group(1)  # MuSiQue: 2hop / 3hop / 4hop
    return Example(id=ex_id, question=question.strip(), answers=answers, question_type=qtype,
                   gold_titles=gold_titles, gold_ids=gold_ids, metadata=meta)


def _wiki_title(source: Any) -> str | None:
    if isinstance(source, str) and "wikipedia.org/wiki/" in source:
        from urllib.parse import unquote

        return unquote(source.rsplit("/wiki/", 1)[1]).split("#")[0].replace("_", " ")
    return None


def _literal(value: Any, field: str) -> Any:
    """Some HippoRAG fields hold Python-literal strings rather than JSON values."""
    if isinstance(value, str):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError) as exc:
            raise ValueError(f"field {field!r} is neither JSON nor a Python literal") from exc
    return value


def _from_json_row(path: Path, i: int, row: Any) -> Example:
    where = f"{path}: item {i}"
    if not isinstance(row, dict):
        raise DatasetError(f"{where}: expected a JSON object")
    try:
        question = row["question"]
        if "paragraphs" in row:  # MuSiQue format
            paragraphs = _literal(row["paragraphs"], "paragraphs")
            decomposition = _literal(row.get("question_decomposition", []), "question_decomposition")
            support = {d.get("paragraph_support_idx") for d in decomposition if isinstance(d, dict)}
            titles = [p["title"] for p in paragraphs
                      if p.get("is_supporting") or p.get("idx") in support]
            answers = [str(row["answer"]), *map(str, _literal(row.get("answer_aliases", []), "answer_aliases"))]
            hops = re.match(r"\d+hop", str(row.get("id", "")))
            return Example(id=str(row.get("id", i)), question=question, answers=answers,
                           question_type=hops.group(0) if hops else None, gold_titles=_unique(titles),
                           metadata={"decomposition": decomposition, "answerable": row.get("answerable")})
        if "supporting_facts" in row:  # HotpotQA format
            facts = _literal(row["supporting_facts"], "supporting_facts")
            titles = _unique(f[0] for f in facts)
            return Example(id=str(row.get("_id", i)), question=question, answers=[str(row["answer"])],
                           question_type=row.get("type"), gold_titles=titles,
                           metadata={"level": row.get("level"), "supporting_facts": facts})
        return _from_atomr_row(row, i + 1, path.stem, None)
    except KeyError as exc:
        raise DatasetError(f"{where}: missing field {exc}") from exc
    except (TypeError, ValueError, AttributeError) as exc:
        raise DatasetError(f"{where}: {exc}") from exc


def _unique(items) -> list[str]:
    seen: dict[str, None] = {}
    for x in items:
        seen.setdefault(str(x), None)
    return list(seen)


def load_corpus(name_or_path: str | os.PathLike, *, data_dir_: str | os.PathLike | None = None) -> list[dict[str, str]]:
    """Paragraphs ``{"title", "text"}`` of a closed corpus (``CORPORA`` names or a file)."""
    key = str(name_or_path)
    path = data_dir(data_dir_) / CORPORA[key] if key in CORPORA else Path(key)
    if not path.exists():
        raise DatasetError(f"unknown corpus {key!r}; named corpora: {', '.join(CORPORA)}")
    data = read_json(path, what="corpus file", error=DatasetError)
    if isinstance(data, dict):  # {title: [sentences]}
        return [{"title": t, "text": "".join(s) if isinstance(s, list) else str(s)} for t, s in data.items()]
    out = []
    for i, row in enumerate(data):
        if not isinstance(row, dict) or "text" not in row:
            raise DatasetError(f"{path}: item {i}: expected an object with 'title' and 'text'")
        out.append({"title": str(row.get("title", "")), "text": str(row["text"])})
    return out
