"""Atomic Reasoning Execution (ATOMR §3.3, Algorithm 1): how a tree is run bottom-up.

One module for the whole of Algorithm 1's control, read top to bottom: the step table (below),
settling a node from its sub-calls, the per-answer fan-out (one call per referenced answer, as
the authors run it), the scheduler (each node whose dependencies are answered goes to its next
step, all at once, within the LLM-call budget) and the result. The steps themselves are
:mod:`~atomgraph.nodes.atomr.node_reasoning` (§3.3.1 Leaf Node Reasoning: source selection,
retrieval, the atomic operator; §3.3.2 Parent Node Reasoning: child / sibling answer reasoning,
direct RAG); planning (§3.2) is :mod:`~atomgraph.nodes.atomr.plan`.

Every step of a tree node ends with an outcome; the table says what the node does next.
``DONE`` settles the node. A :class:`Switch` row applies only when its context field is on
(``closed_book_root``, the authors' direct answer, on by default).

| step | outcome | next | Algorithm 1 |
|---|---|---|---|
| select | leaf | operate | l.5–8: sources chosen, run the atomic operator |
| select | fallback | rag | l.19–21: sources chosen for direct RAG |
| operate | answered | DONE | l.8 |
| operate | empty | DONE | the operator said Unknown: no failure |
| operate | failed | rag | l.9–10: operator execution failure (no evidence from any selected source, a failed call, an unreadable reply) |
| operate | skipped | DONE | a referenced node has no answer: no call over an empty reference |
| children | answered | DONE | l.17 |
| children | empty / failed | select → rag | l.18–21: child-answer reasoning said Unknown |
| siblings | answered / empty / failed | DONE | l.14–15: no fallback |
| rag | any | DONE | l.10, l.21 |
| root | empty | closed_book (``closed_book_root``) | the authors' direct answer when the root ends empty |
| closed_book | any | DONE | |

An unreadable plan (before any of this) leaves the run without a tree and with ``error``
set, as the authors score it empty.
"""


from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass, field

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, Send

from atomgraph.errors import ParseError
from atomgraph.nodes.call import StageResult
from atomgraph.nodes.runtime import MethodRuntime
from atomgraph.prompts.atomr.stages import answer_text, demonstration_answers, read_as_authors
from atomgraph.prompts.stage import Stage, hold_to_question, refusal_reason
from atomgraph.state.run import evidence_record
from atomgraph.state.atomr import (AtomRContext, AtomRState, NodeRun, OperatorCall, REF_RE, StepInput, SubCall,
                                   substitute_refs)
from atomgraph.text import listed_or_whole
from atomgraph.tools.base import retrieval_failure

log = logging.getLogger(__name__)

# --- Algorithm 1's table ----------------------------------------------------------------------


DONE = None


@dataclass(frozen=True)
class Switch:
    """Go to ``then`` only when context field ``name`` is on; otherwise settle."""

    name: str
    then: str


ALGORITHM_1: dict[tuple[str, str], str | Switch | None] = {
    ("select", "leaf"): "operate",
    ("select", "fallback"): "rag",
    ("operate", "answered"): DONE,
    ("operate", "empty"): DONE,
    ("operate", "failed"): "rag",
    ("operate", "skipped"): DONE,
    ("children", "answered"): DONE,
    ("children", "empty"): "select",
    ("children", "failed"): "select",
    ("children", "skipped"): "select",
    ("siblings", "answered"): DONE,
    ("siblings", "empty"): DONE,
    ("siblings", "failed"): DONE,
    ("siblings", "skipped"): DONE,
    ("rag", "answered"): DONE,
    ("rag", "empty"): DONE,
    ("rag", "failed"): DONE,
    ("rag", "skipped"): DONE,
    ("root", "empty"): Switch("closed_book_root", "closed_book"),
    ("closed_book", "answered"): DONE,
    ("closed_book", "empty"): DONE,
    ("closed_book", "failed"): DONE,
}

# Why a node went to direct RAG, by the row that sent it (the trace's ``fallback``).
FALLBACK_REASONS = {
    ("operate", "failed"): "operator failure",
    ("children", "empty"): "child reasoning answered Unknown",
    ("children", "failed"): "child reasoning failed",
    ("children", "skipped"): "child reasoning failed",
}


def _resolve(row, params: AtomRContext):
    if isinstance(row, Switch):
        return row.then if getattr(params, row.name) else DONE
    return row


