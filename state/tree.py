"""The Atomic Reasoning Tree (ATOMR §3.2) as typed data.

Question nodes are numbered as the planner numbers them (BFS order); the root, the
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
from typing import Literal

from pydantic import BaseModel, Field

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

    def __getitem__(self, i: int) -> TreeNode:
        return self.nodes[i]

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

    def critical_path(self, cost: dict[str, int] | None = None) -> int:
        """Longest dependency chain, weighting each node by the LLM calls its kind needs
        (defaults: operator 2 — source selection and executor —, others 1)."""
        cost = cost or {"operator": 2, "parent": 1, "direct": 1, "open": 2}
        best: dict[int, int] = {}
        for i in self.topological_order():
            n = self.nodes[i]
            best[i] = cost[n.kind] + max((best[d] for d in n.dependencies), default=0)
        return max(best.values(), default=0)

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
