"""Per-answer fan-out: one call per referenced answer, as the authors run ATOMR.

A node that references an answered node, e.g. ``Relate([1], "place of birth")`` with
[1] = [Neil Armstrong, Buzz Aldrin, Michael Collins], is run once per answer of [1]: three
retrievals ("Neil Armstrong place of birth", ...) and three executor calls, whose answers
and paraphrases are concatenated in order. With two fanned references the node runs once
per answer pair. The rules (the authors' ``main.py``):

- Search / Relate: the references in the operator's arguments fan out (at most one per
  argument); a reference only in the question gets its first answer.
- Filter: the candidate list (first argument) is not fanned out: the candidates are the
  referenced node's answer list as it stands (never a string split again on "," or "and":
  "Wapakoneta, Ohio" is one candidate), shown to the model as one comma-separated list; a
  literal first argument is one candidate, or the items of a list written as a list
  (``["A", "B"]``); a reference in the condition fans out.
- Direct RAG: a question with one or two references fans out over them; with three or
  more, or a Filter-like question ("among [i]"), each reference becomes its answer list.

A reference whose node has no answer means the node is skipped: no call is made over an
empty reference, and its answer stays empty (never the word "Unknown").
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from atomgraph.state.atomr import NodeRun
from atomgraph.text import listed_or_whole
from atomgraph.state.tree import REF_RE, OperatorCall


@dataclass
class Planned:
    """What a node will run: its sub-calls, or why it is skipped."""

    calls: list[tuple[str, list[str]]] = field(default_factory=list)  # (question, operator args)
    skipped: str | None = None  # why no call is made (a referenced node has no answer)
    capped: int = 0  # sub-calls dropped by ``fanout_cap``
    candidates: list[str] = field(default_factory=list)  # Filter's candidates, whole answers in order


def refs_in(text: str, runs: dict | None = None) -> list[int]:
    """The ``[i]`` references in ``text``, in order (only ids of tree nodes when ``runs`` is
    given: "[9]" in a question with no node 9 is plain text)."""
    ids = (int(m.group(1)) for m in REF_RE.finditer(text or ""))
    return list(dict.fromkeys(i for i in ids if runs is None or i in runs))


def answers_of(i: int, runs: dict[int, NodeRun]) -> list[str]:
    run = runs.get(i)
    return [a for a in (run.answers if run else []) if a.strip()]


def _sub(text: str, values: dict[int, str]) -> str:
    return REF_RE.sub(lambda m: values.get(int(m.group(1)), m.group(0)), text or "")


def _list_text(answers: list[str]) -> str:
    return ", ".join(answers)


def _empty_ref(refs: list[int], runs: dict[int, NodeRun]) -> str | None:
    for i in refs:
        if not answers_of(i, runs):
            return f"skipped: referenced node [{i}] has no answer"
    return None


def _combinations(fanned: list[int], runs: dict[int, NodeRun]) -> list[dict[int, str]]:
    pools = [answers_of(i, runs) for i in fanned]
    return [dict(zip(fanned, combo)) for combo in itertools.product(*pools)]


def _cap(planned: Planned, cap: int | None) -> Planned:
    if cap is not None and len(planned.calls) > cap:
        planned.capped = len(planned.calls) - cap
        planned.calls = planned.calls[:cap]
    return planned


def plan_operator(question: str, op: OperatorCall, runs: dict[int, NodeRun], cap: int | None = None) -> Planned:
    """The sub-calls of an operator leaf (question and arguments per call)."""
    arg_refs = [refs_in(a, runs) for a in op.args]
    everything = refs_in(question, runs) + [i for refs in arg_refs for i in refs]
    skipped = _empty_ref(list(dict.fromkeys(everything)), runs)
    if skipped:
        return Planned(skipped=skipped)
    candidates: list[str] = []
    if op.name == "Filter":
        listed = arg_refs[0] if arg_refs else []
        fixed = {i: _list_text(answers_of(i, runs)) for i in listed}
        fanned = [refs[0] for refs in arg_refs[1:] if refs]
        candidates = filter_candidates(op.args[0] if op.args else "", listed, runs)
    else:
        fixed = {}
        fanned = [refs[0] for refs in arg_refs if refs]
    fanned = list(dict.fromkeys(fanned))
    first = {i: answers_of(i, runs)[0] for i in everything}  # a reference only in the question
    calls = []
    for combo in _combinations(fanned, runs):
        values = {**first, **fixed, **combo}
        calls.append((_sub(question, values), [_sub(a, values) for a in op.args]))
    return _cap(Planned(calls=calls, candidates=candidates), cap)


def filter_candidates(arg: str, refs: list[int], runs: dict[int, NodeRun]) -> list[str]:
    """Filter's candidates: the answers of the node(s) its first argument references, whole
    and in order (several references: their lists one after another); with no reference, the
    argument itself as one candidate, as the authors take it, or the items of a list written
    as a JSON/Python list. A candidate is never split again."""
    if refs:
        return list(dict.fromkeys(a for i in refs for a in answers_of(i, runs)))
    return listed_or_whole(arg)


def plan_question(question: str, runs: dict[int, NodeRun], cap: int | None = None) -> Planned:
    """The sub-calls of direct RAG over ``question`` (the authors' question rewriting)."""
    refs = refs_in(question, runs)
    skipped = _empty_ref(refs, runs)
    if skipped:
        return Planned(skipped=skipped)
    if len(refs) >= 3 or "among" in question.lower():
        return Planned(calls=[(_sub(question, {i: _list_text(answers_of(i, runs)) for i in refs}), [])])
    calls = [(_sub(question, combo), []) for combo in _combinations(refs, runs)]
    return _cap(Planned(calls=calls), cap)