def advance(run: NodeRun, step: str, outcome: str, params: AtomRContext, *, is_root: bool,
            problem: str | None = None) -> NodeRun:
    """Move ``run`` on after ``step`` ended with ``outcome`` (Algorithm 1's table)."""
    nxt = _resolve(ALGORITHM_1[(step, outcome)], params)
    if nxt in ("rag", "select") and step != "select":
        reason = FALLBACK_REASONS.get((step, outcome), outcome)
        run.fallback = f"{reason}: {problem}" if problem else reason
    if nxt is DONE and is_root and not run.answers and step != "closed_book":
        nxt = _resolve(ALGORITHM_1[("root", "empty")], params)
    run.step = nxt
    return run


# --- settling a node: helpers the step nodes share: resolving ``[i]`` for display, reading a
# stage's answer into a sub-call, settling a node from its sub-calls.
AtomRRuntime = MethodRuntime[AtomRContext]


def known_answers(runs: dict[int, NodeRun]) -> dict[int, str]:
    """Answered nodes' answers as text; a node with no answer is left out (its ``[i]`` stays)."""
    return {i: r.answer for i, r in runs.items() if r.done and r.answers}


def first_answers(runs: dict[int, NodeRun]) -> dict[int, str]:
    """Answered nodes' first answers: what source selection puts in place of each ``[i]``, as the
    authors do (THU-KEG/AtomR src/main.py:173-174: "simply replace each ref index with first answer")."""
    return {i: r.answers[0] for i, r in runs.items() if r.done and r.answers}


def resolve(text: str, runs: dict[int, NodeRun]) -> str:
    """``text`` with every ``[i]`` whose node has an answer replaced by that answer."""
    return substitute_refs(text, known_answers(runs))


_RUN_LISTS = ("sources", "evidence", "filter_dropped", "subcalls", "answers", "notes")


def current_run(inp: StepInput) -> NodeRun:
    """A private copy of the node's run record, with its question resolved (for the trace): its
    lists are copied; the records in them (sub-calls, evidence) are never changed once made, so they
    are shared rather than deep-copied on every step."""
    run = inp["runs"][inp["node_id"]]
    run = run.model_copy(update={f: list(getattr(run, f)) for f in _RUN_LISTS})
    run.resolved_question = resolve(run.question, inp["runs"])
    return run


def read_into(sub: SubCall, result: StageResult, keep_raw: bool = False, stage: Stage | None = None,
              variables: dict | None = None) -> SubCall:
    """Fill ``sub`` from a stage result: answered, empty (the model said Unknown), or failed
    (the call failed, its reply could not be read, or the answer contract refused it: Algorithm
    1's operator execution failure). ``keep_raw`` (the switch ``keep_raw_reply``, the authors'
    reading): an unreadable reply that was not refused is read as the authors read every reply
    (:func:`~atomgraph.prompts.atomr.stages.read_as_authors`), its items still held to
    the answer contract (with ``stage`` and ``variables``: to the question asked and never a copy
    of the stage's demonstrations, as every stage's reading is); the sub-call's ``problem`` keeps
    what our reader said."""
    sub.stage = result.call.stage
    parsed = result.value
    if not result.ok:
        error = result.call.parse_error
        if not (keep_raw and result.text and not result.call.error and error and refusal_reason(error) is None):
            sub.outcome, sub.problem = "failed", result.problem
            return sub
        try:
            parsed = read_as_authors(result.text)
            if stage is not None:
                demos = stage.demonstrations + demonstration_answers((variables or {}).get("pack"), stage.name)
                hold_to_question(parsed, variables or {}, demos, result.text)
        except ParseError as exc:  # an item the contract refuses: still a failure
            sub.outcome, sub.problem = "failed", f"{result.problem}; the authors' reading: {exc}"
            return sub
        sub.problem = f"kept the raw reply as the authors do (keep_raw_reply): {result.problem}"
    sub.paraphrase = parsed.paraphrase if not parsed.unknown else ""
    sub.answers = [a for a in parsed.answers if a.strip()]
    sub.outcome = "answered" if sub.answers else "empty"
    return sub


def node_outcome(subs: list[SubCall], skipped: str | None = None) -> str:
    """A node's outcome from its sub-calls: failed if any failed (those go to direct RAG),
    else answered if any answered, else empty; skipped when no call was made."""
    if skipped is not None or not subs:
        return "skipped"
    if any(s.outcome == "failed" for s in subs):
        return "failed"
    return "answered" if any(s.answers for s in subs) else "empty"


def collect(run: NodeRun) -> NodeRun:
    """The node's answers and paraphrase: its sub-calls' answers concatenated in order."""
    answers = [a for s in run.subcalls for a in s.answers]
    run.answers = answers
    run.answer = answer_text(answers)
    run.paraphrase = "; ".join(s.paraphrase for s in run.subcalls if s.paraphrase)
    return run


