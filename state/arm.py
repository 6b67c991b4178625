"""ARM run parameters: :class:`ArmContext`, the ``arm`` graph's LangGraph ``context_schema`` and
the ``[arm]`` settings section (``ATOMGRAPH_ARM__OBJECTS=objects.jsonl``); the LLM-free
``atomgraph retrieve`` runs the same graph under it (``llm=False``).

The fields are grouped by the paper's stages, in this order: information alignment (§3.2.1),
structure alignment (§3.2.2, Appendix B), self-verification and aggregation (§3.3), retrieval and
the index, and the run. Each field's description opens with its stage's name, and its
``json_schema_extra`` names the graph nodes that read it (``langgraph_nodes``), which is how
LangGraph Studio ties a context field to a node; the context itself stays one flat object
(``context={"objects": ..., "k": 5}``).

The defaults are the paper's values where it gives one (k = 5, three drafts, n-grams of 1–3
words, five rows or sentences per object in words, expansion by an object's five most
compatible objects) with four measured extensions on: ``database_weight``,
``coverage_weight``, ``table_compatibility_scale`` (0.33, the authors' JAR weights of
relevance against joins) and ``link_count="once"`` (each link's C_ij counted once, as JAR
counts a join; Appendix B's ordered pairs count it twice). The other extensions are switches, off: ``relevance="mix"``,
``links="forest"``, ``served_alignment="shortlist"``, ``decompose_constraint="ngrams"``,
``add_question_keywords``, ``entity_links``, ``same_title_links=False`` and
``connected_selection``. ``paper=True`` sets every one of them to the paper's value at once
(:data:`PAPER`); :meth:`ArmContext.extensions` lists what a run has on. What each measured is in
the deviation table of ``docs/methods/arm.md``.

Every field carries its description and bounds (pydantic ``Field`` in ``Annotated``), so a run's
context is validated (:meth:`ArmContext.validated`) and documented from one place.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Annotated, Any, Literal

from pydantic import Field

from atomgraph.state.run import DataPath

# The paper's stages, in form order: a stage's name (the prefix of its fields' descriptions)
# and the ``arm`` graph nodes that read its fields (Studio's ``langgraph_nodes``).
STAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "information_alignment": ("Information alignment (§3.2.1)", ("decompose", "align", "retrieve")),
    "structure_alignment": ("Structure alignment (§3.2.2)", ("structure",)),
    "verification": ("Self-verification and aggregation (§3.3)", ("verify", "aggregate")),
    "retrieval": ("Retrieval and index", ("decompose", "retrieve", "structure", "aggregate")),
    "run": ("Run", ("decompose", "align", "retrieve", "structure", "verify", "aggregate", "answer")),
}


def stage_field(stage: str, description: str, **bounds: Any) -> Any:
    """A pydantic ``Field`` of one ARM stage: the description opens with the stage's name, and
    ``langgraph_nodes`` names the nodes that read it (LangGraph Studio's field-to-node key)."""
    title, nodes = STAGES[stage]
    return Field(description=f"{title}: {description}", json_schema_extra={"langgraph_nodes": list(nodes)}, **bounds)


@dataclass(kw_only=True)
class ArmContext:
    """Parameters of one ARM run, in the order of the paper's stages."""

    # -- information alignment (§3.2.1) ------------------------------------------------------------
    decoding: Annotated[
        Literal["auto", "local_trie_beam", "vllm_choice", "llamacpp_grammar", "openai_json_schema", "free"],
        stage_field("information_alignment",
                    "n-gram alignment: 'auto' = beam search over a token trie of every corpus n-gram with an "
                    "in-process model, else the constrained form the server offers"),
    ] = "auto"
    beam_width: Annotated[
        int, stage_field("information_alignment",
                         "in-process models: beams of the constrained n-gram-list decoding", ge=1)
    ] = 4
    decompose_constraint: Annotated[
        Literal["free", "ngrams"],
        stage_field("information_alignment",
                    "the question's keywords: 'free' (paper) = a JSON list extracted independently of the "
                    "collection; 'ngrams' (switch, in-process models) = a list decoded by the trie beam under "
                    "the question's own n-grams and the corpus n-grams; a served model decomposes freely, "
                    "recorded in problems"),
    ] = "free"
    served_alignment: Annotated[
        Literal["shortlist", "grammar", "candidates"],
        stage_field("information_alignment",
                    "served vLLM / llama.cpp models: 'grammar' (paper) = a list of corpus n-grams under a "
                    "prefix-factored grammar of every corpus n-gram; where that grammar exceeds grammar_max_ngrams "
                    "or GRAMMAR_MAX_BYTES (4 MB), each keyword's list under a grammar of its own candidates, and where the "
                    "server takes no grammar (OpenAI), the shortlist, recorded in problems; 'candidates' (switch) = "
                    "each keyword's list under a grammar of its shortlist_size lexical candidates; 'shortlist' "
                    "(switch) = one n-gram of a lexical shortlist per keyword"),
    ] = "grammar"
    grammar_max_ngrams: Annotated[
        int, stage_field("information_alignment",
                         "served_alignment='grammar': a collection with more corpus n-grams decodes each keyword "
                         "under a grammar of its candidates (recorded in the trace)", ge=1)
    ] = 200_000
    shortlist_size: Annotated[
        int, stage_field("information_alignment", "corpus n-grams offered to the model per keyword", ge=1)
    ] = 50
    enum_max_values: Annotated[
        int, stage_field("information_alignment", "cap on an OpenAI JSON-schema enum (OpenAI allows 1,000)",
                         ge=1, le=1000)
    ] = 1000
    ngrams_per_keyword: Annotated[
        int, stage_field("information_alignment", "aligned n-grams kept per keyword (LLM-free path)", ge=1)
    ] = 2
    min_alignment_score: Annotated[
        float, stage_field("information_alignment", "lowest match score of an LLM-free aligned n-gram", ge=0, le=1)
    ] = 0.6
    max_keywords: Annotated[
        int, stage_field("information_alignment", "keywords taken from the model's decomposition", ge=1)
    ] = 12
    question_keywords: Annotated[
        Literal["all", "informative", "corpus"],
        stage_field("information_alignment",
                    "LLM-free keywords (the paper's come from a model): 'all' = every maximal question span "
                    "that is a corpus n-gram, and capitalised words the corpus spells otherwise (fuzzy aligned); "
                    "'informative' = the names among them and the spans in <= 2% of the objects, at most 6 "
                    "unless names; 'corpus' = the corpus spans alone"),
    ] = "all"
    add_question_keywords: Annotated[
        bool, stage_field("information_alignment",
                          "switch (paper: keywords from the model alone): the question's own keywords "
                          "(question_keywords) are added after the model's and aligned as the LLM-free path aligns "
                          "them; the model's keywords keep their model alignment"),
    ] = False
    keyword_pool: Annotated[
        int, stage_field("information_alignment",
                         "best objects per keyword, its n-gram list as one query (BM25 + embedding): the base set "
                         "of search objects", ge=0)
    ] = 3
    keyword_bm25_weight: Annotated[
        float, stage_field("information_alignment",
                           "share of BM25 (exact match, against embedding similarity) in each keyword's n-gram-list "
                           "query, which picks the base set and scores the coverage term; min-max normalised (the "
                           "paper names both parts and gives no share)", ge=0, le=1)
    ] = 0.7

    # -- structure alignment (§3.2.2, Appendix B) --------------------------------------------------
    structure_alignment: Annotated[
        bool, stage_field("structure_alignment",
                          "Figure 4 ablation: False = information alignment only (the k most relevant base objects)"),
    ] = True
    drafts: Annotated[
        int, stage_field("structure_alignment",
                         "expanded sets of search objects, one MIP draft each: the base set, then 1, 2, ... "
                         "expansion steps (paper: 3)", ge=1)
    ] = 3
    expansion_per_seed: Annotated[
        int, stage_field("structure_alignment",
                         "most compatible objects each object adds per expansion step (paper: k = 5; 0 = no "
                         "expansion)", ge=0)
    ] = 5
    max_candidates: Annotated[
        int, stage_field("structure_alignment",
                         "cap on one draft's search objects, for the MIP's size (the paper has none): the base "
                         "objects stay, then the most relevant expanded ones", ge=1)
    ] = 80
    relevance: Annotated[
        Literal["cosine", "mix"],
        stage_field("structure_alignment",
                    "R_i: 'cosine' (paper) = cosine similarity of the question and the object; 'mix' (switch) = "
                    "min-max normalised BM25 over the aligned n-grams and cosine, mixed by bm25_weight"),
    ] = "cosine"
    bm25_weight: Annotated[
        float, stage_field("structure_alignment", "relevance='mix': share of BM25 (against cosine) in R_i", ge=0, le=1)
    ] = 0.3
    database_weight: Annotated[
        float, stage_field("structure_alignment",
                           "extension, on (0 = paper): a table's R_i gains this share of the best R_i in its "
                           "database", ge=0)
    ] = 1.0
    coverage_weight: Annotated[
        float, stage_field("structure_alignment",
                           "extension, on (0 = paper): MIP term, this weight x each keyword's best score among the "
                           "chosen objects (JAR's sub-query coverage)", ge=0)
    ] = 1.0
    compatibility_weight: Annotated[
        float, stage_field("structure_alignment",
                           "C_ij (Appendix B): share w of semantic similarity (1 - w: Jaccard / overlap "
                           "coefficient) of the best column, cell or sentence pair", ge=0, le=1)
    ] = 0.5
    table_compatibility_scale: Annotated[
        float, stage_field("structure_alignment",
                           "extension, on (1 = paper): factor on C_ij of two tables (a join) in the MIP objective; "
                           "0.33 = the authors' JAR weights on Bird, relevance 3 : join 1; passages untouched", ge=0),
    ] = 0.33
    link_count: Annotated[
        Literal["once", "twice"],
        stage_field("structure_alignment",
                    "how the MIP objective counts a link's C_ij: 'twice' (paper, Appendix B) = over ordered pairs "
                    "(Σ_{i,j} C_ij c_ij with Σ c_ij <= 2(k-1) and 2 c_ij <= b_i + b_j), so each link of the "
                    "symmetric C counts in both directions; 'once' (extension, on) = each unordered link once "
                    "within k-1 links, as the authors' JAR MIP (ilp.py) counts a join"),
    ] = "once"
    entity_links: Annotated[
        bool, stage_field("structure_alignment",
                          "switch (off = paper): a passage pair's C_ij is at least the rarity of the rarest "
                          "capitalised word both contain (log(N/df)/log(N)), not counting words the question says, "
                          "and an expanded passage's candidates include the 10 passages sharing its rarest such "
                          "words; tables unchanged"),
    ] = False
    same_title_links: Annotated[
        bool, stage_field("structure_alignment",
                          "True = paper (C_ij as computed); False (switch) = passages that share a title are "
                          "paragraphs of one document and link nothing, in a draft's C and in the expansion; "
                          "tables unchanged"),
    ] = True
    links: Annotated[
        Literal["pairs", "forest"],
        stage_field("structure_alignment",
                    "links the MIP counts: 'pairs' (paper, Appendix B) = any k-1 pairs of chosen objects; "
                    "'forest' (switch) = a spanning forest of the chosen objects (no cycle counts; slower MIPs)"),
    ] = "pairs"
    mip_time_limit_s: Annotated[
        float, stage_field("structure_alignment",
                           "CBC time limit per draft (s); past it the best feasible solution is used and the trace "
                           "and the run summary say so", gt=0)
    ] = 10.0

    # -- self-verification and aggregation (§3.3) --------------------------------------------------
    verification: Annotated[
        bool, stage_field("verification",
                          "Figure 4 ablation: False = no verification, drafts aggregated by their votes alone"),
    ] = True
    verbalize_top_rows: Annotated[
        int, stage_field("verification",
                         "most similar rows or sentences shown per object in a draft (Appendix C: 5)", ge=1)
    ] = 5
    logprobs: Annotated[
        bool, stage_field("verification", "ask the server for token log-probabilities to weight the votes"),
    ] = True
    vote_weight: Annotated[
        float, stage_field("verification",
                           "share of the verifiers' selection weight (against the softmaxed occurrences across "
                           "the drafts) in an object's confidence", ge=0, le=1)
    ] = 0.5
    connected_selection: Annotated[
        bool, stage_field("verification",
                          "switch (off = paper, which leaves the check to the model): a verifier's selection is "
                          "cut to its largest part joined by the draft's links; the cut objects are recorded in "
                          "the verdict ('unconnected') and counted in the run summary"),
    ] = False

    # -- retrieval and the index -------------------------------------------------------------------
    k: Annotated[int, stage_field("retrieval", "objects to retrieve (the MIP's sum of b_i; paper: 5)", ge=1)] = 5
    objects: Annotated[
        str | None,
        stage_field("retrieval", "the data collection: an objects.jsonl file, or a folder holding objects.jsonl "
                                 "(from a run's context: under the data_dirs setting)"),
        DataPath("read"),
    ] = None
    index_cache: Annotated[
        str | None,
        stage_field("retrieval",
                    "folder caching the object index (default: $ATOMGRAPH_ARM_CACHE or ~/.cache/atomgraph/arm-index; "
                    "from a run's context: under the data_dirs setting)"),
        DataPath("write"),
    ] = None

    # -- the run -----------------------------------------------------------------------------------
    llm: Annotated[
        bool, stage_field("run",
                          "False: the LLM-free pipeline (keywords replayed, else the question's own words: "
                          "question_keywords; no verification, drafts aggregated by their votes); the trace says so"),
    ] = True
    answer: Annotated[
        bool, stage_field("run", "write an answer from the retrieved objects (False: retrieval only)")
    ] = True
    paper: Annotated[
        bool, stage_field("run",
                          "True: the paper's setting, every extension and switch at the paper's value (PAPER: "
                          "relevance='cosine', database_weight=0, coverage_weight=0, table_compatibility_scale=1, "
                          "link_count='twice', links='pairs', served_alignment='grammar', decompose_constraint='free', "
                          "expansion_per_seed=5, add_question_keywords=False, entity_links=False, "
                          "same_title_links=True, connected_selection=False); another value given for one of them "
                          "is refused as a conflict"),
    ] = False

    def __post_init__(self) -> None:
        if self.paper:
            conflicts = paper_conflicts(self, {f.name: getattr(self, f.name) for f in fields(self)
                                              if getattr(self, f.name) != f.default})
            if conflicts:
                raise ValueError(conflicts)
            for name, value in PAPER.items():
                setattr(self, name, value)

    @classmethod
    def conflicts(cls, values: dict) -> str:
        """The conflict among explicitly given ``values`` (a run's context, a recipe's ``[settings.arm]``
        with its ``--set`` values), as one line; '' when none: ``paper=True`` beside an explicit value
        of a field it sets."""
        if values.get("paper") is not True:
            return ""
        return paper_conflicts(None, {k: v for k, v in values.items() if k != "paper"})

    def extensions(self) -> dict:
        """The fields that differ from the paper's setting (:data:`PAPER`), with their values."""
        return {k: getattr(self, k) for k, v in PAPER.items() if getattr(self, k) != v}

    @classmethod
    def validated(cls, **values) -> "ArmContext":
        """An ``ArmContext`` with every bound checked (pydantic ``ValidationError`` otherwise;
        :func:`atomgraph.state.run.validate_params` is the ConfigError-raising twin)."""
        from atomgraph.state.run import _adapter

        return _adapter(cls).validate_python(values)

    def to_json(self) -> dict:
        return asdict(self)


PAPER: dict = {
    "relevance": "cosine", "database_weight": 0.0, "coverage_weight": 0.0, "table_compatibility_scale": 1.0,
    "link_count": "twice", "links": "pairs", "served_alignment": "grammar", "decompose_constraint": "free",
    "expansion_per_seed": 5,
    "add_question_keywords": False, "entity_links": False, "same_title_links": True, "connected_selection": False,
}
"""The paper's values of every field where the project has an extension or a switch (``paper=True``)."""


def paper_conflicts(context: "ArmContext | None", explicit: dict) -> str:
    """The conflict of ``paper=True`` with explicit values of fields it sets (``explicit``: field →
    value as given; values equal to the paper's are no conflict), as one line; '' when none."""
    odd = sorted(k for k, v in explicit.items() if k in PAPER and v != PAPER[k])
    if not odd:
        return ""
    given = ", ".join(f"{k}={explicit[k]!r}" for k in odd)
    paper = ", ".join(f"{k}={PAPER[k]!r}" for k in odd)
    return (f"paper=true sets {paper}; the explicit {given} conflicts with it: drop paper=true or "
            f"{'that value' if len(odd) == 1 else 'those values'}")
