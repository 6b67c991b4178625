"""Adaptive LLM executor prompts for the atomic operators (ATOMR §3.1; preprint Figures 8-10),
in our words. Variables: ``question`` and ``knowledge`` (see :func:`format_knowledge`);
``FILTER_PROMPT`` also ``condition``. All end in the answer format of ``answer_format``."""

from __future__ import annotations

from atomgraph.prompts.atomr.templating import ANSWER_RULES, UNKNOWN_RULE, chat_prompt

SEARCH_MARKER = "Task: atomic Search"
RELATE_MARKER = "Task: atomic Relate"
FILTER_MARKER = "Task: atomic Filter"

_HUMAN = "Retrieved Knowledge:\n{knowledge}\n\nQuestion: {question}\nAnswer:"
_FILTER_HUMAN = "Retrieved Knowledge:\n{knowledge}\n\nCondition: {condition}\nQuestion: {question}\nAnswer:"

_SEARCH_SYSTEM = f"""{SEARCH_MARKER}: entity disambiguation.

You are given knowledge retrieved from an encyclopedia, a web search engine and/or a knowledge graph, and a question asking which entity a name refers to. Work out the entity the question means and name it precisely; add a short qualifier in parentheses when the bare name is ambiguous. Prefer the retrieved knowledge; when it does not help, answer from your own knowledge. Never answer with an empty list: give the most likely entity.

{ANSWER_RULES}

Example.
Retrieved Knowledge:
Wikipedia Passages:
[1] John Williams | John Towner Williams (born 1932) is an American composer and conductor whose film scores include Jaws, Star Wars and Schindler's List.
[2] John Williams (guitarist) | John Christopher Williams (born 1941) is an Australian classical guitarist.
Google Results:
[1] John Williams - Biography | The composer of more than a hundred film scores has received over fifty Academy Award nominations.

Question: Who is John Williams, the film composer?
Answer: Passage [1] describes the American film composer; passage [2] is a different person, a guitarist. So the answer is: (1) Paraphrase Answer: John Williams the film composer is the American composer and conductor John Towner Williams; (2) Answer List: ["John Williams (composer)"]"""

_RELATE_SYSTEM = f"""{RELATE_MARKER}: one-hop question.

You are given knowledge retrieved from an encyclopedia, a web search engine and/or a knowledge graph, and a one-hop question about an entity: the entities linked to it by a relation, the value of one of its attributes, or how two entities are related. Answer from the retrieved knowledge; when it does not help, answer from your own knowledge. When the answer is a long list (for example the albums of a band), write every item into the Answer List. {UNKNOWN_RULE}

{ANSWER_RULES}

Example 1.
Retrieved Knowledge:
Wikipedia Passages:
[1] Ingmar Bergman | Ernst Ingmar Bergman (14 July 1918 - 30 July 2007) was a Swedish film and theatre director, born in Uppsala to a Lutheran minister's family.
Wikidata Facts:
[1] Ingmar Bergman | place of birth: Uppsala

Question: In which city was Ingmar Bergman born?
Answer: Both the passage and the knowledge graph give Uppsala as his birthplace. So the answer is: (1) Paraphrase Answer: Ingmar Bergman was born in Uppsala; (2) Answer List: ["Uppsala"]

Example 2.
Retrieved Knowledge:
Google Results:
[1] Mars facts | Mars has two small moons, Phobos and Deimos, discovered by Asaph Hall in 1877.

Question: How many moons does Mars have?
Answer: The search result names two moons, Phobos and Deimos. So the answer is: (1) Paraphrase Answer: Mars has 2 moons; (2) Answer List: ["2"]"""

_FILTER_SYSTEM = f"""{FILTER_MARKER}: keep the entities that meet a condition.

You are given knowledge retrieved from an encyclopedia, a web search engine and/or a knowledge graph, a list of candidate entities inside the question, and a condition. Keep exactly those candidates that satisfy the condition, using the retrieved knowledge; when it does not help, decide from your own knowledge. The Paraphrase Answer restates the condition with the entities that meet it; the Answer List holds only those entities, spelled as in the question.

{ANSWER_RULES}

Example.
Retrieved Knowledge:
Wikipedia Passages:
[1] Neil Armstrong | Neil Armstrong was an American astronaut and the first person to walk on the Moon, on July 20, 1969.
[2] Buzz Aldrin | Buzz Aldrin was the lunar module pilot of Apollo 11 and the second person to walk on the Moon.
[3] Michael Collins (astronaut) | Michael Collins flew Apollo 11's command module Columbia in lunar orbit while his crewmates landed.

Condition: walked on the Moon
Question: Who among Neil Armstrong, Buzz Aldrin, Michael Collins walked on the Moon?
Answer: Passages [1] and [2] say Armstrong and Aldrin walked on the Moon; passage [3] says Collins stayed in orbit. So the answer is: (1) Paraphrase Answer: Neil Armstrong and Buzz Aldrin walked on the Moon; (2) Answer List: ["Neil Armstrong", "Buzz Aldrin"]"""

SEARCH_PROMPT = chat_prompt(_SEARCH_SYSTEM, _HUMAN)
RELATE_PROMPT = chat_prompt(_RELATE_SYSTEM, _HUMAN)
FILTER_PROMPT = chat_prompt(_FILTER_SYSTEM, _FILTER_HUMAN)
