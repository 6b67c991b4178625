"""Answer-reasoning prompts for parent nodes (ATOMR §3.3.2; preprint Figure 11), in our words.

- ``CHILD_REASONING_PROMPT`` (``question``, ``qa_pairs``): answer a question from the answers of
  its child questions; may say Unknown (the graph then falls back to direct RAG).
- ``SIBLING_REASONING_PROMPT`` (``question``, ``qa_pairs``): answer a ``[DR]`` question from the
  answers of the earlier sibling questions it references.
- ``DIRECT_RAG_PROMPT`` (``question``, ``knowledge``): answer straight from retrieved knowledge.
"""

from __future__ import annotations

import json
import re

from atomgraph.prompts.atomr.templating import ANSWER_RULES, UNKNOWN_RULE, chat_prompt

CHILD_MARKER = "Task: answer from child answers"
SIBLING_MARKER = "Task: answer from sibling answers"
DIRECT_RAG_MARKER = "Task: answer from retrieved knowledge"
CLOSED_BOOK_MARKER = "Task: answer from your own knowledge"

NO_PAIRS = "(none)"


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", str(text or "")).strip()


def format_qa_pairs(pairs) -> str:
    """One line per question, in id order: ``Q: 2. Who wrote [1]? A: <answer>``.

    Each pair is ``(node_id, question, answers)`` or ``(node_id, question, answers,
    paraphrase)``; ``answers`` is a list (written as a JSON list; ``[]`` when the node found
    nothing, never "Unknown") or already-written text. With a paraphrase the answer reads
    ``<paraphrase>. ["a", "b"]`` (the authors show it for questions that reference others,
    whose bare list would be ambiguous)."""
    lines = []
    for pair in sorted(pairs or [], key=lambda p: p[0]):
        node_id, question, answers = pair[0], pair[1], pair[2]
        paraphrase = _flat(pair[3]) if len(pair) > 3 and pair[3] else ""
        q = _flat(question)
        prefix = f"{node_id}. "
        if not q.startswith(prefix):
            q = prefix + q
        listed = json.dumps([_flat(a) for a in answers], ensure_ascii=False) if isinstance(answers, list) \
            else (_flat(answers) or "[]")
        lines.append(f"Q: {q} A: {paraphrase.rstrip('.')}. {listed}" if paraphrase else f"Q: {q} A: {listed}")
    return "\n".join(lines) if lines else NO_PAIRS


_CHILD_SYSTEM = f"""{CHILD_MARKER}.

A complex question has been split into child questions, which have been answered. Combine the child answers to answer the complex question. When the child answers are not enough, you may complete them with your own knowledge. {UNKNOWN_RULE}

{ANSWER_RULES}{{rules}}

Examples.

{{examples}}"""

_SIBLING_SYSTEM = f"""{SIBLING_MARKER}.

The question below refers to earlier questions by number, like [1]. Their answers are given. Answer the question by reasoning over those answers: compare, count, intersect, calculate or judge yes or no. Use your own knowledge only to fill small gaps. {UNKNOWN_RULE}

{ANSWER_RULES}{{rules}}

Examples.

{{examples}}"""

_DIRECT_RAG_SYSTEM = f"""{DIRECT_RAG_MARKER}.

Answer the question using the knowledge retrieved from an encyclopedia, a web search engine and/or a knowledge graph. When the knowledge does not answer it, answer from your own knowledge; give your best answer rather than none.{{unknown_rule}}

{ANSWER_RULES}{{rules}}

Examples.

{{examples}}"""

CHILD_REASONING_PROMPT = chat_prompt(
    _CHILD_SYSTEM, "Child questions and answers:\n{qa_pairs}\n\nQuestion: {question}\nAnswer:"
)
SIBLING_REASONING_PROMPT = chat_prompt(
    _SIBLING_SYSTEM, "Referenced questions and answers:\n{qa_pairs}\n\nQuestion: {question}\nAnswer:"
)
DIRECT_RAG_PROMPT = chat_prompt(_DIRECT_RAG_SYSTEM, "Retrieved Knowledge:\n{knowledge}\n\nQuestion: {question}\nAnswer:")

_CLOSED_BOOK_SYSTEM = f"""{CLOSED_BOOK_MARKER}.

Answer the question from your own knowledge. Give your best answer rather than none.

{ANSWER_RULES}{{rules}}

Examples.

{{examples}}"""

CLOSED_BOOK_PROMPT = chat_prompt(_CLOSED_BOOK_SYSTEM, "Question: {question}\nAnswer:")
