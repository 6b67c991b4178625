"""The knowledge-graph query program stage: the executor fills a small typed program for one
sub-question — the entity it starts from, the relation path, a constraint on the values —
which the Wikidata source compiles to SPARQL with its safe query builders
(:class:`~atomgraph.tools.wikidata_source.QueryProgram`). The model never writes SPARQL.

Used when ``kg_program_by_model`` is on (the authors parse each sub-question into a KoPL
program with a trained parser); otherwise the program is read off the operator's arguments.
"""

from __future__ import annotations

import json
import re

from pydantic import ValidationError

from atomgraph.errors import ParseError
from atomgraph.prompts.atomr.templating import chat_prompt, escape_braces
from atomgraph.tools.wikidata_source import QueryProgram

KG_PROGRAM_MARKER = "Task: write a knowledge-graph query program"

_EXAMPLES = [
    ("In which city was Ingmar Bergman born?", 'Relate("Ingmar Bergman", "place of birth")',
     {"entity": "Ingmar Bergman", "relations": ["place of birth"], "constraint": None}),
    ("Who is the father of the spouse of Asma Al-Assad?", 'Relate("Asma Al-Assad", "spouse")',
     {"entity": "Asma Al-Assad", "relations": ["spouse", "father"], "constraint": None}),
    ("Which children of Marie Curie were born before 1900?", 'Relate("Marie Curie", "child")',
     {"entity": "Marie Curie", "relations": ["child"], "constraint": None}),
    ("When was Steve Jobs born, if before 1960?", 'Relate("Steve Jobs", "date of birth")',
     {"entity": "Steve Jobs", "relations": ["date of birth"], "constraint": "before 1960"}),
]

_SYSTEM = f"""{KG_PROGRAM_MARKER}.

Turn a question about one entity into a query program for a knowledge graph such as Wikidata, as one JSON object:
- "entity": the name of the entity the question starts from, as the knowledge graph would label it;
- "relations": the relations to follow from it, in order (one to three, e.g. ["spouse", "father"] for a father-in-law);
- "constraint": a condition on the values found ("before 1960", "more than 2 million"), or null.
Reply with the JSON object only.

Examples.

""" + escape_braces("\n\n".join(
    f"Question: {q}\nOperator: {op}\nProgram: {json.dumps(p)}" for q, op, p in _EXAMPLES))

KG_PROGRAM_PROMPT = chat_prompt(_SYSTEM, "Question: {question}\nOperator: {operator}\nProgram:")


def read_program(text: str) -> QueryProgram:
    """The first JSON object of the reply as a :class:`QueryProgram`; ParseError otherwise."""
    m = re.search(r"\{.*?\}(?=\s*(?:$|\n))", text or "", re.S) or re.search(r"\{.*\}", text or "", re.S)
    if not m:
        raise ParseError("no JSON object in the query program reply")
    try:
        return QueryProgram.model_validate(json.loads(m.group(0)))
    except (json.JSONDecodeError, ValidationError) as exc:
        raise ParseError(f"unreadable query program: {str(exc)[:200]}") from None
