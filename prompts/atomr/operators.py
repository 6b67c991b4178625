"""Adaptive LLM executor prompts for the atomic operators (ATOMR §3.1; preprint Figures 8-10),
in our words. Variables: ``question`` and ``knowledge`` (see :func:`format_knowledge`);
``FILTER_PROMPT`` also ``condition``; ``examples`` and ``rules`` come from the prompt pack
(``prompts/atomr/packs/``). All end in ATOMR's answer format (read by ``stages.parse_answer``)."""

from __future__ import annotations

from atomgraph.injection import EVIDENCE_RULE
from atomgraph.prompts.atomr.templating import ANSWER_RULES, UNKNOWN_RULE, chat_prompt

SEARCH_MARKER = "Task: atomic Search"
RELATE_MARKER = "Task: atomic Relate"
FILTER_MARKER = "Task: atomic Filter"

_HUMAN = "Retrieved Knowledge:\n{knowledge}\n\nQuestion: {question}\nAnswer:"
_FILTER_HUMAN = "Retrieved Knowledge:\n{knowledge}\n\nCondition: {condition}\nQuestion: {question}\nAnswer:"

_SEARCH_SYSTEM = f"""{SEARCH_MARKER}: entity disambiguation.

You are given knowledge retrieved from an encyclopedia, a web search engine and/or a knowledge graph, and a question asking which entity a name refers to. Work out the entity the question means and name it precisely; add a short qualifier in parentheses when the bare name is ambiguous. Prefer the retrieved knowledge; when it does not help, answer from your own knowledge. Never answer with an empty list: give the most likely entity. {EVIDENCE_RULE}

{ANSWER_RULES}{{rules}}

Examples.

{{examples}}"""

_RELATE_SYSTEM = f"""{RELATE_MARKER}: one-hop question.

You are given knowledge retrieved from an encyclopedia, a web search engine and/or a knowledge graph, and a one-hop question about an entity: the entities linked to it by a relation, the value of one of its attributes, or how two entities are related. Answer from the retrieved knowledge; when it does not help, answer from your own knowledge. When the answer is a long list (for example the albums of a band), write every item into the Answer List. {UNKNOWN_RULE} {EVIDENCE_RULE}

{ANSWER_RULES}{{rules}}

Examples.

{{examples}}"""

_FILTER_SYSTEM = f"""{FILTER_MARKER}: keep the entities that meet a condition.

You are given knowledge retrieved from an encyclopedia, a web search engine and/or a knowledge graph, a list of candidate entities inside the question, and a condition. Keep exactly those candidates that satisfy the condition, using the retrieved knowledge; when it does not help, decide from your own knowledge. The Paraphrase Answer restates the condition with the entities that meet it; the Answer List holds only those entities, spelled as in the question. {EVIDENCE_RULE}

{ANSWER_RULES}{{rules}}

Examples.

{{examples}}"""

SEARCH_PROMPT = chat_prompt(_SEARCH_SYSTEM, _HUMAN)
RELATE_PROMPT = chat_prompt(_RELATE_SYSTEM, _HUMAN)
FILTER_PROMPT = chat_prompt(_FILTER_SYSTEM, _FILTER_HUMAN)