def first_problem(subs: list[SubCall]) -> str | None:
    return next((s.problem for s in subs if s.problem), None)


def budget_note(run: NodeRun, planned: int, budget: int) -> int:
    """How many of ``planned`` sub-calls fit the step's budget; a note for the rest."""
    if planned > budget:
        run.notes.append(f"LLM-call budget: {planned - budget} of {planned} sub-calls not run")
    return min(planned, budget)


# --- Per-answer fan-out: one call per referenced answer, as the authors run ATOMR.
#
# A node that references an answered node, e.g. ``Relate([1], "place of birth")`` with
# [1] = [Neil Armstrong, Buzz Aldrin, Michael Collins], is run once per answer of [1]: three
# retrievals ("Neil Armstrong place of birth", ...) and three executor calls, whose answers
# and paraphrases are concatenated in order. With two fanned references the node runs once
# per answer pair. The rules (the authors' ``main.py``):
#
# - Search / Relate: the references in the operator's arguments fan out (at most one per
#   argument); a reference only in the question gets its first answer.
# - Filter: the candidate list (first argument) is not fanned out: the candidates are the
#   referenced node's answer list as it stands (never a string split again on "," or "and":
#   "Wapakoneta, Ohio" is one candidate), shown to the model as one comma-separated list; a
#   literal first argument is one candidate, or the items of a list written as a list
#   (``["A", "B"]``); a reference in the condition fans out.
# - Direct RAG: a question with one or two references fans out over them; with three or
#   more, or a Filter-like question ("among [i]"), each reference becomes its answer list.
#
# A reference whose node has no answer means the node is skipped: no call is made over an
# empty reference, and its answer stays empty (never the word "Unknown").

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


# --- The scheduler: after every superstep, send each tree node whose dependencies are
# answered to its next step, all at once (independent branches run in parallel), until the
# root is answered or a limit stops the run.
#
# A step may make several model calls (one per referenced answer: the fan-out), and the
# scheduler knows beforehand how many; it shares the remaining LLM-call budget out among the
# steps it sends (each gets ``budget``), so the budget is enforced exactly.

MIN_SOURCES_TO_CHOOSE = 3  # the model chooses sources only among this many or more (the authors' rule)


def selection_calls(n_available: int) -> int:
    """Model calls source selection makes with ``n_available`` sources."""
    return 1 if n_available >= MIN_SOURCES_TO_CHOOSE else 0


STEP_NODES = {
    "select": "select_sources",
    "operate": "run_operator",
    "children": "reason_children",
    "siblings": "reason_siblings",
    "rag": "direct_rag",
    "closed_book": "closed_book",
}


def ready_nodes(state: AtomRState) -> list[int]:
    """Unanswered nodes whose dependencies are answered, in post-order."""
    tree, runs = state["tree"], state["runs"]
    return [i for i, deps in tree.dependency_order() if not runs[i].done and all(runs[d].done for d in deps)]


def planned_calls(state: AtomRState, i: int, n_sources: int, cap: int | None,
                  program_sources: frozenset[str] = frozenset()) -> int:
    """The model calls node ``i``'s next step will make (``program_sources``: the sources that
    answer a model-written query program, with ``kg_program_by_model`` on)."""
    tree, runs = state["tree"], state["runs"]
    run = runs[i]
    if run.step == "select":
        return selection_calls(n_sources)
    if run.step == "operate":
        op = tree.nodes[i].operator
        calls = len(plan_operator(run.question, op, runs, cap).calls)
        return calls * (2 if op.name == "Relate" and program_sources & set(run.sources) else 1)
    if run.step == "rag":
        if run.kind == "operator" and run.subcalls:
            return sum(1 for s in run.subcalls if s.outcome != "answered")
        return len(plan_question(run.question, runs, cap).calls)
    return 1


def search_text(args: list[str], question: str) -> str:
    """The text an operator call searches a text source with: its arguments, else its question
    (:meth:`~atomgraph.tools.base.KnowledgeSource.operate`)."""
    return " ".join(a for a in args if a).strip() or question


