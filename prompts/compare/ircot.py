"""IRCoT (Trivedi et al., 2023): interleave chain-of-thought and retrieval. Each
``ircot_step`` call writes one more sentence of reasoning over the passages gathered so far;
a sentence that does not give the answer becomes the next retrieval query. ``ircot_read``
then reads the answer off all gathered passages (the paper's separate reader step).
"""

from __future__ import annotations

import re

from langchain_core.prompts import ChatPromptTemplate

from atomgraph.errors import ParseError
from atomgraph.injection import EVIDENCE_RULE
from atomgraph.prompts.stage import clean_reply as contract_reply
from atomgraph.prompts.compare.common import (ANSWER_RULE, FEW_SHOT_STOPS, clean_reply, final_answer_parser,
                                              first_sentence, has_answer_marker, instructions_of, read_answer,
                                              strip_label)
from atomgraph.prompts.stage import Stage, text_parser

# One finished reasoning, on a train question of ../shared/data (never a test question), written
# by us from its supporting facts there: hipporag/musique_train.json, id 3hop1__287390_555629_70752.
EXAMPLE_SOURCE = "hipporag/musique_train.json#3hop1__287390_555629_70752"
EXAMPLE = """Question: What is the main international airport in birth place of the director of The Girl Who Kicked the Hornets' Nest?
Reasoning:
The Girl Who Kicked the Hornets' Nest is a 2009 Swedish film directed by Daniel Alfredson.
Daniel Alfredson was born in Stockholm.
The main international airport of Stockholm is Stockholm Arlanda Airport, north of the city.
So the answer is: Stockholm Arlanda Airport"""

STEP_PROMPT = ChatPromptTemplate.from_messages([
    ("system",
     "You answer a multi-hop question by reasoning one sentence at a time over retrieved passages. "
     "Write ONLY the next single sentence of the reasoning: one new fact, naming its entities in full. "
     "When the reasoning so far is enough, write instead 'So the answer is: <answer>'. " + EVIDENCE_RULE),
    ("human", "Example of a finished reasoning:\n\n" + EXAMPLE
     + "\n\nPassages:\n{evidence}\n\nQuestion: {question}\nReasoning:\n{reasoning}"),
])

EXAMPLE_PAIRS = [("What is the main international airport in birth place of the director of The Girl Who Kicked "
                  "the Hornets' Nest?", "Stockholm Arlanda Airport")]

READ_PROMPT = ChatPromptTemplate.from_messages([
    ("system", "Answer the question from the passages. First reason step by step in a few short "
     "sentences. " + ANSWER_RULE + " " + EVIDENCE_RULE),
    ("human", "Passages:\n{evidence}\n\nQuestion: {question}\nAnswer: Let's think step by step."),
])


def read_step(text: str) -> dict:
    """``{"sentence": the next reasoning sentence, "answer": the answer or None}``.

    A reply that gives the answer ('So the answer is: ...', anywhere) ends the reasoning; any
    other reply contributes its first sentence (labels like 'Next sentence:' dropped). A reply
    that copies the example or repeats the instructions is refused (the answer contract)."""
    text = contract_reply(clean_reply(text), instructions=instructions_of(STEP_PROMPT), demonstrations=EXAMPLE_PAIRS)
    if has_answer_marker(text):
        answer = read_answer(text)
        line = next(ln for ln in text.splitlines() if has_answer_marker(ln))
        return {"sentence": line.strip(), "answer": answer}
    body = "\n".join(strip_label(ln, "next sentence", "reasoning", "sentence", "thought") for ln in text.splitlines())
    sentence = first_sentence(re.sub(r"^\s*(?:\d+[.)]|[-*])\s+", "", body.strip()))
    if len(sentence) < 2:
        raise ParseError(f"no reasoning sentence in: {text[:200]!r}")
    return {"sentence": sentence, "answer": None}


STEP = Stage(name="ircot_step", role="executor", prompt=STEP_PROMPT,
             parser=text_parser(read_step, "ircot_step"), max_tokens=96, stop=FEW_SHOT_STOPS, answers=True,
             demonstrations=tuple((q, EXAMPLE, a) for q, a in EXAMPLE_PAIRS))
READ = Stage(name="ircot_read", role="answerer", prompt=READ_PROMPT,
             parser=final_answer_parser(READ_PROMPT), max_tokens=384, stop=FEW_SHOT_STOPS, answers=True)
