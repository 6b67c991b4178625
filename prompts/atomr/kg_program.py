"""The knowledge-graph query program stage: for one sub-question the executor fills a small
typed program — the entity it starts from, the relation path, a constraint on the values —
which the Wikidata source compiles to SPARQL with its safe query builders
(:class:`~atomgraph.tools.wikidata_source.QueryProgram`). The model never writes SPARQL.

The authors parse each sub-question into a KoPL program with a trained semantic parser and
keep the program's first 10 answers; here the executor model is the parser, asked under a
JSON-schema constraint (:data:`PROGRAM_CONSTRAINT`: the local model's grammar, vLLM's and
llama.cpp's structured outputs, OpenAI's strict JSON schema). A program that cannot be used
(:func:`program_problem`: an unreadable reply, no relation to follow, an entity or a
constraint the sub-question does not state; or one the graph cannot compile) gives way to the program read off the operator's arguments
(``WikidataSource.operate``), and the reason is recorded. ``kg_program_by_model=false``
reads every program off the arguments (one model call less per Relate sub-question).
"""

from __future__ import annotations

import json

from pydantic import ValidationError

from atomgraph.errors import ParseError
from atomgraph.prompts.atomr.templating import chat_prompt, escape_braces
from atomgraph.prompts.constraints import JsonSchema
from atomgraph.text import read_object
from atomgraph.text import content_words
from atomgraph.tools.wikidata_source import QueryProgram

KG_PROGRAM_MARKER = "Task: write a knowledge-graph query program"

# Written by us on sub-questions of 2WikiMultiHopQA dev questions ("What is the place of birth
# of the director of film Reel Zombies?", "Who is the paternal grandfather of Matthew
# Spender?", "Which country Li Lingrong's husband is from?", "Was Augusta, Lady Gregory or
# Luis Yáñez born first?"). The last has no constraint: a model copies the last example most.
_EXAMPLES = [
    ("Who directed the film Reel Zombies?", 'Relate("Reel Zombies", "director")',
     {"entity": "Reel Zombies", "relations": ["director"], "constraint": None}),
    ("Who is the paternal grandfather of Matthew Spender?", 'Relate("Matthew Spender", "paternal grandfather")',
     {"entity": "Matthew Spender", "relations": ["father", "father"], "constraint": None}),
    ("Which country is the husband of Li Lingrong a citizen of?", 'Relate("Li Lingrong", "husband\'s country")',
     {"entity": "Li Lingrong", "relations": ["spouse", "country of citizenship"], "constraint": None}),
    ("Was Luis Yáñez born after 1940?", 'Relate("Luis Yáñez", "date of birth")',
     {"entity": "Luis Yáñez", "relations": ["date of birth"], "constraint": "after 1940"}),
    ("When was Augusta, Lady Gregory born?", 'Relate("Augusta, Lady Gregory", "date of birth")',
     {"entity": "Augusta, Lady Gregory", "relations": ["date of birth"], "constraint": None}),
]

_SYSTEM = f"""{KG_PROGRAM_MARKER}.

Turn a question about one entity into a query program for a knowledge graph such as Wikidata, as one JSON object:
- "entity": the entity the question starts from, named as in the question (in full, as the knowledge graph would label it);
- "relations": the relations to follow from it, in order, named as the knowledge graph names them (one to three: "spouse", "father", "place of birth", "country of citizenship", "director", ...);
- "constraint": a condition the values found must meet ("after 1940", "more than 2 million"), or null.
Reply with the JSON object only.

Examples.

""" + escape_braces("\n\n".join(
    f"Question: {q}\nOperator: {op}\nProgram: {json.dumps(p, ensure_ascii=False)}" for q, op, p in _EXAMPLES))

KG_PROGRAM_PROMPT = chat_prompt(_SYSTEM, "Question: {question}\nOperator: {operator}\nProgram:")

# The program's JSON schema, as every constrained backend takes it (OpenAI strict mode too:
# every property required, no others, null allowed for the constraint).
PROGRAM_SCHEMA = {
    "type": "object",
    "properties": {
        "entity": {"type": "string"},
        "relations": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
        "constraint": {"type": ["string", "null"]},
    },
    "required": ["entity", "relations", "constraint"],
    "additionalProperties": False,
}
PROGRAM_CONSTRAINT = JsonSchema(PROGRAM_SCHEMA, name="query_program")

# The program's entity must be named by the sub-question: at least this share of its
# content words in the question or the operator's arguments (a program copied from an
# example, or about another entity, fails this).
ENTITY_MATCH_THRESHOLD = 0.5


def read_program(text: str) -> QueryProgram:
    """The first JSON object of the reply as a :class:`QueryProgram`; ParseError otherwise."""
    obj = read_object(text)
    if obj is None:
        raise ParseError("no JSON object in the query program reply")
    try:
        return QueryProgram.model_validate(obj)
    except ValidationError as exc:
        raise ParseError(f"unreadable query program: {str(exc)[:200]}") from None


def _share(text: str, asked: set[str]) -> float:
    named = content_words(text)
    return len(named & asked) / len(named) if named else 0.0


def program_problem(program: QueryProgram, question: str, args: list[str]) -> str | None:
    """Why a model-written ``program`` is unusable for this sub-question (None when it is
    usable): it follows no relation, its entity is not one the sub-question names, or its
    constraint is not one the sub-question states (both by :data:`ENTITY_MATCH_THRESHOLD` of
    their content words; a small model copies an example's entity or constraint)."""
    if not program.relations:
        return "the program follows no relation"
    asked = content_words(" ".join([question, *args]))
    share = _share(program.entity, asked)
    if share < ENTITY_MATCH_THRESHOLD:
        return (f"the program's entity {program.entity!r} is not named in the sub-question "
                f"({share:.0%} of its words, below {ENTITY_MATCH_THRESHOLD:.0%})")
    if program.constraint:
        share = _share(program.constraint, asked)
        if share < ENTITY_MATCH_THRESHOLD:
            return (f"the program's constraint {program.constraint!r} is not stated in the sub-question "
                    f"({share:.0%} of its words, below {ENTITY_MATCH_THRESHOLD:.0%})")
    return None
