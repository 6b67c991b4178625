"""Turn an ATOMR planner's output into a :class:`~atomgraph.state.atomr.ReasoningTree`.

The planner writes a flat JSON object: the root question maps to its numbered
sub-questions (``"1. ..."``), each sub-question maps to its own sub-questions, to one
operator call (``Search``/``Relate``/``Filter``) or to a ``[DR]`` mark (``[END]`` in the
released trees).  Real output slips: numbers used twice or written ``2.1``, a child listed
with different text than its own key, a numbered sub-question no parent lists (attached
where its number says, else under the root), one sub-question written as a string instead
of a list, a question citing its own number (kept as text), prose leaves, stray text around
the JSON.
:func:`parse_tree` repairs what it can repair unambiguously, records each repair in
``tree.repairs``, and raises :class:`~atomgraph.state.atomr.TreeParseError` otherwise
(cycles, references to unknown nodes, empty trees, the authors' ``TREE_PARSING_ERROR``).

The whole reading of a plan is here, in the order it happens: the tree from the JSON object
(:func:`parse_tree`), a reply holding several plans (:func:`split_plans`), the JSON object out
of the planner's raw text (:func:`extract_json_object`, keeping duplicate keys), and each leaf
value: an operator call, a ``[DR]``/``[END]`` mark, or prose (:func:`parse_leaf`).
"""


from __future__ import annotations

import ast
import difflib
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

from atomgraph.text import TooDeep, check_depth
from atomgraph.state.atomr import OperatorCall, ReasoningTree, TreeNode, TreeParseError


__all__ = ["parse_tree", "split_plans", "TreeParseError"]

SUB_LABEL_RE = re.compile(r"\s*(\d+(?:\.\d+)+)\.?\s+(\S.*)", re.S)  # "2.1 Who ..."
LABEL_RE = re.compile(r"\s*(\d+)\s*[.):]\s*(.*)", re.S)  # "3. Who ...", "3) Who ..."
LABEL_REF_RE = re.compile(r"\[(\d+(?:\.\d+)*)\]")


def _split_label(key: str) -> tuple[str | None, str]:
    for rx in (SUB_LABEL_RE, LABEL_RE):
        m = rx.fullmatch(key)
        if m:
            return m.group(1), m.group(2).strip()
    return None, key.strip()


def _norm(s: str) -> str:
    return " ".join(s.split())


def _loose(s: str) -> str:
    return " ".join(re.sub(r"[^\w\[\]]+", " ", s.lower()).split())


def _short(s: str, n: int = 60) -> str:
    s = _norm(s)
    return s if len(s) <= n else s[: n - 1] + "…"


@dataclass(eq=False)
class _Entry:
    key: str
    value: Any
    label: str | None = None
    text: str = ""
    id: int | None = None
    parent: "_Entry | None" = None
    children: list["_Entry"] = field(default_factory=list)
    shared: list["_Entry"] = field(default_factory=list)  # listed here but placed elsewhere

    def ancestors(self) -> list["_Entry"]:
        out, p = [], self.parent
        while p is not None:
            out.append(p)
            p = p.parent
        return out

    def name(self) -> str:
        return f"node {self.id}" if self.id is not None else repr(_short(self.key))


