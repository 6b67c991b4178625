"""ATOMR's typed data: the Atomic Reasoning Tree (ATOMR §3.2), then the graph's state, its run
parameters and one run record per tree node (§3.3).

The tree's question nodes are numbered as the planner numbers them (BFS order); the root, the
original question, is node 0. Each question node is one of:

- ``parent``   — decomposed into child question nodes (answered by child-answer reasoning);
- ``operator`` — answered by one atomic operator call (Search / Relate / Filter); the operator
  is the paper's leaf, attached to the question node, not a node of its own;
- ``direct``   — a ``[DR]`` mark (``[END]`` in the released trees): answered from the answers
  of the siblings it references (sibling-answer reasoning);
- ``open``     — a leaf the planner left without an operator (prose): answered by direct RAG.

``[i]`` in a question or an operator argument refers to node ``i``'s answer. A node depends
on its children and on the nodes it references.
"""


from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field, PrivateAttr
from typing_extensions import TypedDict  # pydantic (JSON schemas for Studio) needs this one on 3.11

from atomgraph.state.run import CallRecords, Evidence, MethodInput, MethodOutput


OperatorName = Literal["Search", "Relate", "Filter"]
NodeKind = Literal["parent", "operator", "direct", "open"]

REF_RE = re.compile(r"\[(\d+)\]")


def substitute_refs(text: str, answers: dict[int, str]) -> str:
    """Replace each ``[i]`` whose answer is known by that answer."""

    def repl(m: re.Match) -> str:
        i = int(m.group(1))
        return answers[i] if i in answers else m.group(0)

    return REF_RE.sub(repl, text or "")


class OperatorCall(BaseModel):
    """One atomic operator call, e.g. ``Relate([1], "nationality")``."""

    name: OperatorName
    args: list[str]  # argument strings, quotes removed; may contain "[i]" references
    raw: str = ""  # the planner's text

    def render(self) -> str:
        def fmt(a: str) -> str:
            return a if REF_RE.fullmatch(a.strip()) else '"' + a.replace('"', '\\"') + '"'

        return f"{self.name}({', '.join(fmt(a) for a in self.args)})"


class TreeNode(BaseModel):
    id: int
    question: str  # without the planner's "N. " prefix
    parent: int | None = None
    children: list[int] = Field(default_factory=list)
    kind: NodeKind
    operator: OperatorCall | None = None
    refs: list[int] = Field(default_factory=list)  # ids referenced in question / operator args
    depth: int = 1  # levels of question nodes; the root is 1
    note: str = ""  # planner prose on a leaf without an operator (e.g. "Given answers of [6] and [8], ...")

    @property
    def dependencies(self) -> list[int]:
        """Nodes that must be answered before this one: children, then references."""
        return list(dict.fromkeys([*self.children, *self.refs]))


class ReasoningTree(BaseModel):
    question: str
    nodes: dict[int, TreeNode]
    root: int = 0
    repairs: list[str] = Field(default_factory=list)  # what the parser fixed, for the trace
    # (node, its dependencies) in topological order, worked out once a tree (the parser links every node
    # before it returns the tree, and nothing relinks one after): the scheduler reads it every superstep
    _order: tuple[tuple[int, tuple[int, ...]], ...] | None = PrivateAttr(default=None)

    def __getitem__(self, i: int) -> TreeNode:
        return self.nodes[i]

    def __eq__(self, other: object) -> bool:  # equal trees are equal whether or not one worked out its order
        if not isinstance(other, BaseModel):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def depth(self) -> int:
        """Levels of question nodes (a lone root is 1; operator leaves do not count)."""
        return max(n.depth for n in self.nodes.values())

    def operator_counts(self) -> Counter:
        return Counter(n.operator.name for n in self.nodes.values() if n.operator)

    def kind_counts(self) -> Counter:
        return Counter(n.kind for n in self.nodes.values())

    def topological_order(self) -> list[int]:
        """Every node after its dependencies (post-order for the tree part); ties by id."""
        return [i for i, _ in self.dependency_order()]

    def dependency_order(self) -> tuple[tuple[int, tuple[int, ...]], ...]:
        """``(node, its dependencies)`` for every node, in :meth:`topological_order` (worked out once)."""
        if self._order is None:
            self._order = tuple((i, tuple(self.nodes[i].dependencies)) for i in self._topological_order())
        return self._order

    def _topological_order(self) -> list[int]:
        order: list[int] = []
        state: dict[int, int] = {}

        def visit(i: int) -> None:
            if state.get(i) == 2:
                return
            if state.get(i) == 1:
                raise ValueError(f"dependency cycle through node {i}")
            state[i] = 1
            for d in self.nodes[i].dependencies:
                visit(d)
            state[i] = 2
            order.append(i)

        for i in sorted(self.nodes):
            visit(i)
        return order

    def to_planner_json(self) -> dict[str, object]:
        """Back to the planner's JSON shape (root question → numbered sub-questions …)."""
        out: dict[str, object] = {}
        for i in self._bfs():
            n = self.nodes[i]
            key = n.question if i == self.root else f"{i}. {n.question}"
            if n.kind == "parent":
                out[key] = [f"{c}. {self.nodes[c].question}" for c in n.children]
            elif n.kind == "operator" and n.operator:
                out[key] = n.operator.render()
            elif n.kind == "direct":
                out[key] = "[DR]"
            else:
                out[key] = ""
        return out

    def _bfs(self) -> list[int]:
        order, queue = [], [self.root]
        while queue:
            i = queue.pop(0)
            order.append(i)
            queue.extend(self.nodes[i].children)
        return order


