"""Answer-reasoning prompts for parent nodes (ATOMR §3.3.2; preprint Figure 11), in our words.

- ``CHILD_REASONING_PROMPT`` (``question``, ``qa_pairs``): answer a question from the answers of
  its child questions; may say Unknown (the graph then falls back to direct RAG).
- ``SIBLING_REASONING_PROMPT`` (``question``, ``qa_pairs``): answer a ``[DR]`` question from the
  answers of the earlier sibling questions it references.
- ``DIRECT_RAG_PROMPT`` (``question``, ``knowledge``): answer straight from retrieved knowledge.
- ``CLOSED_BOOK_PROMPT`` (``question``): the authors' direct answer when the root ends empty.

``qa_pairs`` and ``knowledge`` are written by :mod:`~atomgraph.prompts.atomr.stages`
(``format_qa_pairs``, ``format_knowledge``), which also reads the replies (``parse_answer``).
"""

from __future__ import annotations

from atomgraph.injection import EVIDENCE_RULE
from atomgraph.prompts.atomr.templating import ANSWER_RULES, UNKNOWN_RULE, chat_prompt

CHILD_MARKER = "Task: answer from child answers"
SIBLING_MARKER = "Task: answer from sibling answers"
DIRECT_RAG_MARKER = "Task: answer from retrieved knowledge"
CLOSED_BOOK_MARKER = "Task: answer from your own knowledge"

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

Answer the question using the knowledge retrieved from an encyclopedia, a web search engine and/or a knowledge graph. When the knowledge does not answer it, answer from your own knowledge; give your best answer rather than none.{{unknown_rule}} {EVIDENCE_RULE}

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