class _Builder:
    def __init__(self, repairs: list[str]):
        self.repairs = repairs
        self.entries: list[_Entry] = []
        self.by_key: dict[str, _Entry] = {}
        self.aliases: dict[str, str] = {}  # the number of a dropped repeat -> the number of the question it repeats
        self.dropped: set[int] = set()  # ids of the entries dropped as repeats
        self.flattened = False
        self._leaves: dict[str | None, Leaf | ValueError] = {}

    def leaf(self, value: str | None) -> Leaf:
        """:func:`parse_leaf` of ``value``, read once a tree (the parser asks up to three times a leaf)."""
        found = self._leaves.get(value)
        if found is None:
            try:
                found = parse_leaf(value)
            except ValueError as exc:  # two operator calls in one leaf
                found = exc
            self._leaves[value] = found
        if isinstance(found, ValueError):
            raise found
        return found

    # --- collecting entries -------------------------------------------------------------
    def add(self, key: Any, value: Any) -> None:
        key = key if isinstance(key, str) else str(key)
        if isinstance(value, dict):
            sub = getattr(value, "pairs", None) or list(value.items())
            if not self.flattened:
                self.repairs.append("flattened nested JSON objects into the flat question → value form")
                self.flattened = True
            self.add(key, [k if isinstance(k, str) else str(k) for k, _ in sub])
            for k, v in sub:
                self.add(k, v)
            return
        if isinstance(value, tuple):
            value = list(value)
        if isinstance(value, list):
            bad = [v for v in value if not isinstance(v, (str, int, float))]
            if bad:
                raise TreeParseError(
                    f"the sub-questions of {_short(key)!r} must be strings, found {type(bad[0]).__name__}"
                )
            value = [v if isinstance(v, str) else str(v) for v in value]
        elif value is not None and not isinstance(value, str):
            raise TreeParseError(
                f"the value of {_short(key)!r} must be a list of sub-questions, an operator call or [DR], "
                f"found {type(value).__name__}"
            )
        norm = _norm(key)
        if not norm:
            raise TreeParseError("a question key is empty")
        if norm in self.by_key:
            if self.by_key[norm].value == value:
                self.repairs.append(f"dropped the repeated entry for {_short(key)!r}")
                return
            raise TreeParseError(f"the question {_short(key)!r} appears twice with different values")
        label, text = _split_label(norm)
        e = _Entry(key=norm, value=value, label=label, text=text)
        self.entries.append(e)
        self.by_key[norm] = e

    # --- a sub-question written as a plain string ------------------------------------------
    def wrap_string_children(self) -> None:
        """A value that is one sub-question (``"Q?": "1. Who ...?"``) instead of a one-item
        list becomes that list. An operator call, a ``[DR]``/``[END]`` mark or prose stays a
        leaf: only a value that is another entry's key (give or take punctuation), or a
        numbered question of its own, is taken for a sub-question."""
        for e in self.entries:
            if not isinstance(e.value, str) or not e.value.strip():
                continue
            value = _norm(e.value)
            target = self.by_key.get(value)
            if target is e:
                continue
            if target is None:
                try:
                    leaf = self.leaf(value)
                except ValueError:
                    continue  # two operator calls: reported when the leaf is built
                if leaf.kind != "open":
                    continue
                label, text = _split_label(value)
                if label is None or not text or self.leaf(text).kind != "open":
                    continue
                if not any(_loose(x.text) == _loose(text) for x in self.entries if x is not e) and e.label is not None:
                    continue  # a numbered line inside a leaf's prose, not a sub-question
            e.value = [value]
            self.repairs.append(
                f"{_short(e.key, 40)!r} has the sub-question {_short(value, 40)!r} as a string, not a list; read it as a list"
            )

    # --- the root -----------------------------------------------------------------------
    def listed(self) -> set[str]:
        out: set[str] = set()
        for e in self.entries:
            if isinstance(e.value, list):
                out.update(_norm(v) for v in e.value)
        return out

    def find_root(self, question: str | None) -> _Entry:
        listed = self.listed()
        if question and question.strip():
            q = _loose(question)
            hits = [e for e in self.entries if _loose(e.key) == q and e.key not in listed]
            if hits:
                return self._as_root(hits[0])
        free = [e for e in self.entries if e.key not in listed]
        for pool in ([e for e in free if e.label is None], [e for e in free if e.label == "0"]):
            if len(pool) == 1:
                return self._as_root(pool[0])
            if len(pool) > 1:
                if question and question.strip():
                    best = self._closest(question, pool)
                    if best is not None:
                        self.repairs.append(f"several unnumbered questions; took {_short(best.key)!r} as the root")
                        return self._as_root(best)
                names = ", ".join(repr(_short(e.key, 40)) for e in pool[:4])
                raise TreeParseError(f"ambiguous root: several questions could be the root ({names})")
        if not question or not question.strip():
            raise TreeParseError("no root question: every question is numbered or listed as a sub-question")
        tops = [e for e in self.entries if e.key not in listed and e.label not in (None, "0")]
        if not tops:
            raise TreeParseError("no root question: every question is listed as a sub-question (a cycle)")
        root = _Entry(key=_norm(question), value=[e.key for e in tops], text=_norm(question))
        self.entries.insert(0, root)
        self.repairs.append(
            "no root question in the output; used the given question as the root over "
            + ", ".join(repr(_short(e.key, 40)) for e in tops)
        )
        return root

    def _closest(self, question: str, pool: list[_Entry]) -> _Entry | None:
        scored = sorted(((difflib.SequenceMatcher(None, _loose(question), _loose(e.key)).ratio(), i) for i, e in enumerate(pool)), reverse=True)
        if scored[0][0] >= 0.8 and (len(scored) == 1 or scored[1][0] < scored[0][0] - 0.1):
            return pool[scored[0][1]]
        return None

    @staticmethod
    def _as_root(e: _Entry) -> _Entry:
        e.label, e.text = None, e.key
        return e

    # --- children -----------------------------------------------------------------------
    def match_child(self, item: str, parent: _Entry, root: _Entry) -> _Entry:
        norm = _norm(item)
        if norm in self.by_key:
            return self.by_key[norm]
        label, text = _split_label(norm)
        loose = [e for e in self.entries if _loose(e.text) == _loose(text) and e is not root]
        if len(loose) == 1:
            how = "its number and punctuation" if loose[0].label != label else "punctuation"
            self.repairs.append(f"{parent.name()} lists {_short(item)!r}; matched it to {_short(loose[0].key)!r} ignoring {how}")
            return loose[0]
        if label is not None:
            same = [e for e in self.entries if e.label == label and e is not root]
            if same:
                ratios = [difflib.SequenceMatcher(None, _loose(text), _loose(e.text)).ratio() for e in same]
                best = max(range(len(same)), key=ratios.__getitem__)
                if ratios[best] >= 0.5 and sum(r == ratios[best] for r in ratios) == 1:
                    self.repairs.append(
                        f"{parent.name()} lists {_short(item)!r}; matched it to the entry {_short(same[best].key)!r} by its number"
                    )
                    return same[best]
        e = _Entry(key=norm, value=None, label=label, text=text)
        if not text:
            raise TreeParseError(f"{parent.name()} lists an empty sub-question {item!r}")
        self.entries.append(e)
        self.by_key[norm] = e
        self.repairs.append(f"the sub-question {_short(item)!r} has no entry of its own; treated as an open question")
        return e

    def link(self, root: _Entry) -> list[_Entry]:
        """Place every entry under its parent (BFS, first listing wins); the BFS order."""
        order: list[_Entry] = []
        queue = [root]
        placed = {id(root)}
        while True:
            while queue:
                p = queue.pop(0)
                order.append(p)
                siblings: dict[tuple[str, str], _Entry] = {}
                for c in self._children_of(p, root):
                    if id(c) in self.dropped:  # a dropped repeat listed again: its number reads its twin's already
                        continue
                    twin = siblings.setdefault(_sibling_key(c, self.leaf), c)
                    if twin is not c and id(c) not in placed and c.label and twin.label:
                        self._drop_repeat(c, twin, p)
                        continue
                    if c is p or c in p.ancestors():
                        raise TreeParseError(
                            f"cycle: {_short(p.key)!r} lists its own ancestor {_short(c.key)!r} as a sub-question"
                        )
                    if id(c) in placed:
                        if c.parent is p or c in p.shared:
                            self.repairs.append(f"{_short(p.key, 40)!r} lists {_short(c.key, 40)!r} twice; kept one")
                        else:
                            p.shared.append(c)
                            self.repairs.append(
                                f"{_short(c.key, 40)!r} is listed under two parents; kept it under the first, "
                                f"the other ({_short(p.key, 40)!r}) now references it"
                            )
                        continue
                    placed.add(id(c))
                    c.parent = p
                    p.children.append(c)
                    queue.append(c)
            orphans = [e for e in self.entries if id(e) not in placed]
            if not orphans:
                return order
            self._adopt(self._pick_orphan(orphans), order, root, queue, placed)

    def _drop_repeat(self, c: _Entry, twin: _Entry, p: _Entry) -> None:
        """Drop ``c``, a sibling that repeats ``twin`` under another number (:func:`_sibling_key`:
        a small model's list running on; a planner's tree never asks one thing twice): its
        number becomes an alias of ``twin``'s, so a reference to it reads ``twin``'s answer."""
        self.entries.remove(c)
        self.dropped.add(id(c))
        self.by_key.pop(c.key, None)
        self.aliases[c.label] = twin.label
        self.repairs.append(f"{_short(p.key, 40)!r} lists {_short(c.key, 40)!r}, a repeat of {_short(twin.key, 40)!r}; "
                            f"dropped it ([{c.label}] reads [{twin.label}])")

    def _pick_orphan(self, orphans: list[_Entry]) -> _Entry:
        """The next unplaced entry to attach: one that no entry lists (the others are reached
        through it), the first such in the output's order."""
        listed = self.listed()
        free = [e for e in orphans if e.key not in listed]
        return (free or orphans)[0]

    def _adopt(self, e: _Entry, order: list[_Entry], root: _Entry, queue: list[_Entry], placed: set[int]) -> None:
        """Attach an entry no parent lists where its number says: ``2.1`` under ``2``, a plain
        number under the root. An unnumbered one cannot be placed."""
        if e.label is None or e.label == "0":
            raise TreeParseError(f"the question {_short(e.key)!r} is not a sub-question of any node (no parent lists it)")
        parent = None
        if "." in e.label:
            up = e.label.rsplit(".", 1)[0]
            parent = next((o for o in order if o.label == up and o is not root), None)
        if parent is not None:
            where = f"under {_short(parent.key, 40)!r} by its number"
        else:
            parent, where = root, "under the root"
        self.repairs.append(f"{_short(e.key, 40)!r} was listed nowhere; attached it {where}")
        placed.add(id(e))
        e.parent = parent
        parent.children.append(e)
        queue.append(e)

    def _children_of(self, p: _Entry, root: _Entry) -> list[_Entry]:
        if not isinstance(p.value, list):
            return []
        items = [v for v in p.value if v.strip()]
        if len(items) != len(p.value):
            self.repairs.append(f"dropped empty sub-questions of {_short(p.key, 40)!r}")
        if not items:
            self.repairs.append(f"{_short(p.key, 40)!r} has an empty list of sub-questions; treated as an open question")
            p.value = None
            return []
        if len(items) == 1 and _norm(items[0]) not in self.by_key and _split_label(items[0])[0] is None:
            leaf = self.leaf(items[0])
            if leaf.kind in ("operator", "direct"):
                self.repairs.append(f"{_short(p.key, 40)!r} has its leaf value inside a list; unwrapped it")
                p.value = items[0]
                return []
        return [self.match_child(v, p, root) for v in items]