class TreeParseError(ValueError):
    """A planner output that cannot be repaired into a tree unambiguously."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


# --- ATOMR's graph state: the question, its tree, one run record per tree node, usage -----------
#
# Execution is a small state machine per tree node. ``NodeRun.step`` names what the node
# does next (``select`` sources, ``operate``, reason over ``children`` or ``siblings``, direct
# ``rag``); ``None`` means answered. The scheduler dispatches every node whose dependencies
# are answered, so independent branches run in the same superstep.

def _known_pack(name: str) -> str:
    """``name`` when it is a prompt pack; ValueError naming the packs otherwise (the settings
    section, the run's context and Studio's form are all validated by it)."""
    from atomgraph.prompts.atomr.stages import get_pack

    get_pack(name)  # ValueError: unknown prompt pack 'x'; packs are general, hotpotqa, ...
    return name


@dataclass(kw_only=True)
class AtomRContext:
    """ATOMR's run parameters (settings section ``[atomr]``; the graph's context schema)."""

    top_k: Annotated[int, Field(ge=1, description="Passages kept per text/web source for each atomic operator (paper: k = 3).")] = 3
    filter_threshold: Annotated[float, Field(ge=0, le=1, description="Filter pre-selection: overlap-coefficient threshold t between '{entity} {condition}' and the entity's passages.")] = 0.5
    max_nodes: Annotated[int, Field(ge=1, description="Largest reasoning tree executed; a bigger plan falls back to direct RAG.")] = 40
    max_depth: Annotated[int, Field(ge=1, description="Deepest reasoning tree executed (levels of question nodes).")] = 6
    max_llm_calls: Annotated[int, Field(ge=1, description="LLM calls allowed per question (exact: a run that reaches it stops with an error and its partial tree as the trace, never a partial answer as the prediction).")] = 80
    max_parallel: Annotated[int | None, Field(ge=1, description="Tree nodes run at once (empty: no limit; 1: strictly sequential post-order).")] = None
    review_plan: Annotated[bool, Field(description="Pause after planning so the tree can be reviewed and edited before it runs (needs a checkpointer).")] = False
    fanout_cap: Annotated[int | None, Field(ge=1, description="Sub-calls one node makes at most when it fans out over the answers of the nodes it references (one retrieval and one model call per answer, per answer pair for two references). Empty: no cap, as the authors run it.")] = None
    prompt_pack: Annotated[str, AfterValidator(_known_pack), Field(description="Few-shot prompt pack: general, hotpotqa, 2wiki, musique (eval run picks the dataset's pack).")] = "general"
    closed_book_root: Annotated[bool, Field(description="When the root ends with no answer, answer the question closed-book (the authors' direct answer).")] = True
    kg_program_by_model: Annotated[bool, Field(description="The executor fills a typed query program (entity, relation path, constraint; JSON-schema constrained) for each Relate sub-question sent to a knowledge graph, one model call each, as the authors parse each sub-question into a KoPL program; an unusable program gives way to the one read off the operator's arguments, with the reason recorded. Off: every program is read off the operator's arguments (one model call less).")] = True
    plan_constraint: Annotated[Literal["auto", "on", "off"], Field(description="Switch (ours; the paper's planner writes free text): the plan is decoded under a grammar (in-process model, vLLM, llama.cpp server) or a JSON schema (OpenAI) whose root is the question asked and whose leaves are operator calls or [DR], so a copied demonstration cannot be the plan. auto: on for in-process models and wherever structured_output is set; on: wherever the backend can; off: the planner's free text (or the stage's PlanSchema under structured_output).")] = "auto"
    keep_raw_reply: Annotated[bool, Field(description="Switch (the authors' reading, off: ours): an answer reply our reader cannot read, and that the answer contract does not refuse, is read as the authors read every reply (the text after 'answer is:', its last [...] list, else the paraphrase, else the text) instead of counting as an operator/reasoning failure that goes to direct RAG. A refused reply is a failure either way.")] = False
    top1_shortcut: Annotated[bool, Field(description="The authors' top-1 shortcut for Search and Relate on a text source: when the top hit's share of the k hits (softmax of score/top1_temperature) exceeds the operator's threshold, that hit alone is the evidence. Off: always the top k.")] = True
    top1_search_threshold: Annotated[float, Field(ge=0, le=1, description="Search's top-1 threshold (authors: 0.75 on ColBERTv2's softmax probability).")] = 0.75
    top1_relate_threshold: Annotated[float, Field(ge=0, le=1, description="Relate's top-1 threshold (authors: 0.85; relations are more ambiguous).")] = 0.85
    top1_temperature: Annotated[float, Field(gt=0, description="Scale of the retriever's scores in the softmax: 1 for ColBERTv2's scores (the authors'); calibrated for cosine scores of the embedding in use by benchmarks/bench_atomr_top1.py (MiniLM: 0.03, where the Relate shortcut is right 91% of the times it fires).")] = 0.03

Step = Literal["select", "operate", "children", "siblings", "rag", "closed_book"]


class SubCall(BaseModel):
    """One call of a node's fan-out: the question rewritten with one referenced answer (or
    answer pair), the operator arguments and retrieval query it used, and what came back."""

    question: str
    args: list[str] = Field(default_factory=list)
    candidates: list[str] = Field(default_factory=list)  # Filter: the whole answers it chose among
    query: str = ""
    stage: str = ""
    answers: list[str] = Field(default_factory=list)
    paraphrase: str = ""
    evidence: int = 0  # evidence items the sub-call's retrieval found
    kg_program: str = ""  # per knowledge graph: "NAME: model", or "NAME: rules (why the model's program was unusable)"
    outcome: str = ""  # answered | empty | failed | skipped
    problem: str | None = None


class NodeRun(BaseModel):
    """What happened at one tree node: the executed tree is a dict of these."""

    id: int
    kind: str
    question: str  # as planned, with [i] placeholders
    resolved_question: str = ""  # [i] replaced by answers, as asked
    operator: str | None = None  # the operator call as executed (references resolved)
    step: Step | None = None  # next step; None once answered
    sources: list[str] = Field(default_factory=list)  # chosen by source selection
    evidence: list[Evidence] = Field(default_factory=list)
    filter_dropped: list[str] = Field(default_factory=list)  # entities under the overlap threshold
    paraphrase: str = ""  # the sub-calls' paraphrases joined by "; "
    subcalls: list[SubCall] = Field(default_factory=list)  # one per referenced answer (fan-out), in order
    answers: list[str] = Field(default_factory=list)
    answer: str = ""
    fallback: str | None = None  # why direct RAG answered this node instead
    notes: list[str] = Field(default_factory=list)  # recovered errors, in order
    llm_calls: int = 0

    @property
    def done(self) -> bool:
        return self.step is None


def merge_runs(left: dict[int, NodeRun] | None, right: dict[int, NodeRun] | None) -> dict[int, NodeRun]:
    """Reducer: parallel steps touch different nodes; a later record of a node replaces it.
    (An edited plan replaces every record at once with ``Overwrite``.)"""
    merged = dict(left or {})
    for k, v in (right or {}).items():
        merged[int(k)] = v if isinstance(v, NodeRun) else NodeRun.model_validate(v)
    return merged


AtomRInput = MethodInput
AtomROutput = MethodOutput


class AtomRState(TypedDict, total=False):
    question: str
    tree: ReasoningTree | None
    plan_fallback: str | None  # why the planned tree was replaced by direct RAG on the question
    raw_plan: str
    runs: Annotated[dict[int, NodeRun], merge_runs]
    llm_calls: CallRecords
    retriever_calls: CallRecords
    unavailable_sources: dict[str, str]
    answer: str
    answers: list[str]
    trace: dict
    retrieved_ids: list[str]
    retrieved_titles: list[str]
    stopped: str | None
    error: str | None


class StepInput(TypedDict):
    """What the scheduler sends to one step of one tree node."""

    question: str
    tree: ReasoningTree
    runs: dict[int, NodeRun]
    node_id: int
    budget: int  # model calls this step may make (the run's LLM-call budget, shared out by the scheduler)
