"""Small helpers for building ATOMR's chat prompt templates."""

from __future__ import annotations

from langchain_core.prompts import ChatPromptTemplate

# The line every answering prompt asks the model to end with (a template string: no braces).
ANSWER_LINE = 'So the answer is: (1) Paraphrase Answer: <a sentence restating the question with its answer>; (2) Answer List: ["<answer>", ...]'

ANSWER_RULES = (
    "Think in one to three short sentences, citing what you used, then finish with exactly one line:\n"
    f"{ANSWER_LINE}\n"
    "The Answer List is a JSON list of short, clean strings: entity names, dates or values, with no "
    "explanation inside. Write numbers as digits (7, not seven). For a yes/no question the list is "
    '["Yes"] or ["No"]. Write nothing after the Answer List.'
)

UNKNOWN_RULE = (
    "If neither the given information nor your own knowledge answers the question, finish with: "
    "So the answer is: (1) Paraphrase Answer: Unknown; (2) Answer List: []"
)


def escape_braces(text: str) -> str:
    """Make literal text (e.g. JSON) safe inside an f-string template."""
    return text.replace("{", "{{").replace("}", "}}")


def chat_prompt(system: str, human: str) -> ChatPromptTemplate:
    """A system message (instructions and examples) and a human message (the variables)."""
    return ChatPromptTemplate.from_messages([("system", system), ("human", human)])