def _sibling_key(e: _Entry, leaf_of: Callable[[str | None], Leaf] | None = None) -> tuple:
    """What makes two siblings the same node: an atomic operator is its call (the function and
    its arguments fix what is retrieved and asked: ``Search("Albert Einstein", "birthplace")``
    twice is one operation, whatever the two questions say); any other entry is its question
    and value."""
    if isinstance(e.value, str):
        try:
            leaf = (leaf_of or parse_leaf)(e.value)
        except ValueError:
            leaf = None
        if leaf is not None and leaf.kind == "operator":
            return ("call", leaf.operator.name, tuple(_loose(str(a)) for a in leaf.operator.args))
    return ("entry", _loose(e.text), repr(e.value))


def _assign_ids(order: list[_Entry], repairs: list[str]) -> None:
    order[0].id = 0
    taken: dict[int, _Entry] = {}
    for e in order[1:]:
        if e.label and e.label.isdigit() and int(e.label) > 0 and int(e.label) not in taken:
            e.id = int(e.label)
            taken[e.id] = e
    nxt = max(taken, default=0) + 1
    for e in order[1:]:
        if e.id is not None:
            continue
        if e.label is None:
            why = "it had no number"
        elif not e.label.isdigit():
            why = f"it was numbered {e.label}"
        elif e.label == "0":
            why = "number 0 is the root's"
        else:
            why = f"number {e.label} is already node {taken[int(e.label)].id}'s"
        e.id, nxt = nxt, nxt + 1
        repairs.append(f"numbered {_short(e.key)!r} as {e.id} ({why})")


