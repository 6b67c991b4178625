"""The Atomic Reasoning Tree planner prompt (ATOMR §3.2, KDD'25 Figure 7), in our words.

The planner writes one JSON object: the root question maps to its numbered sub-questions;
each numbered question maps to its own sub-questions, to one atomic operator call
(``Search`` / ``Relate`` / ``Filter``), or to ``"[DR]"`` (direct reasoning over the answers of
the earlier siblings it references). ``prompts/atomr/tree_parser.py`` reads it.
"""

from __future__ import annotations

import json

from atomgraph.prompts.atomr.templating import chat_prompt, escape_braces

PLAN_MARKER = "Task: plan an atomic reasoning tree"

# (question, tree) few-shot pairs, written for this project about real entities.
PLAN_EXAMPLES: list[tuple[str, dict[str, object]]] = [
    (
        "In which city was the director of the 1957 film Wild Strawberries born?",
        {
            "In which city was the director of the 1957 film Wild Strawberries born?": [
                "1. Who directed the 1957 film Wild Strawberries?",
                "2. In which city was [1] born?",
            ],
            "1. Who directed the 1957 film Wild Strawberries?": [
                "3. What is the 1957 film Wild Strawberries?",
                "4. Who directed [3]?",
            ],
            "2. In which city was [1] born?": 'Relate([1], "place of birth")',
            "3. What is the 1957 film Wild Strawberries?": 'Search("Wild Strawberries", "1957 Swedish film")',
            "4. Who directed [3]?": 'Relate([3], "director")',
        },
    ),
    (
        "Who was born first, Ada Lovelace or Mary Shelley?",
        {
            "Who was born first, Ada Lovelace or Mary Shelley?": [
                "1. When was Ada Lovelace born?",
                "2. When was Mary Shelley born?",
                "3. Given [1] and [2], who was born first, Ada Lovelace or Mary Shelley?",
            ],
            "1. When was Ada Lovelace born?": 'Relate("Ada Lovelace", "date of birth")',
            "2. When was Mary Shelley born?": 'Relate("Mary Shelley", "date of birth")',
            "3. Given [1] and [2], who was born first, Ada Lovelace or Mary Shelley?": "[DR]",
        },
    ),
    (
        "How many members of the Apollo 11 crew walked on the Moon?",
        {
            "How many members of the Apollo 11 crew walked on the Moon?": [
                "1. Who were the crew members of Apollo 11?",
                "2. Who among [1] walked on the Moon?",
                "3. How many people are in [2]?",
            ],
            "1. Who were the crew members of Apollo 11?": [
                "4. What is Apollo 11?",
                "5. Who were the crew members of [4]?",
            ],
            "2. Who among [1] walked on the Moon?": 'Filter([1], "walked on the Moon")',
            "3. How many people are in [2]?": "[DR]",
            "4. What is Apollo 11?": 'Search("Apollo 11", "1969 crewed Moon landing mission")',
            "5. Who were the crew members of [4]?": 'Relate([4], "crew member")',
        },
    ),
    (
        "In which country is Mount Kilimanjaro?",
        {"In which country is Mount Kilimanjaro?": 'Relate("Mount Kilimanjaro", "country")'},
    ),
]

_INSTRUCTIONS = f"""{PLAN_MARKER}.

You break a complex question into an Atomic Reasoning Tree. Three atomic functions can fetch and manipulate knowledge from an encyclopedia, a web search engine or a knowledge graph:

- Search(name, [descriptor]) returns a list of entities. It finds which entity a name means; the optional descriptor (a type or a few words of description) tells apart entities that share the name. Without a descriptor the best-known entity is meant.
- Relate(head, relation) or Relate(head, tail) returns a list of entities or values. It makes one hop from an entity: the entities linked to it by a relation (e.g. "director"), the value of one of its attributes (e.g. "date of birth"), or, given two entities, the relation between them.
- Filter([i], condition) returns a list of entities: those in the answer of question [i] that satisfy a factual condition.

How to build the tree:
1. The root is the question exactly as given, without a number.
2. Split a question into the sub-questions needed to answer it, and split those again, until every leaf question is atomic: it can be answered either
   (a) by exactly one function call: the question's value is then that call, written as a string, e.g. "Relate([3], \\"director\\")"; or
   (b) only by reasoning over the answers of earlier sibling questions (comparing, counting, intersecting, judging yes or no, calculating): its value is then "[DR]".
   A question that is not atomic has as value the list of its sub-questions.
3. Number the sub-questions "N. question" in breadth-first order: the root's sub-questions are 1, 2, 3, ..., then come the sub-questions of 1, then those of 2, and so on. Every number is used once.
4. Write [i] wherever a question or a function argument needs the answer of question i. A question may only use the answers of earlier siblings of itself or of one of its ancestors.
5. Function arguments are double-quoted strings or [i] references; the first argument of Filter is always a reference.
6. If the question itself can be answered by one function call, the root's value is that call.

Reply with the JSON object only: the root question first, then every numbered question as a key. No explanation, no markdown.

Examples."""


def _examples() -> str:
    blocks = [
        f"Question: {q}\nDecomposition Tree: {json.dumps(tree, ensure_ascii=False)}" for q, tree in PLAN_EXAMPLES
    ]
    return "\n\n".join(blocks)


PLAN_SYSTEM = _INSTRUCTIONS + "\n\n" + escape_braces(_examples())

PLAN_PROMPT = chat_prompt(PLAN_SYSTEM, "Question: {question}\nDecomposition Tree:")