def retrieval_queries(state: AtomRState, i: int, cap: int | None) -> list[tuple[str, str]]:
    """(source, query) of every search node ``i``'s next step makes: an operator's sub-calls
    (Filter: one per candidate), direct RAG's questions; none for the other steps."""
    tree, runs = state["tree"], state["runs"]
    run = runs[i]
    queries: list[str] = []
    if run.step == "operate":
        op = tree.nodes[i].operator
        planned = plan_operator(run.question, op, runs, cap)
        for question, args in planned.calls:
            if op.name == "Filter":
                condition = args[1] if len(args) > 1 else question
                queries += [search_text([e, condition], question) for e in planned.candidates]
            else:
                queries.append(search_text(args, question))
    elif run.step == "rag":
        if run.kind == "operator" and run.subcalls:
            queries = [s.question for s in run.subcalls if s.outcome != "answered"]
        else:
            queries = [q for q, _ in plan_question(run.question, runs, cap).calls]
    return [(name, q) for name in run.sources for q in queries]


async def prime_queries(rt: AtomRRuntime, state: AtomRState, nodes: list[int], cap: int | None) -> None:
    """The ready leaves' retrieval queries embedded together: for each source that embeds its
    queries (``prime_queries``, e.g. :class:`~atomgraph.tools.chroma_source.ChromaWikipediaSource`),
    every query the steps sent now will search it with, in one batch, in one worker thread. Each
    search then takes its vector rather than embedding it alone; one that finds none (a batch that
    failed) embeds its query itself, as without priming."""
    available = rt.sources().available
    primable = {n for n, src in available.items() if callable(getattr(src, "prime_queries", None))}
    if not primable:
        return
    wanted: dict[str, list[str]] = {}
    for i in nodes:
        for name, query in retrieval_queries(state, i, cap):
            if name in primable:
                wanted.setdefault(name, []).append(query)
    work = [(available[n], qs) for n, qs in wanted.items()]
    if not work:
        return

    def prime() -> None:
        for source, queries in work:
            try:
                source.prime_queries(queries)
            except Exception as exc:  # noqa: BLE001 - the searches embed their own queries and record any failure
                log.warning("embedding %d queries of %s ahead failed (each search embeds its own): %s",
                            len(queries), source.name, exc)

    await asyncio.to_thread(prime)


def make_schedule_node(rt: AtomRRuntime):
    async def schedule(state: AtomRState, config: RunnableConfig) -> Command:
        tree, runs = state["tree"], state["runs"]
        if tree is None or runs[tree.root].done:
            return Command(goto="finalize")
        ready = ready_nodes(state)
        if not ready:
            return Command(goto="finalize", update={"error": "no tree node can run (unresolvable dependencies)"})
        params = rt.params(config)
        budget = params.max_llm_calls
        # a stage call counts once: a cut reply's one retry (LLMCall.retry) is part of its call
        remaining = budget - sum(1 for c in state.get("llm_calls", []) if not c.get("retry"))
        available = rt.sources().available
        n_sources = len(available)
        programmed = frozenset(n for n, src in available.items() if hasattr(src, "answer_program")) \
            if params.kg_program_by_model else frozenset()
        sends = []
        for i in ready:
            if params.max_parallel and len(sends) >= params.max_parallel:
                break
            need = planned_calls(state, i, n_sources, params.fanout_cap, programmed)
            if need > remaining:
                if remaining <= 0:
                    continue
                need = remaining
            remaining -= need
            sends.append(Send(STEP_NODES[runs[i].step],
                              {"question": state["question"], "tree": tree, "runs": runs, "node_id": i, "budget": need}))
        if not sends:
            return Command(
                goto="finalize",
                update={"stopped": f"LLM-call budget reached ({budget} calls); no prediction (the partial tree is the trace)"},
            )
        await prime_queries(rt, state, [s.arg["node_id"] for s in sends], params.fanout_cap)
        return Command(goto=sends)

    return schedule


# --- The result: the root's answer and the executed tree as the trace. A run that produced no
# answer has an empty answer (never "Unknown") and ``error`` saying why.
#
# A run the LLM-call budget stopped (or that cut a node's sub-calls short) has no prediction:
# its ``error`` says so and the partial tree is the trace, with the answered node nearest the
# root named under ``trace["partial"]``. An intermediate node's answer ("Wapakoneta", one of
# three birthplaces) is never passed off as the answer to the question.
def best_answered(state: AtomRState) -> NodeRun | None:
    tree, runs = state["tree"], state["runs"]
    answered = [r for r in runs.values() if r.done and r.answers]
    if not answered:
        return None
    # Nearest the root first; among equals the later node (it usually combines the earlier).
    return min(answered, key=lambda r: (tree.nodes[r.id].depth, -r.id))


def evidence_trace(run: NodeRun, max_chars: int = 400) -> list[dict]:
    return [evidence_record(e, max_chars, ("source", "title", "text", "url", "score")) for e in run.evidence]