def _resolve_ref(label: str, e: _Entry, by_label: dict[str, list[_Entry]], root: _Entry) -> _Entry:
    """The node ``[label]`` in ``e``'s text means; ``e`` itself where only ``e`` carries that
    number (the caller keeps such a reference as text)."""
    cands = list(by_label.get(label, []))
    if label == "0" and not cands:
        cands = [root]
    if not cands:
        raise TreeParseError(f"node {e.id} ({_short(e.text)!r}) refers to [{label}], which is not a node of the tree")
    blocked = {id(e), *(id(a) for a in e.ancestors())}
    ok = [c for c in cands if id(c) not in blocked]
    if not ok and any(c is e for c in cands):
        return e
    if not ok:
        what = "itself" if cands[0] is e else f"its ancestor node {cands[0].id}"
        raise TreeParseError(f"dependency cycle: node {e.id} ({_short(e.text)!r}) refers to [{label}], {what}")
    if len(ok) == 1:
        return ok[0]

    def distance(c: _Entry) -> int:
        mine = [e, *e.ancestors()]
        theirs = [c, *c.ancestors()]
        common = next(a for a in mine if a in theirs)
        return mine.index(common) + theirs.index(common)

    ranked = sorted(ok, key=distance)
    if distance(ranked[0]) == distance(ranked[1]):
        raise TreeParseError(
            f"node {e.id} refers to [{label}], but several nodes carry number {label} "
            f"({', '.join(repr(_short(c.text, 30)) for c in ranked[:3])})"
        )
    return ranked[0]


def _rewrite(text: str, mapping: dict[str, int]) -> str:
    return LABEL_REF_RE.sub(lambda m: f"[{mapping[m.group(1)]}]" if m.group(1) in mapping else m.group(0), text)


def _build_nodes(order: list[_Entry], repairs: list[str], aliases: dict[str, str] | None = None,
                 leaf_of: Callable[[str | None], Leaf] | None = None) -> dict[int, TreeNode]:
    root = order[0]
    by_label: dict[str, list[_Entry]] = defaultdict(list)
    for e in order[1:]:
        if e.label is not None:
            by_label[e.label].append(e)
    nodes: dict[int, TreeNode] = {}
    for e in order:
        if e.id != root.id and not e.text:
            raise TreeParseError(f"node {e.id} has an empty question")
        operator: OperatorCall | None = None
        note = ""
        if e.children:
            kind = "parent"
        else:
            try:
                leaf = (leaf_of or parse_leaf)(e.value if isinstance(e.value, str) else None)
            except ValueError as exc:
                raise TreeParseError(f"node {e.id} ({_short(e.text)!r}) {exc}") from None
            kind, operator, note, leaf_repairs = leaf.kind, leaf.operator, leaf.note, leaf.repairs
            if e is root and kind == "direct":
                kind, leaf_repairs = "open", ["the root is marked [DR] but has no siblings to reason from; treated as an open question"]
            repairs.extend(f"node {e.id}: {r}" for r in leaf_repairs)
        # (text, whether a reference to the node's own number may stay as text there): an
        # operator argument naming its own node would need the node's answer to run it
        texts = [(e.text if e is not root else "", True), *((a, False) for a in (operator.args if operator else [])),
                 (note, True)]
        mapping: dict[str, int] = {}
        refs: list[int] = []
        own: list[str] = []
        for t, own_ok in texts:
            for m in LABEL_REF_RE.finditer(t):
                label = m.group(1)
                if label not in mapping:
                    mapping[label] = _resolve_ref((aliases or {}).get(label, label), e, by_label, root).id
                if mapping[label] != e.id:
                    if mapping[label] not in refs:
                        refs.append(mapping[label])
                elif not own_ok:
                    raise TreeParseError(
                        f"dependency cycle: node {e.id} ({_short(e.text)!r}) uses [{label}], its own answer, "
                        f"in its {operator.name if operator else 'operator'} call"
                    )
                elif label not in own:
                    own.append(label)
        for label in own:
            repairs.append(f"node {e.id}: its text refers to its own number [{label}]; kept it as text, not a dependency")
        changed = {k: v for k, v in mapping.items() if k != str(v)}
        question = e.text
        if changed:
            question = _rewrite(question, changed)
            note = _rewrite(note, changed)
            if operator:
                operator = operator.model_copy(update={"args": [_rewrite(a, changed) for a in operator.args]})
            repairs.append(
                f"node {e.id}: references " + ", ".join(f"[{k}] → [{v}]" for k, v in changed.items())
            )
        for s in e.shared:
            if s.id not in refs:
                refs.append(s.id)
        node = TreeNode(
            id=e.id,
            question=question,
            parent=e.parent.id if e.parent else None,
            children=[c.id for c in e.children],
            kind=kind,
            operator=operator,
            refs=refs,
            depth=1 if e.parent is None else nodes[e.parent.id].depth + 1,
            note=note,
        )
        nodes[e.id] = node
    return nodes


