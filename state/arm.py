"""ARM run parameters: one dataclass, the ``arm`` graph's LangGraph ``context_schema`` and the
``[arm]`` settings section (``ATOMGRAPH_ARM__OBJECTS=objects.jsonl``); the LLM-free
``atomgraph retrieve`` runs the same graph under it (``llm=False``).

Paper by default (issues 15, 30): R_i the cosine similarity of question and object,
graded compatibility (Appendix B), the base set from the per-keyword n-gram-list queries
alone (``bm25_pool``/``dense_pool`` extensions, 0), drafts over the base set and its 1- and
2-step expansions (``first_expansion=0``), served models decoding the n-gram list under a
grammar, the vote over every draft object (§3.3, ``aggregation="drafts"``), no top-up to k, no
draft add/drop stage. The project additions on by default are
``database_weight``, ``coverage_weight`` (0 is the paper) and ``table_compatibility_scale``
(0.33, JAR's relevance-to-join weights; 1 is the paper) — measured extensions listed in the
deviation table; ``relevance="mix"``, ``compatibility="rules"``, ``links="forest"``,
``served_alignment="shortlist"``, ``aggregation="verified"``, ``fill_to_k``, ``max_draft_changes``,
``entity_links`` and ``same_title_links=False`` are named switches, off. ``paper=True`` sets every one of them to the paper's value at once
(:data:`PAPER`); :meth:`ArmContext.extensions` lists what a run has on.

``coverage_weight`` was chosen on every 5th Bird dev question (JAR's release, 307; README)
from 0.5/1/2 (PR 88.3/88.6/87.6, off 86.0), then measured on another fifth (off 87.6 → 88.9)
and the whole 1,534 (88.0 → 91.1), and once on the shared sets: HotpotQA PR 65 → 81,
MuSiQue 25 → 30, Spider (every 5th) 99.0 → 99.5.

``table_compatibility_scale`` (session 9) is the authors' JAR value for Bird, not tuned here:
LLM-free PR Bird (all 1,534) 85.3 → 88.1, Spider (every 5th) 97.1 → 100.0; sets without
tables cannot move.

Every field carries its description and bounds (pydantic ``Field`` in ``Annotated``), so a
run's context can be validated (:meth:`ArmContext.validated`) and documented from one
place. Defaults follow the ARM paper where it gives a value (k = 5, three drafts, n-grams of
1–3 words, five rows/sentences per verbalised object) and our measured tuning elsewhere
(see ``benchmarks/bench_arm_retrieval.py``): ``bm25_weight`` 0.3 and ``join_weight`` 0.25 were
chosen from a small grid (bm25_weight 0.2/0.3/0.5, link_weight 0.3/0.5/1.0, join_weight
0.25/0.5, semantic_weight 0/0.5, pool sizes, expansion sizes, max_links) on the same three
shared retrieval sets the benchmark reports — there is no held-out split, so treat those
numbers as tuned, not held-out.

``database_weight`` (issue 9 follow-up) was tuned with a split: only on the Spider questions
at even positions of ``spider/questions.jsonl``, then measured once on the odd positions.
Rule: a table's R_i gets ``database_weight`` × the best R_i among the candidate tables of its
``database`` (:func:`atomgraph.nodes.arm.structure_alignment.database_relevance`), because a schema
question is answered inside one database; objects without a database (passages) are
untouched, so hotpotqa/musique cannot change. Grid on the even half (multi-table PR, k = 5):
off 93.9; a flat bonus to the top table's database 0.1/0.2/0.3/0.5/1.0 → 96.9/97.4/97.8/
97.8/97.8; the soft rule above 0.1/0.2/0.3/0.5/0.7/1.0/2.0 → 94.8/96.5/97.8/98.7/99.1/99.1/
99.1 (all-questions PR 99.6 at 0.7 and 1.0, 99.4 at 2.0); 1.0 kept. Held-out odd half,
before → after: ARM all R/PR 98.7/97.7 → 99.6/99.4, multi-table (230) 98.0/95.7 → 99.6/99.1
(dense: 99.1/98.4, multi-table 98.9/97.4). Full set: ARM 98.8/97.5 → 99.8/99.5, multi-table
(459) 97.7/94.8 → 99.7/99.1 (dense 99.0/97.9, 98.2/95.9); hotpotqa PR 77.0 and musique PR 36.0
unchanged (measured with the rule on and off in one process: the same 36.0, every MIP
optimal, also at a 5 s limit; the 37.0 recorded before came from a run in which one musique
MIP stopped at the 0.5 s limit under CPU load, so that question's answer varies by run). The ``arm`` graph's drafts
(``nodes/arm/structure_alignment.py``) apply the same rule.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Annotated, Literal

from pydantic import Field

from atomgraph.state.run import DataPath


@dataclass(kw_only=True)
class ArmContext:
    """Parameters of one ARM run (retrieval, alignment, structure, drafts, voting)."""

    # -- what is retrieved -------------------------------------------------------------
    k: Annotated[int, Field(description="objects to retrieve (the MIP's Σ b_i = k; paper: 5)", ge=1)] = 5

    # -- information alignment (§3.2.1) ----------------------------------------------------
    decoding: Annotated[
        Literal["auto", "local_trie_beam", "vllm_choice", "llamacpp_grammar", "openai_json_schema", "free"],
        Field(description="n-gram alignment: 'auto' = trie beam search over every corpus n-gram with an in-process "
                          "model, else the shortlist form the server offers (a closed-API fallback)"),
    ] = "auto"
    beam_width: Annotated[
        int, Field(description="in-process models: beams of the constrained n-gram-list decoding over every corpus n-gram", ge=1)
    ] = 4
    decompose_constraint: Annotated[
        Literal["free", "ngrams"],
        Field(description="the question's keywords: 'free' (paper: extracted independently of the collection, a JSON "
                          "list) or 'ngrams' (switch, in-process models) = a list (a, b, ...) decoded by the trie beam "
                          "under the question's own n-grams and the corpus n-grams, as alignment is; a served model "
                          "decomposes freely, recorded in problems"),
    ] = "free"
    served_alignment: Annotated[
        Literal["shortlist", "grammar"],
        Field(description="served vLLM / llama.cpp models: 'grammar' (paper) = a list (a, b, ...) of corpus n-grams under "
                          "a prefix-factored grammar of every corpus n-gram, token-level, as the paper decodes it; where "
                          "the server takes no grammar (OpenAI) or the collection is over grammar_max_ngrams, the "
                          "shortlist, recorded in problems; 'shortlist' (switch) = one n-gram of a lexical shortlist per keyword"),
    ] = "grammar"
    grammar_max_ngrams: Annotated[
        int, Field(description="served_alignment='grammar': collections with more corpus n-grams keep the shortlist "
                               "(the trace says so)", ge=1)
    ] = 200_000
    shortlist_size: Annotated[int, Field(description="corpus n-grams offered to the model per keyword", ge=1)] = 50
    enum_max_values: Annotated[
        int, Field(description="cap on an OpenAI JSON-schema enum (OpenAI allows 1,000)", ge=1, le=1000)
    ] = 1000
    ngrams_per_keyword: Annotated[int, Field(description="aligned n-grams kept per keyword (LLM-free path)", ge=1)] = 2
    min_alignment_score: Annotated[
        float, Field(description="lowest match score for an LLM-free aligned n-gram", ge=0, le=1)
    ] = 0.6

    # -- search objects (§3.2.1 end) -------------------------------------------------------
    keyword_pool: Annotated[
        int, Field(description="best objects per keyword, its n-gram list as one query (BM25 + embedding): the "
                               "paper's base set of search objects (§3.2.1 end)", ge=0)
    ] = 3
    bm25_pool: Annotated[
        int, Field(description="extension (0 = paper): also the top objects by BM25 over all aligned n-grams in the "
                               "base set (a large base leaves the drafts one draft; issue 30)", ge=0)
    ] = 0
    dense_pool: Annotated[
        int, Field(description="extension (0 = paper): also the top objects by embedding similarity to the whole "
                               "question in the base set", ge=0)
    ] = 0

    # -- drafts (§3.2.2 "Constructing multiple alignment drafts") ------------------------------
    drafts: Annotated[int, Field(description="expanded search-object sets, one MIP draft each (paper: 3)", ge=1)] = 3
    first_expansion: Annotated[
        int, Field(description="expansion steps of the first draft: draft d expands the base set first_expansion + d "
                               "steps (0 = the base set, then 1 and 2 steps: §3.2.2 read as the base and its expansions; "
                               "1 = steps 1, 2, 3)", ge=0)
    ] = 0
    expansion_per_seed: Annotated[
        int, Field(description="most compatible objects each object adds per expansion step (§3.2.2's 'its k most "
                               "compatible objects', the paper's k = 5; 0 = no expansion)", ge=0)
    ] = 5
    neighbour_candidates: Annotated[
        int, Field(description="nearest objects by embedding scored for compatibility when expanding one object", ge=1)
    ] = 20
    max_candidates: Annotated[
        int, Field(description="cap on one draft's search objects (ours, for the MIP's size: the paper has none; "
                               "expansion_keep says what stays)", ge=1)
    ] = 80
    expansion_keep: Annotated[
        Literal["relevance", "newest"],
        Field(description="past max_candidates: 'relevance' = the base objects, then the most relevant expanded ones "
                          "(each draft's set holds the one before it, as the paper's sets do); 'newest' = half the cap "
                          "reserved for expanded objects, the draft's last step first (a switch for large base sets)"),
    ] = "relevance"

    # -- relevance R_i and compatibility C_ij (§3.2.2, Appendix B) ---------------------------
    relevance: Annotated[
        Literal["cosine", "mix"],
        Field(description="R_i: 'cosine' (paper: cosine similarity of the question and the object) or 'mix' "
                          "(extension: min-max normalised BM25 over the aligned n-grams and cosine, mixed by bm25_weight)"),
    ] = "cosine"
    bm25_weight: Annotated[
        float, Field(description="relevance='mix': share of BM25 (vs cosine similarity) in R_i, min-max normalised", ge=0, le=1)
    ] = 0.3
    keyword_bm25_weight: Annotated[
        float, Field(description="share of BM25 (exact match, vs embedding similarity) in each keyword's n-gram-list "
                                 "query for the base search objects and the coverage term (§3.2.1 names both and "
                                 "gives no share), min-max normalised; 0.7 measured (was 0.3)", ge=0, le=1)
    ] = 0.7
    database_weight: Annotated[
        float, Field(description="measured extension (README): R_i bonus of a table, this share of the best R_i in its database (0 = paper)", ge=0)
    ] = 1.0
    coverage_weight: Annotated[
        float, Field(description="measured extension (README): MIP term, this weight x each keyword's best score "
                                 "among the chosen objects (JAR's sub-query coverage; 0 = paper)", ge=0)
    ] = 1.0
    compatibility: Annotated[
        Literal["graded", "rules"],
        Field(description="C_ij: 'graded' (Appendix B: best column/cell/sentence pair) or 'rules' (title mentions, column rules)"),
    ] = "graded"
    compatibility_weight: Annotated[
        float, Field(description="graded C_ij: share w of semantic similarity (1-w: Jaccard / overlap coefficient)", ge=0, le=1)
    ] = 0.5
    entity_links: Annotated[
        bool, Field(description="extension (off = paper): graded C_ij of two passages is at least the rarity of the "
                                "rarest capitalised word both contain (log(N/df)/log(N)), and an expanded passage's "
                                "candidates include the 10 passages sharing its rarest such words: the bridge entity "
                                "of a multi-hop question (issue 30, session 12); in a draft's C a word the question says "
                                "links nothing (session 13: the bridge is the name it leaves unsaid); tables unchanged"),
    ] = False
    same_title_links: Annotated[
        bool, Field(description="False = extension (True = paper, C_ij as computed): passages that share a title are "
                                "paragraphs of one document and link nothing, in a draft's C and in the expansion "
                                "(a link joins two documents; MuSiQue's collection splits 85 articles into several "
                                "passages whose title units match at C = 1; issue 30, session 14); tables unchanged"),
    ] = True
    column_headers: Annotated[
        Literal["table_column", "column"],
        Field(description="graded C_ij of tables: a column's header written with its table's name ('table_column', "
                          "as the authors' JAR code serialises columns) or bare ('column')"),
    ] = "table_column"
    compatibility_scale: Annotated[float, Field(description="factor on C_ij in the MIP objective (paper: 1)", ge=0)] = 1.0
    table_compatibility_scale: Annotated[
        float,
        Field(description="extension: factor on C_ij of two tables (a join) in the MIP objective, on top of "
                          "compatibility_scale; 0.33 = the authors' JAR MIP on Bird, relevance 3 : join 1 "
                          "(peterbaile/jar ilp.py w4 = 3, w3 = 1); passages untouched (paper: 1)", ge=0),
    ] = 0.33
    link_weight: Annotated[float, Field(description="rules C_ij of an entity link (one object mentions the other's title)", ge=0)] = 0.5
    join_weight: Annotated[float, Field(description="rules C_ij scale of the best column join between two tables", ge=0)] = 0.25
    semantic_weight: Annotated[float, Field(description="rules C_ij share of embedding similarity above the floor", ge=0)] = 0.0
    semantic_floor: Annotated[float, Field(description="rules: cosine similarity below which objects add no C_ij", ge=-1, le=1)] = 0.5
    max_links: Annotated[
        int | None, Field(description="links counted in the objective; -1 = k-1 (Appendix B), None = all pairs", ge=-1)
    ] = -1
    links: Annotated[
        Literal["forest", "pairs"],
        Field(description="links the MIP counts: 'forest' = a spanning forest of the chosen objects (Appendix B's "
                          "k-1 link budget as the connected selection it encourages; no cycle counts), 'pairs' = "
                          "any k-1 pairs (the budget alone, cycles allowed)"),
    ] = "pairs"
    mip_time_limit_s: Annotated[
        float, Field(description="CBC time limit per draft (s); past it the best feasible solution is used and the "
                                 "trace and the run summary say so (solves take ~0.1-1 s on an idle CPU)", gt=0)
    ] = 10.0
    structure_alignment: Annotated[
        bool, Field(description="Figure 4 ablation: False = information alignment only (the k most relevant base objects)"),
    ] = True

    # -- self-verification, aggregation (§3.3; LLM side) ---------------------------------------
    verification: Annotated[
        bool, Field(description="Figure 4 ablation: False = no verification, drafts aggregated by their votes alone"),
    ] = True
    verbalize_top_rows: Annotated[
        int, Field(description="most similar rows/sentences shown per object in a draft (Appendix C: 5)", ge=1)
    ] = 5
    vote_weight: Annotated[
        float, Field(description="share of mean token log-probability (vs softmaxed vote count) in object confidence", ge=0, le=1)
    ] = 0.5
    max_keywords: Annotated[int, Field(description="keywords taken from the model's decomposition", ge=1)] = 12
    question_keywords: Annotated[
        Literal["all", "informative", "corpus"],
        Field(description="LLM-free keywords (ours: the paper's come from a model): 'all' = every maximal question "
                          "span that is a corpus n-gram, and capitalised words the corpus spells otherwise (fuzzy "
                          "aligned); 'informative' = the names among them and the spans in <= 2% of the objects, "
                          "at most 6 unless names; 'corpus' = the corpus spans alone (before session 5)"),
    ] = "all"

    # -- the run (what the graph reads besides the method's parameters) -----------------------
    llm: Annotated[
        bool, Field(description="False: the LLM-free pipeline (keywords replayed, else the question's own words: "
                                "question_keywords; no verification, drafts aggregated by their votes); the trace says so"),
    ] = True
    objects: Annotated[
        str | None,
        Field(description="the data collection: an objects.jsonl file, or a folder holding objects.jsonl "
                          "(from a run's context: under the data_dirs setting)"),
        DataPath("read"),
    ] = None
    index_cache: Annotated[
        str | None,
        Field(description="folder caching the object index (default: $ATOMGRAPH_ARM_CACHE or ~/.cache/atomgraph/arm-index; "
                          "from a run's context: under the data_dirs setting)"),
        DataPath("write"),
    ] = None
    logprobs: Annotated[
        bool, Field(description="ask the server for token log-probabilities to weight verification votes"),
    ] = True
    answer: Annotated[bool, Field(description="write an answer from the retrieved objects (off: retrieval only)")] = True
    aggregation: Annotated[
        Literal["drafts", "verified"],
        Field(description="§3.3 vote: 'drafts' (paper) = an object's votes are its occurrences across all drafts "
                          "(softmaxed), weighted by the verifiers' selections, so draft objects no verifier kept rank "
                          "after the kept ones and the final set holds k; 'verified' (switch) = only verified objects "
                          "are voted for (fewer than k when the verifier keeps fewer)"),
    ] = "drafts"
    fill_to_k: Annotated[
        bool, Field(description="extension: top the voted objects up to k with the best draft objects (retrieval at exactly k)"),
    ] = False
    max_draft_changes: Annotated[
        int, Field(description="extension: objects the decoder may add to or drop from one MIP draft (0 = no such stage)", ge=0),
    ] = 0
    connected_selection: Annotated[
        bool, Field(description="switch (§3.3 asks the verifier to check that the objects it selects are connected; "
                                "the paper leaves that to the model): a selection is cut to its largest part joined by "
                                "the draft's own links (the MIP's chosen pairs); the objects cut are recorded in the "
                                "verdict ('unconnected') and counted in the run summary; with structure_alignment=false (no links) "
                                "nothing is cut"),
    ] = False

    paper: Annotated[
        bool, Field(description="True: the paper's setting, every extension off at once (relevance='cosine', "
                                "database_weight=0, coverage_weight=0, compatibility='graded', links='pairs', "
                                "compatibility_scale=1, table_compatibility_scale=1, max_links=k-1, served_alignment='grammar', aggregation='drafts', fill_to_k=False, "
                                "max_draft_changes=0, bm25_pool=0, dense_pool=0, first_expansion=0, decompose_constraint='free', "
                                "expansion_per_seed=5, add_question_keywords=False, entity_links=False, connected_selection=False, same_title_links=True); these fields then take the paper's values whatever else is set"),
    ] = False
    add_question_keywords: Annotated[
        bool, Field(description="switch (not the paper's: its keywords come from the model alone): with a model "
                                "decomposing, the question's own keywords (question_keywords, as the LLM-free path "
                                "takes them) are added after the model's and aligned as the LLM-free path aligns them "
                                "(they are corpus spans already); the model's keywords keep their model alignment"),
    ] = False

    def __post_init__(self) -> None:
        if self.paper:
            for name, value in PAPER.items():
                setattr(self, name, value)
        if self.entity_links and self.compatibility != "graded":
            raise ValueError("entity_links raises graded C_ij; compatibility='rules' has its own title links "
                             "(set one of the two)")

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
    "relevance": "cosine", "database_weight": 0.0, "coverage_weight": 0.0, "compatibility": "graded",
    "links": "pairs", "compatibility_scale": 1.0, "table_compatibility_scale": 1.0, "max_links": -1, "served_alignment": "grammar",
    "aggregation": "drafts", "fill_to_k": False, "max_draft_changes": 0, "bm25_pool": 0, "dense_pool": 0, "first_expansion": 0,
    "decompose_constraint": "free", "expansion_per_seed": 5, "add_question_keywords": False, "entity_links": False,
    "connected_selection": False, "same_title_links": True,
}
"""The paper's values of every field where the project has an extension or a switch (``paper=True``)."""
