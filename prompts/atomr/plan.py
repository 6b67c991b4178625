"""The Atomic Reasoning Tree planner prompt (ATOMR §3.2, KDD'25 Figure 7), in our words.

The planner writes one JSON object: the root question maps to its numbered sub-questions;
each numbered question maps to its own sub-questions, to one atomic operator call
(``Search`` / ``Relate`` / ``Filter``), or to ``"[DR]"`` (direct reasoning over the answers of
the earlier siblings it references). ``prompts/atomr/tree_parser.py`` reads it.
"""

from __future__ import annotations

from atomgraph.prompts.atomr.packs import GENERAL_PLAN
from atomgraph.prompts.atomr.templating import chat_prompt

PLAN_MARKER = "Task: plan an atomic reasoning tree"

# The general pack's planner demonstrations (every pack: ``prompts/atomr/packs.py``).
PLAN_EXAMPLES = GENERAL_PLAN

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

Reply with the JSON object only: the root question first, then every numbered question as a key. No explanation, no markdown.{{rules}}

Examples.

{{examples}}"""


PLAN_SYSTEM = _INSTRUCTIONS

PLAN_PROMPT = chat_prompt(PLAN_SYSTEM, "Question: {question}\nDecomposition Tree:")