def _check_cycles(nodes: dict[int, TreeNode]) -> None:
    state: dict[int, int] = {}
    path: list[int] = []

    def visit(i: int) -> None:
        state[i] = 1
        path.append(i)
        for d in nodes[i].dependencies:
            if state.get(d) == 1:
                loop = path[path.index(d):] + [d]
                raise TreeParseError("dependency cycle through nodes " + " → ".join(map(str, loop)))
            if state.get(d) is None:
                visit(d)
        path.pop()
        state[i] = 2

    for i in sorted(nodes):
        if i not in state:
            visit(i)


def _pairs(raw: Any, repairs: list[str]) -> list[tuple[Any, Any]]:
    if isinstance(raw, str):
        raw = extract_json_object(raw, repairs)
    if is_authors_error(raw):
        raise TreeParseError("the planner output is the authors' TREE_PARSING_ERROR marker (no tree)")
    if not isinstance(raw, dict):
        raise TreeParseError(
            "planner output must be a JSON object mapping questions to sub-questions or operator calls, "
            f"got {type(raw).__name__}"
        )
    return list(getattr(raw, "pairs", None) or raw.items())


def parse_tree(raw: dict | str, question: str | None = None) -> ReasoningTree:
    """Parse a planner output (parsed JSON ``dict`` or raw model text) into a tree.

    ``question`` is the user's original question: it becomes ``tree.question`` and helps
    find the root where the output is unclear.  Raises :class:`TreeParseError`."""
    repairs: list[str] = []
    return _tree(_pairs(raw, repairs), repairs, question)


def _tree(pairs: list[tuple[Any, Any]], repairs: list[str], question: str | None) -> ReasoningTree:
    b = _Builder(repairs)
    for k, v in pairs:
        b.add(k, v)
    if not b.entries:
        raise TreeParseError("empty tree: the planner output holds no questions")
    b.wrap_string_children()
    root = b.find_root(question)
    order = b.link(root)
    _assign_ids(order, repairs)
    nodes = _build_nodes(order, repairs, b.aliases, b.leaf)
    _check_cycles(nodes)
    q = _norm(question) if question and question.strip() else root.text
    return ReasoningTree(question=q, nodes=nodes, root=0, repairs=repairs)


# --- replies that hold several plans ---------------------------------------------------------

def _child_keys(value: Any) -> list[str]:
    """The questions an entry's value may list: its list items, its nested object's keys, or
    the string itself (a sub-question written as a string)."""
    if isinstance(value, dict):
        return [str(k) for k in value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str)]
    return [value] if isinstance(value, str) else []


def _split_object(obj: Any) -> list[Any]:
    """One planner object split into plans, one per root question (an unnumbered question no
    entry lists): each root with the entries it reaches through the lists; an entry no root
    reaches goes with the nearest root before it (else the first root). Unsplit when it has
    fewer than two roots."""
    if not isinstance(obj, dict):
        return [obj]
    pairs = list(getattr(obj, "pairs", None) or obj.items())
    keys = [_norm(k if isinstance(k, str) else str(k)) for k, _ in pairs]
    kids = [[_norm(c) for c in _child_keys(v)] for _, v in pairs]
    listed = {_loose(c) for cs in kids for c in cs}
    roots = [i for i, k in enumerate(keys) if _split_label(k)[0] is None and _loose(k) not in listed]
    if len(roots) < 2:
        return [obj]
    by_key: dict[str, list[int]] = defaultdict(list)
    by_text: dict[str, list[int]] = defaultdict(list)
    for i, k in enumerate(keys):
        by_key[_loose(k)].append(i)
        by_text[_loose(_split_label(k)[1])].append(i)

    def reach(r: int) -> set[int]:
        seen, todo = {r}, [r]
        while todo:
            for c in kids[todo.pop()]:
                for j in by_key.get(_loose(c)) or by_text.get(_loose(_split_label(c)[1]), []):
                    if j not in seen:
                        seen.add(j)
                        todo.append(j)
        return seen

    members = {r: reach(r) for r in roots}
    reached = set().union(*members.values())
    for i in range(len(pairs)):
        if i not in reached:
            before = [r for r in roots if r < i]
            members[before[-1] if before else roots[0]].add(i)
    return [PairsDict.from_pairs([pairs[i] for i in sorted(members[r])]) for r in roots]