def build_trace(state: AtomRState) -> dict:
    tree, runs = state["tree"], state["runs"]
    nodes = []
    for i in tree.topological_order():
        r = runs[i]
        n = tree.nodes[i]
        nodes.append({
            "id": i, "kind": r.kind, "depth": n.depth, "parent": n.parent, "children": n.children, "refs": n.refs,
            "question": r.question, "resolved_question": r.resolved_question, "operator": r.operator,
            "sources": r.sources, "evidence": evidence_trace(r), "filter_dropped": r.filter_dropped,
            "paraphrase": r.paraphrase, "answers": r.answers, "answer": r.answer, "fallback": r.fallback,
            "subcalls": [c.model_dump() for c in r.subcalls],
            "notes": r.notes, "llm_calls": r.llm_calls, "done": r.done,
        })
    return {
        "method": "atomr",
        "question": state["question"],
        "plan": tree.to_planner_json(),
        "plan_fallback": state.get("plan_fallback"),
        "repairs": tree.repairs,
        "unavailable_sources": state.get("unavailable_sources", {}),
        "nodes": nodes,
    }


def no_tree_trace(state: AtomRState) -> dict:
    return {"method": "atomr", "question": state.get("question", ""), "plan": None,
            "plan_fallback": state.get("plan_fallback"), "raw_plan": state.get("raw_plan", ""), "repairs": [],
            "unavailable_sources": state.get("unavailable_sources", {}), "nodes": []}


def failure_reason(state: AtomRState) -> str:
    """Why the run has no answer: the root's notes, or the stop reason."""
    tree, runs = state["tree"], state["runs"]
    root = runs[tree.root]
    reasons = [n for n in root.notes if "failed" in n or "no answer" in n]
    if state.get("stopped"):
        reasons.insert(0, state["stopped"])
    return "ATOMR produced no answer" + (": " + "; ".join(reasons) if reasons else "")


def budget_cut(state: AtomRState) -> list[int]:
    """The nodes whose sub-calls the LLM-call budget cut short."""
    return [i for i, r in state["runs"].items() if any(n.startswith("LLM-call budget:") for n in r.notes)]


def finalize(state: AtomRState) -> dict:
    if state.get("tree") is None:  # no usable plan (the authors score it empty)
        return {"answer": "", "answers": [], "trace": no_tree_trace(state), "retrieved_ids": [],
                "retrieved_titles": [], "stopped": state.get("stopped"),
                "error": state.get("error") or "ATOMR produced no answer: no plan"}
    tree, runs = state["tree"], state["runs"]
    root = runs[tree.root]
    stopped = state.get("stopped")
    cut = budget_cut(state)
    error = state.get("error")
    partial = None
    if (stopped and not root.done) or cut:
        best = best_answered(state)
        partial = {"node": best.id, "question": best.resolved_question or best.question,
                   "answers": best.answers} if best is not None else None
        stopped = stopped or f"LLM-call budget reached: sub-calls of node(s) {cut} not run"
        error = error or (f"ATOMR stopped before the question was answered ({stopped}); no prediction: "
                          "the partial tree is the trace" + (f" (nearest answered node {best.id})" if best else ""))
        chosen = None
    else:
        chosen = root if root.answers else None
    evidence = [e for i in tree.topological_order() for e in runs[i].evidence]
    titles = list(dict.fromkeys(e.title for e in evidence if e.title))
    ids = list(dict.fromkeys(e.id for e in evidence if e.id))
    if chosen is None and not error:
        error = no_answer_error(state, chosen) or failure_reason({**state, "stopped": stopped})
    if not error:  # every source failed: whatever was answered is closed-book, and says so
        error = retrieval_failure(state.get("retriever_calls") or [])
    trace = build_trace({**state, "stopped": stopped})
    if partial is not None or cut or (stopped and not root.done):
        trace["partial"] = partial
    return {
        "retrieved_ids": ids,
        "answer": chosen.answer if chosen else "",
        "answers": chosen.answers if chosen else [],
        "trace": trace,
        "retrieved_titles": titles,
        "stopped": stopped,
        "error": error,
    }


def no_answer_error(state: AtomRState, chosen: NodeRun | None) -> str | None:
    """Why the run has no answer, when that is because model calls failed (the one failure
    contract of every method: a run that could not answer says so in ``error``). A model that
    read its evidence and answered "Unknown" is an answer, not an error."""
    if chosen is not None and chosen.answers:
        return None
    failed = [c for c in state.get("llm_calls") or [] if c["error"]]
    if not failed:
        return None
    return f"ATOMR produced no answer: {len(failed)} model call(s) failed (last: {failed[-1]['error']})"