def split_plans(raw: dict | str) -> list[Any]:
    """The plans a planner reply holds, in order, each in a form :func:`parse_tree` reads: one
    per JSON object of the reply and one per root question within an object (a small model
    copies a demonstration's plan next to its own). A reply with one plan comes back as it is."""
    return [raw if isinstance(part, _Read) else part for part in _split(raw)]


def parse_plans(raw: dict | str) -> list[ReasoningTree | TreeParseError]:
    """Every plan :func:`split_plans` finds in ``raw``, each read by :func:`parse_tree` (or why it
    cannot be), in order -- the reply's JSON scanned once (a reply with one plan is not read again)."""
    out: list[ReasoningTree | TreeParseError] = []
    for part in _split(raw):
        try:
            if isinstance(part, _Read):
                repairs = list(part.repairs)
                out.append(_tree(_pairs(part.value, repairs), repairs, None))
            else:
                out.append(parse_tree(part))
        except TreeParseError as exc:
            out.append(exc)
    return out


@dataclass
class _Read:
    """A reply's one plan as :func:`extract_json_object` reads the reply: its object and the repairs noted."""

    value: Any
    repairs: list[str]


def _split(raw: dict | str) -> list[Any]:
    objects: list[Any] = [raw]
    if isinstance(raw, str):
        found, first = _json_objects(raw)
        if len(found) > 1:
            objects = found
        elif len(found) == 1 and isinstance(found[0], dict):
            parts = _split_object(found[0])
            if len(parts) >= 2:
                return parts
            return [first if first is not None and first.value is found[0] else raw]
    out: list[Any] = []
    for obj in objects:
        out += _split_object(obj)
    return out


# --- the planner's JSON object ------------------------------------------------------------------
# Read the JSON object out of a planner's raw text, leniently but visibly.
#
# Models wrap their JSON in code fences, put prose around it, leave trailing commas or write
# Python literals (single quotes, ``None``).  :func:`extract_json_object` undoes each of these
# and appends a short note to ``repairs`` for every change; what it cannot read raises
# :class:`~atomgraph.state.atomr.TreeParseError` with the reason.
#
# Objects are decoded into :class:`PairsDict`, a ``dict`` that also remembers every
# ``(key, value)`` pair in order, so that a key the model wrote twice is not silently lost.

FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)(?:```|\Z)", re.S)
TRAILING_COMMA_RE = re.compile(r",(\s*[}\]])")
AUTHORS_ERROR = "TREE_PARSING_ERROR"


class PairsDict(dict):
    """A dict that keeps all of its source pairs (duplicated keys included) in ``pairs``."""

    pairs: list[tuple[str, Any]]

    @classmethod
    def from_pairs(cls, pairs: list[tuple[str, Any]]) -> "PairsDict":
        d = cls(pairs)
        d.pairs = list(pairs)
        return d


def loads(text: str) -> Any:
    """``json.loads`` whose objects are :class:`PairsDict` (duplicate keys kept); TreeParseError for JSON
    nested deeper than :data:`atomgraph.text.MAX_JSON_DEPTH` (never a RecursionError)."""
    try:
        check_depth(text, "planner output")
    except TooDeep as exc:
        raise TreeParseError(str(exc)) from None
    return json.loads(text, object_pairs_hook=PairsDict.from_pairs)


def is_authors_error(value: Any) -> bool:
    return isinstance(value, str) and value.strip().strip("\"'").strip() == AUTHORS_ERROR


def _object_span(text: str, start: int) -> int | None:
    """Index one past the ``}`` that closes the object opening at ``start`` (quote-aware)."""
    depth, quote, i, prev = 0, "", start, ""
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote, prev = "", c
            i += 1
            continue
        if c in "\"'":
            # an apostrophe outside a string is a quote only where it opens a Python-literal
            # string (after {, [, : or ,)
            if c == '"' or prev in ("{", "[", ":", ","):
                quote = c
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        if not c.isspace():
            prev = c
        i += 1
    return None


def _decode(body: str, repairs: list[str]) -> Any:
    try:
        return loads(body)
    except json.JSONDecodeError as exc:
        first_error = exc
    fixed = TRAILING_COMMA_RE.sub(r"\1", body)
    if fixed != body:
        try:
            value = loads(fixed)
            repairs.append("removed trailing commas from the JSON")
            return value
        except json.JSONDecodeError:
            pass
    try:
        value = ast.literal_eval(body)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        value = None
    else:
        repairs.append("read the planner output as a Python literal (not strict JSON)")
        return value
    line = body.count("\n", 0, first_error.pos) + 1
    raise TreeParseError(
        f"planner output is not valid JSON: {first_error.msg} (line {line} of the JSON object)"
    )


def extract_json_object(raw: str, repairs: list[str]) -> Any:
    """The JSON value in ``raw`` (normally an object), with notes on what was cleaned."""
    text = raw.strip()
    if not text:
        raise TreeParseError("empty planner output")
    try:
        check_depth(text, "planner output")
    except TooDeep as exc:  # never a RecursionError from json or ast below
        raise TreeParseError(str(exc)) from None
    if is_authors_error(text):
        raise TreeParseError(f"the planner output is the authors' {AUTHORS_ERROR} marker (no tree)")
    fences = [m for m in FENCE_RE.finditer(text) if "{" in m.group(2)]
    whole, text = text, fences[0].group(2).strip() if fences else text
    start = text.find("{")
    if start < 0:
        try:  # a bare JSON string such as "\"TREE_PARSING_ERROR\""
            value = json.loads(text)
        except json.JSONDecodeError:
            raise TreeParseError("no JSON object found in the planner output") from None
        if is_authors_error(value):
            raise TreeParseError(f"the planner output is the authors' {AUTHORS_ERROR} marker (no tree)")
        raise TreeParseError(f"planner output must be a JSON object, got {type(value).__name__}")
    end = _object_span(text, start)
    if end is None:
        raise TreeParseError("planner output is truncated: the JSON object is never closed")
    repairs.extend(_located_notes(whole, fences, start, end))
    return _decode(text[start:end], repairs)


def extract_json_objects(raw: str) -> list[Any]:
    """Every JSON object written one after another in ``raw`` (code-fenced or bare), decoded,
    in order; objects that cannot be decoded are left out. A reply that holds several plans
    (a copied demonstration's and ours) holds several objects."""
    return _json_objects(raw)[0]


def _json_objects(raw: str) -> tuple[list[Any], _Read | None]:
    """:func:`extract_json_objects`, and what :func:`extract_json_object` reads from ``raw`` when that
    is the first of these objects (the same object, found the same way: the first ``{`` of the first
    code fence holding one, else of the text), with the repairs it notes; else None."""
    text = (raw or "").strip()
    fences = [m for m in FENCE_RE.finditer(text) if "{" in m.group(2)]
    bodies = [m.group(2) for m in fences] or [text]
    out: list[Any] = []
    first: _Read | None = None
    for b, body in enumerate(bodies):
        i = body.find("{")
        while i >= 0:
            end = _object_span(body, i)
            if end is None:
                break
            notes: list[str] = []
            try:
                out.append(_decode(body[i:end], notes))
            except TreeParseError:
                pass
            else:
                if b == 0 and len(out) == 1 and i == body.find("{"):
                    first = _Read(out[0], _located_notes(text, fences, i, end) + notes)
            i = body.find("{", end)
    if first is not None:
        try:
            check_depth(text, "planner output")  # extract_json_object refuses a reply nested too deep
        except TooDeep:
            first = None
    return out, first


def _located_notes(text: str, fences: list[re.Match], start: int, end: int) -> list[str]:
    """What was cleaned around the object found at ``start:end`` of the first fence's body
    (``fences``: the code fences of ``text`` holding a ``{``), else of ``text`` (the reply, stripped)."""
    if fences:
        outside = (text[: fences[0].start()] + text[fences[0].end():]).strip()
        return ["removed the ``` code fence around the JSON"] + (["ignored prose outside the code fence"] if outside else [])
    notes = []
    if text[:start].strip():
        notes.append("ignored text before the JSON object")
    if text[end:].strip():
        notes.append("ignored text after the JSON object")
    return notes


# --- one leaf value -----------------------------------------------------------------------------
# Parse one leaf value of a planner tree: an operator call, a ``[DR]``/``[END]`` mark, or prose.
#
# Operator calls are read with a small tolerant scanner rather than a regex, because real
# planner output has nested and mismatched quotes (``"Poznań "56"``), escaped quotes,
# single quotes, unquoted arguments, ``"text " + [1]`` concatenations, list references
# (``[5, 7]``), operator calls nested as arguments and stray characters after the call.

OPERATORS = {"search": "Search", "relate": "Relate", "filter": "Filter"}
ARITY = {"Search": (1, 2), "Relate": (2, 2), "Filter": (2, 2)}
CALL_RE = re.compile(r"\s*(search|relate|filter)\s*\(", re.I)
NESTED_CALL_RE = re.compile(r"[A-Za-z_]\w*\s*\(")
DR_TOKEN_RE = re.compile(r"\[\s*(?:END|DR)\s*\]", re.I)
DR_ONLY_RE = re.compile(r"\s*\[?\s*(?:END|DR)\s*\]?\s*\.?\s*", re.I)
LIST_REF_RE = re.compile(r"\[\s*(\d+(?:\.\d+)*)((?:\s*,\s*\d+(?:\.\d+)*)+)\s*\]")


@dataclass
class Leaf:
    kind: str  # "operator" | "direct" | "open"
    operator: OperatorCall | None = None
    note: str = ""  # prose the planner wrote instead of (or around) a mark
    repairs: list[str] = field(default_factory=list)


class _Scanner:
    def __init__(self, text: str, pos: int):
        self.s, self.i = text, pos
        self.notes: list[str] = []

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def quoted(self) -> str:
        q, out = self.s[self.i], []
        self.i += 1
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "\\" and self.i + 1 < len(self.s):
                out.append(self.s[self.i + 1])
                self.i += 2
                continue
            if c == q:
                rest = self.s[self.i + 1:].lstrip()
                # a quote closes the string only where an argument may end; otherwise it is
                # a quote nested inside the argument ("Hamilton Evans "Tony" James")
                if not rest or rest[0] in ",)+":
                    self.i += 1
                    return "".join(out)
            out.append(c)
            self.i += 1
        self.notes.append("closed an unterminated quoted argument")
        text = "".join(out).rstrip()
        return text[:-1].rstrip() if text.endswith(")") else text

    def balanced(self, open_: str, close: str) -> str:
        """Text from an opening bracket to its match, quotes respected."""
        start, depth, quote = self.i, 0, ""
        while self.i < len(self.s):
            c = self.s[self.i]
            if quote:
                if c == "\\":
                    self.i += 1
                elif c == quote:
                    quote = ""
            elif c == '"':
                quote = c
            elif c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return self.s[start:self.i]
            self.i += 1
        self.notes.append(f"closed an unterminated '{open_}'")
        return self.s[start:] + close

    def bare(self) -> str:
        start, depth = self.i, 0
        while self.i < len(self.s):
            c = self.s[self.i]
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    break
                depth -= 1
            elif c in ",+" and depth == 0:
                break
            self.i += 1
        return self.s[start:self.i].strip()

    def term(self) -> str:
        c = self.peek()
        if c in "\"'":
            return self.quoted()
        if c == "[":
            return self.balanced("[", "]")
        m = NESTED_CALL_RE.match(self.s, self.i)
        if m:
            self.i = m.end() - 1
            call = self.s[m.start():m.end() - 1].strip() + self.balanced("(", ")")
            self.notes.append(f"kept the nested call {call} as argument text")
            return call
        value = self.bare()
        if value:
            self.notes.append(f"read the unquoted argument {value!r}")
        return value

    def arguments(self) -> tuple[list[str], bool]:
        """Arguments up to the call's closing parenthesis; the flag says it was found."""
        args: list[str] = []
        while True:
            self.ws()
            if self.peek() == ")":
                self.i += 1
                return args, True
            if not self.peek():
                return args, False
            parts = [self.term()]
            self.ws()
            while self.peek() == "+":
                self.i += 1
                self.ws()
                parts.append(self.term())
                self.ws()
            if len(parts) > 1:
                self.notes.append(f"joined the '+' concatenation into {''.join(parts)!r}")
            args.append("".join(parts))
            self.ws()
            if self.peek() == ",":
                self.i += 1
            elif self.peek() not in ")":
                # something odd between arguments: keep it as part of a bare argument
                extra = self.bare()
                if extra:
                    args[-1] = f"{args[-1]} {extra}".strip()
                    self.notes.append(f"kept the stray text {extra!r} in an argument")
                if self.peek() == ",":
                    self.i += 1


def _normalise_list_refs(arg: str, notes: list[str]) -> str:
    def repl(m: re.Match) -> str:
        ids = [m.group(1), *re.findall(r"\d+(?:\.\d+)*", m.group(2))]
        return ", ".join(f"[{i}]" for i in ids)

    new = LIST_REF_RE.sub(repl, arg)
    if new != arg:
        notes.append(f"wrote the list reference {arg!r} as {new!r}")
    return new


def parse_operator(value: str) -> tuple[OperatorCall | None, list[str]]:
    """The operator call at the start of ``value``, or None; plus notes on what was repaired.

    Raises ``ValueError`` for a value holding two operator calls (ambiguous)."""
    m = CALL_RE.match(value)
    if not m:
        return None, []
    name = OPERATORS[m.group(1).lower()]
    sc = _Scanner(value, m.end())
    notes = sc.notes
    if m.group(1) != name:
        notes.append(f"wrote the operator name {m.group(1)!r} as {name}")
    args, closed = sc.arguments()
    if not closed:
        notes.append(f"closed the unterminated {name}( call")
    args = [_normalise_list_refs(a.strip(), notes) for a in args]
    if "" in args:
        notes.append(f"dropped {args.count('')} empty argument(s)")
        args = [a for a in args if a]
    trailing = value[sc.i:].strip()
    if trailing:
        if CALL_RE.search(trailing):
            raise ValueError(f"holds more than one operator call: {value.strip()!r}")
        notes.append(f"ignored {trailing!r} after the {name}(...) call")
    lo, hi = ARITY[name]
    if args and not lo <= len(args) <= hi:
        want = f"{lo}" if lo == hi else f"{lo}-{hi}"
        notes.append(f"{name} takes {want} arguments but has {len(args)}; kept them as written")
    return OperatorCall(name=name, args=args, raw=value.strip()), notes


def parse_leaf(value: str | None) -> Leaf:
    """Classify a leaf value. Notes in ``Leaf.repairs`` are not yet prefixed with the node."""
    text = (value or "").strip()
    if not text:
        return Leaf("open", repairs=["has no operator or mark; treated as an open question"])
    if DR_ONLY_RE.fullmatch(text):
        return Leaf("direct")
    op, notes = parse_operator(text)  # ValueError: two calls in one leaf
    if op is not None:
        if not op.args:
            return Leaf("open", note=text, repairs=[f"{op.name}() has no arguments; treated as an open question"])
        return Leaf("operator", operator=op, repairs=notes)
    stripped = DR_TOKEN_RE.sub("", text).strip()
    if stripped != text and (DR_TOKEN_RE.match(text) or re.search(DR_TOKEN_RE.pattern + r"\W*$", text, re.I)):
        return Leaf("direct", note=stripped, repairs=["prose around the [END]/[DR] mark kept as a note"])
    return Leaf("open", note=text, repairs=["leaf has prose instead of an operator; treated as an open question"])
